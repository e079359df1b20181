/* The snapshots on disk (snapshot_store.h). */
#include "adapter/snapshot/snapshot_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapter/pause/pause_record.h"
#include "adapter/request.h"
#include "common/cleanup.h"
#include "common/cleanup_json.h"
#include "common/log.h"
#include "common/path.h"
#include "common/scodes.h"
#include "common/state_dir.h"
#include "common/wall_time.h"
#include "vm/pause_dir.h"

/* A record is a few hundred bytes; a name at most NAME_MAX_LEN. */
#define RECORD_MAX_BYTES 65536
#define NAME_MAX_LEN 1024
#define IMAGE_MAX_LEN 4096

void snapshot_meta_free(struct snapshot_meta *m)
{
	free(m->name);
	free(m->image);
	memset(m, 0, sizeof(*m));
}

char *snapshot_root(sbx_error_t *err)
{
	/* Not `snapshots/`: the VM templates are there (vm/snapshot.h). */
	return sbx_state_subdir("sandbox-snapshots", err);
}

char *snapshot_path(const char *root, const char *prefix, const char *id, sbx_error_t *err)
{
	char *path = NULL;
	if (asprintf(&path, "%s/%s%s", root, prefix, id) < 0)
		return sbx_error_errno(err, ENOMEM, "snapshot path"), NULL;
	return path;
}

int snapshot_meta_write(const char *dir, const struct snapshot_meta *m, sbx_error_t *err)
{
	cleanup_json json_t *rec = json_pack(
		"{s:i, s:s, s:s, s:s?, s:s, s:I, s:I, s:b, s:I, s:I}", "format", SNAPSHOT_RECORD_FORMAT, "snapshot_id",
		m->id, "sandbox_id", m->source, "name", m->name, "image", m->image, "cpus", (json_int_t)m->cpus,
		"memory_mb", (json_int_t)m->memory_mb, "network", m->network, "size_bytes", (json_int_t)m->size_bytes,
		"created_ms", (json_int_t)m->created_ms);
	cleanup_free char *text = rec != NULL ? json_dumps(rec, JSON_COMPACT) : NULL;
	if (text == NULL)
		return sbx_error_errno(err, ENOMEM, "snapshot record");
	return pause_record_write_file(dir, PAUSE_SNAPSHOT, PAUSE_SNAPSHOT_NEW, text, err);
}

static int bad(sbx_error_t *err, const char *dir, const char *what)
{
	return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "%s/%s: %s", dir, PAUSE_SNAPSHOT, what);
}

/* A canonical id: what the daemon wrote, nothing a copied file could
 * make longer or different. */
static bool uuid_field(json_t *v, char out[SBX_UUID_STRLEN + 1])
{
	return json_is_string(v) && sbx_uuid_parse(json_string_value(v), out) &&
	       strcmp(out, json_string_value(v)) == 0;
}

