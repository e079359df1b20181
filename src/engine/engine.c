/* The engine client's lifecycle and its connection thread: connect,
 * run a session, back off, reconnect, until stopped or fatally rejected. */
#include "engine/engine.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"
#include "common/clock.h"
#include "engine/engine_internal.h"
#include "engine/transport.h"

const char *engine_default_url(void)
{
	const char *v = getenv("III_URL");
	if (v != NULL && *v != '\0')
		return v;
	v = getenv("III_ENGINE_URL");
	if (v != NULL && *v != '\0')
		return v;
	return "ws://127.0.0.1:49134";
}

static char *default_worker_name(void)
{
	const char *v = getenv("III_WORKER_NAME");
	char *name = NULL;
	if (v != NULL && *v != '\0')
		return strdup(v);
	char host[256] = "localhost";
	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	if (asprintf(&name, "%s:%d", host, (int)getpid()) < 0)
		return NULL;
	return name;
}

struct engine *engine_new(const struct engine_options *opts, sbx_error_t *err)
{
	struct engine *e = calloc(1, sizeof(*e));
	if (e == NULL) {
		sbx_error_errno(err, ENOMEM, "engine");
		return NULL;
	}
	e->stop_fd = -1;
	pthread_mutex_init(&e->lock, NULL);
	sbx_cond_init_monotonic(&e->cond);

	const char *url = opts->url != NULL ? opts->url : engine_default_url();
	struct ws_url check;
	if (ws_url_parse(url, &check, err) < 0) {
		sbx_error_prefix(err, "engine URL");
		engine_free(e);
		return NULL;
	}
	ws_url_free(&check);

	e->url = strdup(url);
	e->headers = opts->headers != NULL ? strdup(opts->headers) : NULL;
	e->worker_name = opts->worker_name != NULL ? strdup(opts->worker_name) : default_worker_name();
	e->worker_version = strdup(opts->worker_version != NULL ? opts->worker_version : SBX_VERSION);
	e->description = opts->description != NULL ? strdup(opts->description) : NULL;
	bool has_ns = opts->namespace != NULL && opts->namespace[0] != '\0';
	bool has_iso = opts->isolation != NULL && opts->isolation[0] != '\0';
	e->namespace = has_ns ? strdup(opts->namespace) : NULL;
	e->isolation = has_iso ? strdup(opts->isolation) : NULL;
	e->wait_for_lease = opts->wait_for_lease;
	e->max_invocations = opts->max_concurrent_invocations > 0 ? opts->max_concurrent_invocations
								  : ENGINE_DEFAULT_MAX_INVOCATIONS;
	e->pools[0].max = e->max_invocations;
	e->pools[1].max = ENGINE_QUICK_THREADS;
	e->max_queued = opts->max_queued_invocations > 0 ? opts->max_queued_invocations : ENGINE_DEFAULT_MAX_QUEUED;
	e->busy_error = opts->busy_error;
	e->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (e->url == NULL || (opts->headers != NULL && e->headers == NULL) || e->worker_name == NULL || e->worker_version == NULL ||
	    (opts->description != NULL && e->description == NULL) || (has_ns && e->namespace == NULL) ||
	    (has_iso && e->isolation == NULL)) {
		sbx_error_errno(err, ENOMEM, "engine");
		engine_free(e);
		return NULL;
	}
	if (e->stop_fd < 0) {
		sbx_error_errno(err, errno, "eventfd");
		engine_free(e);
		return NULL;
	}
	return e;
}

static void free_function(struct engine_function *f)
{
	if (f == NULL)
		return;
	free((char *)f->id);
	free((char *)f->description);
	json_decref(f->request_format);
	json_decref(f->response_format);
	free(f);
}

void engine_set_max_queued(struct engine *e, int max_queued)
{
	pthread_mutex_lock(&e->lock);
	e->max_queued = max_queued > 0 ? max_queued : ENGINE_DEFAULT_MAX_QUEUED;
	pthread_mutex_unlock(&e->lock);
}

int engine_add_function(struct engine *e, const struct engine_function *fn, sbx_error_t *err)
{
	if (fn->id == NULL || *fn->id == '\0' || strlen(fn->id) > ENGINE_MAX_ID_LEN || fn->handler == NULL)
		return sbx_error_set(err, EINVAL, "function needs an id (1-%d bytes) and a handler", ENGINE_MAX_ID_LEN);
	struct engine_function *f = calloc(1, sizeof(*f));
	if (f == NULL)
		return sbx_error_errno(err, ENOMEM, "function");
	f->id = strdup(fn->id);
	f->description = fn->description != NULL ? strdup(fn->description) : NULL;
	f->request_format = json_incref(fn->request_format);
	f->response_format = json_incref(fn->response_format);
	f->handler = fn->handler;
	f->userdata = fn->userdata;
	f->quick = fn->quick;
	if (f->id == NULL || (fn->description != NULL && f->description == NULL)) {
		free_function(f);
		return sbx_error_errno(err, ENOMEM, "function");
	}

	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; i < e->nfns; i++) {
		if (strcmp(e->fns[i]->id, f->id) == 0) {
			pthread_mutex_unlock(&e->lock);
			free_function(f);
			return sbx_error_set(err, EEXIST, "function %s is already registered", fn->id);
		}
	}
	struct engine_function **nf = realloc(e->fns, (e->nfns + 1) * sizeof(*nf));
	if (nf == NULL) {
		pthread_mutex_unlock(&e->lock);
		free_function(f);
		return sbx_error_errno(err, ENOMEM, "function");
	}
	e->fns = nf;
	e->fns[e->nfns++] = f;
	/* Before registration completes, the session's replay picks it up. */
	bool send_now = e->registered;
	pthread_mutex_unlock(&e->lock);

	if (!send_now)
		return 0;
	json_t *msg = engine_registerfunction_msg(f);
	if (msg == NULL)
		return sbx_error_errno(err, ENOMEM, "registerfunction");
	sbx_error_t send_err = NULL;
	if (engine_send(e, msg, &send_err) < 0) {
		/* Not fatal: the next connection replays it. */
		sbx_warn("engine: registering %s now failed (%s); it is sent again on reconnect", f->id,
			 sbx_error_msg(send_err));
		sbx_error_free(&send_err);
	}
	json_decref(msg);
	return 0;
}

