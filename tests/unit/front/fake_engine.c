/* The stand-in engine (fake_engine.h): one thread reads the front's
 * frames and answers the calls it sends into members' namespaces and the
 * engine's own engine::functions::list. */
#include "fake_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PREFIX "sandbox-libkrun::"

static struct fake_member *member_of(struct fake_engine *fe, const char *ns)
{
	for (size_t i = 0; ns != NULL && i < fe->nmembers; i++)
		if (strcmp(fe->members[i].ns, ns) == 0)
			return &fe->members[i];
	return NULL;
}

/* A member's contract error, as the engine carries it. */
static json_t *member_error(const char *code, const char *msg)
{
	char text[512];
	snprintf(text, sizeof(text), "handler error: {\"code\":\"%s\",\"message\":\"%s\"}", code, msg);
	return json_pack("{s:s, s:s}", "code", "invocation_failed", "message", text);
}

static json_t *functions(struct fake_engine *fe)
{
	json_t *rows = json_array();
	for (size_t i = 0; i < fe->nmembers; i++)
		if (fe->members[i].listed)
			json_array_append_new(rows, json_pack("{s:s, s:s}", "function_id", PREFIX "adapter::info",
							      "namespace", fe->members[i].ns));
	return json_pack("{s:o}", "functions", rows);
}

/* The member's answer to op: 0 and *res, or 1 and *error. */
static int answer(struct fake_member *m, const char *op, json_t *data, json_t **res, json_t **error)
{
	if (strcmp(op, "adapter::info") == 0) {
		*res = json_pack("{s:s, s:{s:{s:i, s:I}, s:{s:i, s:i, s:i}}}", "adapter", "sandbox-libkrun", "capacity",
				 "sandboxes", "live", 0, "max", (json_int_t)m->live_max, "memory_mib", "committed", 0,
				 "budget", 65536, "sandbox_default", 512);
		return 0;
	}
	if (strcmp(op, "list") == 0) {
		*res = json_pack("{s:O}", "sandboxes", m->rows);
		return 0;
	}
	if (strcmp(op, "create") == 0) {
		if (m->create_id[0] == '\0') {
			*error = member_error("S400", "resource limit exceeded: full");
			return 1;
		}
		*res = json_pack("{s:s, s:s}", "sandbox_id", m->create_id, "image", "python");
		return 0;
	}
	if (strcmp(op, "worker::prepare") == 0) {
		json_array_append(m->workers, json_object_get(data, "worker"));
		*res = json_pack("{s:s}", "state", "prepared");
		return 0;
	}
	if (strncmp(op, "worker::", 8) == 0) {
		bool here = false;
		size_t i;
		json_t *w;
		json_array_foreach(m->workers, i, w) here |= json_equal(w, json_object_get(data, "worker"));
		*res = json_pack("{s:s, s:s}", "state", here ? "prepared" : "absent", "ns", m->ns);
		return 0;
	}
	/* exec and the rest: who answered. */
	*res = json_pack("{s:s, s:s}", "stdout", m->ns, "ns", m->ns);
	return 0;
}

static void serve(struct fake_engine *fe, json_t *msg)
{
	const char *type = json_string_value(json_object_get(msg, "type"));
	const char *id = json_string_value(json_object_get(msg, "invocation_id"));
	const char *fn = json_string_value(json_object_get(msg, "function_id"));
	const char *ns = json_string_value(json_object_get(msg, "namespace"));
	json_t *data = json_object_get(msg, "data");
	if (type == NULL || strcmp(type, "invokefunction") != 0 || id == NULL || fn == NULL)
		return;
	json_t *res = NULL, *error = NULL;
	pthread_mutex_lock(&fe->lock);
	struct fake_member *m = member_of(fe, ns);
	if (ns == NULL && strcmp(fn, "engine::functions::list") == 0) {
		res = functions(fe);
	} else if (m == NULL || !m->answers || strncmp(fn, PREFIX, strlen(PREFIX)) != 0) {
		error = json_pack("{s:s, s:s}", "code", "function_not_found", "message", "no such function");
	} else {
		const char *op = fn + strlen(PREFIX);
		json_array_append_new(fe->log, json_pack("{s:s, s:s, s:O?}", "ns", m->ns, "fn", op, "data", data));
		answer(m, op, data, &res, &error);
	}
	pthread_mutex_unlock(&fe->lock);
	json_t *reply = json_pack("{s:s, s:s, s:s}", "type", "invocationresult", "invocation_id", id, "function_id", fn);
	if (res != NULL)
		json_object_set_new(reply, "result", res);
	if (error != NULL)
		json_object_set_new(reply, "error", error);
	ts_send_json(&fe->ts, reply);
}

