/* create's (and run's) `network`: true, false, or {allow, deny} narrowing
 * the configured network_policy; and what a networked create does besides
 * booting with a NIC: the localhost rewrite of its env (contract §7.3)
 * and the network helper's options. */
#ifndef SBX_ADAPTER_SANDBOX_NETWORK_H
#define SBX_ADAPTER_SANDBOX_NETWORK_H

#include <jansson.h>

#include "adapter/config/config.h"
#include "adapter/sandbox/sandbox.h"
#include "common/error.h"

/* Fills c->network and c->network_rules (borrowed from req). */
int sandbox_network_decode(json_t *req, struct sandbox_create_args *c, sbx_error_t *err);
/* For a networked create: checks the narrowing (S001), rewrites
 * `://localhost:` and `://127.0.0.1:` in env values (a "K=V" array) to the
 * gateway, and returns the helper's options in *args. */
int sandbox_network_prepare(const struct sbx_config *cfg, const struct sandbox_create_args *c, const char *id,
			    json_t *env, char ***args, sbx_error_t *err);
/* s with every `://localhost:` and `://127.0.0.1:` turned into the
 * gateway's address (malloc'd; NULL when out of memory). */
char *sandbox_network_rewrite(const char *s);

#endif
