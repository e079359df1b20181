/* Templates made ahead: at the daemon's start a background thread boots
 * every allow-listed image already in the image cache once, at the
 * default size (default_cpus, default_memory_mb, no network), and stops it
 * again.  That boot saves the image's copy-on-write template (or finds it
 * there), so the first `create` of the image restores instead of booting
 * cold.  Images not yet pulled are left alone: the `create` that pulls one
 * makes its template; so are images with a warm pool, whose first VM makes
 * it. */
#ifndef SBX_ADAPTER_VM_BACKEND_TEMPLATE_WARM_H
#define SBX_ADAPTER_VM_BACKEND_TEMPLATE_WARM_H

#include "adapter/backend.h"
#include "adapter/config/config.h"

struct template_warm;

/* Boots the image once as a `create` with the default size and no network
 * does (same VM options, so the same template key): the boot saves the
 * image's template, or restores it when it is there.  The caller stops
 * the VM.  `image pull` uses it too (cmd/image_template.h). */
void *template_boot(const struct sbx_config *cfg, const struct sbx_backend_ops *ops, void *ctx, const char *name,
		    const char *ref, sbx_error_t *err);
/* NULL when the thread could not start (logged: templates are then made
 * by the first creates, as without it). */
struct template_warm *template_warm_start(const struct sbx_config *cfg, const struct sbx_backend_ops *ops, void *ctx);
/* Lets the boot in progress finish, skips the rest, joins; NULL is a no-op. */
void template_warm_stop(struct template_warm *w);

#endif
