/* The control channel over a pause (channel.h chan_hold, chan_resume):
 * the host's frames are held at a frame boundary, the old QEMU takes
 * every byte already sent (SIOCOUTQ), and the reader outlives that
 * QEMU's end: its EOF is followed by the new QEMU's socket, read on with
 * the partial frame it had.  The guest never sees its port close, so
 * nothing of the connection is lost.  Between channel.c (its reader
 * calls chan_take_next_fd) and channel_link.c. */
#include <errno.h>
#include <linux/sockios.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "vm/channel_internal.h"

#define SEND_TIMEOUT_S 15 /* as chan_open sets on the first socket */
#define OUTQ_POLL_US 1000

/* The bytes of the frame the reader has in part (lock held): a save
 * writes them, an adopting process feeds them to its reader first.  A
 * frame just completed (its header and payload whole) is no part. */
static void stash_partial(struct chan *c, const struct proto_reader *rd)
{
	size_t hdr = rd->hdr_have, body = hdr == PROTO_HEADER_SIZE ? rd->payload_have : 0;
	if (hdr == PROTO_HEADER_SIZE && body == rd->h.length)
		hdr = body = 0;
	free(c->partial);
	c->partial = NULL;
	c->partial_len = 0;
	c->partial_lost = false;
	if (hdr == 0)
		return;
	if ((c->partial = malloc(hdr + body)) == NULL) {
		c->partial_lost = true;
		return;
	}
	memcpy(c->partial, rd->hdr, hdr);
	if (body > 0)
		memcpy(c->partial + hdr, rd->payload, body);
	c->partial_len = hdr + body;
}

