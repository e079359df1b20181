/* The S-code of a failed fs operation (contract §3, §7.8): the guest's
 * errno or verdict mapped to S210-S219; a failure that already has a code
 * keeps it.  The one errno -> S-code map: the fs::* handlers and the
 * backend's write_file (run's files, §7.7) both fail through it. */
#ifndef SBX_ADAPTER_FS_ERRORS_H
#define SBX_ADAPTER_FS_ERRORS_H

#include <stdint.h>

#include "common/error.h"

/* `op` is the request's proto type (EISDIR means S212 for FS_READ only). */
void fs_error_classify(sbx_error_t *err, uint8_t op);

#endif
