/* Host end of the control protocol (proto/proto.h) over one VM's control
 * socket: a reader thread demultiplexes the guest's frames into streams
 * with bounded buffers, and CREDIT flow control runs both ways.  All
 * functions are thread-safe; many streams may be driven at once from
 * different threads.
 *
 * Deadlines are absolute CLOCK_MONOTONIC times in milliseconds
 * (sbx_now_ms() + timeout, common/clock.h), or -1 for none; a missed deadline fails with
 * errnum ETIMEDOUT. */
#ifndef SBX_VM_CHANNEL_H
#define SBX_VM_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/clock.h"
#include "common/error.h"
#include "proto/proto_msg.h"

struct chan;
struct chan_stream;
struct pause_chan;

enum chan_output { CHAN_STDOUT = 1, CHAN_STDERR = 2 };

/* Takes ownership of fd (a connected stream socket) and starts the reader. */
struct chan *chan_open(int fd, sbx_error_t *err);
/* Stops the reader, closes the socket, frees every stream still open. */
void chan_close(struct chan *c);
/* True once the connection ended (EOF, I/O or protocol error). */
bool chan_dead(struct chan *c);
/* When the connection ended (sbx_now_ms()): the guest's death as the
 * reader saw it, however late a caller looks; 0 while it lives. */
int64_t chan_dead_ms(struct chan *c);
/* True once the guest reported that applying CONFIG failed. */
bool chan_boot_failed(struct chan *c);

/* Boot: wait for HELLO, send CONFIG, wait for READY. */
int chan_wait_hello(struct chan *c, int64_t deadline, sbx_error_t *err);
int chan_send_config(struct chan *c, const struct proto_config *cfg, sbx_error_t *err);
int chan_wait_ready(struct chan *c, int64_t deadline, sbx_error_t *err);
int chan_ping(struct chan *c, int64_t deadline, sbx_error_t *err);
/* Before CONFIG: WARM_UP (proto.h), then waits until the guest is done. */
int chan_warm_up(struct chan *c, char *const *argv, int64_t deadline, sbx_error_t *err);
int chan_send_shutdown(struct chan *c, sbx_error_t *err);
/* Waits for the connection to end (the VM powered off). */
int chan_wait_dead(struct chan *c, int64_t deadline, sbx_error_t *err);

/* Pause (channel_pause.c).  chan_hold holds every sender at a frame
 * boundary (they wait, within their deadlines), waits until QEMU took
 * every byte sent (SIOCOUTQ 0) and makes the reader survive the end of
 * the socket: EALREADY when held already.  chan_release ends a hold
 * whose QEMU still runs (a failed pause).  chan_resume hands the reader
 * fd, the new QEMU's socket (owned), once it read the old one to its
 * end, sends `first` (RESUMED), releases the senders, then sends the
 * frames kept over the hold; on failure the connection is dead.
 * chan_abort_hold: a resume that never came so far: the connection is
 * dead (reason), every waiter fails. */
int chan_hold(struct chan *c, int64_t deadline, sbx_error_t *err);
void chan_release(struct chan *c);
int chan_resume(struct chan *c, int fd, const struct proto_msg *first, int64_t deadline, sbx_error_t *err);
void chan_abort_hold(struct chan *c, const char *reason);

/* Across processes (channel_adopt.c).  chan_save, on a channel a pause
 * holds (its QEMU ended): waits until the reader read that QEMU to its
 * end, then (until the deadline) for the streams' readers to take their
 * output, and describes the channel into *pc (free with
 * pause_chan_free).  chan_adopt makes a channel from such a
 * description, held as after chan_hold with no socket yet: chan_resume
 * gives it the resumed QEMU's; its streams are the saved ones, each
 * handed out once by chan_take_adopted (the stream whose guest pid is
 * `pid`, else NULL); chan_release_adopted releases those not taken
 * (their KILL waits for the resume). */
