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
#include "common/log.h"
#include "common/scodes.h"
#include "proto/proto_reader.h"

/* Consumed output is acknowledged in batches, or at once when the buffer
 * runs empty (so a guest stalled on a full window always gets credit). */
#define CREDIT_BATCH (64u * 1024u)
#define SEND_TIMEOUT_S 15
/* All result frames of one fs operation together; a guest that sends more
 * fails that operation (a reply this large could not travel anyway). */
#define FS_RESULT_MAX (16u * 1024u * 1024u)

struct out_chunk {
	struct out_chunk *next;
	enum chan_output which;
	size_t len, off;
	uint8_t data[];
};

/* A result message of an fs operation, waiting for its reader. */
struct fs_item {
	struct fs_item *next;
	struct proto_msg m;
};

struct chan_stream {
	struct chan *c;
	struct chan_stream *next;
	uint32_t id;
	uint32_t pid;
	struct out_chunk *head, *tail;
	size_t out_bytes;  /* buffered, <= PROTO_WINDOW */
	size_t uncredited; /* consumed, not yet acknowledged */
	size_t stdin_unacked;
	bool stdin_open;
	bool ended;
	bool lost; /* ended because the connection did */
	int code;
	char *error; /* the guest's ERROR or FS_ERROR message */
	int errnum;  /* FS_ERROR's errno, else 0 */
	struct fs_item *fs_head, *fs_tail; /* FS_ENTRIES, FS_MATCHES, FS_SED_FILES, FS_META */
	size_t fs_bytes;                   /* payload bytes of every result frame so far */
	bool has_done;
	struct proto_fs_done done;
};

struct chan {
	int fd;
	pthread_t reader;
	pthread_mutex_t lock; /* everything below */
	pthread_cond_t cond;  /* broadcast on every state change */
	pthread_mutex_t wlock; /* one frame at a time on the socket */
	bool dead;
	char *dead_reason;
	bool hello, ready;
	char *boot_error;
	uint64_t ping_next, pong_max;
	uint32_t next_id;
	struct chan_stream *streams;
};

/* Waits on the condition; returns ETIMEDOUT once the deadline passed. */
static int wait_until(struct chan *c, int64_t deadline)
{
	if (deadline < 0)
		return pthread_cond_wait(&c->cond, &c->lock);
	if (sbx_now_ms() >= deadline)
		return ETIMEDOUT;
	struct timespec ts = sbx_ms_timespec(deadline);
	return pthread_cond_timedwait(&c->cond, &c->lock, &ts);
}

/* Called with the lock held. */
static void mark_dead(struct chan *c, const char *reason)
{
	if (c->dead)
		return;
	c->dead = true;
	c->dead_reason = strdup(reason);
	for (struct chan_stream *s = c->streams; s != NULL; s = s->next) {
		if (!s->ended)
			s->ended = s->lost = true;
	}
	pthread_cond_broadcast(&c->cond);
}

static int dead_error(struct chan *c, sbx_error_t *err)
{
	return sbx_error_set(err, EPIPE, "VM control connection lost: %s",
			     c->dead_reason != NULL ? c->dead_reason : "closed");
}

static int send_msg(struct chan *c, const struct proto_msg *m, sbx_error_t *err)
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
			/* A partly written frame desynchronizes the stream. */
			pthread_mutex_lock(&c->lock);
			mark_dead(c, "send failed");
			pthread_mutex_unlock(&c->lock);
			break;
		}
		off += (size_t)n;
	}
	pthread_mutex_unlock(&c->wlock);
	proto_wbuf_free(&out);
	return rc;
}

static struct chan_stream *find_stream(struct chan *c, uint32_t id)
{
	for (struct chan_stream *s = c->streams; s != NULL; s = s->next) {
		if (s->id == id)
			return s;
	}
	return NULL;
}

/* Queues a result message of an fs operation (taking its contents). */
static int queue_fs(struct chan_stream *s, struct proto_msg *m, uint32_t length, bool *taken)
{
	if (s->ended)
		return 0;
	s->fs_bytes += length;
	struct fs_item *it = s->fs_bytes <= FS_RESULT_MAX ? malloc(sizeof(*it)) : NULL;
	if (it == NULL) {
		s->ended = true;
		s->code = -1;
		s->errnum = EFBIG;
		free(s->error);
		s->error = strdup(s->fs_bytes > FS_RESULT_MAX ? "the guest's answer is larger than 16 MiB"
							       : "out of memory for the guest's answer");
		return 0;
	}
	it->next = NULL;
	it->m = *m;
	*taken = true;
	if (s->fs_tail != NULL)
		s->fs_tail->next = it;
	else
		s->fs_head = it;
	s->fs_tail = it;
	return 0;
}

