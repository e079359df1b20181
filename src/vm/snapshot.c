#include "vm/snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/path.h"
#include "common/state_dir.h"
#include "vm/disk.h"
#include "vm/qmp_restart.h"
#include "vm/template_console.h"
#include "vm/template_memfd.h"

#define MIGRATE_POLL_US 5000
#define RAM_DESC_MAX TEMPLATE_RAM_DESC_MAX

char *snapshot_dir(sbx_error_t *err)
{
	return sbx_state_subdir("snapshots", err);
}

static char *key_path(const char *key, const char *suffix, sbx_error_t *err)
{
	cleanup_free char *dir = sbx_state_subdir("snapshots", err);
	if (dir == NULL)
		return NULL;
	char *p = NULL;
	if (asprintf(&p, "%s/%s%s", dir, key, suffix) < 0) {
		sbx_error_errno(err, ENOMEM, "snapshot path");
		return NULL;
	}
	return p;
}

char *snapshot_find(const char *key, sbx_error_t *err)
{
	char *dir = key_path(key, "", err);
	if (dir == NULL)
		return NULL;
	cleanup_free char *state = sbx_path_join(dir, "state"), *scratch = sbx_path_join(dir, "scratch.ext4");
	struct stat a, b;
	if (state == NULL || scratch == NULL || stat(state, &a) < 0 || stat(scratch, &b) < 0 || !S_ISREG(a.st_mode) ||
	    !S_ISREG(b.st_mode)) {
		free(dir);
		return NULL;
	}
	return dir;
}

/* The template's "ram.id": the description of its "ram" file (empty when
 * the template is streamed). */
static int read_ram_desc(const char *dir, char *buf, size_t cap, sbx_error_t *err)
{
	buf[0] = '\0';
	cleanup_free char *p = sbx_path_join(dir, "ram.id");
	if (p == NULL)
		return sbx_error_errno(err, ENOMEM, "snapshot path");
	cleanup_close int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : sbx_error_errno(err, errno, "open %s", p);
	ssize_t n = read(fd, buf, cap - 1);
	if (n < 0)
		return sbx_error_errno(err, errno, "read %s", p);
	if ((size_t)n == cap - 1)
		return sbx_error_set(err, EOVERFLOW, "%s too long", p);
	buf[n] = '\0';
	return 0;
}

int snapshot_ram(const char *dir, const char *key, unsigned memory_mib, int *ram_fd, sbx_error_t *err)
{
	*ram_fd = -1;
	char desc[RAM_DESC_MAX];
	if (read_ram_desc(dir, desc, sizeof(desc), err) < 0)
		return -1;
	if (desc[0] == '\0')
		return 0;
	cleanup_free char *path = sbx_path_join(dir, "ram");
	if (path == NULL)
		return sbx_error_errno(err, ENOMEM, "snapshot path");
	*ram_fd = template_memfd_get(key, path, desc, memory_mib, err);
	return *ram_fd >= 0 ? 0 : -1;
}

int snapshot_restore_files(const char *dir, const char *scratch, int *state_fd, sbx_error_t *err)
{
	cleanup_free char *state = sbx_path_join(dir, "state"), *tpl = sbx_path_join(dir, "scratch.ext4");
	if (state == NULL || tpl == NULL)
		return sbx_error_errno(err, ENOMEM, "snapshot path");
	if (disk_clone(tpl, scratch, err) < 0)
		return -1;
	*state_fd = open(state, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (*state_fd < 0) {
		int e = errno;
		unlink(scratch);
		return sbx_error_errno(err, e, "open %s", state);
	}
	return 0;
}

int snapshot_lock(const char *key, sbx_error_t *err)
{
	cleanup_free char *path = key_path(key, ".lock", err);
	if (path == NULL)
		return -1;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return sbx_error_errno(err, errno, "open %s", path);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		close(fd);
		return sbx_error_errno(err, e, "lock %s", path);
	}
	return fd;
}

/* Removes a template directory's files and the directory, and this
 * process's memfd of its RAM. */
