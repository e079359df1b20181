/* VM snapshots (ARCHITECTURE 2.7).  A VM booted once to HELLO (init has
 * mounted its disks and waits for CONFIG: nothing sandbox-specific is in
 * it yet) is stopped and saved with QEMU's migration, with a copy of its
 * scratch disk, as a template under <state>/snapshots/<key>.  New VMs of
 * the same key start from it with -incoming and their own copy of that
 * scratch disk, then get CONFIG (identity, env, clock, entropy; the guest
 * reseeds its CRNG).  The key covers everything the saved state depends
 * on, by content: the QEMU binary's, kernel's and boot disk's bytes
 * (SHA-256), the image's manifest digest (or its bytes' hash for an image
 * outside the store), CPUs, memory, the accelerator, the TSC rate on
 * the kernel command line, whether the device set has a NIC (a template
 * per network mode), and whether guest RAM is a sealed copy-on-write
 * memfd (vm/template_memfd.h, kept on disk as the template's sparse "ram"
 * file, described in "ram.id") or streamed into the state file.  Under
 * KVM it also covers the CPU as KVM presents it (vm/kvm_cpu.h): a
 * template is never restored onto another CPU, kernel or microcode's
 * feature set, and the sweep drops one saved under another. */
#ifndef SBX_VM_SNAPSHOT_H
#define SBX_VM_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "vm/qmp.h"

#define SNAPSHOT_KEY_LEN 64 /* hex SHA-256 */
/* Both ends of a copy-on-write template's migration leave the RAM out. */
#define SNAPSHOT_IGNORE_SHARED                                                                          \
	"{\"execute\": \"migrate-set-capabilities\", \"arguments\": {\"capabilities\": "                \
	"[{\"capability\": \"x-ignore-shared\", \"state\": true}]}}"


struct snapshot_id {
	const char *qemu, *kernel, *boot_disk, *image;
	unsigned cpus, memory_mib, tsc_khz;
	int accel;
	uint64_t scratch_size;
	bool network; /* the device set includes the NIC */
	bool cow;     /* guest RAM in a sealed memfd (vm/template_memfd.h) */
	const char *kvm_cpu; /* under KVM (required): this host's CPU
				fingerprint (vm/kvm_cpu.h); not looked at
				under TCG, whose key it leaves unchanged */
};

#define SNAPSHOT_KEY_TEXT_MAX 8192
/* The key and, when `text` is not NULL (SNAPSHOT_KEY_TEXT_MAX bytes), the
 * text it hashes: the template keeps it, to tell later whether the key
 * can still match (snapshot_key_current). */
int snapshot_key(const struct snapshot_id *id, char key[SNAPSHOT_KEY_LEN + 1], char *text, sbx_error_t *err);
/* Whether a template's key text is of this format and the files it names
 * (QEMU, kernel, boot disk, image) still have the contents it was saved
 * from (a stored image: its digest still in the store); a KVM template's
 * CPU fingerprint must be this host's now. */
bool snapshot_key_current(const char *text);
/* Whether a template may still be restored by some build: the checks of
 * snapshot_key_current but the QEMU, kernel and boot disk it names (a
 * package's daemon and a build tree's on one state directory each keep
 * their own templates; the cache's bound drops the least recently used). */
bool snapshot_key_usable(const char *text);
/* <state>/snapshots (created when missing). */
char *snapshot_dir(sbx_error_t *err);
/* The template's directory when a complete one exists; NULL (no error)
 * when not, NULL with err on failure. */
char *snapshot_find(const char *key, sbx_error_t *err);
/* A copy-on-write template's RAM: this process's sealed memfd of it
 * (*ram_fd, the caller's), loaded from its "ram" file when the process has
 * none, or *ram_fd = -1 for a streamed template.  -1 when the file is
 * gone, truncated or changed since the save. */
int snapshot_ram(const char *dir, const char *key, unsigned memory_mib, int *ram_fd, sbx_error_t *err);
/* Copies the template's scratch disk to `scratch` (new) and opens its
 * saved state for QEMU's -incoming. */
int snapshot_restore_files(const char *dir, const char *scratch, int *state_fd, sbx_error_t *err);
/* Takes the key's build lock without waiting: the lock's fd, or -1 (errnum
 * EWOULDBLOCK when another VM is building the template). */
int snapshot_lock(const char *key, sbx_error_t *err);
/* Saves a VM that waits at HELLO: stop, migrate into a file, copy its
 * scratch disk, keep `console` (its boot's console, NUL-terminated, or
 * NULL: none; vm/template_console.h), publish the template with one rename, and let the VM
 * continue (also on failure).  With `pending` (the VM's RAM is a memfd,
 * share=on) only device state is migrated (x-ignore-shared), the VM stays
 * stopped (it must not write its RAM again, the caller ends it) and the
 * template is not published yet: *pending is its directory, for
 * snapshot_publish once QEMU is gone. */
int snapshot_save(struct qmp *q, const char *key, const char *key_text, const char *scratch, const char *console,
		  char **pending, int64_t deadline, sbx_error_t *err);
/* Migrates the VM's state into fd (a file; QEMU gets a copy through
 * getfd) and waits until QEMU reports the migration completed.  The VM
 * is normally stopped first (QMP `stop`); the capabilities set before
 * (x-ignore-shared) apply. */
int snapshot_migrate(struct qmp *q, int fd, int64_t deadline, sbx_error_t *err);
/* Seals the RAM memfd of a saved copy-on-write template (its QEMU gone),
 * writes it into the template as its "ram" file, publishes the template
 * and keeps the memfd for this process's clones.  On failure the pending
 * directory is removed. */
int snapshot_publish(const char *pending, const char *key, int ram_fd, sbx_error_t *err);
/* Publishes the template directory `tmp` as `final` with one rename, under
 * the key's build lock.  A directory found there without its "key" file is
 * what another version's removal left (it does not know every file of a
 * template, e.g. its console): it is removed first; a complete one stays
 * (and the rename fails). */
int snapshot_place(const char *tmp, const char *final, sbx_error_t *err);
/* Removes a template directory (by path) and this process's memfd of it. */
void snapshot_remove_dir(const char *dir);
/* Removes the key's template (a restore from it failed). */
void snapshot_invalidate(const char *key);

/* How long a restore may take (QEMU loading the state, the guest taking
 * CONFIG) before the VM boots cold instead: a restored VM answers within
 * about a second under TCG and far less under KVM, and the cold boot
 * that follows a stalled restore must still fit the create's 30 s. */
#define SNAPSHOT_RESTORE_KVM_MS 3000
#define SNAPSHOT_RESTORE_TCG_MS 12000
int64_t snapshot_restore_limit_ms(bool kvm);
/* A restored guest that dies this soon after it was ready condemns its
 * template (a CPU feature the saved guest used is gone: SIGILL, panic). */
#define SNAPSHOT_EARLY_DEATH_MS 10000

/* What follows a failed restore: the template goes unless the guest itself
 * refused its CONFIG (an unknown user: no fault of the template), then
 * the VM boots cold unless the caller's deadline has passed. */
enum snapshot_after_failure { SNAPSHOT_KEEP_AND_FAIL, SNAPSHOT_DROP_AND_FAIL, SNAPSHOT_DROP_AND_BOOT_COLD };
enum snapshot_after_failure snapshot_after_failed_restore(bool guest_refused, bool deadline_passed);

#endif