/* Applies one guest frame; returns -1 (with err) when the guest broke the
 * protocol.  Sets *taken when it kept m's contents.  Called by the reader
 * with the lock held. */
static int handle(struct chan *c, struct proto_msg *m, uint32_t length, bool *taken, sbx_error_t *err)
{
	struct chan_stream *s = m->stream != 0 ? find_stream(c, m->stream) : NULL;
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
	case PROTO_STDERR: {
		if (s == NULL || m->u.data.len == 0)
			break; /* a released stream: its process is being killed */
		if (s->out_bytes + m->u.data.len > PROTO_WINDOW)
			return sbx_error_set(err, EPROTO, "guest overran the output window of stream %u", s->id);
		struct out_chunk *ch = malloc(sizeof(*ch) + m->u.data.len);
		if (ch == NULL)
			return sbx_error_set(err, ENOMEM, "output buffer");
		ch->next = NULL;
		ch->which = m->type == PROTO_STDOUT ? CHAN_STDOUT : CHAN_STDERR;
		ch->len = m->u.data.len;
		ch->off = 0;
		memcpy(ch->data, m->u.data.data, ch->len);
		if (s->tail != NULL)
			s->tail->next = ch;
		else
			s->head = ch;
		s->tail = ch;
		s->out_bytes += ch->len;
		break;
	}
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
			queue_fs(s, m, length, taken);
		break;
	case PROTO_FS_DONE:
		if (s != NULL && !s->ended) {
			s->ended = true;
			s->code = 0;
			s->has_done = true;
			s->done = m->u.fs_done;
		}
		break;
	case PROTO_FS_ERROR:
		if (s != NULL && !s->ended) {
			s->ended = true;
			s->code = -1;
			s->errnum = m->u.fs_error.errnum;
			free(s->error);
			s->error = strdup(m->u.fs_error.message);
		}
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
	static const size_t bufsize = 64 * 1024;
	uint8_t *buf = malloc(bufsize);
	sbx_error_t err = NULL;
	const char *reason = "out of memory";
	while (buf != NULL) {
		ssize_t n = read(c->fd, buf, bufsize);
		if (n < 0 && errno == EINTR)
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
			sbx_warn("VM control protocol error: %s", sbx_error_msg(err));
			reason = "protocol error from the guest";
			break;
		}
	}
	sbx_error_free(&err);
	free(buf);
	proto_reader_free(&rd);
	pthread_mutex_lock(&c->lock);
	mark_dead(c, reason);
	pthread_mutex_unlock(&c->lock);
	/* Unblock writers stuck on a guest that stopped reading. */
	shutdown(c->fd, SHUT_RDWR);
	return NULL;
}

struct chan *chan_open(int fd, sbx_error_t *err)
{
	struct chan *c = calloc(1, sizeof(*c));
	if (c == NULL) {
		close(fd);
		sbx_error_set(err, ENOMEM, "control channel");
		return NULL;
	}
	c->fd = fd;
	c->next_id = 1;
	/* A guest that stops reading its port must not hang a sender (or
	 * sbx_vm_stop) forever: a send stuck this long kills the connection. */
	struct timeval tv = { .tv_sec = SEND_TIMEOUT_S };
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		sbx_warn("control socket: SO_SNDTIMEO: %s", strerror(errno));
	sbx_cond_init_monotonic(&c->cond);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->wlock, NULL);
	int rc = pthread_create(&c->reader, NULL, reader_main, c);
	if (rc != 0) {
		sbx_error_errno(err, rc, "control reader thread");
		close(fd);
		pthread_cond_destroy(&c->cond);
		pthread_mutex_destroy(&c->lock);
		pthread_mutex_destroy(&c->wlock);
		free(c);
		return NULL;
	}
	return c;
}

static void free_stream(struct chan_stream *s)
{
	while (s->fs_head != NULL) {
		struct fs_item *it = s->fs_head;
		s->fs_head = it->next;
		proto_msg_free(&it->m);
		free(it);
	}
	while (s->head != NULL) {
		struct out_chunk *ch = s->head;
		s->head = ch->next;
		free(ch);
	}
	free(s->error);
	free(s);
}

