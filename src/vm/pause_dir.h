/* A paused VM's directory (vm.h sbx_vm_pause): the caller's path, made
 * 0700, holding the migrated state and what the VM's own directory held
 * that the VM needs again (its scratch disk, a private image), each 0600,
 * and its console so far.  The keeper deletes the VM's directory when
 * QEMU ends, so the files are linked (or, across file systems, copied)
 * out before, and back into the next VM directory at the resume. */
#ifndef SBX_VM_PAUSE_DIR_H
#define SBX_VM_PAUSE_DIR_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define PAUSE_STATE "state"
#define PAUSE_SCRATCH "scratch.ext4"
#define PAUSE_IMAGE "image.erofs"
#define PAUSE_CONSOLE "console.txt"
/* A store image's second name (the store's file: its mode is the store's),
 * for a later process (vm_adopt.c).  A resume links it back into the VM's
 * directory only for a VM that runs it: an adopted one whose store image
 * was removed or replaced (vm_resume.c); a resume of any other runs the
 * store's path. */
#define PAUSE_STORE_IMAGE "store.erofs"
#define PAUSE_VM "vm.json"
/* PAUSE_VM while it is written: renamed when whole. */
#define PAUSE_VM_TMP "vm.json.tmp"
/* The adapter's own record of the paused sandbox (adapter/pause). */
#define PAUSE_SANDBOX "sandbox.json"
#define PAUSE_SANDBOX_NEW "sandbox.json.new"
/* A snapshot's own record (adapter/snapshot): a snapshot is a paused
 * state that is never resumed, only branched (pause_dir_branch). */
#define PAUSE_SNAPSHOT "snapshot.json"
#define PAUSE_SNAPSHOT_NEW "snapshot.json.new"

/* Makes dir (0700); it must not exist. */
int pause_dir_create(const char *dir, sbx_error_t *err);
/* Creates dir/name (0600, new) for writing: the fd, or -1. */
int pause_dir_new_file(const char *dir, const char *name, sbx_error_t *err);
/* Opens dir/name for reading: the fd, or -1. */
int pause_dir_open(const char *dir, const char *name, sbx_error_t *err);
/* Keeps `from` as dir/name (0600). */
int pause_dir_keep(const char *dir, const char *name, const char *from, sbx_error_t *err);
/* A second name dir/name for `from`, nothing else: not a copy, no mode
 * change (the file may be another's, a store's image).  EXDEV across
 * file systems. */
int pause_dir_link(const char *dir, const char *name, const char *from, sbx_error_t *err);
/* Puts dir/name back as `to` (new); dir/name stays until removed. */
int pause_dir_restore(const char *dir, const char *name, const char *to, sbx_error_t *err);
/* Writes text as dir/name (0600). */
int pause_dir_write_text(const char *dir, const char *name, const char *text, sbx_error_t *err);
/* dir/name's text (at most max bytes), or NULL when it has none. */
char *pause_dir_read_text(const char *dir, const char *name, size_t max);
/* What the files take on disk (allocated blocks), the store image's
 * second name (PAUSE_STORE_IMAGE) left out. */
uint64_t pause_dir_size(const char *dir);
/* A second paused state `to` (made, 0700) from the whole one in `from`:
 * the files nobody writes again (the state, images, console, the
 * sandbox's record) linked, the scratch disk cloned (a reflink, else its
 * data extents), the VM's description written again with its network
 * helper's sandbox `label` (NULL: as it was), for a VM that diverges from
 * `from`'s.  Nothing is synced.  On failure `to` is gone. */
int pause_dir_branch(const char *from, const char *to, const char *label, sbx_error_t *err);
/* Removes the files named above and the directory. */
void pause_dir_remove(const char *dir);

#endif
