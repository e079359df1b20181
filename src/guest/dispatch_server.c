/* What the loop (dispatch.c) and the kinds of stream (dispatch_proc.c,
 * dispatch_fs.c) share about the server: failing the connection, the
 * epoll watches, queueing messages to the host, and adding and ending
 * streams in the one table.  Calls nothing of the files above it. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/log.h"
#include "guest/dispatch_internal.h"

/* Ends the connection: framing and I/O errors cannot be confined to a
 * stream. */
void srv_conn_fail(struct server *s, sbx_error_t *e)
{
	sbx_err("guest: control connection: %s", sbx_error_msg(*e));
	if (s->stop == RUNNING) {
		s->stop = STOP_FAILED;
		s->failure = *e;
		*e = NULL;
	}
	sbx_error_free(e);
}

/* Registers, changes or removes (events == 0) a watch in the epoll set.
 * Paused fds leave the set entirely: a hung-up pipe would otherwise report
 * EPOLLHUP on every wait. */
int srv_watch_set(struct server *s, struct watch *w, uint32_t events, sbx_error_t *err)
{
	if (w->fd < 0 || w->events == events)
		return 0;
	struct epoll_event ev = { .events = events, .data.ptr = w };
	int op = w->events == 0 ? EPOLL_CTL_ADD : events == 0 ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;
	if (epoll_ctl(s->epfd, op, w->fd, &ev) < 0)
		return sbx_error_errno(err, errno, "epoll_ctl");
	w->events = events;
	return 0;
}

void srv_watch_close(struct server *s, struct watch *w)
{
	if (w->fd < 0)
		return;
	sbx_error_t ignored = NULL;
	srv_watch_set(s, w, 0, &ignored);
	sbx_error_free(&ignored);
	close(w->fd);
	w->fd = -1;
}

int srv_push(struct server *s, const struct proto_msg *m)
{
	sbx_error_t err = NULL;
	if (outq_push(&s->q, m, &err) < 0) {
		/* Out of memory or an unencodable message: the connection can
		 * no longer be trusted to carry complete streams. */
		srv_conn_fail(s, &err);
		return -1;
	}
	return 0;
}

void srv_push_error(struct server *s, uint32_t stream, const char *msg)
{
	struct proto_msg m = { .stream = stream, .type = PROTO_ERROR, .u.message = (char *)msg };
	srv_push(s, &m);
}

int srv_stream_add(struct server *s, struct stream *st)
{
	if (s->nstreams == s->cap) {
		size_t cap = s->cap > 0 ? s->cap * 2 : 16;
		struct stream **v = realloc(s->streams, cap * sizeof(*v));
		if (v == NULL)
			return -1;
		s->streams = v;
		s->cap = cap;
	}
	s->streams[s->nstreams++] = st;
	s->live[st->kind]++;
	return 0;
}

void srv_stream_end(struct server *s, struct stream *st)
{
	if (st->dead)
		return;
	st->dead = true;
	s->live[st->kind]--;
}
