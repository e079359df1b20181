/* One open connection to the engine: reattach, worker registration, function
 * replay, then the read loop with keep-alive until the connection ends. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/metrics_families.h"
#include "common/clock.h"
#include "engine/engine_internal.h"

json_t *engine_registerfunction_msg(const struct engine_function *f)
{
	json_t *msg = json_pack("{s:s, s:s}", "type", "registerfunction", "id", f->id);
	if (msg == NULL)
		return NULL;
	if ((f->description != NULL && json_object_set_new(msg, "description", json_string(f->description)) < 0) ||
	    (f->request_format != NULL && json_object_set(msg, "request_format", f->request_format) < 0) ||
	    (f->response_format != NULL && json_object_set(msg, "response_format", f->response_format) < 0)) {
		json_decref(msg);
		return NULL;
	}
	return msg;
}

/* engine::workers::register, fire-and-forget: no invocation_id. */
static json_t *worker_register_msg(struct engine *e)
{
	struct utsname u;
	char os[3 * sizeof(u.release) + 8] = "unknown";
	if (uname(&u) == 0)
		snprintf(os, sizeof(os), "%s %s (%s)", u.sysname, u.release, u.machine);
	json_t *data = json_pack("{s:s, s:s, s:s, s:s, s:I}", "runtime", "c", "version", e->worker_version, "name",
				 e->worker_name, "os", os, "pid", (json_int_t)getpid());
	if (data == NULL)
		return NULL;
	if ((e->description != NULL && json_object_set_new(data, "description", json_string(e->description)) < 0) ||
	    (e->namespace != NULL && json_object_set_new(data, "namespace", json_string(e->namespace)) < 0) ||
	    (e->isolation != NULL && json_object_set_new(data, "isolation", json_string(e->isolation)) < 0)) {
		json_decref(data);
		return NULL;
	}
	return json_pack("{s:s, s:s, s:{s:s}, s:o}", "type", "invokefunction", "function_id",
			 "engine::workers::register", "action", "type", "void", "data", data);
}

static int send_new(struct ws_conn *c, json_t *msg, sbx_error_t *err)
{
	if (msg == NULL)
		return sbx_error_errno(err, ENOMEM, "building a message");
	int r = engine_send_on(c, msg, err);
	json_decref(msg);
	return r;
}

/* Sends reattach, the worker registration and every function, then publishes
 * the connection.  Nothing else may be sent on it before: the engine wants
 * reattach first and the registration before any registerfunction. */
static int register_all(struct engine *e, struct ws_conn *c, sbx_error_t *err)
{
	char prev_id[ENGINE_MAX_ID_LEN + 1], prev_token[ENGINE_MAX_ID_LEN + 1];
	pthread_mutex_lock(&e->lock);
	memcpy(prev_id, e->worker_id, sizeof(prev_id));
	memcpy(prev_token, e->reattach_token, sizeof(prev_token));
	pthread_mutex_unlock(&e->lock);

	if (prev_id[0] != '\0') {
		json_t *m = json_pack("{s:s, s:s}", "type", "reattach", "previous_worker_id", prev_id);
		if (m != NULL && prev_token[0] != '\0' &&
		    json_object_set_new(m, "reattach_token", json_string(prev_token)) < 0) {
			json_decref(m);
			m = NULL;
		}
		if (send_new(c, m, err) < 0)
			return -1;
	}
	if (send_new(c, worker_register_msg(e), err) < 0)
		return -1;
	for (size_t sent = 0;; sent++) {
		pthread_mutex_lock(&e->lock);
		if (sent == e->nfns) {
			/* Functions added from now on are sent by engine_add_function(). */
			e->conn = c;
			e->registered = true;
			if (prev_id[0] != '\0')
				sbx_metric_add(&sbx_m_engine_reconnects, NULL, 1);
			pthread_cond_broadcast(&e->cond);
			pthread_mutex_unlock(&e->lock);
			return 0;
		}
		struct engine_function *f = e->fns[sent];
		pthread_mutex_unlock(&e->lock);
		if (send_new(c, engine_registerfunction_msg(f), err) < 0)
			return -1;
	}
}

