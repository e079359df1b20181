/* The connection of the control channel (channel.h, channel_internal.h):
 * its reader thread and the boot handshake, above channel_stream.c and
 * channel_fs.c, which it hands the guest's frames; what all three use is
 * in channel_link.c, below them. */
#include "vm/channel.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log_limit.h"
#include "proto/proto_reader.h"
#include "vm/channel_internal.h"

#define SEND_TIMEOUT_S 15

/* Applies one guest frame; returns -1 (with err) when the guest broke the
 * protocol.  Sets *taken when it kept m's contents.  Called by the reader
 * with the lock held. */
static int handle(struct chan *c, struct proto_msg *m, uint32_t length, bool *taken, sbx_error_t *err)
{
	struct chan_stream *s = m->stream != 0 ? chan_find_stream(c, m->stream) : NULL;
	switch (m->type) {
	case PROTO_HELLO:
		if (m->u.version != PROTO_VERSION)
			return sbx_error_set(err, EPROTO, "guest speaks protocol %u, host %u", m->u.version,
					     PROTO_VERSION);
		c->hello = true;
		break;
	case PROTO_READY:
		c->ready = true;
		break;
	case PROTO_PONG:
		if (m->u.nonce > c->pong_max)
			c->pong_max = m->u.nonce;
		break;
	case PROTO_STARTED:
		if (s != NULL)
			s->pid = m->u.pid;
		break;
	case PROTO_STDOUT:
	case PROTO_STDERR:
		if (s != NULL && chan_stream_output(s, m, err) < 0)
			return -1;
		break;
	case PROTO_CREDIT:
		if (s == NULL)
			break;
		if (m->u.credit > s->stdin_unacked)
			return sbx_error_set(err, EPROTO, "guest credited more stdin than sent on stream %u", s->id);
		s->stdin_unacked -= m->u.credit;
		break;
	case PROTO_EXIT:
		if (s != NULL) {
			s->ended = true;
			s->code = m->u.code;
		}
		break;
	case PROTO_ERROR:
		if (m->stream == 0) {
			free(c->boot_error);
			c->boot_error = strdup(m->u.message);
		} else if (s != NULL) {
			s->ended = true;
			s->code = -1;
			free(s->error);
			s->error = strdup(m->u.message);
		}
		break;
	case PROTO_FS_ENTRIES:
	case PROTO_FS_MATCHES:
	case PROTO_FS_SED_FILES:
	case PROTO_FS_META:
		if (s != NULL)
			chan_fs_queue(s, m, length, taken);
		break;
	case PROTO_FS_DONE:
	case PROTO_FS_ERROR:
		if (s != NULL)
			chan_fs_end(s, m);
		break;
	default:
		return sbx_error_set(err, EPROTO, "guest sent a host-only message (%s)", proto_type_name(m->type));
	}
	pthread_cond_broadcast(&c->cond);
	return 0;
}

static void *reader_main(void *arg)
{
	struct chan *c = arg;
	struct proto_reader rd;
	proto_reader_init(&rd);
	/* An adopted channel: the frame an earlier process had in part. */
	if (c->carry != NULL) {
		rd = *c->carry;
		free(c->carry);
		c->carry = NULL;
	}
	static const size_t bufsize = 64 * 1024;
	uint8_t *buf = malloc(bufsize);
	sbx_error_t err = NULL;
	const char *reason = "out of memory";
	while (buf != NULL) {
		ssize_t n = read(c->fd, buf, bufsize);
		if (n < 0 && errno == EINTR)
			continue;
		/* A pause ends QEMU: its EOF is not the guest's. */
		if (n <= 0 && chan_take_next_fd(c, &rd))
			continue;
		if (n <= 0) {
			reason = n == 0 ? "the VM closed it" : "read error";
			break;
		}
		for (size_t off = 0; off < (size_t)n && err == NULL;) {
			size_t used = 0;
			struct proto_header h;
			const uint8_t *payload = NULL;
			int r = proto_reader_feed(&rd, buf + off, (size_t)n - off, &used, &h, &payload, &err);
			off += used;
			if (r <= 0)
				continue;
			struct proto_msg m;
			if (proto_msg_decode(&h, payload, &m, &err) < 0)
				break;
			bool taken = false;
			pthread_mutex_lock(&c->lock);
			handle(c, &m, h.length, &taken, &err);
			pthread_mutex_unlock(&c->lock);
			if (!taken)
				proto_msg_free(&m);
		}
		if (err != NULL) {
			sbx_warn_limited("VM control protocol error: %s", sbx_error_msg(err));
			reason = "protocol error from the guest";
			break;
		}
	}
	sbx_error_free(&err);
	free(buf);
	proto_reader_free(&rd);
	pthread_mutex_lock(&c->lock);
	chan_mark_dead(c, reason);
	pthread_mutex_unlock(&c->lock);
	/* Unblock writers stuck on a guest that stopped reading. */
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR);
	return NULL;
}

struct chan *chan_new(int fd, sbx_error_t *err)
{
	struct chan *c = calloc(1, sizeof(*c));
	if (c == NULL) {
		if (fd >= 0)
			close(fd);
		sbx_error_set(err, ENOMEM, "control channel");
		return NULL;
	}
	c->fd = fd;
	c->next_fd = -1;
	c->next_id = 1;
	sbx_cond_init_monotonic(&c->cond);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->wlock, NULL);
	return c;
}