void chan_close(struct chan *c)
{
	if (c == NULL)
		return;
	shutdown(c->fd, SHUT_RDWR);
	pthread_join(c->reader, NULL);
	close(c->fd);
	while (c->streams != NULL) {
		struct chan_stream *s = c->streams;
		c->streams = s->next;
		free_stream(s);
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

bool chan_boot_failed(struct chan *c)
{
	pthread_mutex_lock(&c->lock);
	bool failed = c->boot_error != NULL;
	pthread_mutex_unlock(&c->lock);
	return failed;
}

int chan_wait_hello(struct chan *c, int64_t deadline, sbx_error_t *err)
{
	int rc = 0;
	pthread_mutex_lock(&c->lock);
	while (!c->hello && !c->dead && rc == 0)
		rc = wait_until(c, deadline) == ETIMEDOUT ? -1 : 0;
	if (!c->hello)
		rc = c->dead ? dead_error(c, err) : sbx_error_set(err, ETIMEDOUT, "timed out waiting for the guest's hello");
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int chan_send_config(struct chan *c, const struct proto_config *cfg, sbx_error_t *err)
{
	struct proto_msg m = { .stream = 0, .type = PROTO_CONFIG, .u.config = *cfg };
	return send_msg(c, &m, err);
}

int chan_wait_ready(struct chan *c, int64_t deadline, sbx_error_t *err)
{
	int rc = 0;
	pthread_mutex_lock(&c->lock);
	while (!c->ready && c->boot_error == NULL && !c->dead && rc == 0)
		rc = wait_until(c, deadline) == ETIMEDOUT ? -1 : 0;
	if (c->ready)
		rc = 0;
	else if (c->boot_error != NULL)
		rc = sbx_error_set(err, 0, "guest init failed: %s", c->boot_error);
	else if (c->dead)
		rc = dead_error(c, err);
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
	if (send_msg(c, &m, err) < 0)
		return -1;
	int rc = 0;
	pthread_mutex_lock(&c->lock);
	while (c->pong_max < nonce && !c->dead && rc == 0)
		rc = wait_until(c, deadline) == ETIMEDOUT ? -1 : 0;
	if (c->pong_max >= nonce)
		rc = 0;
	else if (c->dead)
		rc = dead_error(c, err);
	else
		rc = sbx_error_set(err, ETIMEDOUT, "the guest did not answer a ping");
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int chan_send_shutdown(struct chan *c, sbx_error_t *err)
{
	struct proto_msg m = { .stream = 0, .type = PROTO_SHUTDOWN };
	return send_msg(c, &m, err);
}

int chan_wait_dead(struct chan *c, int64_t deadline, sbx_error_t *err)
{
	int rc = 0;
	pthread_mutex_lock(&c->lock);
	while (!c->dead && rc == 0)
		rc = wait_until(c, deadline) == ETIMEDOUT ? -1 : 0;
	rc = c->dead ? 0 : sbx_error_set(err, ETIMEDOUT, "timed out waiting for the VM to power off");
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* Opens a stream whose first frame is `first` (its stream id is filled in). */
static struct chan_stream *open_stream(struct chan *c, struct proto_msg *first, bool stdin_open, sbx_error_t *err)
{
	struct chan_stream *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		sbx_error_set(err, ENOMEM, "stream");
		return NULL;
	}
	s->c = c;
	s->stdin_open = stdin_open;
	pthread_mutex_lock(&c->lock);
	if (c->dead) {
		dead_error(c, err);
		pthread_mutex_unlock(&c->lock);
		free(s);
		return NULL;
	}
	/* Ids are never 0 and never one still in use, even after wrapping. */
	do {
		s->id = c->next_id++;
	} while (s->id == 0 || find_stream(c, s->id) != NULL);
	s->next = c->streams;
	c->streams = s;
	pthread_mutex_unlock(&c->lock);
	first->stream = s->id;
	if (send_msg(c, first, err) < 0) {
		chan_stream_release(s);
		return NULL;
	}
	return s;
}

struct chan_stream *chan_spawn(struct chan *c, const struct proto_spawn *sp, sbx_error_t *err)
{
	struct proto_msg m = { .type = PROTO_SPAWN, .u.spawn = *sp };
	return open_stream(c, &m, (sp->flags & PROTO_SPAWN_STDIN) != 0, err);
}

struct chan_stream *chan_fs_write(struct chan *c, const struct proto_fs_write *w, sbx_error_t *err)
{
	struct proto_msg m = { .type = PROTO_FS_WRITE, .u.fs_write = *w };
	return open_stream(c, &m, true, err);
}

ssize_t chan_stream_write(struct chan_stream *s, const void *buf, size_t len, int64_t deadline,
			  sbx_error_t *err)
{
	struct chan *c = s->c;
	if (len == 0)
		return 0;
	pthread_mutex_lock(&c->lock);
	int rc = 0;
	while (s->stdin_open && !s->ended && s->stdin_unacked >= PROTO_WINDOW && rc == 0)
		rc = wait_until(c, deadline) == ETIMEDOUT ? -1 : 0;
	if (!s->stdin_open || s->ended) {
		bool dead = c->dead;
		if (dead)
			dead_error(c, err);
		else
			sbx_error_set(err, EPIPE, s->ended ? "the process has exited" : "stdin is closed");
		pthread_mutex_unlock(&c->lock);
		return -1;
	}
	if (s->stdin_unacked >= PROTO_WINDOW) {
		pthread_mutex_unlock(&c->lock);
		return sbx_error_set(err, ETIMEDOUT, "timed out writing stdin");
	}
	size_t n = PROTO_WINDOW - s->stdin_unacked;
	if (n > PROTO_MAX_CHUNK)
		n = PROTO_MAX_CHUNK;
	if (n > len)
		n = len;
	s->stdin_unacked += n;
	pthread_mutex_unlock(&c->lock);
	struct proto_msg m = { .stream = s->id, .type = PROTO_STDIN, .u.data = { buf, n } };
	if (send_msg(c, &m, err) < 0)
		return -1;
	return (ssize_t)n;
}

int chan_stream_close_stdin(struct chan_stream *s, sbx_error_t *err)
{
	struct chan *c = s->c;
	pthread_mutex_lock(&c->lock);
	bool send = s->stdin_open && !s->ended;
	s->stdin_open = false;
	pthread_mutex_unlock(&c->lock);
	if (!send)
		return 0;
	struct proto_msg m = { .stream = s->id, .type = PROTO_STDIN_EOF };
	return send_msg(c, &m, err);
}

/* Takes up to len bytes of one kind from the front chunk; returns the
 * credit to send now (0 when batching).  Lock held. */
static size_t take_output(struct chan_stream *s, enum chan_output *which, void *buf, size_t len, size_t *got)
{
	struct out_chunk *ch = s->head;
	size_t n = ch->len - ch->off < len ? ch->len - ch->off : len;
	memcpy(buf, ch->data + ch->off, n);
	*which = ch->which;
	ch->off += n;
	if (ch->off == ch->len) {
		s->head = ch->next;
		if (s->head == NULL)
			s->tail = NULL;
		free(ch);
	}
	s->out_bytes -= n;
	s->uncredited += n;
	*got = n;
	if (s->ended || (s->uncredited < CREDIT_BATCH && s->out_bytes > 0))
		return 0;
	size_t credit = s->uncredited;
	s->uncredited = 0;
	return credit;
}

static int send_credit(struct chan_stream *s, size_t credit, sbx_error_t *err)
{
	if (credit == 0)
		return 0;
	struct proto_msg m = { .stream = s->id, .type = PROTO_CREDIT, .u.credit = (uint32_t)credit };
	return send_msg(s->c, &m, err);
}

ssize_t chan_stream_read(struct chan_stream *s, enum chan_output *which, void *buf, size_t len,
			 int64_t deadline, sbx_error_t *err)
{
	struct chan *c = s->c;
	if (len == 0)
		return sbx_error_set(err, EINVAL, "read of 0 bytes");
	pthread_mutex_lock(&c->lock);
	int rc = 0;
	while (s->head == NULL && !s->ended && rc == 0)
		rc = wait_until(c, deadline) == ETIMEDOUT ? -1 : 0;
	if (s->head == NULL) {
		if (!s->ended)
			rc = sbx_error_set(err, ETIMEDOUT, "timed out reading output");
		else if (s->lost)
			rc = dead_error(c, err);
		pthread_mutex_unlock(&c->lock);
		return rc;
	}
	size_t got;
	size_t credit = take_output(s, which, buf, len, &got);
	pthread_mutex_unlock(&c->lock);
	if (send_credit(s, credit, err) < 0)
		return -1;
	return (ssize_t)got;
}

int chan_stream_kill(struct chan_stream *s, int sig, sbx_error_t *err)
{
	struct chan *c = s->c;
	pthread_mutex_lock(&c->lock);
	bool ended = s->ended;
	pthread_mutex_unlock(&c->lock);
	if (ended)
		return 0;
	struct proto_msg m = { .stream = s->id, .type = PROTO_KILL, .u.signal = (uint32_t)sig };
	return send_msg(c, &m, err);
}

int chan_stream_wait(struct chan_stream *s, int64_t deadline, int *code, sbx_error_t *err)
{
	struct chan *c = s->c;
	pthread_mutex_lock(&c->lock);
	for (;;) {
		/* Discard unread output so a full window cannot hold back EXIT. */
		size_t credit = 0;
		while (s->head != NULL) {
			struct out_chunk *ch = s->head;
			s->head = ch->next;
			s->out_bytes -= ch->len - ch->off;
			s->uncredited += ch->len - ch->off;
			free(ch);
		}
		s->tail = NULL;
		if (!s->ended && s->uncredited > 0) {
			credit = s->uncredited;
			s->uncredited = 0;
		}
		if (credit > 0) {
			pthread_mutex_unlock(&c->lock);
			if (send_credit(s, credit, err) < 0)
				return -1;
			pthread_mutex_lock(&c->lock);
			continue;
		}
		if (s->ended)
			break;
		if (wait_until(c, deadline) == ETIMEDOUT) {
			pthread_mutex_unlock(&c->lock);
			return sbx_error_set(err, ETIMEDOUT, "timed out waiting for the process to exit");
		}
	}
	int rc = 0;
	if (s->error != NULL && s->errnum != 0)
		rc = sbx_error_set(err, s->errnum, "%s", s->error); /* FS_ERROR names its path */
	else if (s->error != NULL)
		rc = sbx_error_set(err, 0, "guest: %s", s->error);
	else if (s->lost)
		rc = dead_error(c, err);
	else
		*code = s->code;
	pthread_mutex_unlock(&c->lock);
	return rc;
}

uint32_t chan_stream_pid(struct chan_stream *s)
{
	pthread_mutex_lock(&s->c->lock);
	uint32_t pid = s->pid;
	pthread_mutex_unlock(&s->c->lock);
	return pid;
}

void chan_stream_release(struct chan_stream *s)
{
	if (s == NULL)
		return;
	struct chan *c = s->c;
	pthread_mutex_lock(&c->lock);
	struct chan_stream **pp = &c->streams;
	while (*pp != NULL && *pp != s)
		pp = &(*pp)->next;
	if (*pp == s)
		*pp = s->next;
	bool running = !s->ended;
	pthread_mutex_unlock(&c->lock);
	if (running) {
		sbx_error_t err = NULL;
		struct proto_msg m = { .stream = s->id, .type = PROTO_KILL, .u.signal = 9 };
		if (send_msg(c, &m, &err) < 0)
			sbx_error_free(&err);
	}
	free_stream(s);
}

struct chan_stream *chan_fs_start(struct chan *c, const struct proto_msg *req, sbx_error_t *err)
{
	if (req->type <= PROTO_FS_ERROR || req->type > PROTO_FS_READ)
		return sbx_error_set(err, EINVAL, "not an fs request: %s", proto_type_name(req->type)), NULL;
	struct proto_msg m = *req;
	return open_stream(c, &m, false, err);
}

int chan_fs_next(struct chan_stream *s, struct proto_msg *m, struct proto_fs_done *done, int64_t deadline,
		 sbx_error_t *err)
{
	struct chan *c = s->c;
	pthread_mutex_lock(&c->lock);
	int rc = 0;
	while (s->fs_head == NULL && !s->ended && rc == 0)
		rc = wait_until(c, deadline) == ETIMEDOUT ? -1 : 0;
	if (s->fs_head != NULL) {
		struct fs_item *it = s->fs_head;
		s->fs_head = it->next;
		if (s->fs_head == NULL)
			s->fs_tail = NULL;
		*m = it->m;
		free(it);
		rc = 1;
	} else if (s->has_done) {
		*done = s->done;
		rc = 0;
	} else if (s->error != NULL) {
		rc = sbx_error_set(err, s->errnum, "%s", s->error);
		/* FS_ERROR carries the guest's verdict; ERROR means the guest did
		 * not run the operation at all. */
		if (s->errnum == 0)
			sbx_error_default_scode(err, strstr(s->error, PROTO_TEXT_UNSUPPORTED) != NULL ||
							     strstr(s->error, PROTO_TEXT_UNEXPECTED) != NULL
						     ? SBX_S_FS_UNSUPPORTED
						     : SBX_S_FS_IO);
		else if (s->errnum == EFBIG && s->fs_bytes > FS_RESULT_MAX)
			sbx_error_default_scode(err, SBX_S_FS_IO);
	} else {
		if (s->lost)
			dead_error(c, err);
		else if (s->ended)
			sbx_error_set(err, EPROTO, "the guest ended the operation without an answer");
		else
			sbx_error_set(err, ETIMEDOUT, "timed out waiting for the guest's answer");
		sbx_error_default_scode(err, SBX_S_FS_IO);
		rc = -1;
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}