static void handle_workerregistered(struct engine *e, json_t *msg)
{
	const char *id = engine_json_str(msg, "worker_id", ENGINE_MAX_ID_LEN);
	const char *token = engine_json_str(msg, "reattach_token", ENGINE_MAX_ID_LEN);
	if (id == NULL || *id == '\0') {
		sbx_warn("engine: workerregistered without a usable worker_id dropped");
		return;
	}
	pthread_mutex_lock(&e->lock);
	snprintf(e->worker_id, sizeof(e->worker_id), "%s", id);
	snprintf(e->reattach_token, sizeof(e->reattach_token), "%s", token != NULL ? token : "");
	pthread_mutex_unlock(&e->lock);
	sbx_info("engine: registered as worker %s", id);
}

static void handle_rejected(struct engine *e, json_t *msg)
{
	const char *code = engine_json_str(msg, "code", ENGINE_MAX_ID_LEN);
	if (code != NULL && strcmp(code, "FUNCTION_NAMESPACE_CONFLICT") == 0) {
		const char *fn = engine_json_str(msg, "function_id", ENGINE_MAX_ID_LEN);
		sbx_warn("engine: function %s is owned by another worker; not registered", fn != NULL ? fn : "?");
		return;
	}
	if (e->wait_for_lease && code != NULL && strcmp(code, "WORKER_NAMESPACE_CONFLICT") == 0) {
		pthread_mutex_lock(&e->lock);
		bool first = !e->lease_waiting;
		e->lease_waiting = true;
		pthread_mutex_unlock(&e->lock);
		/* Once, not at every retry: a standby may wait for days. */
		if (first)
			sbx_info("engine: another worker '%s' holds the lease in this namespace; waiting to take over",
				 e->worker_name);
		return;
	}
	sbx_err("engine: registration rejected (%s); stopping for good", code != NULL ? code : "no code");
	pthread_mutex_lock(&e->lock);
	e->fatal = true;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
}

/* A copy of the frame's text with every \u0000 escape turned into \u2400
 * (the same length), parsed; NULL when it still does not parse.  Skipping
 * each escape pair as a whole keeps an escaped backslash from being read as
 * the start of an escape. */
static json_t *load_without_nul_escapes(const struct ws_message *m)
{
	cleanup_free char *text = malloc(m->len);
	if (text == NULL)
		return NULL;
	memcpy(text, m->data, m->len);
	bool changed = false;
	for (size_t i = 0; i + 1 < m->len; i++) {
		if (text[i] != '\\')
			continue;
		if (text[i + 1] == 'u' && i + 6 <= m->len && memcmp(text + i + 2, "0000", 4) == 0) {
			memcpy(text + i + 2, "2400", 4);
			changed = true;
		}
		i++;
	}
	return changed ? json_loadb(text, m->len, 0, NULL) : NULL;
}

/* jansson cannot hold a NUL byte in an object key even with JSON_ALLOW_NUL,
 * so a frame with one does not parse.  Its envelope is read from a copy
 * without NUL escapes only to answer the call with an error: the copy's
 * data never reaches a handler or a caller. */
static void answer_undecodable(struct engine *e, const struct ws_message *m)
{
	json_t *msg = load_without_nul_escapes(m);
	const char *type = engine_json_str(msg, "type", 64);
	if (type != NULL && strcmp(type, "invokefunction") == 0) {
		engine_dispatch_refuse(e, msg, "invocation_failed",
				       "the request has a NUL byte in an object key, which this worker cannot decode");
	} else if (type != NULL && strcmp(type, "invocationresult") == 0) {
		json_t *error = json_pack("{s:s, s:s}", "code", "invalid_result", "message",
					  "the result has a NUL byte in an object key, which this worker cannot decode");
		if (error != NULL && json_object_set_new(msg, "error", error) == 0)
			engine_pending_complete(e, msg);
	}
	json_decref(msg);
}

