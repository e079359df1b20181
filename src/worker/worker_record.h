/* The state of one Compose worker on disk: <state dir>/workers/<worker>/
 * (0700) holding worker.json (the record below, written atomically),
 * data.ext4 (the persistent data disk) and logs/.  worker::prepare writes the
 * record; start/status/logs/stop/destroy read it. */
#ifndef SBX_WORKER_RECORD_H
#define SBX_WORKER_RECORD_H

#include <stddef.h>

#include "common/error.h"

#define WORKER_NAME_MAX 64
#define WORKER_RECORD_FILE "worker.json"
#define WORKER_DATA_DISK "data.ext4"

enum worker_source { WORKER_SOURCE_PATH, WORKER_SOURCE_PACKAGE };

struct worker_record {
	char *worker; /* the name (validated: [A-Za-z0-9._-], 1..64, not "." or "..") */
	enum worker_source source;
	char *host_path;  /* canonical */
	char *base_image; /* image reference as resolved (what the image store pulled) */
	char *image_erofs; /* path of the image's erofs in the image store */
	unsigned cpus, memory_mb;
	char **env; /* manifest env, "K=V", NULL-terminated (may be empty) */
	char *setup, *install, *start; /* scripts.* (sh -c strings), NULL when absent */
	char **exec; /* the request's exec argv (bundles), NULL when absent */
	char **image_env; /* the image config's Env, "K=V" */
	char *image_user, *image_workdir; /* from the image config, may be NULL */
};

/* "path" or "package". */
const char *worker_source_name(enum worker_source s);

/* S001 unless `worker` is 1..64 of [A-Za-z0-9._-] and not "." or "..". */
int worker_name_check(const char *worker, sbx_error_t *err);

/* <state>/workers/<worker>, NUL-terminated in buf; fails on a bad name. */
int worker_dir(const char *worker, char *buf, size_t len, sbx_error_t *err);
void worker_record_free(struct worker_record *r);

#endif
