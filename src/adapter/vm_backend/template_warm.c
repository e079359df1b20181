#include "adapter/vm_backend/template_warm.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/sandbox/catalog.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "image/image_pull.h"

struct template_warm {
	const struct sbx_config *cfg;
	const struct sbx_backend_ops *ops;
	void *ctx;
	atomic_bool stop;
	pthread_t thread;
};

/* A warm pool of the image makes its template itself (its first VM). */
static bool pooled(const struct sbx_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->n_warm_pool; i++) {
		if (cfg->warm_pool_max > 0 && cfg->warm_pool[i].count > 0 && strcmp(cfg->warm_pool[i].image, name) == 0)
			return true;
	}
	return false;
}

/* Whether the image is in the cache, without pulling it. */
static bool cached(const struct sbx_config *cfg, const char *name, const char *ref)
{
	struct sbx_image_config no_pull = cfg->images;
	no_pull.auto_install = false;
	sbx_error_t err = NULL;
	cleanup_free char *path = sbx_image_ensure(name, ref, &no_pull, &err);
	sbx_error_free(&err);
	return path != NULL;
}

void *template_boot(const struct sbx_config *cfg, const struct sbx_backend_ops *ops, void *ctx, const char *name,
		    const char *ref, sbx_error_t *err)
{
	struct sbx_boot_request req = { .image = name, .oci_ref = ref, .cpus = cfg->default_cpus,
					.memory_mb = cfg->default_memory_mb };
	return ops->boot(ctx, &req, err);
}

static void *warm(void *arg)
{
	struct template_warm *w = arg;
	for (size_t i = 0; i < w->cfg->n_image_allowlist && !atomic_load(&w->stop); i++) {
		const char *name = w->cfg->image_allowlist[i];
		if (pooled(w->cfg, name))
			continue;
		sbx_error_t err = NULL;
		const char *ref = sbx_catalog_resolve(w->cfg, name, &err);
		if (ref == NULL || !cached(w->cfg, name, ref)) {
			sbx_error_free(&err);
			continue;
		}
		int64_t t0 = sbx_now_ms();
		struct sbx_log_field f[] = { SBX_LF_STR("event", "template_boot"), SBX_LF_STR("image", name),
					     SBX_LF_STR("done", "false") };
		sbx_log_kv(SBX_LOG_INFO, f, "making the template of %s ahead of its first create", name);
		void *vm = template_boot(w->cfg, w->ops, w->ctx, name, ref, &err);
		if (vm == NULL) {
			sbx_warn("template of %s not made ahead: %s", name, sbx_error_msg(err));
			sbx_error_free(&err);
			continue;
		}
		w->ops->stop(vm);
		struct sbx_log_field g[] = { SBX_LF_STR("event", "template_boot"), SBX_LF_STR("image", name),
					     SBX_LF_STR("done", "true"), SBX_LF_INT("duration_ms", sbx_now_ms() - t0) };
		sbx_log_kv(SBX_LOG_INFO, g, "template of %s ready ahead of its first create (%lld ms)", name,
			   (long long)(sbx_now_ms() - t0));
	}
	return NULL;
}

struct template_warm *template_warm_start(const struct sbx_config *cfg, const struct sbx_backend_ops *ops, void *ctx)
{
	if (cfg->n_image_allowlist == 0)
		return NULL;
	struct template_warm *w = calloc(1, sizeof(*w));
	if (w == NULL) {
		sbx_warn("templates not made ahead: out of memory");
		return NULL;
	}
	w->cfg = cfg;
	w->ops = ops;
	w->ctx = ctx;
	atomic_init(&w->stop, false);
	int rc = pthread_create(&w->thread, NULL, warm, w);
	if (rc != 0) {
		sbx_warn("templates not made ahead: pthread_create: error %d", rc);
		free(w);
		return NULL;
	}
	return w;
}

void template_warm_stop(struct template_warm *w)
{
	if (w == NULL)
		return;
	atomic_store(&w->stop, true);
	pthread_join(w->thread, NULL);
	free(w);
}
