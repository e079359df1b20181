/* A paused sandbox's record (pause_record.h). */
#include "adapter/pause/pause_record.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "adapter/process/process_saved.h"
#include "adapter/process/process_table.h"
#include "adapter/request.h"
#include "common/cleanup.h"
#include "common/cleanup_json.h"
#include "common/path.h"
#include "common/scodes.h"
#include "common/uuid.h"
#include "common/wall_time.h"
#include "vm/pause_dir.h"

#define NAME_MAX_LEN 1024
#define IMAGE_MAX_LEN 4096

static int64_t mono_ms(struct timespec ts)
{
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A CLOCK_MONOTONIC time of this daemon as wall-clock ms, and back. */
static int64_t to_wall(struct timespec ts)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return sbx_wall_ms() - (mono_ms(now) - mono_ms(ts));
}

static struct timespec from_wall(int64_t wall)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	/* Before this boot, or later than now (a clock set back): the
	 * record's age counts from as far as it can, never from the future. */
	int64_t age = sbx_wall_ms() - wall;
	int64_t ms = mono_ms(now) - (age > 0 ? age : 0);
	return (struct timespec){ .tv_sec = ms / 1000 - (ms % 1000 < 0), .tv_nsec = ((ms % 1000 + 1000) % 1000) * 1000000 };
}

static json_t *sandbox_json(const struct sbx_sandbox *sb, uint64_t size_bytes)
{
	return json_pack("{s:s, s:s?, s:s, s:I, s:I, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:O?}", "id", sb->id, "name",
			 sb->name, "image", sb->image, "cpus", (json_int_t)sb->cpus, "memory_mb",
			 (json_int_t)sb->memory_mb, "network", sb->network, "idle_timeout_secs",
			 (json_int_t)sb->idle_timeout_secs, "created_ms", (json_int_t)to_wall(sb->created_at),
			 "last_exec_ms", (json_int_t)to_wall(sb->last_exec_at), "last_net_ms",
			 (json_int_t)(sb->last_net_at.tv_sec != 0 ? to_wall(sb->last_net_at) : 0), "paused_ms",
			 (json_int_t)sbx_wall_ms(), "paused_bytes", (json_int_t)size_bytes, "resume_mib",
			 (json_int_t)sb->mem_mib, "ports", sb->ports);
}

int pause_record_write_file(const char *dir, const char *name, const char *tmp_name, const char *text,
			    sbx_error_t *err)
{
	cleanup_free char *tmp = sbx_path_join(dir, tmp_name);
	cleanup_free char *path = sbx_path_join(dir, name);
	if (tmp == NULL || path == NULL)
		return sbx_error_errno(err, ENOMEM, "record %s", name);
	unlink(tmp);
	cleanup_close int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return sbx_error_errno(err, errno, "create %s", tmp);
	for (size_t off = 0, len = strlen(text); off < len;) {
		ssize_t n = write(fd, text + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;
			unlink(tmp);
			return sbx_error_errno(err, e, "write %s", tmp);
		}
		off += (size_t)n;
	}
	/* Its own bytes are whole before its name says the pause finished.
	 * The state beside it is not synced (vm_pause.c): a crash of the
	 * host loses the paused VM either way, and its resume then fails. */
	if (fsync(fd) < 0 || rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return sbx_error_errno(err, e, "keep %s", path);
	}
	return 0;
}

int pause_record_write(struct sbx_adapter *a, const struct sbx_sandbox *sb, uint64_t size_bytes, json_t *backend,
		       bool resume_next, const char *dir, sbx_error_t *err)
{
	json_t *procs = a->procs != NULL ? process_table_map(a->procs, sb->id, bg_proc_saved) : json_array();
	cleanup_json json_t *rec = json_pack("{s:i, s:o*, s:O?, s:o*, s:b, s:b}", "format", PAUSE_RECORD_FORMAT,
					     "sandbox", sandbox_json(sb, size_bytes), "backend", backend, "processes",
					     procs, "keep_alive",
					     a->procs != NULL && process_table_kept_alive(a->procs, sb->id),
					     "resume_next", resume_next);
	if (rec == NULL || json_object_get(rec, "sandbox") == NULL || json_object_get(rec, "processes") == NULL)
		return sbx_error_errno(err, ENOMEM, "paused sandbox record");
	/* A sandbox created from a snapshot says so after a restart too. */
	if (sb->snapshot_id[0] != '\0' && json_object_set_new(rec, "snapshot_id", json_string(sb->snapshot_id)) < 0)
		return sbx_error_errno(err, ENOMEM, "paused sandbox record");
	cleanup_free char *text = json_dumps(rec, JSON_COMPACT);
	if (text == NULL)
		return sbx_error_errno(err, ENOMEM, "paused sandbox record");
	return pause_record_write_file(dir, PAUSE_SANDBOX, PAUSE_SANDBOX_NEW, text, err);
}

static int bad(sbx_error_t *err, const char *dir, const char *what)
{
	return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "%s/%s: %s", dir, PAUSE_SANDBOX, what);
}

