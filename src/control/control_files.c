/* The control socket's streams: cp into and out of a sandbox through the
 * fs path (adapter/fs/fs_stream.h: fs::write's and fs::read's checks),
 * and the VM's console log, followed until the sandbox goes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "adapter/fs/fs_stream.h"
#include "common/cleanup.h"
#include "control/control_ops.h"

#define LOGS_POLL_MS 200

/* Frames from the peer become the file's bytes; a peer that breaks the
 * framing cancels the write (nothing replaced). */
struct frames_in {
	struct control_reader *r;
	uint8_t *buf;
};

static ssize_t frames_source(void *ud, const void **data, sbx_error_t *err)
{
	struct frames_in *in = ud;
	ssize_t n = control_read_frame(in->r, in->buf, err);
	if (n > 0)
		*data = in->buf;
	return n;
}

int control_cp_in(const struct control_ctx *c, struct control_reader *r, int fd, const char *id,
		  const struct control_request *q, sbx_error_t *err)
{
	cleanup_free uint8_t *buf = malloc(CONTROL_FRAME_MAX);
	if (buf == NULL)
		return sbx_error_errno(err, ENOMEM, "cp buffer");
	struct frames_in in = { r, buf };
	json_t *out = NULL;
	if (sbx_fs_write_from(c->a, id, q->path, q->mode, frames_source, &in, &out) == 0)
		return control_send_ok(fd, out, err);
	int rc = control_send_body_error(fd, out, err);
	json_decref(out);
	return rc;
}

static int frames_sink(void *ud, const void *data, size_t len, sbx_error_t *err)
{
	return control_send_frame(*(int *)ud, data, len, err);
}

int control_cp_out(const struct control_ctx *c, int fd, const char *id, const struct control_request *q,
		   sbx_error_t *err)
{
	json_t *out = NULL;
	if (sbx_fs_read_into(c->a, id, q->path, frames_sink, &fd, &out) == 0)
		return control_send_ok(fd, out, err);
	int rc = control_send_body_error(fd, out, err);
	json_decref(out);
	return rc;
}

/* The console log's path, the log's first line (how the VM booted, as
 * "boot: ...\n"; NULL when the backend does not say) and whether the
 * sandbox still runs. */
static bool console_of(const struct control_ctx *c, const char *id, char **path, char **boot)
{
	json_t *rows = control_rows(c);
	bool running = false;
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r) {
		if (strcmp(json_string_value(json_object_get(r, "sandbox_id")), id) != 0)
			continue;
		running = strcmp(json_string_value(json_object_get(r, "state")), "running") == 0;
		const char *log = json_string_value(json_object_get(r, "console_log"));
		if (path != NULL && log != NULL)
			*path = strdup(log);
		const char *how = json_string_value(json_object_get(r, "boot"));
		if (boot != NULL && how != NULL && asprintf(boot, "boot: %s\n", how) < 0)
			*boot = NULL;
	}
	json_decref(rows);
	return running;
}

/* Sends what the log holds past *sent: 0, or -1 (the peer went). */
static int send_new(int fd, int log, uint8_t *buf, uint64_t *sent, sbx_error_t *err)
{
	for (;;) {
		ssize_t n = read(log, buf, CONTROL_FRAME_MAX);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sbx_error_errno(err, errno, "console log: read");
		if (n == 0)
			return 0;
		if (control_send_frame(fd, buf, (size_t)n, err) < 0)
			return -1;
		*sent += (uint64_t)n;
	}
}

int control_logs(const struct control_ctx *c, int fd, const char *id, const struct control_request *q,
		 sbx_error_t *err)
{
	cleanup_free char *path = NULL, *boot = NULL;
	if (!console_of(c, id, &path, &boot) || path == NULL) {
		sbx_error_t e = NULL;
		sbx_error_set(&e, ENOENT, "sandbox %s has no console log (not running)", id);
		int rc = control_send_err(fd, e, err);
		sbx_error_free(&e);
		return rc;
	}
	/* Opened while the VM runs: the file stays readable after its stop
	 * removes it. */
	cleanup_close int log = open(path, O_RDONLY | O_CLOEXEC);
	if (log < 0)
		return sbx_error_errno(err, errno, "console log %s", path);
	cleanup_free uint8_t *buf = malloc(CONTROL_FRAME_MAX);
	if (buf == NULL)
		return sbx_error_errno(err, ENOMEM, "log buffer");
	uint64_t sent = 0;
	if (boot != NULL) {
		size_t len = strlen(boot);
		if (control_send_frame(fd, boot, len, err) < 0)
			return -1;
		sent += len;
	}
	for (;;) {
		if (send_new(fd, log, buf, &sent, err) < 0)
			return -1;
		if (!q->follow || atomic_load(c->stopping) || !console_of(c, id, NULL, NULL))
			break;
		struct timespec ts = { 0, LOGS_POLL_MS * 1000000L };
		nanosleep(&ts, NULL);
	}
	/* What the guest wrote while it stopped. */
	if (send_new(fd, log, buf, &sent, err) < 0)
		return -1;
	return control_send_ok(fd, json_pack("{s:I}", "bytes", (json_int_t)sent), err);
}
