/* An fs operation in progress: the request runs in a forked child (a slow
 * grep never stalls the dispatcher's loop, and a crash in it cannot take
 * PID 1 down), which writes its result frames to a pipe; the dispatcher
 * reads that pipe as the CREDIT window and its output queue allow, and
 * forwards the frames. */
#ifndef SBX_GUEST_FS_CHILD_H
#define SBX_GUEST_FS_CHILD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "proto/proto_msg.h"
#include "proto/proto_reader.h"

struct fs_child {
	uint32_t stream;
	pid_t pid;
	int fd;           /* read end of the result pipe (nonblocking) */
	uint32_t unacked; /* FS_READ bytes sent, not yet credited by the host */
	struct proto_reader rd;
};

/* True for the request types served by a child (FS_LS ... FS_READ). */
bool fs_child_serves(uint8_t type);
/* Forks the child for request m. */
int fs_child_start(struct fs_child *c, const struct proto_msg *m, sbx_error_t *err);
/* Nothing may be read until the host credits more. */
bool fs_child_paused(const struct fs_child *c);
/* The host consumed n bytes; -1 when that is more than was sent. */
int fs_child_credit(struct fs_child *c, uint32_t n);

typedef void (*fs_child_emit_fn)(void *ctx, const struct proto_msg *m);
/* Reads a few times (a header, then its payload in place) and emits each
 * whole frame.  Returns 1 once the stream's
 * last message (FS_DONE, FS_ERROR, EXIT) went out, also a synthesized
 * FS_ERROR when the child died without one; 0 to be called again. */
int fs_child_pump(struct fs_child *c, fs_child_emit_fn emit, void *ctx);
/* Kills the child (if still running) and closes the pipe; the child is
 * reaped by the dispatcher's SIGCHLD handling. */
void fs_child_stop(struct fs_child *c);

#endif