static int sandbox_from(json_t *o, const char *dir, struct sbx_sandbox *sb, sbx_error_t *err)
{
	json_t *id = json_object_get(o, "id"), *name = json_object_get(o, "name"), *image = json_object_get(o, "image");
	json_t *ports = json_object_get(o, "ports");
	if (!json_is_object(o) || !json_is_string(id) || !sbx_uuid_parse(json_string_value(id), sb->id) ||
	    strcmp(sb->id, json_string_value(id)) != 0)
		return bad(err, dir, "no sandbox id");
	if ((name != NULL && !json_is_null(name) && !req_str_max(name, NAME_MAX_LEN)) || !req_str_max(image, IMAGE_MAX_LEN))
		return bad(err, dir, "name or image is not one");
	if (!req_int_in(json_object_get(o, "cpus"), 1, 1024) || !req_int_in(json_object_get(o, "memory_mb"), 1, 1 << 24) ||
	    !json_is_boolean(json_object_get(o, "network")) ||
	    !req_int_in(json_object_get(o, "idle_timeout_secs"), 0, INT64_MAX / 1000) ||
	    !req_int_in(json_object_get(o, "paused_bytes"), 0, INT64_MAX) ||
	    !req_int_in(json_object_get(o, "resume_mib"), 0, 1 << 24))
		return bad(err, dir, "its shape is not numbers in range");
	static const char *const clocks[] = { "created_ms", "last_exec_ms", "last_net_ms", "paused_ms" };
	for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
		if (!req_int_in(json_object_get(o, clocks[i]), 0, INT64_MAX / 2))
			return bad(err, dir, "its clocks are not times");
	}
	if (ports != NULL && !json_is_null(ports) && !json_is_array(ports))
		return bad(err, dir, "ports is not a list");
	sb->name = json_is_string(name) ? strdup(json_string_value(name)) : NULL;
	sb->image = strdup(json_string_value(image));
	if ((json_is_string(name) && sb->name == NULL) || sb->image == NULL)
		return sbx_error_errno(err, ENOMEM, "paused sandbox record");
	sb->cpus = (uint32_t)json_integer_value(json_object_get(o, "cpus"));
	sb->memory_mb = (uint32_t)json_integer_value(json_object_get(o, "memory_mb"));
	sb->network = json_is_true(json_object_get(o, "network"));
	sb->idle_timeout_secs = (uint64_t)json_integer_value(json_object_get(o, "idle_timeout_secs"));
	sb->paused_bytes = (uint64_t)json_integer_value(json_object_get(o, "paused_bytes"));
	sb->resume_mib = (uint64_t)json_integer_value(json_object_get(o, "resume_mib"));
	sb->created_at = from_wall(json_integer_value(json_object_get(o, "created_ms")));
	sb->last_exec_at = from_wall(json_integer_value(json_object_get(o, "last_exec_ms")));
	int64_t net = json_integer_value(json_object_get(o, "last_net_ms"));
	if (net > 0)
		sb->last_net_at = from_wall(net);
	sb->paused_at = from_wall(json_integer_value(json_object_get(o, "paused_ms")));
	sb->ports = json_is_array(ports) ? json_incref(ports) : NULL;
	return 0;
}

int pause_record_read(const char *dir, size_t max_bytes, struct pause_record *r, sbx_error_t *err)
{
	memset(r, 0, sizeof(*r));
	cleanup_free char *path = sbx_path_join(dir, PAUSE_SANDBOX);
	if (path == NULL)
		return sbx_error_errno(err, ENOMEM, "paused sandbox record");
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT)
		return 1;
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return sbx_error_errno(err, errno, "open %s", path);
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > max_bytes)
		return bad(err, dir, "not a regular file within its bound");
	json_error_t jerr;
	cleanup_json json_t *rec = json_loadfd(fd, JSON_REJECT_DUPLICATES, &jerr);
	if (rec == NULL)
		return bad(err, dir, jerr.text);
	json_t *procs = json_object_get(rec, "processes"), *backend = json_object_get(rec, "backend");
	if (!req_int_in(json_object_get(rec, "format"), PAUSE_RECORD_FORMAT, PAUSE_RECORD_FORMAT))
		return bad(err, dir, "written by a build with another record format");
	json_t *resume_next = json_object_get(rec, "resume_next");
	json_t *sid = json_object_get(rec, "snapshot_id");
	char snapshot[SBX_UUID_STRLEN + 1] = "";
	if (sid != NULL && (!json_is_string(sid) || !sbx_uuid_parse(json_string_value(sid), snapshot) ||
			    strcmp(snapshot, json_string_value(sid)) != 0))
		return bad(err, dir, "snapshot_id is not a snapshot's id");
	if (!json_is_array(procs) || (backend != NULL && !json_is_object(backend)) ||
	    !json_is_boolean(json_object_get(rec, "keep_alive")) || (resume_next != NULL && !json_is_boolean(resume_next)))
		return bad(err, dir, "processes, backend, keep_alive or resume_next is not one");
	if (sandbox_from(json_object_get(rec, "sandbox"), dir, &r->sb, err) < 0) {
		pause_record_free(r);
		return -1;
	}
	r->procs = json_incref(procs);
	r->backend = backend != NULL ? json_incref(backend) : json_object();
	r->keep_alive = json_is_true(json_object_get(rec, "keep_alive"));
	r->resume_next = json_is_true(resume_next);
	memcpy(r->sb.snapshot_id, snapshot, sizeof(r->sb.snapshot_id));
	if (r->backend == NULL) {
		pause_record_free(r);
		return sbx_error_errno(err, ENOMEM, "paused sandbox record");
	}
	return 0;
}

void pause_record_free(struct pause_record *r)
{
	free(r->sb.name);
	free(r->sb.image);
	json_decref(r->sb.ports);
	json_decref(r->backend);
	json_decref(r->procs);
	memset(r, 0, sizeof(*r));
}
