/* The sandbox-libkrun::* ids with their schemas, registered with one
 * handler: the adapter's (serve) or the front's (serve --front). */
#ifndef SBX_CMD_SERVE_REGISTER_H
#define SBX_CMD_SERVE_REGISTER_H

#include "common/error.h"
#include "engine/engine.h"

/* The 23, then the extensions (ops_ext.c). */
int serve_register_ops(struct engine *e, engine_handler_fn handler, void *userdata, sbx_error_t *err);
/* A call refused because too many wait is a resource limit (S400). */
json_t *serve_busy_error(const char *message);

#endif
