/* Pause and resume's keys (issue 40, docs/configuration.md):
 *
 *   auto_resume: true            a call that needs a paused sandbox's VM
 *                                (exec, fs::*, process::*, terminal::open)
 *                                resumes it first; false: S004
 *   max_paused_sandboxes: 256    paused sandboxes at once (S400 past it)
 *   snapshot_store_mb: 16384     what their state may take on disk together
 *   idle_action: stop            what the reaper does to an idle sandbox:
 *                                stop it (the contract's) or pause it
 *   paused_ttl_secs: 604800      a paused sandbox no call touched for this
 *                                long is stopped (its state deleted)
 *   live_restore: false          a daemon that stops (SIGTERM) pauses its
 *                                running sandboxes and the next one
 *                                resumes them (pause/sandbox_restart.h) */
#ifndef SBX_ADAPTER_CONFIG_PAUSE_H
#define SBX_ADAPTER_CONFIG_PAUSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

#define SBX_MAX_PAUSED_DEFAULT 256
#define SBX_MAX_PAUSED_MAX 65536u
#define SBX_SNAPSHOT_STORE_DEFAULT_MIB 16384
#define SBX_PAUSED_TTL_DEFAULT_SECS 604800

enum sbx_idle_action { SBX_IDLE_STOP, SBX_IDLE_PAUSE };

struct sbx_pause_config {
	bool auto_resume;
	uint32_t max_paused_sandboxes;
	uint32_t snapshot_store_mb;
	enum sbx_idle_action idle_action;
	uint64_t paused_ttl_secs;
	bool live_restore;
};

void sbx_pause_config_init(struct sbx_pause_config *p);
/* 1 when k is one of the keys above (parsed into p), 0 when it is not,
 * -1 for a bad value (the message names the key). */
int sbx_pause_config_parse_key(struct sbx_pause_config *p, const char *k, json_t *v, sbx_error_t *err);
/* The keys' names, i = 0.. until NULL. */
const char *sbx_pause_config_key(size_t i);
/* The keys as `config check` prints them, added to obj. */
int sbx_pause_config_print(const struct sbx_pause_config *p, json_t *obj);

#endif
