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
#include "vm/accel.h"
#include "vm/file_hash.h"
#include "vm/kvm_cpu.h"
#include "vm/template_memfd.h"

#define KEY_TEXT_MAX SNAPSHOT_KEY_TEXT_MAX
#define MIGRATE_POLL_US 5000

/* Bumped when what a template holds changes meaning. */
/* 2: the balloon device; 3: copy-on-write RAM files; 4: sealed memfds, keyed
 * by content; 5: TCG guests without user-space ASLR (norandmaps); 6: TCG
 * CPUs without ERMS/FSRM (a kernel booted with them kept its rep movsb copies) */
#define SNAPSHOT_FORMAT 6
#define RAM_DESC_MAX TEMPLATE_RAM_DESC_MAX
#define STORE_SUFFIX ".erofs"
#define CPU_FIELD "kvmcpu="

static const char *const components[] = { "qemu", "kernel", "boot", "image" };
#define N_COMPONENTS (sizeof(components) / sizeof(components[0]))

/* The digest (hex) when `path` is an image of this state directory's image
 * store (images/erofs/<manifest digest hex>.erofs, image_store.h): its
 * name is its content's identity, so its bytes need no hashing.  False
 * for any other file. */
static bool store_digest(const char *path, char hex[SNAPSHOT_KEY_LEN + 1])
{
	const char *slash = strrchr(path, '/');
	const char *name = slash != NULL ? slash + 1 : path;
	if (strlen(name) != SNAPSHOT_KEY_LEN + strlen(STORE_SUFFIX) || strcmp(name + SNAPSHOT_KEY_LEN, STORE_SUFFIX) != 0)
		return false;
	for (size_t i = 0; i < SNAPSHOT_KEY_LEN; i++) {
		if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
			return false;
	}
	sbx_error_t err = NULL;
	cleanup_free char *state = sbx_state_dir(&err);
	sbx_error_free(&err);
	cleanup_free char *store = NULL, *dir = slash != NULL ? strndup(path, (size_t)(slash - path)) : NULL;
	if (state == NULL || dir == NULL || asprintf(&store, "%s/images/erofs", state) < 0)
		return false;
	cleanup_free char *a = realpath(dir, NULL), *b = realpath(store, NULL);
	struct stat st;
	if (a == NULL || b == NULL || strcmp(a, b) != 0 || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	memcpy(hex, name, SNAPSHOT_KEY_LEN);
	hex[SNAPSHOT_KEY_LEN] = '\0';
	return true;
}

/* A file's line of the key: what its content is.  A stored image by its
 * manifest digest, any other file by the SHA-256 of its bytes
 * (vm/file_hash.h: hashed once per version of the file on this machine). */
static int component(char *buf, size_t cap, size_t *len, const char *what, const char *path, sbx_error_t *err)
{
	char hex[SNAPSHOT_KEY_LEN + 1];
	const char *kind = "digest";
	if (strcmp(what, "image") != 0 || !store_digest(path, hex)) {
		kind = "sha256";
		if (file_hash(path, hex, err) < 0)
			return sbx_error_prefix(err, "snapshot key: %s", what);
	}
	int n = snprintf(buf + *len, cap - *len, "%s=%s:%s\n", what, kind, hex);
	if (n < 0 || (size_t)n >= cap - *len)
		return sbx_error_set(err, EOVERFLOW, "snapshot key");
	*len += (size_t)n;
	return 0;
}

static int append(char *buf, size_t cap, size_t *len, const char *what, const char *path, sbx_error_t *err)
{
	int n = snprintf(buf + *len, cap - *len, "path %s %s\n", what, path);
	if (n < 0 || (size_t)n >= cap - *len || strchr(path, '\n') != NULL)
		return sbx_error_set(err, ENAMETOOLONG, "snapshot key: %s path unusable", what);
	*len += (size_t)n;
	return 0;
}

/* The key hashes what the template's state depends on (the header and the
 * files' contents); the text adds where the files were, for
 * snapshot_key_current.  The same contents elsewhere give the same key. */
int snapshot_key(const struct snapshot_id *id, char key[SNAPSHOT_KEY_LEN + 1], char *key_text, sbx_error_t *err)
{
	bool kvm = id->accel == SBX_ACCEL_KVM;
	if (kvm && (id->kvm_cpu == NULL || strlen(id->kvm_cpu) != KVM_CPU_HEX ||
		    strspn(id->kvm_cpu, "0123456789abcdef") != KVM_CPU_HEX))
		return sbx_error_set(err, EINVAL, "snapshot key: no CPU fingerprint under KVM");
	char text[KEY_TEXT_MAX];
	int n = snprintf(text, sizeof(text), "format=%d cpus=%u memory=%u accel=%d tsc=%u scratch=%llu%s%s%s%s\n",
			 SNAPSHOT_FORMAT, id->cpus, id->memory_mib, id->accel, id->tsc_khz,
			 (unsigned long long)id->scratch_size, id->network ? " network" : "", id->cow ? " cow" : "",
			 kvm ? " " CPU_FIELD : "", kvm ? id->kvm_cpu : "");
	if (n < 0 || (size_t)n >= sizeof(text))
		return sbx_error_set(err, EOVERFLOW, "snapshot key");
	size_t len = (size_t)n;
	const char *paths[N_COMPONENTS] = { id->qemu, id->kernel, id->boot_disk, id->image };
	for (size_t i = 0; i < N_COMPONENTS; i++) {
		if (component(text, sizeof(text), &len, components[i], paths[i], err) < 0)
			return -1;
	}
	size_t hashed = len;
	for (size_t i = 0; i < N_COMPONENTS; i++) {
		if (append(text, sizeof(text), &len, components[i], paths[i], err) < 0)
			return -1;
	}
	if (file_hash_bytes(text, hashed, key) < 0)
		return sbx_error_set(err, EIO, "snapshot key: sha256 failed");
	if (key_text != NULL)
		memcpy(key_text, text, len + 1);
	return 0;
}

/* A header line of accel KVM names this host's CPU as it is now; any
 * other header names none. */
static bool cpu_current(const char *header, size_t len)
{
	char want[32];
	snprintf(want, sizeof(want), " accel=%d ", (int)SBX_ACCEL_KVM);
	const char *accel = memmem(header, len, want, strlen(want));
	const char *field = memmem(header, len, " " CPU_FIELD, strlen(" " CPU_FIELD));
	if (accel == NULL)
		return field == NULL;
	char now[KVM_CPU_HEX + 1];
	sbx_error_t err = NULL;
	if (field == NULL || kvm_cpu_host(now, &err) < 0) {
		sbx_error_free(&err);
		return false;
	}
	field += strlen(" " CPU_FIELD);
	return (size_t)(header + len - field) > KVM_CPU_HEX && memcmp(field, now, KVM_CPU_HEX) == 0 &&
	       (field[KVM_CPU_HEX] == ' ' || field[KVM_CPU_HEX] == '\n');
}

/* Appends the text's own line `i` after the header (`what`'s, as it was
 * recorded). */
static int recorded(char *buf, size_t cap, size_t *len, const char *text, size_t i, const char *what)
{
	const char *line = strchr(text, '\n');
	for (size_t k = 0; line != NULL && k < i; k++)
		line = strchr(line + 1, '\n');
	const char *end = line != NULL ? strchr(line + 1, '\n') : NULL;
	size_t wlen = strlen(what), n = end != NULL ? (size_t)(end - line) : 0;
	if (end == NULL || strncmp(line + 1, what, wlen) != 0 || line[1 + wlen] != '=' || n >= cap - *len)
		return -1;
	memcpy(buf + *len, line + 1, n);
	*len += n;
	buf[*len] = '\0';
	return 0;
}

/* The text is the template's own file (hostile to this check as any file
 * is): it matches when it is of this format, names this host's CPU
 * under KVM, and the files it names still have the contents it recorded
 * (with `builds` false: its image alone, QEMU, kernel and boot disk taken
 * as recorded), i.e. when building its key again from those paths gives
 * the same text. */
static bool key_matches(const char *text, bool builds)
{
	char want[32];
	snprintf(want, sizeof(want), "format=%d ", SNAPSHOT_FORMAT);
	const char *header_end = strchr(text, '\n');
	if (strncmp(text, want, strlen(want)) != 0 || header_end == NULL)
		return false;
	char now[KEY_TEXT_MAX];
	size_t len = (size_t)(header_end - text) + 1;
	if (len >= sizeof(now) || !cpu_current(text, len))
		return false;
	memcpy(now, text, len);
	char paths[N_COMPONENTS][4096];
	const char *line = strstr(text, "\npath ");
	for (size_t i = 0; i < N_COMPONENTS; i++) {
		if (line == NULL || strncmp(line + 1, "path ", 5) != 0)
			return false;
		const char *what = line + 6, *end = strchr(what, '\n');
		size_t wlen = strlen(components[i]);
		if (end == NULL || strncmp(what, components[i], wlen) != 0 || what[wlen] != ' ' ||
		    (size_t)(end - what) - wlen - 1 >= sizeof(paths[i]))
			return false;
		memcpy(paths[i], what + wlen + 1, (size_t)(end - what) - wlen - 1);
		paths[i][end - what - wlen - 1] = '\0';
		line = end;
	}
	if (line[1] != '\0')
		return false;
	sbx_error_t err = NULL;
	for (size_t i = 0; i < N_COMPONENTS; i++) {
		if (!builds && strcmp(components[i], "image") != 0) {
			if (recorded(now, sizeof(now), &len, text, i, components[i]) < 0)
				return false;
		} else if (component(now, sizeof(now), &len, components[i], paths[i], &err) < 0) {
			sbx_error_free(&err);
			return false;
		}
	}
	for (size_t i = 0; i < N_COMPONENTS; i++) {
		if (append(now, sizeof(now), &len, components[i], paths[i], &err) < 0) {
			sbx_error_free(&err);
			return false;
		}
	}
	return strcmp(now, text) == 0;
}

bool snapshot_key_current(const char *text)
{
	return key_matches(text, true);
}

bool snapshot_key_usable(const char *text)
{
	return key_matches(text, false);
}

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
	if (key != NULL)
		unlink(key);
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

static int save_into(struct qmp *q, const char *tmp, const char *key_text, const char *scratch, bool cow,
		     int64_t deadline, sbx_error_t *err)
{
	cleanup_free char *state = sbx_path_join(tmp, "state"), *copy = sbx_path_join(tmp, "scratch.ext4");
	if (state == NULL || copy == NULL)
		return sbx_error_errno(err, ENOMEM, "snapshot path");
	cleanup_close int fd = open(state, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return sbx_error_errno(err, errno, "create %s", state);
	/* QEMU's default migration bandwidth (32 MiB/s) is meant for a
	 * network; this goes to a local file. */
	if (qmp_call(q, "{\"execute\": \"migrate-set-parameters\", \"arguments\": {\"max-bandwidth\": 68719476736}}",
		     -1, NULL, 0, deadline, err) < 0 ||
	    (cow && qmp_call(q, SNAPSHOT_IGNORE_SHARED, -1, NULL, 0, deadline, err) < 0) ||
	    qmp_call(q, "{\"execute\": \"getfd\", \"arguments\": {\"fdname\": \"snapshot\"}}", fd, NULL, 0, deadline,
		     err) < 0 ||
	    qmp_call(q, "{\"execute\": \"migrate\", \"arguments\": {\"uri\": \"fd:snapshot\"}}", -1, NULL, 0, deadline,
		     err) < 0 ||
	    wait_migration(q, deadline, err) < 0)
		return -1;
	/* The disk is copied while the VM is stopped, so it matches the RAM
	 * (QEMU flushed it when the migration completed). */
	if (disk_clone(scratch, copy, err) < 0 || write_text(tmp, "key", key_text, err) < 0)
		return -1;
	return 0;
}

int snapshot_save(struct qmp *q, const char *key, const char *key_text, const char *scratch, char **pending,
		  int64_t deadline, sbx_error_t *err)
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
	if (!cow && qmp_call(q, "{\"execute\": \"stop\"}", -1, NULL, 0, deadline, err) < 0) {
		rmdir(tmp);
		return sbx_error_prefix(err, "snapshot");
	}
	int rc = save_into(q, tmp, key_text, scratch, cow, deadline, err);
	if (rc == 0 && cow) {
		*pending = sbx_steal_ptr(tmp);
		return 0;
	}
	if (rc == 0 && rename(tmp, final) < 0)
		rc = sbx_error_errno(err, errno, "rename %s", tmp);
	if (rc < 0)
		snapshot_remove_dir(tmp);
	if (cow)
		return sbx_error_prefix(err, "snapshot");
	/* The VM goes on either way: after a completed migration `cont`
	 * takes its disks back. */
	sbx_error_t cerr = NULL;
	if (qmp_call(q, "{\"execute\": \"cont\"}", -1, NULL, 0, sbx_now_ms() + 10000, &cerr) < 0) {
		if (rc == 0) {
			sbx_error_free(err);
			*err = cerr;
			cerr = NULL;
			rc = -1;
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
	if (rc == 0 && rename(pending, final) < 0)
		rc = sbx_error_errno(err, errno, "rename %s", pending);
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
