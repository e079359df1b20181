/* A worker VM's vCPUs and memory (contract §8.3): as the manifest's
 * `resources` or the request's `resources` write them, the defaults (2 /
 * 2048 MiB) and the bundle cap (4 / 4096 MiB). */
#ifndef SBX_WORKER_RESOURCES_H
#define SBX_WORKER_RESOURCES_H

#include <jansson.h>
#include <stdbool.h>

#include "common/error.h"

#define WORKER_DEFAULT_CPUS 2
#define WORKER_DEFAULT_MEMORY_MB 2048
#define WORKER_BUNDLE_MAX_CPUS 4
#define WORKER_BUNDLE_MAX_MEMORY_MB 4096
#define WORKER_MAX_CPUS 64
#define WORKER_MAX_MEMORY_MB (1024u * 1024u)

/* 0 means "not given". */
struct worker_resources {
	unsigned cpus, memory_mb;
};

/* cpus: an integer, a number rounded up, or a string of one ("2", "1.5",
 * k8s millicores "500m", rounded up): 1..WORKER_MAX_CPUS.  Messages name
 * `what` ("resources.cpus"). */
int worker_cpus_parse(json_t *v, const char *what, unsigned *out, sbx_error_t *err);
/* memory: an integer is MiB; a string is k8s style: "512Mi", "2Gi",
 * "1048576Ki", or bytes "536870912" (rounded up to MiB); a string of digits
 * with no suffix is bytes.  1..WORKER_MAX_MEMORY_MB MiB. */
int worker_memory_parse(json_t *v, const char *what, unsigned *out_mb, sbx_error_t *err);
/* Both keys of a {cpus?, memory?} map (null: absent).  Any other key is
 * refused when `strict` (a manifest), ignored otherwise (a request, whose
 * unknown fields are ignored everywhere: contract §1.5). */
int worker_resources_parse(json_t *obj, const char *what, bool strict, struct worker_resources *out,
			   sbx_error_t *err);

/* The request's values, else the manifest's, else the defaults; a bundle's
 * capped at 4 / 4096 with one warning naming the worker and what was asked. */
struct worker_resources worker_resources_resolve(const char *worker, bool bundle, struct worker_resources request,
						 struct worker_resources manifest);

#endif