int chan_save(struct chan *c, int64_t deadline, struct pause_chan *pc, sbx_error_t *err);
struct chan *chan_adopt(const struct pause_chan *pc, sbx_error_t *err);
struct chan_stream *chan_take_adopted(struct chan *c, uint32_t pid);
void chan_release_adopted(struct chan *c);

/* Starts a process; with PROTO_SPAWN_STDIN in sp->flags, stdin stays open
 * for chan_stream_write. */
struct chan_stream *chan_spawn(struct chan *c, const struct proto_spawn *sp, sbx_error_t *err);
/* Starts a process on a terminal (PROTO_SPAWN_PTY): stdin stays open for
 * the keys (chan_stream_write), chan_stream_read gives the screen (always
 * CHAN_STDOUT).  Sizes outside 1..PROTO_MAX_TTY_DIM fail with EINVAL. */
struct chan_stream *chan_spawn_pty(struct chan *c, const struct proto_spawn_pty *sp, sbx_error_t *err);
/* Sets the terminal size of a chan_spawn_pty stream (PROTO_RESIZE; the
 * guest's kernel sends SIGWINCH).  EINVAL for another kind of stream or a
 * size outside 1..PROTO_MAX_TTY_DIM (nothing sent); 0 without sending
 * once the process ended. */
int chan_stream_resize(struct chan_stream *s, uint32_t rows, uint32_t cols, sbx_error_t *err);
/* Starts a file write (PROTO_FS_WRITE): send the bytes with
 * chan_stream_write, end with chan_stream_close_stdin, then
 * chan_stream_wait gives 0 or fails with the guest's errno. */
struct chan_stream *chan_fs_write(struct chan *c, const struct proto_fs_write *w, sbx_error_t *err);
/* Starts one of the other fs operations (FS_LS ... FS_READ; proto.h):
 * `req` is the request, its stream id is filled in here. */
struct chan_stream *chan_fs_start(struct chan *c, const struct proto_msg *req, sbx_error_t *err);
/* The next result message of an fs operation (FS_ENTRIES, FS_MATCHES,
 * FS_SED_FILES, FS_META): 1 with *m (free it with proto_msg_free), 0 once
 * FS_DONE arrived (*done filled), -1 on FS_ERROR (errnum = the guest's
 * errno, no S-code), or with S-code S219 when the guest does not know the
 * operation, S216 for a lost connection, a broken or oversized answer and
 * the deadline (errnum ETIMEDOUT: the call may be repeated).  FS_READ's
 * bytes come through chan_stream_read. */
int chan_fs_next(struct chan_stream *s, struct proto_msg *m, struct proto_fs_done *done, int64_t deadline,
		 sbx_error_t *err);
/* Sends up to len bytes of stdin (at least 1 when len > 0), blocking while
 * the guest's window is full; returns the count sent or -1. */
ssize_t chan_stream_write(struct chan_stream *s, const void *buf, size_t len, int64_t deadline,
			  sbx_error_t *err);
int chan_stream_close_stdin(struct chan_stream *s, sbx_error_t *err);
/* Reads output in arrival order; *which says stdout or stderr.  Returns 0
 * once the process ended and all its output was read. */
ssize_t chan_stream_read(struct chan_stream *s, enum chan_output *which, void *buf, size_t len,
			 int64_t deadline, sbx_error_t *err);
int chan_stream_kill(struct chan_stream *s, int sig, sbx_error_t *err);
/* Waits for the exit, discarding output not read yet; *code is the exit
 * status (0-255, 128+signal).  A stream the guest failed (ERROR) fails. */
int chan_stream_wait(struct chan_stream *s, int64_t deadline, int *code, sbx_error_t *err);
/* Guest pid once STARTED arrived, else 0. */
uint32_t chan_stream_pid(struct chan_stream *s);
/* Waits for STARTED: *pid once it came; fails when the stream ended
 * without it (the guest's ERROR, a lost connection) or on the deadline. */
int chan_stream_started(struct chan_stream *s, int64_t deadline, uint32_t *pid, sbx_error_t *err);
/* Kills the process if it is still running and frees the handle. */
void chan_stream_release(struct chan_stream *s);

#endif
