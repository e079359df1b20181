/* The guest protocol server's insides, shared by dispatch.c (the loop and
 * the stream lookup), dispatch_server.c (the connection, watches, the
 * stream table: below the others), dispatch_proc.c (process streams),
 * dispatch_pty.c (processes on a terminal) and dispatch_fs.c (fs write and
 * fs operation streams).  Single-threaded: everything runs
 * on the epoll loop of dispatch_serve. */
#ifndef SBX_GUEST_DISPATCH_INTERNAL_H
#define SBX_GUEST_DISPATCH_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "guest/dispatch.h"
#include "guest/outq.h"
#include "proto/proto_msg.h"
#include "proto/proto_reader.h"

struct server;
struct stream;

enum watch_kind { W_PORT, W_SIGNAL, W_STDOUT, W_STDERR, W_STDIN, W_FS };

/* One fd in the epoll set; a stream's watches point back at it. */
struct watch {
	enum watch_kind kind;
	struct stream *st; /* NULL for the port and the signalfd */
	int fd;
	uint32_t events; /* currently registered; 0 = not in the epoll set */
};

enum stream_kind { STREAM_PROC, STREAM_PTY, STREAM_FS_WRITE, STREAM_FS_OP, STREAM_KINDS };

/* What each kind of stream does; every hook may be NULL but msg and fail. */
struct stream_ops {
	/* A host message on the stream that does not open one. */
	void (*msg)(struct server *s, struct stream *st, struct proto_msg *m);
	/* Ends the stream on a protocol error; the host hears msg (errnum
	 * where the stream's answer carries one). */
	void (*fail)(struct server *s, struct stream *st, int errnum, const char *msg);
	/* One of the stream's watches is ready. */
	void (*event)(struct server *s, struct stream *st, struct watch *w);
	/* Registers the watches the stream wants now. */
	int (*interest)(struct server *s, struct stream *st, sbx_error_t *err);
	/* A child was reaped (pid, wait status); pids are never signalled
	 * again once reaped. */
	void (*reaped)(struct server *s, struct stream *st, pid_t pid, int status);
	/* Ends what is due at `now`; returns ms until its next deadline, or
	 * -1 for none. */
	int64_t (*tick)(struct server *s, struct stream *st, int64_t now);
	/* The server stops: kill and close whatever still runs. */
	void (*stop)(struct server *s, struct stream *st);
	/* Frees a dead stream (after its watches are closed). */
	void (*destroy)(struct stream *st);
};

/* The head of every stream: one table holds them all. */
struct stream {
	uint32_t id;
	enum stream_kind kind;
	const struct stream_ops *ops;
	bool dead; /* ended: freed by the sweep at the top of the loop */
};

struct server {
	int port, epfd, sigfd;
	const struct dispatch_config *cfg;
	struct watch port_w, sig_w;
	struct proto_reader reader;
	struct outq q;
	struct stream **streams; /* live ones and those dead since the sweep */
	size_t nstreams, cap;
	size_t live[STREAM_KINDS]; /* live streams per kind, for the limits */
	enum { RUNNING, STOP_SHUTDOWN, STOP_CLOSED, STOP_FAILED } stop;
	sbx_error_t failure; /* with STOP_FAILED */
};

/* dispatch_server.c: the connection, watches and the stream table. */
void srv_conn_fail(struct server *s, sbx_error_t *e);
int srv_watch_set(struct server *s, struct watch *w, uint32_t events, sbx_error_t *err);
void srv_watch_close(struct server *s, struct watch *w);
/* Queues a message to the host; -1 once the connection failed. */
int srv_push(struct server *s, const struct proto_msg *m);
void srv_push_error(struct server *s, uint32_t stream, const char *msg);
/* Adds a new stream (id and kind set); -1 when out of memory. */
int srv_stream_add(struct server *s, struct stream *st);
/* Marks a stream ended; the sweep frees it. */
void srv_stream_end(struct server *s, struct stream *st);

/* The openers, by message type (dispatch_proc.c, dispatch_pty.c,
 * dispatch_fs.c). */
void srv_proc_open(struct server *s, struct proto_msg *m);
void srv_pty_open(struct server *s, struct proto_msg *m);
void srv_fs_write_stream_open(struct server *s, struct proto_msg *m);
void srv_fs_op_open(struct server *s, struct proto_msg *m);

#endif
