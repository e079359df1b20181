/* The guest RAM of copy-on-write templates (ARCHITECTURE 2.7), immutable
 * by construction.  A template VM runs with its RAM in a memfd the daemon
 * made (QEMU maps /proc/self/fd/N, share=on) and is saved with
 * x-ignore-shared; once that QEMU is gone (no writable mapping left) the
 * daemon seals the memfd: no write, resize, hole punch or shared writable
 * mapping by anyone, ever.  Each clone QEMU gets the sealed memfd and maps
 * it privately (share=off): pages it never writes stay shared by all
 * clones, a page it writes becomes its own.  No file of template RAM is
 * bound into any jail.
 *
 * The RAM outlives the process as a sparse file "ram" in the template's
 * directory (root-only, in the 0700 state directory), described by its
 * size, inode and modification time; a process loads it into a sealed
 * memfd of its own on first use and refuses a file that changed.  Each
 * process keeps one memfd per template key: a template of G MiB guest RAM
 * costs the pages its guest wrote before the save (shared memory of the
 * process, not counted in any VM's cgroup) for as long as the template
 * exists or the process lives. */
#ifndef SBX_VM_TEMPLATE_MEMFD_H
#define SBX_VM_TEMPLATE_MEMFD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* A description: "<size> <dev> <inode> <mtime>\n". */
#define TEMPLATE_RAM_DESC_MAX 128

/* Whether this host has sealable memfds (probed once); without, templates
 * are streamed (each VM holds a private copy of guest RAM). */
bool template_memfd_supported(void);
/* A new memfd of `memory_mib` for a template VM (sealable, close-on-exec). */
int template_memfd_new(unsigned memory_mib, sbx_error_t *err);
/* Seals it for good; fails (EBUSY) while a writable shared mapping of it
 * remains. */
int template_memfd_seal(int fd, sbx_error_t *err);
/* Whether fd carries every seal of template_memfd_seal. */
bool template_memfd_sealed(int fd);
/* Writes the memfd's bytes to `path` (new, 0600, sparse: its holes and
 * zero pages are not written) and describes the file (desc, cap bytes). */
int template_memfd_save(int fd, const char *path, char *desc, size_t cap, sbx_error_t *err);
/* A sealed memfd of the bytes of `path`, when that file is still the one
 * `desc` describes and holds `memory_mib`: -1 with err otherwise (also
 * when it changes during the copy). */
int template_memfd_load(const char *path, const char *desc, unsigned memory_mib, sbx_error_t *err);

/* This process's sealed memfd of the key's template (a new descriptor for
 * the caller), when `path` is still the file `desc` describes: the one it
 * keeps of that file, else loaded from it (and kept). */
int template_memfd_get(const char *key, const char *path, const char *desc, unsigned memory_mib, sbx_error_t *err);
/* Keeps a copy of the sealed `fd` as the key's, saved as `path`, which
 * `desc` describes. */
void template_memfd_keep(const char *key, const char *path, const char *desc, int fd);
/* Forgets the key's memfd (its template went; live clones keep their
 * mappings). */
void template_memfd_drop(const char *key);
/* Bytes the kept memfds hold now; first forgets those whose file is gone
 * or replaced (their template was removed, maybe by another process). */
uint64_t template_memfd_usage(void);

#endif