static void *loop(void *arg)
{
	struct fake_engine *fe = arg;
	if (ts_accept(&fe->ts, 8000) < 0)
		return NULL;
	ts_send_json(&fe->ts, json_pack("{s:s, s:s, s:s}", "type", "workerregistered", "worker_id", "front-w",
					"reattach_token", "tok"));
	while (!__atomic_load_n(&fe->stop, __ATOMIC_ACQUIRE)) {
		json_t *msg = ts_recv(&fe->ts, 100);
		if (msg != NULL)
			serve(fe, msg);
		json_decref(msg);
	}
	return NULL;
}

int fake_engine_start(struct fake_engine *fe)
{
	memset(fe, 0, sizeof(*fe));
	pthread_mutex_init(&fe->lock, NULL);
	fe->log = json_array();
	if (ts_start(&fe->ts) < 0 || pthread_create(&fe->thread, NULL, loop, fe) != 0)
		return -1;
	struct engine_options o = { .url = fe->ts.url, .worker_name = "sandbox-libkrun", .worker_version = "0" };
	sbx_error_t err = NULL;
	fe->e = engine_new(&o, &err);
	if (fe->e == NULL || engine_start(fe->e, &err) < 0 || engine_wait_connected(fe->e, 8000, &err) < 0) {
		sbx_error_free(&err);
		return -1;
	}
	return 0;
}

void fake_engine_stop(struct fake_engine *fe)
{
	if (fe->e != NULL)
		engine_stop(fe->e);
	__atomic_store_n(&fe->stop, true, __ATOMIC_RELEASE);
	pthread_join(fe->thread, NULL);
	engine_free(fe->e);
	ts_stop(&fe->ts);
	for (size_t i = 0; i < fe->nmembers; i++) {
		json_decref(fe->members[i].rows);
		json_decref(fe->members[i].workers);
	}
	json_decref(fe->log);
	pthread_mutex_destroy(&fe->lock);
}

struct fake_member *fake_member_add(struct fake_engine *fe, const char *ns, long live_max, const char *rows)
{
	pthread_mutex_lock(&fe->lock);
	struct fake_member *m = &fe->members[fe->nmembers++];
	*m = (struct fake_member){ .listed = true, .answers = true, .live_max = live_max };
	snprintf(m->ns, sizeof(m->ns), "%s", ns);
	m->rows = json_loads(rows != NULL ? rows : "[]", 0, NULL);
	m->workers = json_array();
	pthread_mutex_unlock(&fe->lock);
	if (m->rows == NULL)
		abort();
	return m;
}

size_t fake_calls(struct fake_engine *fe, const char *ns, const char *fn, const char *key)
{
	size_t n = 0, i;
	json_t *c;
	pthread_mutex_lock(&fe->lock);
	json_array_foreach(fe->log, i, c) {
		json_t *data = json_object_get(c, "data");
		if (strcmp(json_string_value(json_object_get(c, "ns")), ns) == 0 &&
		    strcmp(json_string_value(json_object_get(c, "fn")), fn) == 0 &&
		    (key == NULL || json_object_get(data, key) != NULL))
			n++;
	}
	pthread_mutex_unlock(&fe->lock);
	return n;
}

void fake_log_clear(struct fake_engine *fe)
{
	pthread_mutex_lock(&fe->lock);
	json_array_clear(fe->log);
	pthread_mutex_unlock(&fe->lock);
}
