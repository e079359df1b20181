/* A stand-in engine for the front's unit tests: the WebSocket server of
 * tests/unit/engine plays the engine, and members in their namespaces
 * answer the front's calls from a script, on one thread.  Every call a
 * member receives is logged, so a test can tell who received what. */
#ifndef SBX_TEST_FAKE_ENGINE_H
#define SBX_TEST_FAKE_ENGINE_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>

#include "../engine/ws_test_server.h"
#include "engine/engine.h"

#define FAKE_MEMBERS_MAX 80

struct fake_member {
	char ns[32];
	bool listed;      /* engine::functions::list shows its adapter::info */
	bool answers;     /* else every call to it is function_not_found */
	long live_max;    /* its capacity's sandboxes.max */
	json_t *rows;     /* its list's rows */
	char create_id[40]; /* create's answer; "" refuses with S400 */
	json_t *workers;  /* names of the worker VMs it holds */
};

struct fake_engine {
	struct test_server ts;
	pthread_t thread;
	bool stop;
	pthread_mutex_t lock; /* the members and the log */
	struct fake_member members[FAKE_MEMBERS_MAX];
	size_t nmembers;
	json_t *log; /* [{ns, fn, data}] of the members' calls */
	struct engine *e;
};

/* Starts the server, an engine client connected to it and the thread. */
int fake_engine_start(struct fake_engine *fe);
void fake_engine_stop(struct fake_engine *fe);
/* A member answering with the given capacity (rows: a JSON text). */
struct fake_member *fake_member_add(struct fake_engine *fe, const char *ns, long live_max, const char *rows);
/* How many calls of `fn` (without the worker prefix) `ns` received; with
 * `key`, only those whose data has that key. */
size_t fake_calls(struct fake_engine *fe, const char *ns, const char *fn, const char *key);
void fake_log_clear(struct fake_engine *fe);

#endif
