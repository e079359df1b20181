/* exec's `stream` field: output sent to the caller's channels as it comes. */
#include "adapter/sandbox/exec_stream.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "adapter/request.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/scodes.h"

static const char *const names[2] = { "stdout", "stderr" };

/* How often the watch looks; the exec's own deadline check comes first
 * when no send is stuck (the drain loop polls every 200 ms). */
#define WATCH_MS 100
#define WATCH_SLACK_MS 250

int exec_stream_decode(json_t *req, json_t **stream, sbx_error_t *err)
{
	*stream = json_object_get(req, "stream");
	if (*stream == NULL || json_is_null(*stream)) {
		*stream = NULL;
		return 0;
	}
	if (!json_is_object(*stream))
		return req_type_error(*stream, "stream", "a map {stdout?, stderr?} of writer channel refs", err);
	for (int i = 0; i < 2; i++) {
		json_t *ref = json_object_get(*stream, names[i]);
		if (ref != NULL && !json_is_null(ref) && !json_is_object(ref)) {
			char field[16];
			snprintf(field, sizeof(field), "stream.%s", names[i]);
			return req_type_error(ref, field, "a writer channel ref", err);
		}
	}
	return 0;
}

int exec_stream_open(struct exec_stream *s, const struct sbx_stream_host *host, json_t *stream, exec_output_fn inner,
		     void *inner_ud, sbx_error_t *err)
{
	memset(s, 0, sizeof(*s));
	s->ops = host->ops;
	s->inner = inner;
	s->inner_ud = inner_ud;
	if (stream == NULL)
		return 0;
	if (host->ops == NULL)
		return sbx_error_scode(err, SBX_S_VM_BOOT,
				       "streamed output needs the engine's byte channels, which this sandbox-libkrun "
				       "build does not have");
	for (int i = 0; i < 2; i++) {
		json_t *ref = json_object_get(stream, names[i]);
		if (ref == NULL || json_is_null(ref))
			continue;
		s->w[i] = host->ops->writer_open(host->ctx, ref, err);
		if (s->w[i] != NULL)
			continue;
		if (*err != NULL && strcmp((*err)->scode, SBX_S_INVALID_REQUEST) == 0)
			sbx_error_scode(err, SBX_S_INVALID_REQUEST, "`stream.%s`: %s", names[i],
					sbx_error_msg(*err));
		else
			sbx_error_prefix(err, "stream.%s", names[i]);
		exec_stream_close(s, "the exec did not start");
		return -1;
	}
	return 0;
}

static void *watch_main(void *arg)
{
	struct exec_stream *s = arg;
	bool aborted[2] = { false, false };
	pthread_mutex_lock(&s->lock);
	while (!s->done) {
		struct timespec ts = sbx_ms_timespec(sbx_now_ms() + WATCH_MS);
		pthread_cond_timedwait(&s->cond, &s->lock, &ts);
		if (s->done)
			break;
		if (sbx_now_ms() < s->deadline + WATCH_SLACK_MS && !s->cancelled(s->cancel_ud))
			continue;
		for (int i = 0; i < 2; i++) {
			if (s->w[i] != NULL && !aborted[i] && atomic_load(&s->sending[i])) {
				sbx_info("exec: the %s channel's reader does not read: its send is aborted", names[i]);
				s->ops->writer_abort(s->w[i]);
				aborted[i] = true;
			}
		}
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int exec_stream_watch(struct exec_stream *s, int64_t deadline, bool (*cancelled)(void *ud), void *ud,
		      sbx_error_t *err)
{
	if ((s->w[0] == NULL && s->w[1] == NULL) || s->ops->writer_abort == NULL)
		return 0;
	s->deadline = deadline;
	s->cancelled = cancelled;
	s->cancel_ud = ud;
	pthread_mutex_init(&s->lock, NULL);
	sbx_cond_init_monotonic(&s->cond);
	int e = pthread_create(&s->watch, NULL, watch_main, s);
	if (e != 0) {
		pthread_cond_destroy(&s->cond);
		pthread_mutex_destroy(&s->lock);
		return sbx_error_errno(err, e, "exec stream watch");
	}
	s->watching = true;
	return 0;
}

int exec_stream_output(void *ud, int fd, const void *data, size_t len)
{
	struct exec_stream *s = ud;
	int i = fd == 2 ? 1 : 0;
	if (s->w[i] == NULL)
		return s->inner != NULL ? s->inner(s->inner_ud, fd, data, len) : 0;
	if (s->failed[i])
		return 1;
	sbx_error_t err = NULL;
	atomic_store(&s->sending[i], true);
	int rc = s->ops->writer_send(s->w[i], data, len, &err);
	atomic_store(&s->sending[i], false);
	if (rc < 0) {
		sbx_info("exec: streaming %s stopped, the rest of it is discarded: %s", names[i], sbx_error_msg(err));
		sbx_error_free(&err);
		s->failed[i] = true;
	}
	return 1;
}

void exec_stream_close(struct exec_stream *s, const char *fail_text)
{
	if (s->watching) {
		pthread_mutex_lock(&s->lock);
		s->done = true;
		pthread_cond_signal(&s->cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->watch, NULL);
		pthread_cond_destroy(&s->cond);
		pthread_mutex_destroy(&s->lock);
		s->watching = false;
	}
	for (int i = 0; i < 2; i++) {
		if (s->w[i] != NULL)
			s->ops->writer_close(s->w[i], fail_text);
		s->w[i] = NULL;
	}
}