void snapshot_remove_dir(const char *dir)
{
	const char *base = strrchr(dir, '/');
	template_memfd_drop(base != NULL ? base + 1 : dir);
	cleanup_free char *id = sbx_path_join(dir, "ram.id");
	if (id != NULL)
		unlink(id);
	cleanup_free char *state = sbx_path_join(dir, "state"), *scratch = sbx_path_join(dir, "scratch.ext4");
	cleanup_free char *ram = sbx_path_join(dir, "ram"), *key = sbx_path_join(dir, "key");
	cleanup_free char *console = sbx_path_join(dir, TEMPLATE_CONSOLE_FILE);
	if (key != NULL)
		unlink(key);
	if (console != NULL)
		unlink(console);
	if (state != NULL)
		unlink(state);
	if (scratch != NULL)
		unlink(scratch);
	if (ram != NULL)
		unlink(ram);
	rmdir(dir);
}

static int write_text(const char *tmp, const char *name, const char *text, sbx_error_t *err)
{
	cleanup_free char *p = sbx_path_join(tmp, name);
	if (p == NULL)
		return sbx_error_errno(err, ENOMEM, "snapshot path");
	cleanup_close int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	size_t len = strlen(text);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len)
		return sbx_error_errno(err, fd < 0 ? errno : EIO, "write %s", p);
	return 0;
}

int snapshot_place(const char *tmp, const char *final, sbx_error_t *err)
{
	if (rename(tmp, final) == 0)
		return 0;
	int e = errno;
	cleanup_free char *key = sbx_path_join(final, "key");
	/* A template with its key is complete: never replaced. */
	if ((e != ENOTEMPTY && e != EEXIST) || key == NULL || access(key, F_OK) == 0 || errno != ENOENT)
		return sbx_error_errno(err, e, "rename %s", tmp);
	snapshot_remove_dir(final);
	if (rename(tmp, final) < 0)
		return sbx_error_errno(err, errno, "rename %s", tmp);
	return 0;
}

/* Waits for the migration to finish: "completed", or fails. */
static int wait_migration(struct qmp *q, int64_t deadline, sbx_error_t *err)
{
	char reply[QMP_LINE_MAX];
	for (;;) {
		if (qmp_call(q, "{\"execute\": \"query-migrate\"}", -1, reply, sizeof(reply), deadline, err) < 0)
			return -1;
		if (strstr(reply, "\"status\": \"completed\"") != NULL)
			return 0;
		if (strstr(reply, "\"status\": \"failed\"") != NULL || strstr(reply, "\"status\": \"cancelled\"") != NULL)
			return sbx_error_set(err, EIO, "migration failed");
		if (sbx_now_ms() >= deadline)
			return sbx_error_set(err, ETIMEDOUT, "migration did not finish");
		usleep(MIGRATE_POLL_US);
	}
}

int snapshot_migrate(struct qmp *q, int fd, int64_t deadline, sbx_error_t *err)
{
	/* QEMU's default migration bandwidth (32 MiB/s) is meant for a
	 * network; this goes to a local file. */
	if (qmp_call(q, "{\"execute\": \"migrate-set-parameters\", \"arguments\": {\"max-bandwidth\": 68719476736}}",
		     -1, NULL, 0, deadline, err) < 0 ||
	    qmp_call(q, "{\"execute\": \"getfd\", \"arguments\": {\"fdname\": \"snapshot\"}}", fd, NULL, 0, deadline,
		     err) < 0 ||
	    qmp_call(q, "{\"execute\": \"migrate\", \"arguments\": {\"uri\": \"fd:snapshot\"}}", -1, NULL, 0, deadline,
		     err) < 0)
		return -1;
	return wait_migration(q, deadline, err);
}