int chan_start(struct chan *c, sbx_error_t *err)
{
	int rc = pthread_create(&c->reader, NULL, reader_main, c);
	return rc == 0 ? 0 : sbx_error_errno(err, rc, "control reader thread");
}

struct chan *chan_open(int fd, sbx_error_t *err)
{
	struct chan *c = chan_new(fd, err);
	if (c == NULL)
		return NULL;
	/* A guest that stops reading its port must not hang a sender (or
	 * sbx_vm_stop) forever: a send stuck this long kills the connection. */
	struct timeval tv = { .tv_sec = SEND_TIMEOUT_S };
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		sbx_warn("control socket: SO_SNDTIMEO: %s", strerror(errno));
	if (chan_start(c, err) == 0)
		return c;
	close(fd);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->wlock);
	free(c);
	return NULL;
}

void chan_close(struct chan *c)
{
	if (c == NULL)
		return;
	/* A reader waiting for a resume's socket must not wait for ever. */
	pthread_mutex_lock(&c->lock);
	c->closing = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR);
	pthread_join(c->reader, NULL);
	if (c->fd >= 0)
		close(c->fd);
	if (c->next_fd >= 0)
		close(c->next_fd);
	free(c->kills);
	free(c->partial);
	while (c->streams != NULL) {
		struct chan_stream *s = c->streams;
		c->streams = s->next;
		chan_stream_free(s);
	}
	free(c->dead_reason);
	free(c->boot_error);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->wlock);
	free(c);
}

bool chan_dead(struct chan *c)
{
	pthread_mutex_lock(&c->lock);
	bool d = c->dead;
	pthread_mutex_unlock(&c->lock);
	return d;
}

int64_t chan_dead_ms(struct chan *c)
{
	pthread_mutex_lock(&c->lock);
	int64_t at = c->dead ? c->dead_ms : 0;
	pthread_mutex_unlock(&c->lock);
	return at;
}

bool chan_boot_failed(struct chan *c)
{
	pthread_mutex_lock(&c->lock);
	bool failed = c->boot_error != NULL;
	pthread_mutex_unlock(&c->lock);
	return failed;
}

int chan_wait_hello(struct chan *c, int64_t deadline, sbx_error_t *err)
{
	bool timed_out = false;
	pthread_mutex_lock(&c->lock);
	while (!c->hello && !c->dead && !timed_out)
		timed_out = chan_wait_until(c, deadline) == ETIMEDOUT;
	/* The hello may have come as the deadline passed: it counts. */
	int rc = 0;
	if (!c->hello)
		rc = c->dead ? chan_dead_error(c, err) : sbx_error_set(err, ETIMEDOUT, "timed out waiting for the guest's hello");
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int chan_send_config(struct chan *c, const struct proto_config *cfg, sbx_error_t *err)
{
	struct proto_msg m = { .stream = 0, .type = PROTO_CONFIG, .u.config = *cfg };
	return chan_send(c, &m, err);
}

int chan_wait_ready(struct chan *c, int64_t deadline, sbx_error_t *err)
{
	int rc = 0;
	pthread_mutex_lock(&c->lock);
	while (!c->ready && c->boot_error == NULL && !c->dead && rc == 0)
		rc = chan_wait_until(c, deadline) == ETIMEDOUT ? -1 : 0;
	if (c->ready)
		rc = 0;
	else if (c->boot_error != NULL)
		rc = sbx_error_set(err, 0, "guest init failed: %s", c->boot_error);
	else if (c->dead)
		rc = chan_dead_error(c, err);
	else
		rc = sbx_error_set(err, ETIMEDOUT, "timed out waiting for the guest to be ready");
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int chan_ping(struct chan *c, int64_t deadline, sbx_error_t *err)
{
	pthread_mutex_lock(&c->lock);
	uint64_t nonce = ++c->ping_next;
	pthread_mutex_unlock(&c->lock);
	struct proto_msg m = { .stream = 0, .type = PROTO_PING, .u.nonce = nonce };
	if (chan_send_by(c, &m, deadline, err) < 0)
		return -1;
	int rc = 0;
	pthread_mutex_lock(&c->lock);
	while (c->pong_max < nonce && !c->dead && rc == 0)
		rc = chan_wait_until(c, deadline) == ETIMEDOUT ? -1 : 0;
	if (c->pong_max >= nonce)
		rc = 0;
	else if (c->dead)
		rc = chan_dead_error(c, err);
	else
		rc = sbx_error_set(err, ETIMEDOUT, "the guest did not answer a ping");
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int chan_warm_up(struct chan *c, char *const *argv, int64_t deadline, sbx_error_t *err)
{
	struct proto_msg m = { .stream = 0, .type = PROTO_WARM_UP, .u.warm_up = (char **)argv };
	/* The guest answers the ping once the warm-up is over. */
	return chan_send(c, &m, err) < 0 ? -1 : chan_ping(c, deadline, err);
}

int chan_send_shutdown(struct chan *c, sbx_error_t *err)
{
	struct proto_msg m = { .stream = 0, .type = PROTO_SHUTDOWN };
	return chan_send(c, &m, err);
}

int chan_wait_dead(struct chan *c, int64_t deadline, sbx_error_t *err)
{
	int rc = 0;
	pthread_mutex_lock(&c->lock);
	while (!c->dead && rc == 0)
		rc = chan_wait_until(c, deadline) == ETIMEDOUT ? -1 : 0;
	rc = c->dead ? 0 : sbx_error_set(err, ETIMEDOUT, "timed out waiting for the VM to power off");
	pthread_mutex_unlock(&c->lock);
	return rc;
}
