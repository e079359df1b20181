/* fs operations on the control channel (channel.h): their result frames
 * are queued whole for chan_fs_next, up to FS_RESULT_MAX per operation. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/scodes.h"
#include "vm/channel_internal.h"

void chan_fs_queue(struct chan_stream *s, struct proto_msg *m, uint32_t length, bool *taken)
{
	if (s->ended)
		return;
	s->fs_bytes += length;
	struct fs_item *it = s->fs_bytes <= FS_RESULT_MAX ? malloc(sizeof(*it)) : NULL;
	if (it == NULL) {
		s->ended = true;
		s->code = -1;
		s->errnum = EFBIG;
		free(s->error);
		s->error = strdup(s->fs_bytes > FS_RESULT_MAX ? "the guest's answer is larger than 16 MiB"
							       : "out of memory for the guest's answer");
		return;
	}
	it->next = NULL;
	it->m = *m;
	*taken = true;
	if (s->fs_tail != NULL)
		s->fs_tail->next = it;
	else
		s->fs_head = it;
	s->fs_tail = it;
}

struct chan_stream *chan_fs_start(struct chan *c, const struct proto_msg *req, sbx_error_t *err)
{
	if (req->type <= PROTO_FS_ERROR || req->type > PROTO_FS_READ)
		return sbx_error_set(err, EINVAL, "not an fs request: %s", proto_type_name(req->type)), NULL;
	struct proto_msg m = *req;
	return chan_stream_open(c, &m, false, err);
}

int chan_fs_next(struct chan_stream *s, struct proto_msg *m, struct proto_fs_done *done, int64_t deadline,
		 sbx_error_t *err)
{
	struct chan *c = s->c;
	pthread_mutex_lock(&c->lock);
	int rc = 0;
	while (s->fs_head == NULL && !s->ended && rc == 0)
		rc = chan_wait_until(c, deadline) == ETIMEDOUT ? -1 : 0;
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
			chan_dead_error(c, err);
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

/* FS_DONE or FS_ERROR: the operation's one answer. */
void chan_fs_end(struct chan_stream *s, const struct proto_msg *m)
{
	if (s->ended)
		return;
	s->ended = true;
	if (m->type == PROTO_FS_DONE) {
		s->code = 0;
		s->has_done = true;
		s->done = m->u.fs_done;
		return;
	}
	s->code = -1;
	s->errnum = m->u.fs_error.errnum;
	free(s->error);
	s->error = strdup(m->u.fs_error.message);
}
