/* The worker::* operations behind the dispatcher (handlers_worker.c), which
 * has checked the token and that `worker` is a string; serve
 * gives them (worker/worker_ops.h), and without them worker::* answer S300. */
#ifndef SBX_ADAPTER_WORKER_BACKEND_H
#define SBX_ADAPTER_WORKER_BACKEND_H

#include <jansson.h>

struct sbx_adapter;

struct sbx_worker_ops {
	int (*prepare)(struct sbx_adapter *a, json_t *req, json_t **out);
	int (*start)(struct sbx_adapter *a, json_t *req, json_t **out);
	int (*status)(struct sbx_adapter *a, json_t *req, json_t **out);
	int (*logs)(struct sbx_adapter *a, json_t *req, json_t **out);
	int (*stop)(struct sbx_adapter *a, json_t *req, json_t **out);
	int (*destroy)(struct sbx_adapter *a, json_t *req, json_t **out);
};

#endif
