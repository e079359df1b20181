/* worker.json <-> struct worker_record.  The file is ours, but a record
 * that does not have the expected shape is refused, not half read. */
#ifndef SBX_WORKER_RECORD_JSON_H
#define SBX_WORKER_RECORD_JSON_H

#include <jansson.h>

#include "common/error.h"
#include "worker/worker_record.h"

#define WORKER_RECORD_VERSION 1

json_t *worker_record_to_json(const struct worker_record *r, sbx_error_t *err);
/* Fills *out (zeroed first); on failure *out holds nothing to free. */
int worker_record_from_json(json_t *j, struct worker_record *out, sbx_error_t *err);

#endif
