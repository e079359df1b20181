/* fs streams of the guest's protocol server: FS_WRITE (the bytes arrive as
 * STDIN under CREDIT, the file is replaced at STDIN_EOF) and the other fs
 * operations, each served by a forked child (fs_child.h) whose result
 * pipe is forwarded under the output queue's and the CREDIT window's
 * limits. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>

#include "guest/dispatch_internal.h"
#include "guest/fs_child.h"
#include "guest/fs_write.h"

/* A PROTO_FS_WRITE in progress. */
struct fs_stream {
	struct stream st;
	struct fs_write *w;
};

/* An fs operation served by a child. */
struct fsop {
	struct stream st;
	struct fs_child c;
	struct watch w; /* the child's result pipe */
};

static struct fs_stream *as_fs_stream(struct stream *st)
{
	return (struct fs_stream *)st;
}

static struct fsop *as_fsop(struct stream *st)
{
	return (struct fsop *)st;
}

/* Answers an fs stream with FS_ERROR: errno (EIO when it has none) and
 * message. */
static void push_fs_error(struct server *s, uint32_t stream, int errnum, const char *msg)
{
	struct proto_msg m = { .stream = stream, .type = PROTO_FS_ERROR };
	m.u.fs_error.errnum = errnum > 0 ? errnum : EIO;
	m.u.fs_error.message = (char *)msg;
	srv_push(s, &m);
}

/* Ends a file write: EXIT 0 when `e` is NULL, else FS_ERROR with its
 * errno. */
static void fs_end(struct server *s, struct fs_stream *f, sbx_error_t *e)
{
	srv_stream_end(s, &f->st);
	if (e != NULL && *e != NULL) {
		push_fs_error(s, f->st.id, (*e)->errnum, sbx_error_msg(*e));
		sbx_error_free(e);
		return;
	}
	struct proto_msg m = { .stream = f->st.id, .type = PROTO_EXIT, .u.code = 0 };
	srv_push(s, &m);
}

static void fs_write_fail(struct server *s, struct stream *st, int errnum, const char *msg)
{
	struct fs_stream *f = as_fs_stream(st);
	fs_write_abort(f->w);
	srv_stream_end(s, st);
	push_fs_error(s, st->id, errnum, msg);
}

static void fs_write_msg(struct server *s, struct stream *st, struct proto_msg *m)
{
	struct fs_stream *f = as_fs_stream(st);
	sbx_error_t err = NULL;
	switch (m->type) {
	case PROTO_STDIN:
		if (fs_write_data(f->w, m->u.data.data, m->u.data.len, &err) < 0) {
			fs_write_abort(f->w);
			fs_end(s, f, &err);
		} else if (m->u.data.len > 0) {
			struct proto_msg c = { .stream = st->id, .type = PROTO_CREDIT };
			c.u.credit = (uint32_t)m->u.data.len;
			srv_push(s, &c);
		}
		break;
	case PROTO_STDIN_EOF:
		if (fs_write_finish(f->w, &err) < 0)
			fs_end(s, f, &err);
		else
			fs_end(s, f, NULL);
		break;
	case PROTO_KILL:
		fs_write_fail(s, st, ECANCELED, "write cancelled");
		break;
	default: {
		char msg[96];
		snprintf(msg, sizeof(msg), "unexpected %s during a file write", proto_type_name(m->type));
		fs_write_fail(s, st, EPROTO, msg);
		break;
	}
	}
}

static void fs_write_stop(struct server *s, struct stream *st)
{
	fs_write_abort(as_fs_stream(st)->w);
	srv_stream_end(s, st);
}

static void fs_stream_destroy(struct stream *st)
{
	free(st);
}

static const struct stream_ops fs_write_ops = {
	.msg = fs_write_msg,
	.fail = fs_write_fail,
	.stop = fs_write_stop,
	.destroy = fs_stream_destroy,
};