static int from_json(json_t *o, const char *dir, struct snapshot_meta *m, sbx_error_t *err)
{
	json_t *name = json_object_get(o, "name"), *image = json_object_get(o, "image");
	if (!req_int_in(json_object_get(o, "format"), SNAPSHOT_RECORD_FORMAT, SNAPSHOT_RECORD_FORMAT))
		return bad(err, dir, "written by a build with another record format");
	if (!uuid_field(json_object_get(o, "snapshot_id"), m->id) ||
	    !uuid_field(json_object_get(o, "sandbox_id"), m->source))
		return bad(err, dir, "no snapshot or sandbox id");
	if ((name != NULL && !json_is_null(name) && !req_str_max(name, NAME_MAX_LEN)) || !req_str_max(image, IMAGE_MAX_LEN))
		return bad(err, dir, "name or image is not one");
	if (!req_int_in(json_object_get(o, "cpus"), 1, 1024) || !req_int_in(json_object_get(o, "memory_mb"), 1, 1 << 24) ||
	    !json_is_boolean(json_object_get(o, "network")) ||
	    !req_int_in(json_object_get(o, "size_bytes"), 0, INT64_MAX) ||
	    !req_int_in(json_object_get(o, "created_ms"), 0, INT64_MAX / 2))
		return bad(err, dir, "its shape is not numbers in range");
	m->name = json_is_string(name) ? strdup(json_string_value(name)) : NULL;
	m->image = strdup(json_string_value(image));
	if ((json_is_string(name) && m->name == NULL) || m->image == NULL)
		return sbx_error_errno(err, ENOMEM, "snapshot record");
	m->cpus = (uint32_t)json_integer_value(json_object_get(o, "cpus"));
	m->memory_mb = (uint32_t)json_integer_value(json_object_get(o, "memory_mb"));
	m->network = json_is_true(json_object_get(o, "network"));
	m->size_bytes = (uint64_t)json_integer_value(json_object_get(o, "size_bytes"));
	m->created_ms = json_integer_value(json_object_get(o, "created_ms"));
	return 0;
}

int snapshot_meta_read(const char *dir, struct snapshot_meta *m, sbx_error_t *err)
{
	memset(m, 0, sizeof(*m));
	cleanup_free char *path = sbx_path_join(dir, PAUSE_SNAPSHOT);
	if (path == NULL)
		return sbx_error_errno(err, ENOMEM, "snapshot record");
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode) || st.st_size > RECORD_MAX_BYTES)
		return bad(err, dir, "not a regular file within its bound");
	json_error_t jerr;
	cleanup_json json_t *rec = json_loadfd(fd, JSON_REJECT_DUPLICATES, &jerr);
	if (rec == NULL || !json_is_object(rec))
		return bad(err, dir, rec == NULL ? jerr.text : "not an object");
	if (from_json(rec, dir, m, err) < 0) {
		snapshot_meta_free(m);
		return -1;
	}
	return 0;
}

char *snapshot_store_find(const char *id, struct snapshot_meta *m, sbx_error_t *err)
{
	memset(m, 0, sizeof(*m));
	cleanup_free char *root = snapshot_root(err);
	if (root == NULL)
		return NULL;
	char *dir = snapshot_path(root, "", id, err);
	if (dir == NULL)
		return NULL;
	struct stat st;
	sbx_error_t why = NULL;
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || snapshot_meta_read(dir, m, &why) < 0 ||
	    strcmp(m->id, id) != 0) {
		if (why != NULL)
			sbx_warn("snapshot %s: %s", id, sbx_error_msg(why));
		sbx_error_free(&why);
		snapshot_meta_free(m);
		free(dir);
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "unknown snapshot_id '%s'", id), NULL;
	}
	return dir;
}

/* The snapshots directory, open, its path in *root; NULL without one. */
static DIR *open_root(char **root)
{
	sbx_error_t err = NULL;
	*root = snapshot_root(&err);
	sbx_error_free(&err);
	return *root != NULL ? opendir(*root) : NULL;
}

size_t snapshot_each(void (*fn)(const char *dir, const struct snapshot_meta *m, void *ud), void *ud)
{
	sbx_error_t err = NULL;
	cleanup_free char *root = NULL;
	DIR *d = open_root(&root);
	if (d == NULL)
		return 0;
	size_t n = 0;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		char id[SBX_UUID_STRLEN + 1];
		/* Only whole snapshots: named by their canonical id. */
		if (!sbx_uuid_parse(e->d_name, id) || strcmp(id, e->d_name) != 0)
			continue;
		cleanup_free char *dir = snapshot_path(root, "", id, &err);
		struct snapshot_meta m;
		if (dir == NULL || snapshot_meta_read(dir, &m, &err) < 0) {
			sbx_error_free(&err);
			continue;
		}
		if (strcmp(m.id, id) == 0) {
			fn(dir, &m, ud);
			n++;
		}
		snapshot_meta_free(&m);
	}
	closedir(d);
	return n;
}

