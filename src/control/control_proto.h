/* The control socket's wire (docs/cli.md, Protocol), shared by the daemon's
 * server (control_server.c) and the CLI (cmd/control_client.c).
 *
 * One request per connection: the client sends one JSON line, at most
 * CONTROL_LINE_MAX bytes, {"op": ..., ...}; the server answers with lines
 * ending in one final {"ok": true, "result": ...} or {"ok": false, "error":
 * {"code", "message"}}.  Bytes (cp, logs, exec's output) travel as
 * frames: a line {"data": N} (exec's: {"data": N, "fd": 1 or 2}) then N raw
 * bytes, 1 <= N <= CONTROL_FRAME_MAX; the sender of a file ends it with
 * the line {"end": true}.
 *
 * exec with "stdin": true: the client sends the command's stdin as frames
 * and {"end": true} after the request, all of it (at most
 * CONTROL_STDIN_MAX bytes) before the command starts.  Closing the
 * connection while the command runs ends the command.
 *
 * shell: the server answers a first line {"terminal_id": ID} once the
 * terminal runs, then the screen as frames {"data": N} and the final line
 * {"ok": true, "result": {"exit_code": N}} when the command exited; the
 * client sends keys as frames (at most CONTROL_KEYS_MAX bytes each), a new
 * size as {"rows": R, "cols": C}, and {"end": true} when it has no more
 * keys (the command's stdin closes). */
#ifndef SBX_CONTROL_CONTROL_PROTO_H
#define SBX_CONTROL_CONTROL_PROTO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

/* Where serve listens and the CLI connects unless told otherwise. */
#define CONTROL_SOCKET_DEFAULT "/run/sandbox-libkrun/control.sock"
#define CONTROL_LINE_MAX (64u * 1024u)
#define CONTROL_FRAME_MAX (1024u * 1024u)
#define CONTROL_ARGV_MAX 4096u /* arguments of one exec */
#define CONTROL_TTY_DIM_MAX 1000u /* shell: rows, cols 1..this */
#define CONTROL_TERM_MAX 64u     /* shell: the client's $TERM */
#define CONTROL_KEYS_MAX (64u * 1024u) /* shell: one frame of keys */
#define CONTROL_STDIN_MAX (8u * 1024u * 1024u) /* exec with stdin: all of it */

/* A buffered reader over a socket: lines and exact byte counts. */
struct control_reader {
	int fd;
	size_t start, end;
	uint8_t buf[16384];
};

void control_reader_init(struct control_reader *r, int fd);
/* Reads one line (without its '\n') into a malloc'd NUL-terminated string:
 * 1, 0 at EOF before any byte, -1 on a read error, an over-long line
 * (more than `max` bytes before '\n'), EOF inside a line or a NUL byte. */
int control_read_line(struct control_reader *r, size_t max, char **line, sbx_error_t *err);
/* Reads exactly len bytes: 0, or -1 (EOF counts as an error). */
int control_read_exact(struct control_reader *r, void *buf, size_t len, sbx_error_t *err);
/* Reads one JSON object line: 1, 0 at EOF, -1 (bad JSON, not an object). */
int control_read_json(struct control_reader *r, json_t **obj, sbx_error_t *err);

/* Writes all of buf (MSG_NOSIGNAL): 0 or -1. */
int control_write_all(int fd, const void *buf, size_t len, sbx_error_t *err);
/* Writes `obj` as one compact line. */
int control_send_json(int fd, const json_t *obj, sbx_error_t *err);
int control_send_frame(int fd, const void *data, size_t len, sbx_error_t *err);
/* A frame of exec's output stream `stream` (1 or 2). */
int control_send_output(int fd, int stream, const void *data, size_t len, sbx_error_t *err);
int control_send_end(int fd, sbx_error_t *err);
/* The final lines.  send_ok takes `result`'s reference. */
int control_send_ok(int fd, json_t *result, sbx_error_t *err);
int control_send_error(int fd, const char *code, const char *message, sbx_error_t *err);

/* Reads the peer's next frame into buf (CONTROL_FRAME_MAX bytes): its
 * length, 0 at {"end": true}, -1 on anything else (the peer gone first
 * included). */
ssize_t control_read_frame(struct control_reader *r, uint8_t *buf, sbx_error_t *err);

/* One framed message: {"data": N} gives 1 with *len = N (checked against
 * CONTROL_FRAME_MAX) and *stream 1, or the frame's "fd" (1 or 2);
 * {"end": true} 0; anything else is an error.  `msg` is a line already
 * read. */
int control_frame_parse(const json_t *msg, size_t *len, int *stream, sbx_error_t *err);

/* A checked request: the op, then its own fields. */
enum control_op {
	CONTROL_PS,
	CONTROL_STATUS,
	CONTROL_EXEC,
	CONTROL_STOP,
	CONTROL_STAT,
	CONTROL_LS,
	CONTROL_MKDIR,
	CONTROL_CP_IN,
	CONTROL_CP_OUT,
	CONTROL_LOGS,
	CONTROL_SHELL,
	CONTROL_PROCESSES,
	CONTROL_PORT,
	CONTROL_SNAPSHOTS,
	CONTROL_SNAPSHOT_RM,
};

struct control_request {
	enum control_op op;
	const char *sandbox; /* id, unique id prefix or name (not ps, status) */
	const char *path;    /* stat, ls, mkdir, cp_in, cp_out */
	const char *mode;    /* cp_in, mkdir: octal, NULL = default */
	json_t *argv;        /* exec: non-empty array of strings; shell: NULL or one */
	uint64_t timeout_ms; /* exec: 0 = the daemon's default */
	bool stdin_frames;   /* exec: its stdin follows as frames, then {"end": true} */
	bool follow;         /* logs */
	uint16_t rows, cols; /* shell: 1..CONTROL_TTY_DIM_MAX */
	const char *term;    /* shell: NULL or 1..CONTROL_TERM_MAX bytes */
	const char *snapshot; /* snapshot_rm: the snapshot's id */
};

/* A terminal's size {"rows": R, "cols": C}, 1..CONTROL_TTY_DIM_MAX each. */
int control_size_parse(const json_t *msg, uint16_t *rows, uint16_t *cols, sbx_error_t *err);

/* Checks `req` (borrowed: the fields point into it): a known op, the
 * fields it needs with their types, no string over CONTROL_LINE_MAX. */
int control_request_parse(json_t *req, struct control_request *out, sbx_error_t *err);

/* The adapter's error body ({code: "invocation_failed", message: "handler
 * error: {envelope}"} or {code, message}) as the S-code and message an
 * operator reads: {code: "S002", message: "sandbox not found: ..."}. */
json_t *control_error_from_body(const json_t *body);

#endif
