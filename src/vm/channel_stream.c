/* Streams of the control channel (channel.h): ids, output buffers, and
 * CREDIT flow control both ways. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vm/channel_internal.h"

/* Buffers a STDOUT or STDERR frame (copied) within the stream's window. */
int chan_stream_output(struct chan_stream *s, const struct proto_msg *m, sbx_error_t *err)
{
	if (m->u.data.len == 0)
		return 0;
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
	return 0;
}

void chan_stream_free(struct chan_stream *s)
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

/* Opens a stream whose first frame is `first` (its stream id is filled in). */
struct chan_stream *chan_stream_open(struct chan *c, struct proto_msg *first, bool stdin_open, sbx_error_t *err)
{
	struct chan_stream *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		sbx_error_set(err, ENOMEM, "stream");
		return NULL;
	}
	s->c = c;
	s->stdin_open = stdin_open;
	s->pty = first->type == PROTO_SPAWN_PTY;
	pthread_mutex_lock(&c->lock);
	if (c->dead) {
		chan_dead_error(c, err);
		pthread_mutex_unlock(&c->lock);
		free(s);
		return NULL;
	}
	/* Ids are never 0 and never one still in use, even after wrapping. */
	do {
		s->id = c->next_id++;
	} while (s->id == 0 || chan_find_stream(c, s->id) != NULL);
	s->next = c->streams;
	c->streams = s;
	pthread_mutex_unlock(&c->lock);
	first->stream = s->id;
	if (chan_send(c, first, err) < 0) {
		chan_stream_release(s);
		return NULL;
	}
	return s;
}

struct chan_stream *chan_spawn(struct chan *c, const struct proto_spawn *sp, sbx_error_t *err)
{
	struct proto_msg m = { .type = PROTO_SPAWN, .u.spawn = *sp };
	return chan_stream_open(c, &m, (sp->flags & PROTO_SPAWN_STDIN) != 0, err);
}

static bool dims_ok(uint32_t rows, uint32_t cols)
{
	return rows >= 1 && rows <= PROTO_MAX_TTY_DIM && cols >= 1 && cols <= PROTO_MAX_TTY_DIM;
}

struct chan_stream *chan_spawn_pty(struct chan *c, const struct proto_spawn_pty *sp, sbx_error_t *err)
{
	if (!dims_ok(sp->rows, sp->cols)) {
		sbx_error_set(err, EINVAL, "terminal of %u x %u, each must be 1..%d", sp->rows, sp->cols,
			      PROTO_MAX_TTY_DIM);
		return NULL;
	}
	struct proto_msg m = { .type = PROTO_SPAWN_PTY, .u.spawn_pty = *sp };
	return chan_stream_open(c, &m, true, err);
}

int chan_stream_resize(struct chan_stream *s, uint32_t rows, uint32_t cols, sbx_error_t *err)
{
	struct chan *c = s->c;
	if (!dims_ok(rows, cols))
		return sbx_error_set(err, EINVAL, "terminal of %u x %u, each must be 1..%d", rows, cols,
				     PROTO_MAX_TTY_DIM);
	if (!s->pty) /* set before the stream was published, never changed */
		return sbx_error_set(err, EINVAL, "not a terminal");
	pthread_mutex_lock(&c->lock);
	bool ended = s->ended;
	pthread_mutex_unlock(&c->lock);
	if (ended)
		return 0;
	struct proto_msg m = { .stream = s->id, .type = PROTO_RESIZE, .u.winsize = { rows, cols } };
	return chan_send(c, &m, err);
}

struct chan_stream *chan_fs_write(struct chan *c, const struct proto_fs_write *w, sbx_error_t *err)
{
	struct proto_msg m = { .type = PROTO_FS_WRITE, .u.fs_write = *w };
	return chan_stream_open(c, &m, true, err);
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
		rc = chan_wait_until(c, deadline) == ETIMEDOUT ? -1 : 0;
	if (!s->stdin_open || s->ended) {
		bool dead = c->dead;
		if (dead)
			chan_dead_error(c, err);
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
	if (chan_send_by(c, &m, deadline, err) < 0) {
		/* Not sent (a pause outlasted the deadline): not in flight. */
		pthread_mutex_lock(&c->lock);
		s->stdin_unacked -= n;
		pthread_mutex_unlock(&c->lock);
		return -1;
	}
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
	return chan_send(c, &m, err);
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

/* 0 sent (or nothing to send), 1 kept for a pause's resume, -1 failed. */
static int send_credit(struct chan_stream *s, size_t credit, sbx_error_t *err)
{
	if (credit == 0)
		return 0;
	/* A reader must not wait out a pause for its acknowledgement. */
	if (chan_defer_credit(s, credit))
		return 1;
	struct proto_msg m = { .stream = s->id, .type = PROTO_CREDIT, .u.credit = (uint32_t)credit };
	return chan_send(s->c, &m, err);
}

ssize_t chan_stream_read(struct chan_stream *s, enum chan_output *which, void *buf, size_t len,
			 int64_t deadline, sbx_error_t *err)
{
	struct chan *c = s->c;
	if (len == 0)
		return sbx_error_set(err, EINVAL, "read of 0 bytes");
	pthread_mutex_lock(&c->lock);
	bool timed_out = false;
	while (s->head == NULL && !s->ended && !timed_out)
		timed_out = chan_wait_until(c, deadline) == ETIMEDOUT;
	/* What the stream holds decides, not the wait: it may have ended as
	 * the deadline passed. */
	if (s->head == NULL) {
		int rc = 0;
		if (!s->ended)
			rc = sbx_error_set(err, ETIMEDOUT, "timed out reading output");
		else if (s->lost)
			rc = chan_dead_error(c, err);
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
	/* Held by a pause: the signal goes after RESUMED, the caller does
	 * not wait for the resume. */
	return chan_send_kill(c, s->id, (uint32_t)sig, err);
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
			int sent = send_credit(s, credit, err);
			if (sent < 0)
				return -1;
			pthread_mutex_lock(&c->lock);
			if (sent == 0)
				continue;
			/* Kept for the resume: wait for it (or the exit). */
		}
		if (s->ended)
			break;
		if (chan_wait_until(c, deadline) == ETIMEDOUT) {
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
		rc = chan_dead_error(c, err);
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

int chan_stream_started(struct chan_stream *s, int64_t deadline, uint32_t *pid, sbx_error_t *err)
{
	struct chan *c = s->c;
	pthread_mutex_lock(&c->lock);
	bool timed_out = false;
	while (s->pid == 0 && !s->ended && !timed_out)
		timed_out = chan_wait_until(c, deadline) == ETIMEDOUT;
	int rc = 0;
	if (s->pid != 0)
		*pid = s->pid;
	else if (s->lost)
		rc = chan_dead_error(c, err);
	else if (s->ended)
		rc = sbx_error_set(err, 0, "guest: %s", s->error != NULL ? s->error : "the process did not start");
	else
		rc = sbx_error_set(err, ETIMEDOUT, "timed out waiting for the process to start");
	pthread_mutex_unlock(&c->lock);
	return rc;
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
	/* Held by a pause: the KILL waits for the resume, not the caller
	 * (out of memory: the caller waits for the resume after all). */
	sbx_error_t err = NULL;
	if (running && chan_send_kill(c, s->id, 9, &err) < 0 && err->errnum == ENOMEM) {
		sbx_error_free(&err);
		struct proto_msg m = { .stream = s->id, .type = PROTO_KILL, .u.signal = 9 };
		if (chan_send(c, &m, &err) < 0)
			sbx_error_free(&err);
	}
	sbx_error_free(&err);
	chan_stream_free(s);
}
