/* What every file of the control channel uses (channel_internal.h): the
 * wait, the lost connection, one frame sent, the stream by id.  Below
 * channel.c, channel_stream.c and channel_fs.c, so none of them calls
 * another's caller. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/clock.h"
#include "vm/channel_internal.h"

/* Waits on the condition; returns ETIMEDOUT once the deadline passed. */
int chan_wait_until(struct chan *c, int64_t deadline)
{
	if (deadline < 0)
		return pthread_cond_wait(&c->cond, &c->lock);
	if (sbx_now_ms() >= deadline)
		return ETIMEDOUT;
	struct timespec ts = sbx_ms_timespec(deadline);
	return pthread_cond_timedwait(&c->cond, &c->lock, &ts);
}

/* Called with the lock held. */
void chan_mark_dead(struct chan *c, const char *reason)
{
	if (c->dead)
		return;
	c->dead = true;
	c->dead_ms = sbx_now_ms();
	c->dead_reason = strdup(reason);
	for (struct chan_stream *s = c->streams; s != NULL; s = s->next) {
		if (!s->ended)
			s->ended = s->lost = true;
	}
	pthread_cond_broadcast(&c->cond);
}

int chan_dead_error(struct chan *c, sbx_error_t *err)
{
	return sbx_error_set(err, EPIPE, "VM control connection lost: %s",
			     c->dead_reason != NULL ? c->dead_reason : "closed");
}

/* One frame on the socket, whole: a partly written frame would
 * desynchronize the stream. */
static int send_frame(struct chan *c, const struct proto_msg *m, sbx_error_t *err)
{
	struct proto_wbuf out;
	proto_wbuf_init(&out);
	if (proto_msg_encode(&out, m, err) < 0) {
		proto_wbuf_free(&out);
		return -1;
	}
	int rc = 0;
	pthread_mutex_lock(&c->wlock);
	for (size_t off = 0; off < out.len;) {
		ssize_t n = send(c->fd, out.data + off, out.len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EPIPE;
			rc = sbx_error_errno(err, e, "VM control connection: send");
			pthread_mutex_lock(&c->lock);
			chan_mark_dead(c, "send failed");
			pthread_mutex_unlock(&c->lock);
			break;
		}
		off += (size_t)n;
	}
	pthread_mutex_unlock(&c->wlock);
	proto_wbuf_free(&out);
	return rc;
}

int chan_send_by(struct chan *c, const struct proto_msg *m, int64_t deadline, sbx_error_t *err)
{
	/* A pause holds every sender here, between frames; a dead channel
	 * lets them through to fail on the socket. */
	pthread_mutex_lock(&c->lock);
	int rc = 0;
	while (c->held && !c->dead && rc == 0)
		rc = chan_wait_until(c, deadline) == ETIMEDOUT ? -1 : 0;
	if (c->held && !c->dead) {
		pthread_mutex_unlock(&c->lock);
		return sbx_error_set(err, ETIMEDOUT, "the VM is paused");
	}
	c->sending++;
	pthread_mutex_unlock(&c->lock);
	rc = send_frame(c, m, err);
	pthread_mutex_lock(&c->lock);
	if (--c->sending == 0)
		pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int chan_send(struct chan *c, const struct proto_msg *m, sbx_error_t *err)
{
	return chan_send_by(c, m, -1, err);
}

int chan_send_held(struct chan *c, const struct proto_msg *m, sbx_error_t *err)
{
	return send_frame(c, m, err);
}

struct chan_stream *chan_find_stream(struct chan *c, uint32_t id)
{
	for (struct chan_stream *s = c->streams; s != NULL; s = s->next) {
		if (s->id == id)
			return s;
	}
	return NULL;
}
