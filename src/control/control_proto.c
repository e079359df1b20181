/* The control socket's wire (control_proto.h): bounded lines, frames and
 * the request check.  Everything read here comes from a peer: sizes are
 * checked before anything is allocated for them. */
#include "control/control_proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void control_reader_init(struct control_reader *r, int fd)
{
	r->fd = fd;
	r->start = r->end = 0;
}

/* Refills an empty buffer: >0, 0 at EOF, -1. */
static ssize_t fill(struct control_reader *r, sbx_error_t *err)
{
	for (;;) {
		ssize_t n = read(r->fd, r->buf, sizeof(r->buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sbx_error_errno(err, errno, "control socket: read");
		r->start = 0;
		r->end = (size_t)n;
		return n;
	}
}

int control_read_line(struct control_reader *r, size_t max, char **line, sbx_error_t *err)
{
	*line = NULL;
	char *out = NULL;
	size_t len = 0;
	for (;;) {
		if (r->start == r->end) {
			ssize_t n = fill(r, err);
			if (n < 0)
				goto fail;
			if (n == 0 && len == 0 && out == NULL)
				return 0;
			if (n == 0) {
				sbx_error_set(err, EPROTO, "control socket: the peer closed inside a line");
				goto fail;
			}
		}
		uint8_t *nl = memchr(r->buf + r->start, '\n', r->end - r->start);
		size_t take = (nl != NULL ? (size_t)(nl - r->buf) : r->end) - r->start;
		if (take > max - len) {
			sbx_error_set(err, EMSGSIZE, "control socket: a line longer than %zu bytes", max);
			goto fail;
		}
		if (memchr(r->buf + r->start, '\0', take) != NULL) {
			sbx_error_set(err, EPROTO, "control socket: a NUL byte in a line");
			goto fail;
		}
		char *grown = realloc(out, len + take + 1);
		if (grown == NULL) {
			sbx_error_errno(err, ENOMEM, "control socket: line");
			goto fail;
		}
		out = grown;
		memcpy(out + len, r->buf + r->start, take);
		len += take;
		out[len] = '\0';
		r->start += take + (nl != NULL ? 1 : 0);
		if (nl != NULL) {
			*line = out;
			return 1;
		}
	}
fail:
	free(out);
	return -1;
}

int control_read_exact(struct control_reader *r, void *buf, size_t len, sbx_error_t *err)
{
	uint8_t *p = buf;
	while (len > 0) {
		if (r->start == r->end) {
			ssize_t n = fill(r, err);
			if (n < 0)
				return -1;
			if (n == 0)
				return sbx_error_set(err, EPROTO, "control socket: the peer closed inside a frame");
		}
		size_t take = r->end - r->start < len ? r->end - r->start : len;
		memcpy(p, r->buf + r->start, take);
		r->start += take;
		p += take;
		len -= take;
	}
	return 0;
}

int control_read_json(struct control_reader *r, json_t **obj, sbx_error_t *err)
{
	*obj = NULL;
	char *line;
	int rc = control_read_line(r, CONTROL_LINE_MAX, &line, err);
	if (rc <= 0)
		return rc;
	json_error_t jerr;
	json_t *v = json_loads(line, JSON_REJECT_DUPLICATES, &jerr);
	free(line);
	if (v == NULL)
		return sbx_error_set(err, EPROTO, "control socket: not JSON: %s", jerr.text);
	if (!json_is_object(v)) {
		json_decref(v);
		return sbx_error_set(err, EPROTO, "control socket: a message must be a JSON object");
	}
	*obj = v;
	return 1;
}

int control_write_all(int fd, const void *buf, size_t len, sbx_error_t *err)
{
	const uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sbx_error_errno(err, errno, "control socket: write");
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int control_send_json(int fd, const json_t *obj, sbx_error_t *err)
{
	char *s = json_dumps(obj, JSON_COMPACT);
	if (s == NULL)
		return sbx_error_errno(err, ENOMEM, "control socket: message");
	size_t n = strlen(s);
	int rc = control_write_all(fd, s, n, err);
	if (rc == 0)
		rc = control_write_all(fd, "\n", 1, err);
	free(s);
	return rc;
}

static int send_packed(int fd, json_t *obj, sbx_error_t *err)
{
	if (obj == NULL)
		return sbx_error_errno(err, ENOMEM, "control socket: message");
	int rc = control_send_json(fd, obj, err);
	json_decref(obj);
	return rc;
}

int control_send_frame(int fd, const void *data, size_t len, sbx_error_t *err)
{
	if (len == 0)
		return 0;
	if (send_packed(fd, json_pack("{s:I}", "data", (json_int_t)len), err) < 0)
		return -1;
	return control_write_all(fd, data, len, err);
}

int control_send_output(int fd, int stream, const void *data, size_t len, sbx_error_t *err)
{
	if (len == 0)
		return 0;
	if (send_packed(fd, json_pack("{s:I, s:i}", "data", (json_int_t)len, "fd", stream), err) < 0)
		return -1;
	return control_write_all(fd, data, len, err);
}

int control_send_end(int fd, sbx_error_t *err)
{
	return send_packed(fd, json_pack("{s:b}", "end", true), err);
}

int control_send_ok(int fd, json_t *result, sbx_error_t *err)
{
	return send_packed(fd, json_pack("{s:b, s:o}", "ok", true, "result", result != NULL ? result : json_null()),
			   err);
}

int control_send_error(int fd, const char *code, const char *message, sbx_error_t *err)
{
	return send_packed(fd, json_pack("{s:b, s:{s:s, s:s}}", "ok", false, "error", "code", code, "message", message),
			   err);
}

int control_frame_parse(const json_t *msg, size_t *len, int *stream, sbx_error_t *err)
{
	*len = 0;
	*stream = 1;
	if (json_object_size(msg) == 1 && json_is_true(json_object_get(msg, "end")))
		return 0;
	json_t *d = json_object_get(msg, "data");
	json_t *s = json_object_get(msg, "fd");
	if (s != NULL && (!json_is_integer(s) || json_integer_value(s) < 1 || json_integer_value(s) > 2))
		return sbx_error_set(err, EPROTO, "control socket: a frame's fd is 1 or 2");
	if (json_object_size(msg) != (s != NULL ? 2u : 1u) || !json_is_integer(d))
		return sbx_error_set(err, EPROTO, "control socket: expected {\"data\": N} or {\"end\": true}");
	if (s != NULL)
		*stream = (int)json_integer_value(s);
	json_int_t n = json_integer_value(d);
	if (n < 1 || n > (json_int_t)CONTROL_FRAME_MAX)
		return sbx_error_set(err, EPROTO, "control socket: a frame of %lld bytes (1 to %u)", (long long)n,
				     CONTROL_FRAME_MAX);
	*len = (size_t)n;
	return 1;
}

ssize_t control_read_frame(struct control_reader *r, uint8_t *buf, sbx_error_t *err)
{
	json_t *msg;
	int rc = control_read_json(r, &msg, err);
	if (rc == 0)
		return sbx_error_set(err, EPROTO, "control socket: the peer closed before {\"end\": true}");
	if (rc < 0)
		return -1;
	size_t len;
	int stream;
	rc = control_frame_parse(msg, &len, &stream, err);
	json_decref(msg);
	if (rc <= 0)
		return rc;
	if (control_read_exact(r, buf, len, err) < 0)
		return -1;
	return (ssize_t)len;
}

static const struct {
	const char *name;
	enum control_op op;
	bool sandbox, path;
} OPS[] = {
	{ "ps", CONTROL_PS, false, false },	    { "status", CONTROL_STATUS, false, false },
	{ "exec", CONTROL_EXEC, true, false },	    { "stop", CONTROL_STOP, true, false },
	{ "stat", CONTROL_STAT, true, true },	    { "ls", CONTROL_LS, true, true },
	{ "mkdir", CONTROL_MKDIR, true, true },	    { "cp_in", CONTROL_CP_IN, true, true },
	{ "cp_out", CONTROL_CP_OUT, true, true },   { "logs", CONTROL_LOGS, true, false },
	{ "shell", CONTROL_SHELL, true, false },    { "processes", CONTROL_PROCESSES, true, false },
	{ "port", CONTROL_PORT, true, false },	    { "snapshots", CONTROL_SNAPSHOTS, false, false },
	{ "snapshot_rm", CONTROL_SNAPSHOT_RM, false, false },
};

/* A string field: NULL when absent and not required. */
static int string_field(json_t *req, const char *key, bool required, const char **out, sbx_error_t *err)
{
	json_t *v = json_object_get(req, key);
	*out = NULL;
	if (v == NULL) {
		if (required)
			return sbx_error_set(err, EINVAL, "missing field `%s`", key);
		return 0;
	}
	if (!json_is_string(v) || json_string_length(v) == 0)
		return sbx_error_set(err, EINVAL, "field `%s`: expected a non-empty string", key);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return sbx_error_set(err, EINVAL, "field `%s`: holds a NUL byte", key);
	*out = json_string_value(v);
	return 0;
}

static int parse_argv(json_t *argv, struct control_request *out, sbx_error_t *err)
{
	if (!json_is_array(argv) || json_array_size(argv) == 0)
		return sbx_error_set(err, EINVAL, "field `argv`: expected a non-empty array of strings");
	if (json_array_size(argv) > CONTROL_ARGV_MAX)
		return sbx_error_set(err, EINVAL, "field `argv`: more than %u arguments", CONTROL_ARGV_MAX);
	size_t i;
	json_t *v;
	json_array_foreach(argv, i, v) {
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
			return sbx_error_set(err, EINVAL, "field `argv[%zu]`: expected a string without NUL bytes", i);
	}
	out->argv = argv;
	return 0;
}

static int parse_exec(json_t *req, struct control_request *out, sbx_error_t *err)
{
	if (parse_argv(json_object_get(req, "argv"), out, err) < 0)
		return -1;
	json_t *t = json_object_get(req, "timeout_ms");
	if (t != NULL && (!json_is_integer(t) || json_integer_value(t) < 0))
		return sbx_error_set(err, EINVAL, "field `timeout_ms`: expected an unsigned integer");
	out->timeout_ms = t != NULL ? (uint64_t)json_integer_value(t) : 0;
	json_t *in = json_object_get(req, "stdin");
	if (in != NULL && !json_is_boolean(in))
		return sbx_error_set(err, EINVAL, "field `stdin`: expected a boolean (its bytes follow as frames)");
	out->stdin_frames = json_is_true(in);
	return 0;
}

/* A terminal's size: 1..CONTROL_TTY_DIM_MAX each (shell's request, and
 * its resize messages). */
int control_size_parse(const json_t *msg, uint16_t *rows, uint16_t *cols, sbx_error_t *err)
{
	json_t *r = json_object_get(msg, "rows");
	json_t *c = json_object_get(msg, "cols");
	if (!json_is_integer(r) || !json_is_integer(c) || json_integer_value(r) < 1 ||
	    json_integer_value(r) > CONTROL_TTY_DIM_MAX || json_integer_value(c) < 1 ||
	    json_integer_value(c) > CONTROL_TTY_DIM_MAX)
		return sbx_error_set(err, EINVAL, "fields `rows`, `cols`: integers 1 to %u", CONTROL_TTY_DIM_MAX);
	*rows = (uint16_t)json_integer_value(r);
	*cols = (uint16_t)json_integer_value(c);
	return 0;
}

static int parse_shell(json_t *req, struct control_request *out, sbx_error_t *err)
{
	json_t *argv = json_object_get(req, "argv");
	if (argv != NULL && parse_argv(argv, out, err) < 0)
		return -1;
	if (control_size_parse(req, &out->rows, &out->cols, err) < 0)
		return -1;
	if (string_field(req, "term", false, &out->term, err) < 0)
		return -1;
	if (out->term != NULL && strlen(out->term) > CONTROL_TERM_MAX)
		return sbx_error_set(err, EINVAL, "field `term`: at most %u bytes", CONTROL_TERM_MAX);
	return 0;
}

int control_request_parse(json_t *req, struct control_request *out, sbx_error_t *err)
{
	memset(out, 0, sizeof(*out));
	if (!json_is_object(req))
		return sbx_error_set(err, EINVAL, "a request must be a JSON object");
	const char *name;
	if (string_field(req, "op", true, &name, err) < 0)
		return -1;
	size_t i = 0;
	while (i < sizeof(OPS) / sizeof(OPS[0]) && strcmp(OPS[i].name, name) != 0)
		i++;
	if (i == sizeof(OPS) / sizeof(OPS[0]))
		return sbx_error_set(err, EINVAL, "unknown op `%.64s`", name);
	out->op = OPS[i].op;
	if (OPS[i].sandbox && string_field(req, "sandbox", true, &out->sandbox, err) < 0)
		return -1;
	if (OPS[i].path && string_field(req, "path", true, &out->path, err) < 0)
		return -1;
	if ((out->op == CONTROL_CP_IN || out->op == CONTROL_MKDIR) && string_field(req, "mode", false, &out->mode, err) < 0)
		return -1;
	if (out->op == CONTROL_SNAPSHOT_RM && string_field(req, "snapshot", true, &out->snapshot, err) < 0)
		return -1;
	if (out->op == CONTROL_EXEC)
		return parse_exec(req, out, err);
	if (out->op == CONTROL_SHELL)
		return parse_shell(req, out, err);
	if (out->op == CONTROL_LOGS) {
		json_t *f = json_object_get(req, "follow");
		if (f != NULL && !json_is_boolean(f))
			return sbx_error_set(err, EINVAL, "field `follow`: expected a boolean");
		out->follow = json_is_true(f);
	}
	return 0;
}

json_t *control_error_from_body(const json_t *body)
{
	const char *code = json_string_value(json_object_get(body, "code"));
	const char *msg = json_string_value(json_object_get(body, "message"));
	static const char prefix[] = "handler error: ";
	if (msg != NULL && strncmp(msg, prefix, sizeof(prefix) - 1) == 0) {
		json_t *env = json_loads(msg + sizeof(prefix) - 1, 0, NULL);
		const char *ecode = json_string_value(json_object_get(env, "code"));
		const char *emsg = json_string_value(json_object_get(env, "message"));
		json_t *out = ecode != NULL && emsg != NULL ? json_pack("{s:s, s:s}", "code", ecode, "message", emsg) : NULL;
		json_decref(env);
		if (out != NULL)
			return out;
	}
	return json_pack("{s:s, s:s}", "code", code != NULL ? code : "error", "message", msg != NULL ? msg : "failed");
}
