/* exec with `background: true` (issue 26): starts the command detached
 * from the call and answers {process_id, pid} once the guest reported its
 * pid.  It takes no exec slot; max_background_per_sandbox running ones
 * per sandbox (S003 past it).  timeout_ms does not apply: it runs until it
 * exits, is signalled (process::signal) or the sandbox stops. */
#ifndef SBX_ADAPTER_PROCESS_START_H
#define SBX_ADAPTER_PROCESS_START_H

#include <jansson.h>

#include "adapter/sandbox/sandbox.h"

/* After the checks before the lookup (UUID, shape, env): S002/S004, S003,
 * stdin's S001, S300 when the guest cannot start it. */
json_t *process_exec_background(struct sbx_adapter *a, const char *id, const struct sandbox_exec_args *x,
				sbx_error_t *err);

#endif
