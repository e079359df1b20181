/* A template's key: what a saved VM state depends on (the QEMU binary, the
 * guest kernel, the boot disk, the image, the VM's shape, the accelerator
 * and, under KVM, the host CPU as KVM presents it), hashed into the name
 * of its directory, and the checks of a recorded key against this host
 * and build. */
#include "vm/snapshot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/state_dir.h"
#include "vm/accel.h"
#include "vm/file_hash.h"
#include "vm/kvm_cpu.h"

#define KEY_TEXT_MAX SNAPSHOT_KEY_TEXT_MAX

/* Bumped when what a template holds changes meaning. */
/* 2: the balloon device; 3: copy-on-write RAM files; 4: sealed memfds, keyed
 * by content; 5: TCG guests without user-space ASLR (norandmaps); 6: TCG
 * CPUs without ERMS/FSRM (a kernel booted with them kept its rep movsb copies) */
#define SNAPSHOT_FORMAT 6
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

