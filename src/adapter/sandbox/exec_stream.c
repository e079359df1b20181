/* exec's `stream` field: output sent to the caller's channels as it comes. */
#include "adapter/sandbox/exec_stream.h"

#include <stdio.h>
#include <string.h>

#include "adapter/request.h"
#include "common/log.h"
#include "common/scodes.h"

static const char *const names[2] = { "stdout", "stderr" };

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

int exec_stream_output(void *ud, int fd, const void *data, size_t len)
{
	struct exec_stream *s = ud;
	int i = fd == 2 ? 1 : 0;
	if (s->w[i] == NULL)
		return s->inner != NULL ? s->inner(s->inner_ud, fd, data, len) : 0;
	if (s->failed[i])
		return 1;
	sbx_error_t err = NULL;
	if (s->ops->writer_send(s->w[i], data, len, &err) < 0) {
		sbx_info("exec: streaming %s stopped, the rest of it is discarded: %s", names[i], sbx_error_msg(err));
		sbx_error_free(&err);
		s->failed[i] = true;
	}
	return 1;
}

void exec_stream_close(struct exec_stream *s, const char *fail_text)
{
	for (int i = 0; i < 2; i++) {
		if (s->w[i] != NULL)
			s->ops->writer_close(s->w[i], fail_text);
		s->w[i] = NULL;
	}
}
