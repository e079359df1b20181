/* The front of a cluster (serve --front): it serves sandbox-libkrun::* in
 * its namespace and owns no VM.  Each call goes, through the engine's
 * invokefunction.namespace, to a member: a plain `serve` in a namespace of
 * its own, on any host.  Creates are placed by free capacity; calls naming
 * a sandbox go to the member that owns it.  docs/cluster.md. */
#ifndef SBX_FRONT_H
#define SBX_FRONT_H

#include <jansson.h>

#include "common/error.h"
#include "engine/engine.h"

struct front;

/* own_namespace: the front's (NULL: default), never a member.  members: a
 * comma-separated list of namespaces pinning the members (NULL or empty:
 * every other namespace whose engine::functions::list shows
 * sandbox-libkrun::adapter::info, looked for every second). */
struct front *front_new(struct engine *e, const char *own_namespace, const char *members, sbx_error_t *err);
/* Starts the thread that finds members and reads their capacity and lists. */
int front_start(struct front *f, sbx_error_t *err);
/* An engine handler: userdata is the front. */
int front_handle(void *userdata, const struct engine_invocation *inv, json_t *data, json_t **out);
/* Stops that thread: after engine_stop(), whose calls then end at once, and
 * before engine_free(), which the thread's calls use. */
void front_stop(struct front *f);
/* Frees the front: after engine_free(), which waits for the handlers. */
void front_free(struct front *f);

#endif
