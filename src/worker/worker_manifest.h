/* A worker's manifest, iii.worker.yaml (docs/workers.md): at
 * most 64 KiB; keys name, description, runtime.base_image,
 * scripts.{setup,install,start}, env (a map of scalars), resources.{cpus,
 * memory}; iii, deploy, manifest, tags and dependencies are accepted with
 * anything under them and ignored.  Anything else, a wrong type, or (in a
 * bundle) scripts.setup, scripts.install or runtime.base_image is refused
 * with S503 "iii.worker.yaml: ..." naming the key. */
#ifndef SBX_WORKER_MANIFEST_H
#define SBX_WORKER_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "worker/worker_resources.h"

#define WORKER_MANIFEST_FILE "iii.worker.yaml"
#define WORKER_MANIFEST_MAX (64 * 1024)

struct worker_manifest {
	char *name, *description;     /* NULL when absent */
	char *base_image;             /* runtime.base_image */
	char *setup, *install, *start; /* scripts.* */
	char **env;                   /* "K=V" in the file's order; never NULL after a parse */
	struct worker_resources resources; /* 0: not given */
};

/* Parses manifest text; `bundle` applies the bundle rules. */
int worker_manifest_parse(const char *text, size_t len, bool bundle, struct worker_manifest *out, sbx_error_t *err);
/* Reads iii.worker.yaml (a regular file, not a symlink) in the directory
 * dfd (which `dir` names in messages) and parses it. */
int worker_manifest_load(int dfd, const char *dir, bool bundle, struct worker_manifest *out, sbx_error_t *err);
void worker_manifest_free(struct worker_manifest *m);

#endif