bool chan_take_next_fd(struct chan *c, const struct proto_reader *rd)
{
	pthread_mutex_lock(&c->lock);
	if (c->swapping && c->next_fd < 0 && !c->closing) {
		stash_partial(c, rd);
		c->parked = true;
		pthread_cond_broadcast(&c->cond);
	}
	while (c->swapping && c->next_fd < 0 && !c->closing)
		pthread_cond_wait(&c->cond, &c->lock);
	c->parked = false;
	free(c->partial);
	c->partial = NULL;
	c->partial_len = 0;
	bool go = c->swapping && c->next_fd >= 0 && !c->closing;
	if (go) {
		/* Only the reader reads c->fd while a hold keeps the senders
		 * out, so it may change here (an adopted channel has none
		 * before its first). */
		if (c->fd >= 0)
			close(c->fd);
		c->fd = c->next_fd;
		c->next_fd = -1;
		c->swapping = false;
		c->swapped = true;
		pthread_cond_broadcast(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
	return go;
}

int chan_defer_kill(struct chan *c, uint32_t id, uint32_t sig, sbx_error_t *err)
{
	pthread_mutex_lock(&c->lock);
	bool held = c->held && !c->dead;
	/* A signal already queued for the stream is pending once more, as
	 * the kernel keeps a standard signal pending once: the list stays
	 * within the streams times the signals however often a caller asks. */
	for (size_t i = 0; held && i < c->n_kills; i++) {
		if (c->kills[i].id == id && c->kills[i].sig == sig) {
			pthread_mutex_unlock(&c->lock);
			return 1;
		}
	}
	if (held && c->n_kills == c->cap_kills) {
		size_t cap = c->cap_kills ? c->cap_kills * 2 : 8;
		struct chan_kill *k = realloc(c->kills, cap * sizeof(*k));
		if (k == NULL) {
			pthread_mutex_unlock(&c->lock);
			return sbx_error_set(err, ENOMEM, "a signal kept for the resume");
		}
		c->kills = k;
		c->cap_kills = cap;
	}
	if (held)
		c->kills[c->n_kills++] = (struct chan_kill){ .id = id, .sig = sig };
	pthread_mutex_unlock(&c->lock);
	return held ? 1 : 0;
}

int chan_send_kill(struct chan *c, uint32_t id, uint32_t sig, sbx_error_t *err)
{
	struct proto_msg m = { .stream = id, .type = PROTO_KILL, .u.signal = sig };
	for (;;) {
		int kept = chan_defer_kill(c, id, sig, err);
		if (kept != 0)
			return kept < 0 ? -1 : 0;
		/* Not held: sent now, with a deadline already past, so that a
		 * hold begun meanwhile turns it back (the frame not sent, the
		 * channel alive) to be kept instead of waited out. */
		if (chan_send_by(c, &m, 0, err) == 0)
			return 0;
		pthread_mutex_lock(&c->lock);
		bool held = c->held && !c->dead;
		pthread_mutex_unlock(&c->lock);
		if (!held)
			return -1;
		sbx_error_free(err);
	}
}

bool chan_defer_credit(struct chan_stream *s, size_t credit)
{
	struct chan *c = s->c;
	pthread_mutex_lock(&c->lock);
	bool held = c->held && !c->dead;
	if (held)
		s->uncredited += credit;
	pthread_mutex_unlock(&c->lock);
	return held;
}

/* Ends the hold; waiting senders go on (or fail on a dead channel). */
static void unhold(struct chan *c)
{
	pthread_mutex_lock(&c->lock);
	c->held = false;
	c->swapping = false;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

int chan_hold(struct chan *c, int64_t deadline, sbx_error_t *err)
{
	pthread_mutex_lock(&c->lock);
	if (c->held) {
		pthread_mutex_unlock(&c->lock);
		return sbx_error_set(err, EALREADY, "the VM's control channel is already held by a pause");
	}
	if (c->dead) {
		int rc = chan_dead_error(c, err);
		pthread_mutex_unlock(&c->lock);
		return rc;
	}
	c->held = true;
	int rc = 0;
	while (c->sending > 0 && rc == 0)
		rc = chan_wait_until(c, deadline) == ETIMEDOUT ? -1 : 0;
	bool busy = c->sending > 0;
	pthread_mutex_unlock(&c->lock);
	if (busy) {
		unhold(c);
		return sbx_error_set(err, ETIMEDOUT, "a frame to the guest was still being sent");
	}
	/* What QEMU has not read yet would be lost with it: the guest
	 * would then read a frame cut short (a framing error). */
	for (;;) {
		int outq = 0;
		if (ioctl(c->fd, SIOCOUTQ, &outq) < 0) {
			unhold(c);
			return sbx_error_errno(err, errno, "control socket: SIOCOUTQ");
		}
		if (outq == 0)
			break;
		if (deadline >= 0 && sbx_now_ms() >= deadline) {
			unhold(c);
			return sbx_error_set(err, ETIMEDOUT, "QEMU did not take the last %d bytes sent to the guest",
					     outq);
		}
		usleep(OUTQ_POLL_US);
	}
	pthread_mutex_lock(&c->lock);
	c->swapping = true;
	c->swapped = false;
	c->next_fd = -1;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* The frames kept over the hold, once it ended: KILLs (of released
 * streams, and the signals callers sent meanwhile) in their order, then the CREDIT readers took meanwhile (a reader sending its
 * own now takes s->uncredited under the same lock: none is sent twice).
 * Past the gate: a new hold cannot start before the pause or resume that
 * calls this returned. */
static int flush_deferred(struct chan *c, sbx_error_t *err)
{
	pthread_mutex_lock(&c->lock);
	struct chan_kill *kills = c->kills;
	size_t n_kills = c->n_kills;
	c->kills = NULL;
	c->n_kills = c->cap_kills = 0;
	pthread_mutex_unlock(&c->lock);
	int rc = 0;
	for (size_t i = 0; i < n_kills && rc == 0; i++) {
		struct proto_msg m = { .stream = kills[i].id, .type = PROTO_KILL, .u.signal = kills[i].sig };
		rc = chan_send_held(c, &m, err);
	}
	free(kills);
	/* One stream at a time: the list may change while a frame goes out
	 * (the lock is not held over a send). */
	for (bool more = rc == 0; more && rc == 0;) {
		struct proto_msg m = { .type = PROTO_CREDIT };
		more = false;
		pthread_mutex_lock(&c->lock);
		for (struct chan_stream *s = c->streams; s != NULL; s = s->next) {
			if (!s->ended && s->uncredited > 0) {
				m.stream = s->id;
				m.u.credit = (uint32_t)s->uncredited;
				s->uncredited = 0;
				more = true;
				break;
			}
		}
		pthread_mutex_unlock(&c->lock);
		if (more)
			rc = chan_send_held(c, &m, err);
	}
	return rc;
}

void chan_release(struct chan *c)
{
	/* Released first: nothing is deferred any more once the list is
	 * taken (a KILL queued between the two would be lost). */
	unhold(c);
	sbx_error_t err = NULL;
	if (flush_deferred(c, &err) < 0)
		sbx_warn("vm: after a pause that did not happen: %s", sbx_error_msg(err));
	sbx_error_free(&err);
}

void chan_abort_hold(struct chan *c, const char *reason)
{
	pthread_mutex_lock(&c->lock);
	chan_mark_dead(c, reason);
	pthread_mutex_unlock(&c->lock);
	unhold(c);
}

int chan_resume(struct chan *c, int fd, const struct proto_msg *first, int64_t deadline, sbx_error_t *err)
{
	struct timeval tv = { .tv_sec = SEND_TIMEOUT_S };
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		sbx_warn("control socket: SO_SNDTIMEO: %s", strerror(errno));
	pthread_mutex_lock(&c->lock);
	if (!c->swapping || c->next_fd >= 0) {
		pthread_mutex_unlock(&c->lock);
		close(fd);
		return sbx_error_set(err, EINVAL, "the control channel is not waiting for a resume");
	}
	c->next_fd = fd;
	pthread_cond_broadcast(&c->cond);
	/* The reader takes it once it read the old QEMU's last byte. */
	int rc = 0;
	while (!c->swapped && !c->dead && rc == 0)
		rc = chan_wait_until(c, deadline) == ETIMEDOUT ? -1 : 0;
	bool swapped = c->swapped;
	pthread_mutex_unlock(&c->lock);
	if (!swapped) {
		chan_abort_hold(c, "the resumed VM's connection was not taken over");
		return sbx_error_set(err, rc < 0 ? ETIMEDOUT : EPIPE,
				     "the control channel did not move onto the resumed VM");
	}
	/* The guest hears of the resume before any frame held over it. */
	if (chan_send_held(c, first, err) < 0) {
		chan_abort_hold(c, "send failed after a resume");
		return -1;
	}
	unhold(c);
	/* A failed send killed the connection: every waiter fails with it. */
	return flush_deferred(c, err);
}
