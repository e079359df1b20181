/* worker.json on disk: the record of worker_record.h read and written
 * through worker_record_json.h, which sits below this file. */
#ifndef SBX_WORKER_RECORD_FILE_H
#define SBX_WORKER_RECORD_FILE_H

#include "common/error.h"
#include "worker/worker_record.h"

/* Loads worker.json: -1 with errnum ENOENT when the worker was never prepared. */
int worker_record_load(const char *worker, struct worker_record *out, sbx_error_t *err);
/* Writes worker.json (temp file, fsync, rename), creating the worker's
 * directory (0700) when missing. */
int worker_record_save(const struct worker_record *r, sbx_error_t *err);

#endif