static void add_bytes(const char *dir, const struct snapshot_meta *m, void *ud)
{
	(void)dir;
	*(uint64_t *)ud += m->size_bytes;
}

uint64_t snapshot_store_bytes(void)
{
	uint64_t total = 0;
	snapshot_each(add_bytes, &total);
	return total;
}

int snapshot_sync(const char *dir, sbx_error_t *err)
{
	cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return sbx_error_errno(err, errno, "open %s", dir);
	static const char *const names[] = { PAUSE_SCRATCH, PAUSE_STATE, PAUSE_IMAGE, PAUSE_VM, PAUSE_SANDBOX };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		cleanup_close int fd = openat(dfd, names[i], O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT)
			continue;
		if (fd < 0 || fsync(fd) < 0)
			return sbx_error_errno(err, errno, "sync %s/%s", dir, names[i]);
	}
	if (fsync(dfd) < 0)
		return sbx_error_errno(err, errno, "sync %s", dir);
	return 0;
}

bool snapshot_store_remove_dir(const char *dir)
{
	cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT;
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	/* Files only: the daemon never makes anything else in one. */
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		struct stat st;
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
			unlinkat(dfd, e->d_name, 0);
	}
	closedir(d);
	return rmdir(dir) == 0 || errno == ENOENT;
}

int snapshot_delete(const char *dir, const char *id, sbx_error_t *err)
{
	cleanup_free char *root = snapshot_root(err);
	cleanup_free char *gone = root != NULL ? snapshot_path(root, SNAPSHOT_GONE_PREFIX, id, err) : NULL;
	if (gone == NULL)
		return -1;
	if (rename(dir, gone) < 0)
		return sbx_error_scode(err, errno == ENOENT ? SBX_S_INVALID_REQUEST : SBX_S_VM_BOOT,
				       "snapshot %s: %s", id, errno == ENOENT ? "deleted already" : strerror(errno));
	/* Out of the list; a failure to remove the rest is the next daemon's
	 * sweep's. */
	if (!snapshot_store_remove_dir(gone))
		sbx_warn("snapshot %s: %s stays until the next start", id, gone);
	return 0;
}

unsigned snapshot_sweep(bool (*discard)(void *ctx, const char *dir), void *ctx)
{
	cleanup_free char *root = NULL;
	DIR *d = open_root(&root);
	if (d == NULL)
		return 0;
	unsigned n = 0;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		size_t len = strlen(e->d_name);
		bool lock = len > 5 && strcmp(e->d_name + len - 5, ".lock") == 0;
		cleanup_free char *path = sbx_path_join(root, e->d_name);
		if (path == NULL)
			continue;
		if (lock)
			path[strlen(path) - 5] = '\0';
		struct stat st;
		bool here = lstat(path, &st) == 0;
		if (strncmp(e->d_name, SNAPSHOT_CAPTURE_PREFIX, strlen(SNAPSHOT_CAPTURE_PREFIX)) == 0) {
			/* The source's pause: locked while a daemon captures (a
			 * lock left without its directory goes too). */
			if ((lock && !here) || (!lock && here && S_ISDIR(st.st_mode)))
				n += discard(ctx, path) && !lock;
		} else if (!lock && here && S_ISDIR(st.st_mode) &&
			   (strncmp(e->d_name, SNAPSHOT_NEW_PREFIX, strlen(SNAPSHOT_NEW_PREFIX)) == 0 ||
			    strncmp(e->d_name, SNAPSHOT_GONE_PREFIX, strlen(SNAPSHOT_GONE_PREFIX)) == 0)) {
			n += snapshot_store_remove_dir(path);
		}
	}
	closedir(d);
	if (n > 0)
		sbx_info("removed %u snapshot%s that never finished from %s", n, n == 1 ? "" : "s", root);
	return n;
}
