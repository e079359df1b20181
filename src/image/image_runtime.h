/* What an image's OCI config contributes to its sandboxes (Env, WorkingDir,
 * User) and the boot environment: the image's Env, then the create-time env on
 * top (same name: the later wins), and a default PATH when neither sets one.
 * The OCI config is read from the image store, so it is treated as hostile:
 * size-capped, type-checked, entries without '=' skipped. */
#ifndef SBX_IMAGE_IMAGE_RUNTIME_H
#define SBX_IMAGE_IMAGE_RUNTIME_H

#include <jansson.h>
#include <stddef.h>

#include "common/error.h"

#define BOOT_ENV_DEFAULT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define IMAGE_CONFIG_MAX_BYTES (1024u * 1024u)
#define BOOT_ENV_MAX_ENTRIES 1024u
#define BOOT_ENV_MAX_ENTRY (32u * 1024u)

struct image_runtime {
	char **env;    /* NULL-terminated "K=V" list (never NULL after parse) */
	char *workdir; /* absolute path, or NULL for "/" */
	char *user;    /* the image's User as written, or NULL for root; the
			  guest resolves it (proto.h CONFIG) */
};

/* Parses an OCI image config ({"config": {"Env": [...], "WorkingDir": ...,
 * "User": ...}}).  An absent config section gives an empty runtime; a User
 * longer than PROTO_MAX_USER is refused. */
int image_runtime_parse(const char *json, size_t len, struct image_runtime *rt, sbx_error_t *err);
/* Reads <erofs path without ".erofs">.config.json; a missing file gives an
 * empty runtime (an image stored without one). */
int image_runtime_load(const char *erofs_path, struct image_runtime *rt, sbx_error_t *err);
void image_runtime_free(struct image_runtime *rt);

/* image_env, then each "K=V" string of the JSON array `over` (entries
 * without '=' are dropped, as the guest would), then PATH if still unset.
 * Returns a NULL-terminated list (free with boot_env_free). */
char **boot_env_layer(char *const *image_env, json_t *over, sbx_error_t *err);
void boot_env_free(char **env);

#endif
