/* State shared by the engine client's files; nothing outside src/engine/
 * includes this. */
#ifndef SBX_ENGINE_INTERNAL_H
#define SBX_ENGINE_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>

#include "common/uuid.h"
#include "engine/engine.h"
#include "engine/ws_conn.h"

#define ENGINE_PING_INTERVAL_MS 20000
#define ENGINE_IDLE_TIMEOUT_MS 60000
#define ENGINE_BACKOFF_MIN_MS 1000
#define ENGINE_BACKOFF_MAX_MS 30000
#define ENGINE_MAX_MESSAGE (16u * 1024 * 1024)
#define ENGINE_DEFAULT_MAX_INVOCATIONS 256
#define ENGINE_DEFAULT_MAX_QUEUED 1024
#define ENGINE_QUICK_THREADS 32 /* the pool of quick functions */
#define ENGINE_MAX_ID_LEN 256 /* worker ids, tokens and function ids we accept */

struct job;

/* Invocations of one pool: those running, and those waiting for a thread
 * of the pool in arrival order. */
struct invocation_pool {
	int busy, max;
	struct job *head, *tail;
};

/* One outbound call waiting for its invocationresult. */
struct pending_call {
	char id[SBX_UUID_STRLEN + 1];
	bool done;
	bool lost;      /* the connection went away */
	json_t *result; /* owned until taken */
	json_t *error;
	struct pending_call *next;
};


struct engine {
	char *url;
	char *headers; /* extra upgrade headers (secrets), or NULL */
	char *worker_name;
	char *worker_version;
	char *description;
	char *namespace; /* NULL: the default namespace */
	char *isolation; /* NULL: not reported */
	bool wait_for_lease;
	int max_invocations;
	int stop_fd; /* eventfd, written once by engine_stop(): wakes every wait */

	pthread_mutex_t lock; /* everything below */
	pthread_cond_t cond;  /* state changes: registered, stopped, pending, invocations */
	struct engine_function **fns; /* owned copies, never removed */
	size_t nfns;
	struct ws_conn *conn; /* current connection, or NULL */
	int conn_users;       /* senders using conn outside the lock */
	bool registered;      /* conn is open and the registrations are sent */
	bool started, stopped, fatal;
	/* wait_for_lease: a connection was refused the lease (logged once); the
	 * retry comes after the first backoff step, since the connection was
	 * open (about a second). */
	bool lease_waiting;
	char worker_id[ENGINE_MAX_ID_LEN + 1];
	char reattach_token[ENGINE_MAX_ID_LEN + 1];
	struct pending_call *pending;
	int running; /* invocation and background threads, for engine_free() */
	struct invocation_pool pools[2]; /* [0] every function, [1] quick ones */
	int queued, max_queued;         /* waiting in both pools */
	json_t *(*busy_error)(const char *message);
	pthread_t thread;
};

/* engine_link.c: below engine.c and the session, dispatch and pending
 * files (engine_stopping, declared in engine.h, is there too). */
/* Sends one JSON message on the current connection (steals nothing). */
int engine_send(struct engine *e, json_t *msg, sbx_error_t *err);
/* Like engine_send(), on a given connection; for the connection thread. */
int engine_send_on(struct ws_conn *c, json_t *msg, sbx_error_t *err);
/* The string value of obj[key] when it is a string of at most maxlen bytes
 * with no NUL byte, else NULL. */
const char *engine_json_str(json_t *obj, const char *key, size_t maxlen);
/* Waits on e->cond until the monotonic deadline; e->lock held. */
void engine_wait_until(struct engine *e, int64_t deadline_ms);

/* engine_session.c: runs one open connection until it ends, then frees it. */
void engine_session_run(struct engine *e, struct ws_conn *c);
/* The registerfunction message for f (a new reference), NULL without memory. */
json_t *engine_registerfunction_msg(const struct engine_function *f);

/* Starts a detached handler or background thread; pthread_create's
 * result. */
int engine_thread_start(void *(*fn)(void *), void *arg);
/* A handler or background thread ended: wakes whoever waits for e->running
 * to drop (takes e->lock). */
void engine_thread_done(struct engine *e);

/* engine_dispatch.c */
void engine_dispatch_invocation(struct engine *e, json_t *msg);
/* Answers an invokefunction with an error without running any handler (a
 * frame that could not be decoded in full); nothing when it has no id. */
void engine_dispatch_refuse(struct engine *e, json_t *msg, const char *code, const char *message);
/* Frees invocations still waiting (engine_free(), once no thread runs). */
void engine_dispatch_drop_queued(struct engine *e);

/* engine_pending.c (the table is under e->lock) */
void engine_pending_complete(struct engine *e, json_t *msg);
void engine_pending_fail_all(struct engine *e);

#endif
