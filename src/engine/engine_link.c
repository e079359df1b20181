/* What the engine client's parts share below the lifecycle (engine.c)
 * and the session, dispatch and pending-call files: sending a message on
 * the connection, the stop and rejection flags, waiting on e->cond, and
 * reading a string out of a frame.  Calls nothing of the files above it. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "engine/ws_conn.h"

const char *engine_json_str(json_t *obj, const char *key, size_t maxlen)
{
	json_t *v = json_object_get(obj, key);
	/* Frames are decoded with JSON_ALLOW_NUL: a string holding a NUL byte
	 * would be silently cut short as a C string. */
	if (!json_is_string(v) || json_string_length(v) > maxlen ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return NULL;
	return json_string_value(v);
}

void engine_wait_until(struct engine *e, int64_t deadline_ms)
{
	if (deadline_ms <= sbx_now_ms())
		return;
	struct timespec ts = sbx_ms_timespec(deadline_ms);
	pthread_cond_timedwait(&e->cond, &e->lock, &ts);
}

bool engine_stopping(struct engine *e)
{
	struct pollfd p = { .fd = e->stop_fd, .events = POLLIN };
	return poll(&p, 1, 0) > 0;
}

int engine_send_on(struct ws_conn *c, json_t *msg, sbx_error_t *err)
{
	cleanup_free char *text = json_dumps(msg, JSON_COMPACT);
	if (text == NULL)
		return sbx_error_set(err, EINVAL, "cannot encode a message as JSON");
	size_t len = strlen(text);
	if (len > ENGINE_MAX_MESSAGE)
		return sbx_error_set(err, EMSGSIZE, "message of %zu bytes exceeds the %u byte limit", len,
				     ENGINE_MAX_MESSAGE);
	return ws_conn_send_text(c, text, len, err);
}

int engine_send(struct engine *e, json_t *msg, sbx_error_t *err)
{
	pthread_mutex_lock(&e->lock);
	struct ws_conn *c = e->conn;
	if (c != NULL)
		e->conn_users++;
	pthread_mutex_unlock(&e->lock);
	if (c == NULL)
		return sbx_error_set(err, ENOTCONN, "not connected to the engine");
	int r = engine_send_on(c, msg, err);
	pthread_mutex_lock(&e->lock);
	e->conn_users--;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
	return r;
}

bool engine_fatally_rejected(struct engine *e)
{
	pthread_mutex_lock(&e->lock);
	bool f = e->fatal;
	pthread_mutex_unlock(&e->lock);
	return f;
}
