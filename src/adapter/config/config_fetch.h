/* Reads the adapter's configuration entry from the engine's configuration
 * worker (iii-protocol.md §8): id III_CONFIG_NAME (trimmed, non-empty) else
 * "sandbox-libkrun"; NOT_FOUND or a null value means the defaults. */
#ifndef SBX_ADAPTER_CONFIG_FETCH_H
#define SBX_ADAPTER_CONFIG_FETCH_H

#include <stddef.h>

#include "adapter/config/config.h"
#include "engine/engine.h"

/* Writes the entry id into `id` (NUL-terminated). */
int sbx_config_id(char *id, size_t size, sbx_error_t *err);
/* Calls configuration::get up to 3 times (10 s each, 250 ms x attempt
 * backoff between transport failures) and parses the value.  Any failure is
 * fatal for the caller (exit 2); engine_stop() ends the retries at once. */
struct sbx_config *sbx_config_fetch(struct engine *e, sbx_error_t *err);

#endif