static void handle_message(struct engine *e, struct ws_conn *c, const struct ws_message *m)
{
	size_t i = 0;
	while (i < m->len && (m->data[i] == ' ' || m->data[i] == '\t' || m->data[i] == '\r' || m->data[i] == '\n'))
		i++;
	if (i == m->len)
		return;
	json_error_t jerr;
	/* \u0000 is valid JSON: refusing it would leave the caller waiting.
	 * Strings that become C strings are checked where they are read. */
	json_t *msg = json_loadb((const char *)m->data, m->len, JSON_ALLOW_NUL, &jerr);
	if (msg == NULL) {
		/* Never log the text itself: it may carry request payloads, and
		 * jansson quotes the offending token after " near ". */
		char *near = strstr(jerr.text, " near ");
		if (near != NULL)
			*near = '\0';
		sbx_warn("engine: malformed JSON dropped (%s at byte %d)", jerr.text, jerr.position);
		answer_undecodable(e, m);
		return;
	}
	const char *type = engine_json_str(msg, "type", 64);
	if (!json_is_object(msg) || type == NULL) {
		sbx_warn("engine: message without a type dropped");
	} else if (strcmp(type, "invokefunction") == 0) {
		engine_dispatch_invocation(e, msg);
	} else if (strcmp(type, "invocationresult") == 0) {
		engine_pending_complete(e, msg);
	} else if (strcmp(type, "workerregistered") == 0) {
		handle_workerregistered(e, msg);
	} else if (strcmp(type, "registrationrejected") == 0) {
		handle_rejected(e, msg);
	} else if (strcmp(type, "ping") == 0) {
		sbx_error_t err = NULL;
		if (send_new(c, json_pack("{s:s}", "type", "pong"), &err) < 0)
			sbx_warn("engine: pong: %s", sbx_error_msg(err));
		sbx_error_free(&err);
	} else if (strcmp(type, "error") == 0) {
		json_t *body = json_object_get(msg, "error");
		const char *code = engine_json_str(body, "code", ENGINE_MAX_ID_LEN);
		const char *text = engine_json_str(body, "message", 1024);
		sbx_err("engine: connection refused: %s: %s", code != NULL ? code : "?", text != NULL ? text : "");
	} else if (strcmp(type, "pong") != 0) {
		sbx_debug("engine: message of type %s ignored", type);
	}
	json_decref(msg);
}

/* Returns true when the connection ended in good order (stop, Close,
 * rejection) and a Close frame is worth sending. */
static bool read_loop(struct engine *e, struct ws_conn *c)
{
	int64_t last_ping = sbx_now_ms();
	for (;;) {
		if (engine_stopping(e) || engine_fatally_rejected(e))
			return true;
		int64_t now = sbx_now_ms();
		int64_t idle_deadline = ws_conn_last_rx_ms(c) + ENGINE_IDLE_TIMEOUT_MS;
		if (now >= idle_deadline) {
			sbx_warn("engine: nothing received for %d s; reconnecting", ENGINE_IDLE_TIMEOUT_MS / 1000);
			return false;
		}
		sbx_error_t err = NULL;
		if (now >= last_ping + ENGINE_PING_INTERVAL_MS) {
			last_ping = now;
			if (ws_conn_send_ping(c, &err) < 0) {
				sbx_warn("engine: ping: %s", sbx_error_msg(err));
				sbx_error_free(&err);
				return false;
			}
		}
		int64_t wake = last_ping + ENGINE_PING_INTERVAL_MS;
		if (idle_deadline < wake)
			wake = idle_deadline;

		struct ws_message m;
		int r = ws_conn_recv(c, &m, sbx_ms_left(wake), &err);
		if (r < 0) {
			if (!engine_stopping(e))
				sbx_warn("engine: connection lost: %s", sbx_error_msg(err));
			sbx_error_free(&err);
			return engine_stopping(e);
		}
		if (r == 0)
			continue;
		if (m.opcode == WS_OP_CLOSE) {
			sbx_info("engine: connection closed by the engine");
			return true;
		}
		handle_message(e, c, &m);
	}
}

void engine_session_run(struct engine *e, struct ws_conn *c)
{
	sbx_error_t err = NULL;
	bool graceful = false;
	if (register_all(e, c, &err) < 0) {
		sbx_warn("engine: registration failed: %s", sbx_error_msg(err));
		sbx_error_free(&err);
	} else {
		graceful = read_loop(e, c);
	}

	pthread_mutex_lock(&e->lock);
	if (e->conn == c)
		e->conn = NULL;
	e->registered = false;
	/* The engine halts every call routed over this connection. */
	engine_pending_fail_all(e);
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);

	/* A dead or stuck peer gets no Close: it could only delay the reconnect. */
	if (graceful) {
		ws_conn_send_close(c, 1000, &err);
		sbx_error_free(&err);
	}
	ws_conn_shutdown(c); /* senders still inside ws_conn fail at once */
	pthread_mutex_lock(&e->lock);
	while (e->conn_users > 0)
		pthread_cond_wait(&e->cond, &e->lock);
	pthread_mutex_unlock(&e->lock);
	ws_conn_free(c);
}
