/* The worker::* token check (contract §7.19): `auth` must equal
 * III_SANDBOX_WORKER_TOKEN; an unset or empty token refuses everything. */
#ifndef SBX_ADAPTER_WORKER_AUTH_H
#define SBX_ADAPTER_WORKER_AUTH_H

#include <jansson.h>

#include "common/error.h"

/* `token` may be NULL (unset).  Compares in time independent of where the
 * strings differ; never puts either value in the error (S505). */
int worker_auth_check(const char *token, json_t *req, sbx_error_t *err);

#endif
