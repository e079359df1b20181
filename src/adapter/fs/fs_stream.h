/* The operator's file copies (control/): fs::write and fs::read with the
 * same checks, hold and S-codes, the bytes coming from or going to the
 * caller instead of an engine channel, so a file of any size streams. */
#ifndef SBX_ADAPTER_FS_FS_STREAM_H
#define SBX_ADAPTER_FS_FS_STREAM_H

#include <jansson.h>
#include <sys/types.h>

#include "adapter/adapter_state.h"

/* Same contract as an op (adapter_state.h): 0 with *out {bytes_written,
 * path}, or -1 with *out the error body.  `mode` NULL: 0644. */
int sbx_fs_write_from(struct sbx_adapter *a, const char *id, const char *path, const char *mode,
		      ssize_t (*source)(void *ud, const void **data, sbx_error_t *err), void *ud, json_t **out);
/* 0 with *out {size, path} once sink() took every byte, or -1 with *out
 * the error body. */
int sbx_fs_read_into(struct sbx_adapter *a, const char *id, const char *path, sbx_fs_sink_fn sink, void *ud,
		     json_t **out);

#endif