void srv_fs_write_stream_open(struct server *s, struct proto_msg *m)
{
	if (s->live[STREAM_FS_WRITE] >= DISPATCH_MAX_FS_WRITES) {
		srv_push_error(s, m->stream, "too many file writes");
		return;
	}
	struct fs_stream *f = calloc(1, sizeof(*f));
	if (f != NULL)
		f->st = (struct stream){ .id = m->stream, .kind = STREAM_FS_WRITE, .ops = &fs_write_ops };
	if (f == NULL || srv_stream_add(s, &f->st) < 0) {
		free(f);
		push_fs_error(s, m->stream, ENOMEM, "out of memory");
		return;
	}
	sbx_error_t err = NULL;
	f->w = fs_write_open(&m->u.fs_write, &err);
	if (f->w == NULL)
		fs_end(s, f, &err);
}

static void fsop_end(struct server *s, struct fsop *o)
{
	srv_watch_close(s, &o->w);
	o->c.fd = -1; /* closed with the watch */
	fs_child_stop(&o->c);
	srv_stream_end(s, &o->st);
}

/* Ends an fs operation early: the child is killed, the host hears why. */
static void fsop_cancel(struct server *s, struct stream *st, int errnum, const char *msg)
{
	fsop_end(s, as_fsop(st));
	push_fs_error(s, st->id, errnum, msg);
}

static void fsop_emit(void *ctx, const struct proto_msg *m)
{
	srv_push(ctx, m);
}

static void fsop_event(struct server *s, struct stream *st, struct watch *w)
{
	struct fsop *o = as_fsop(st);
	if (fs_child_pump(&o->c, fsop_emit, s) == 1)
		fsop_end(s, o);
}

/* Host messages on a stream an fs operation owns. */
static void fsop_msg(struct server *s, struct stream *st, struct proto_msg *m)
{
	if (m->type == PROTO_CREDIT) {
		if (fs_child_credit(&as_fsop(st)->c, m->u.credit) < 0)
			fsop_cancel(s, st, EPROTO, "CREDIT for more than was sent");
	} else if (m->type == PROTO_KILL) {
		fsop_cancel(s, st, ECANCELED, "fs operation cancelled");
	} else {
		char msg[96];
		snprintf(msg, sizeof(msg), "unexpected %s during an fs operation", proto_type_name(m->type));
		fsop_cancel(s, st, EPROTO, msg);
	}
}

static int fsop_interest(struct server *s, struct stream *st, sbx_error_t *err)
{
	struct fsop *o = as_fsop(st);
	return srv_watch_set(s, &o->w, outq_full(&s->q) || fs_child_paused(&o->c) ? 0 : EPOLLIN, err);
}

static void fsop_reaped(struct server *s, struct stream *st, pid_t pid, int status)
{
	struct fsop *o = as_fsop(st);
	if (o->c.pid == pid)
		o->c.pid = 0;
}

static void fsop_stop(struct server *s, struct stream *st)
{
	fsop_end(s, as_fsop(st));
}

static const struct stream_ops fsop_ops = {
	.msg = fsop_msg,
	.fail = fsop_cancel,
	.event = fsop_event,
	.interest = fsop_interest,
	.reaped = fsop_reaped,
	.stop = fsop_stop,
	.destroy = fs_stream_destroy,
};

void srv_fs_op_open(struct server *s, struct proto_msg *m)
{
	if (s->live[STREAM_FS_OP] >= DISPATCH_MAX_FS_OPS) {
		push_fs_error(s, m->stream, EAGAIN, "too many fs operations in flight");
		return;
	}
	struct fsop *o = calloc(1, sizeof(*o));
	cleanup_error sbx_error_t err = NULL;
	if (o == NULL || fs_child_start(&o->c, m, &err) < 0) {
		push_fs_error(s, m->stream, err != NULL && err->errnum > 0 ? err->errnum : ENOMEM,
			      err != NULL ? sbx_error_msg(err) : "out of memory");
		free(o);
		return;
	}
	o->st = (struct stream){ .id = m->stream, .kind = STREAM_FS_OP, .ops = &fsop_ops };
	o->w = (struct watch){ W_FS, &o->st, o->c.fd, 0 };
	if (srv_stream_add(s, &o->st) < 0) {
		fs_child_stop(&o->c);
		free(o);
		push_fs_error(s, m->stream, ENOMEM, "out of memory");
	}
}
