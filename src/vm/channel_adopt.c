/* The control channel of a paused VM across processes (channel.h
 * chan_save, chan_adopt): what the host end of the connection holds
 * (stream ids, credit both ways, unread output, kept signals, a guest
 * frame read in part) is written by one process and re-created by the
 * next, whose reader waits, held, for the resumed QEMU's socket as a
 * paused channel's reader does (channel_pause.c).  Above channel.c. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vm/channel_internal.h"
#include "vm/pause_desc.h"

/* Every stream's output taken by its reader (lock held). */
static bool drained(struct chan *c)
{
	for (struct chan_stream *s = c->streams; s != NULL; s = s->next) {
		if (s->head != NULL)
			return false;
	}
	return true;
}

static int save_output(const struct chan_stream *s, struct pause_stream *ps, sbx_error_t *err)
{
	size_t n = 0;
	for (const struct out_chunk *ch = s->head; ch != NULL; ch = ch->next)
		n++;
	if (n == 0)
		return 0;
	if ((ps->out = calloc(n, sizeof(*ps->out))) == NULL)
		return sbx_error_set(err, ENOMEM, "save of the control channel");
	for (const struct out_chunk *ch = s->head; ch != NULL; ch = ch->next) {
		struct pause_output *o = &ps->out[ps->n_out];
		o->fd = ch->which == CHAN_STDERR ? 2 : 1;
		o->len = ch->len - ch->off;
		if ((o->data = malloc(o->len > 0 ? o->len : 1)) == NULL)
			return sbx_error_set(err, ENOMEM, "save of the control channel");
		memcpy(o->data, ch->data + ch->off, o->len);
		ps->n_out++;
	}
	return 0;
}

/* The channel's state as it stands (lock held). */
static int snapshot(struct chan *c, struct pause_chan *pc, sbx_error_t *err)
{
	size_t n = 0;
	for (struct chan_stream *s = c->streams; s != NULL; s = s->next)
		n++;
	pc->next_id = c->next_id;
	if ((n > 0 && (pc->streams = calloc(n, sizeof(*pc->streams))) == NULL) ||
	    (c->n_kills > 0 && (pc->kills = calloc(c->n_kills, sizeof(*pc->kills))) == NULL) ||
	    (c->partial_len > 0 && (pc->partial = malloc(c->partial_len)) == NULL))
		return sbx_error_set(err, ENOMEM, "save of the control channel");
	if (c->partial_len > 0)
		memcpy(pc->partial, c->partial, c->partial_len);
	pc->partial_len = c->partial_len;
	for (; pc->n_kills < c->n_kills; pc->n_kills++)
		pc->kills[pc->n_kills] = (struct pause_kill){ c->kills[pc->n_kills].id, c->kills[pc->n_kills].sig };
	for (struct chan_stream *s = c->streams; s != NULL; s = s->next) {
		struct pause_stream *ps = &pc->streams[pc->n_streams++];
		*ps = (struct pause_stream){
			.id = s->id, .pid = s->pid, .pty = s->pty, .stdin_open = s->stdin_open, .ended = s->ended,
			.code = s->code, .uncredited = s->uncredited, .stdin_unacked = s->stdin_unacked,
		};
		/* An fs operation's stream (its results are not kept) or a
		 * failed one: ended with no status to give. */
		if (s->error != NULL || s->fs_head != NULL || s->has_done) {
			ps->ended = true;
			ps->code = -1;
		}
		if (save_output(s, ps, err) < 0)
			return -1;
	}
	return 0;
}

int chan_save(struct chan *c, int64_t deadline, struct pause_chan *pc, sbx_error_t *err)
{
	memset(pc, 0, sizeof(*pc));
	pthread_mutex_lock(&c->lock);
	int rc = 0;
	/* The reader first reads the old QEMU to its end: after that no
	 * output comes, and what it holds of a frame is known. */
	while (!c->parked && !c->dead && rc == 0)
		rc = chan_wait_until(c, deadline) == ETIMEDOUT ? -1 : 0;
	if (!c->parked) {
		rc = c->dead ? chan_dead_error(c, err)
			     : sbx_error_set(err, ETIMEDOUT, "the control channel did not read the paused VM's end");
		pthread_mutex_unlock(&c->lock);
		return rc;
	}
	if (c->partial_lost) {
		pthread_mutex_unlock(&c->lock);
		return sbx_error_set(err, ENOMEM, "the guest's frame read in part");
	}
	/* The readers of the streams keep reading through a pause: what
	 * they have not taken by the deadline is saved with the streams. */
	while (!drained(c) && chan_wait_until(c, deadline) != ETIMEDOUT)
		;
	rc = snapshot(c, pc, err);
	pthread_mutex_unlock(&c->lock);
	if (rc < 0)
		pause_chan_free(pc);
	return rc;
}