/* Sleeps for the jittered backoff of `attempt`; returns early on stop. */
static void backoff_sleep(struct engine *e, int attempt)
{
	int64_t base = ENGINE_BACKOFF_MIN_MS;
	for (int i = 0; i < attempt && base < ENGINE_BACKOFF_MAX_MS; i++)
		base *= 2;
	if (base > ENGINE_BACKOFF_MAX_MS)
		base = ENGINE_BACKOFF_MAX_MS;
	/* +-30 %, so that many workers restarted together spread out. */
	int64_t delay = base * (700 + (int64_t)arc4random_uniform(601)) / 1000;
	struct pollfd p = { .fd = e->stop_fd, .events = POLLIN };
	int64_t deadline = sbx_now_ms() + delay;
	while (sbx_ms_left(deadline) > 0) {
		int r = poll(&p, 1, sbx_ms_left(deadline));
		if (r > 0 || (r < 0 && errno != EINTR))
			return;
	}
}

static void *connection_thread(void *arg)
{
	struct engine *e = arg;
	int attempt = 0;
	while (!engine_stopping(e)) {
		sbx_error_t err = NULL;
		struct ws_conn *c = ws_conn_open(e->url, e->headers, TRANSPORT_CONNECT_TIMEOUT_MS, e->stop_fd, ENGINE_MAX_MESSAGE, &err);
		if (c != NULL) {
			attempt = 0;
			sbx_info("engine: connected to %s", e->url);
			engine_session_run(e, c);
		} else if (!engine_stopping(e)) {
			sbx_warn("engine: cannot connect to %s: %s", e->url, sbx_error_msg(err));
		}
		sbx_error_free(&err);

		pthread_mutex_lock(&e->lock);
		bool fatal = e->fatal;
		pthread_mutex_unlock(&e->lock);
		if (fatal || engine_stopping(e))
			break;
		backoff_sleep(e, attempt);
		if (attempt < 16)
			attempt++;
	}
	pthread_mutex_lock(&e->lock);
	e->stopped = true;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

int engine_start(struct engine *e, sbx_error_t *err)
{
	pthread_mutex_lock(&e->lock);
	if (e->started) {
		pthread_mutex_unlock(&e->lock);
		return sbx_error_set(err, EALREADY, "engine client already started");
	}
	int r = pthread_create(&e->thread, NULL, connection_thread, e);
	if (r == 0)
		e->started = true;
	pthread_mutex_unlock(&e->lock);
	if (r != 0)
		return sbx_error_errno(err, r, "starting the engine connection thread");
	return 0;
}

int engine_wait_connected(struct engine *e, int timeout_ms, sbx_error_t *err)
{
	int64_t deadline = sbx_now_ms() + timeout_ms;
	pthread_mutex_lock(&e->lock);
	while (!e->registered && !e->stopped && !e->fatal && sbx_ms_left(deadline) > 0)
		engine_wait_until(e, deadline);
	bool ok = e->registered;
	bool fatal = e->fatal;
	pthread_mutex_unlock(&e->lock);
	if (ok)
		return 0;
	if (fatal)
		return sbx_error_set(err, ECONNREFUSED, "the engine rejected this worker");
	return sbx_error_set(err, ETIMEDOUT, "not connected to the engine at %s within %d ms", e->url, timeout_ms);
}

void engine_wait_stopped(struct engine *e)
{
	pthread_mutex_lock(&e->lock);
	while (!e->stopped)
		pthread_cond_wait(&e->cond, &e->lock);
	pthread_mutex_unlock(&e->lock);
}

void engine_stop(struct engine *e)
{
	/* The eventfd stays readable: every poll in the client sees it. */
	uint64_t one = 1;
	ssize_t n = write(e->stop_fd, &one, sizeof(one));
	(void)n; /* only fails when already written to the maximum */
	pthread_mutex_lock(&e->lock);
	e->stopped = true;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
}

void engine_free(struct engine *e)
{
	if (e == NULL)
		return;
	if (e->stop_fd >= 0) {
		engine_stop(e);
		if (e->started)
			pthread_join(e->thread, NULL);
	}
	pthread_mutex_lock(&e->lock);
	while (e->running > 0)
		pthread_cond_wait(&e->cond, &e->lock);
	pthread_mutex_unlock(&e->lock);
	engine_dispatch_drop_queued(e);

	for (size_t i = 0; i < e->nfns; i++)
		free_function(e->fns[i]);
	free(e->fns);
	free(e->url);
	if (e->headers != NULL)
		explicit_bzero(e->headers, strlen(e->headers));
	free(e->headers);
	free(e->worker_name);
	free(e->worker_version);
	free(e->description);
	free(e->namespace);
	free(e->isolation);
	if (e->stop_fd >= 0)
		close(e->stop_fd);
	pthread_cond_destroy(&e->cond);
	pthread_mutex_destroy(&e->lock);
	free(e);
}