static int save_into(struct qmp *q, const char *tmp, const char *key_text, const char *scratch,
		     const char *console, bool cow, int64_t deadline, sbx_error_t *err)
{
	cleanup_free char *state = sbx_path_join(tmp, "state"), *copy = sbx_path_join(tmp, "scratch.ext4");
	if (state == NULL || copy == NULL)
		return sbx_error_errno(err, ENOMEM, "snapshot path");
	cleanup_close int fd = open(state, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return sbx_error_errno(err, errno, "create %s", state);
	if ((cow && qmp_call(q, SNAPSHOT_IGNORE_SHARED, -1, NULL, 0, deadline, err) < 0) ||
	    snapshot_migrate(q, fd, deadline, err) < 0)
		return -1;
	/* The disk is copied while the VM is stopped, so it matches the RAM
	 * (QEMU flushed it when the migration completed). */
	if (disk_clone(scratch, copy, err) < 0 || write_text(tmp, "key", key_text, err) < 0 ||
	    (console != NULL && write_text(tmp, TEMPLATE_CONSOLE_FILE, console, err) < 0))
		return -1;
	return 0;
}

int snapshot_save(struct qmp *q, const char *key, const char *key_text, const char *scratch, const char *console,
		  char **pending, int64_t deadline, sbx_error_t *err)
{
	bool cow = pending != NULL;
	cleanup_free char *final = key_path(key, "", err);
	if (final == NULL)
		return -1;
	uint32_t rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (uint32_t)time(NULL);
	cleanup_free char *tmp = NULL;
	if (asprintf(&tmp, "%s.%ld-%08x.tmp", final, (long)getpid(), rnd) < 0) {
		tmp = NULL;
		return sbx_error_errno(err, ENOMEM, "snapshot path");
	}
	if (mkdir(tmp, 0700) < 0)
		return sbx_error_errno(err, errno, "mkdir %s", tmp);
	/* A copy-on-write template is saved running: the migration stops it
	 * for its last step (RAM is not copied), and its clones then start
	 * running without a `cont`. */
	int rc = !cow ? qmp_call(q, "{\"execute\": \"stop\"}", -1, NULL, 0, deadline, err) : 0;
	if (rc == 0)
		rc = save_into(q, tmp, key_text, scratch, console, cow, deadline, err);
	if (rc == 0 && cow) {
		*pending = sbx_steal_ptr(tmp);
		return 0;
	}
	if (rc == 0)
		rc = snapshot_place(tmp, final, err);
	if (rc < 0)
		snapshot_remove_dir(tmp);
	if (cow)
		return sbx_error_prefix(err, "snapshot");
	/* The VM goes on either way, also after a `stop` or a migration that
	 * timed out and goes on in QEMU (qmp_restart.h). */
	sbx_error_t cerr = NULL;
	if (qmp_restart_vcpus(q, sbx_now_ms() + QMP_RESTART_MS, &cerr) < 0) {
		if (rc == 0) {
			sbx_error_free(err);
			*err = cerr;
			cerr = NULL;
			rc = -1;
		} else {
			sbx_warn("vm: the VM of a snapshot that failed could not run on: %s", sbx_error_msg(cerr));
		}
		sbx_error_free(&cerr);
	}
	return rc < 0 ? sbx_error_prefix(err, "snapshot") : 0;
}

int snapshot_publish(const char *pending, const char *key, int ram_fd, sbx_error_t *err)
{
	char desc[RAM_DESC_MAX];
	cleanup_free char *final = key_path(key, "", err);
	cleanup_free char *ram = sbx_path_join(pending, "ram");
	int rc = final == NULL ? -1 : ram == NULL ? sbx_error_errno(err, ENOMEM, "snapshot path") : 0;
	if (rc == 0 && (template_memfd_seal(ram_fd, err) < 0 ||
			template_memfd_save(ram_fd, ram, desc, sizeof(desc), err) < 0 ||
			write_text(pending, "ram.id", desc, err) < 0))
		rc = -1;
	if (rc == 0)
		rc = snapshot_place(pending, final, err);
	if (rc < 0) {
		snapshot_remove_dir(pending);
		return sbx_error_prefix(err, "snapshot");
	}
	cleanup_free char *kept = sbx_path_join(final, "ram");
	if (kept != NULL)
		template_memfd_keep(key, kept, desc, ram_fd);
	return 0;
}

void snapshot_invalidate(const char *key)
{
	template_memfd_drop(key);
	sbx_error_t err = NULL;
	cleanup_free char *dir = key_path(key, "", &err);
	cleanup_free char *gone = key_path(key, ".gone", &err);
	/* Renamed first, so no VM starts from a half-removed template. */
	if (dir != NULL && gone != NULL) {
		snapshot_remove_dir(gone);
		if (rename(dir, gone) == 0)
			snapshot_remove_dir(gone);
	}
	sbx_error_free(&err);
}

int64_t snapshot_restore_limit_ms(bool kvm)
{
	return kvm ? SNAPSHOT_RESTORE_KVM_MS : SNAPSHOT_RESTORE_TCG_MS;
}

enum snapshot_after_failure snapshot_after_failed_restore(bool guest_refused, bool deadline_passed)
{
	if (guest_refused)
		return SNAPSHOT_KEEP_AND_FAIL;
	return deadline_passed ? SNAPSHOT_DROP_AND_FAIL : SNAPSHOT_DROP_AND_BOOT_COLD;
}
