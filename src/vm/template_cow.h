/* The guest RAM of copy-on-write templates (ARCHITECTURE 2.7).  A
 * template VM runs with its RAM in a file on tmpfs (share=on) and is
 * saved with x-ignore-shared, so its state file holds only device state;
 * each clone maps the same file privately (share=off: pages stay shared
 * until the clone writes them).  Every template generation gets a new
 * file, never written again once saved: a clone's unwritten pages are the
 * file's, so changing it would change every live clone.  Removing it is
 * safe (live clones keep the unlinked pages).
 *
 * The files live in a directory of their own on /dev/shm, one per state
 * directory, 0700: only the jails' binds reach them.  QEMU 7.2 opens
 * mem-path read-write even for share=off (readonly=on makes the RAM a ROM
 * and hangs the guest), so the file is writable by the VMs' uids; the
 * daemon records its identity at save and refuses a file that changed. */
#ifndef SBX_VM_TEMPLATE_COW_H
#define SBX_VM_TEMPLATE_COW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* In the RAM directory: the state directory it belongs to (for
 * template_cache_sweep once that is gone). */
#define TEMPLATE_RAM_OWNER "owner"

/* The directory of the RAM files (made when missing), or NULL with err
 * when the host has no tmpfs /dev/shm. */
char *template_ram_dir(sbx_error_t *err);
/* The same when it exists (NULL with err otherwise): for looking only. */
char *template_ram_dir_existing(sbx_error_t *err);
/* Holds a RAM file for a VM's life: a shared lock, which the cache's trim
 * respects (vm/template_cache.h).  The descriptor, or -1 with err when
 * the file is gone or being removed. */
int template_ram_hold(const char *path, sbx_error_t *err);
/* A new RAM file of `memory_mib` for one template generation (sparse,
 * mode 0666, see above): its path. */
char *template_ram_create(const char *key, unsigned memory_mib, sbx_error_t *err);
/* What a template records of its RAM file once saved: path, size, inode,
 * modification time (one line). */
int template_ram_describe(const char *path, char *buf, size_t cap, sbx_error_t *err);
/* Checks a recorded description against the file as it is now and its
 * size against the guest's: the path on success, NULL with err when the
 * file is gone, truncated, replaced or written since. */
char *template_ram_verify(const char *desc, unsigned memory_mib, sbx_error_t *err);
/* Unlinks the RAM file a description names, when it lies in the RAM
 * directory. */
void template_ram_remove(const char *desc);
/* Bytes of tmpfs the RAM files of this state directory take now
 * (allocated blocks). */
uint64_t template_ram_usage(void);

#endif