static struct chan_stream *adopt_stream(struct chan *c, const struct pause_stream *ps, sbx_error_t *err)
{
	struct chan_stream *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		sbx_error_set(err, ENOMEM, "adopted stream");
		return NULL;
	}
	*s = (struct chan_stream){
		.c = c, .id = ps->id, .pid = ps->pid, .pty = ps->pty, .stdin_open = ps->stdin_open,
		.ended = ps->ended, .code = ps->code, .uncredited = ps->uncredited,
		.stdin_unacked = ps->stdin_unacked, .adopted = true,
	};
	/* Unread output goes back in line; its credit is due once read (as
	 * any output's), so it is not added to uncredited here. */
	for (size_t i = 0; i < ps->n_out; i++) {
		struct proto_msg m = { .stream = ps->id, .type = ps->out[i].fd == 2 ? PROTO_STDERR : PROTO_STDOUT };
		m.u.data.data = ps->out[i].data;
		m.u.data.len = ps->out[i].len;
		if (chan_stream_output(s, &m, err) < 0) {
			chan_stream_free(s);
			return NULL;
		}
	}
	return s;
}

/* The earlier process's partial frame, fed to the reader it starts with:
 * anything but a frame still missing bytes is a damaged save. */
static int carry_partial(struct chan *c, const struct pause_chan *pc, sbx_error_t *err)
{
	if ((c->carry = malloc(sizeof(*c->carry))) == NULL)
		return sbx_error_set(err, ENOMEM, "adopted channel");
	proto_reader_init(c->carry);
	if (pc->partial_len == 0)
		return 0;
	size_t used = 0;
	struct proto_header h;
	const uint8_t *payload = NULL;
	int r = proto_reader_feed(c->carry, pc->partial, pc->partial_len, &used, &h, &payload, err);
	if (r < 0)
		return sbx_error_prefix(err, "the saved partial frame");
	if (r > 0 || used != pc->partial_len)
		return sbx_error_set(err, EINVAL, "the saved partial frame is a whole frame");
	return 0;
}

static void adopt_free(struct chan *c)
{
	while (c->streams != NULL) {
		struct chan_stream *s = c->streams;
		c->streams = s->next;
		chan_stream_free(s);
	}
	if (c->carry != NULL)
		proto_reader_free(c->carry);
	free(c->carry);
	free(c->kills);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->wlock);
	free(c);
}

struct chan *chan_adopt(const struct pause_chan *pc, sbx_error_t *err)
{
	struct chan *c = chan_new(-1, err);
	if (c == NULL)
		return NULL;
	/* As a paused channel stands: booted, held, its reader waiting
	 * for the resume's socket. */
	c->hello = c->ready = true;
	c->held = c->swapping = true;
	c->next_id = pc->next_id;
	bool ok = carry_partial(c, pc, err) == 0;
	if (ok && pc->n_kills > 0) {
		ok = (c->kills = calloc(pc->n_kills, sizeof(*c->kills))) != NULL;
		if (!ok)
			sbx_error_set(err, ENOMEM, "adopted channel");
	}
	for (size_t i = 0; ok && i < pc->n_kills; i++)
		c->kills[c->n_kills++] = (struct chan_kill){ pc->kills[i].id, pc->kills[i].sig };
	c->cap_kills = c->n_kills;
	for (size_t i = 0; ok && i < pc->n_streams; i++) {
		struct chan_stream *s = NULL;
		if (chan_find_stream(c, pc->streams[i].id) != NULL)
			sbx_error_set(err, EINVAL, "stream %u saved twice", pc->streams[i].id);
		else
			s = adopt_stream(c, &pc->streams[i], err);
		ok = s != NULL;
		if (ok) {
			s->next = c->streams;
			c->streams = s;
		}
	}
	if (!ok || chan_start(c, err) < 0) {
		adopt_free(c);
		return NULL;
	}
	return c;
}

struct chan_stream *chan_take_adopted(struct chan *c, uint32_t pid)
{
	pthread_mutex_lock(&c->lock);
	struct chan_stream *s = c->streams;
	while (s != NULL && !(s->adopted && s->pid == pid && pid != 0))
		s = s->next;
	if (s != NULL)
		s->adopted = false;
	pthread_mutex_unlock(&c->lock);
	return s;
}

void chan_release_adopted(struct chan *c)
{
	for (;;) {
		pthread_mutex_lock(&c->lock);
		struct chan_stream *s = c->streams;
		while (s != NULL && !s->adopted)
			s = s->next;
		if (s != NULL)
			s->adopted = false;
		pthread_mutex_unlock(&c->lock);
		if (s == NULL)
			return;
		/* Held: its KILL goes after RESUMED. */
		chan_stream_release(s);
	}
}
