#include "image/image_pull.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/metrics_families.h"
#include "common/scodes.h"
#include "image/digest.h"
#include "image/image_index.h"
#include "image/image_store.h"
#include "image/oci_manifest.h"
#include "image/oci_registry.h"
#include "image/pull_log.h"

/* A hit rewrites the index (last used) at most this often: creates in a
 * burst then cost one index read each. */
#define TOUCH_INTERVAL_S 60

struct pull_ctx {
	struct sbx_oci_registry *reg;
	const struct sbx_manifest *m;
	uint64_t max_blob_bytes;
	const struct sbx_pull_progress *progress;
	struct pull_log log;
	size_t current;
};

static void on_progress(void *ud, uint64_t done, uint64_t total)
{
	struct pull_ctx *c = ud;
	/* The end of a layer is logged once, after its check. */
	if (done < total)
		pull_log_layer(&c->log, c->current, c->m->n_entries, done, total);
	if (c->progress != NULL && c->progress->layer != NULL)
		c->progress->layer(c->progress->ud, c->current, c->m->n_entries, c->m->entries[c->current].digest,
				   done, total);
}

static int fetch_layer(void *ud, size_t i, int fd, sbx_error_t *err)
{
	struct pull_ctx *c = ud;
	c->current = i;
	const struct sbx_descriptor *d = &c->m->entries[i];
	/* The download stops at the declared size: cap that. */
	if (d->size < 0 || (uint64_t)d->size > c->max_blob_bytes)
		return sbx_error_set(err, 0, "layer %s declares %lld bytes, more than %llu MiB (config key `image_max_blob_mb`)",
				     d->digest, (long long)d->size, (unsigned long long)(c->max_blob_bytes >> 20));
	if (c->progress != NULL && c->progress->layer != NULL)
		c->progress->layer(c->progress->ud, i, c->m->n_entries, d->digest, 0, (uint64_t)d->size);
	if (sbx_oci_registry_blob(c->reg, d, fd, on_progress, c, err) < 0)
		return -1;
	pull_log_layer(&c->log, i, c->m->n_entries, (uint64_t)d->size, (uint64_t)d->size);
	sbx_metric_add(&sbx_m_pull_bytes, NULL, (double)d->size);
	return 0;
}

static int64_t declared_layer(void *ud, size_t i)
{
	const struct pull_ctx *c = ud;
	return c->m->entries[i].size;
}

static int record(const char *root, const char *ref, const char *digest, struct sbx_image_info *out,
		  sbx_error_t *err)
{
	char *path = sbx_image_path(root, digest, err);
	if (path == NULL)
		return -1;
	struct stat st;
	if (stat(path, &st) < 0) {
		sbx_error_errno(err, errno, "stat '%s'", path);
		free(path);
		return -1;
	}
	if (sbx_index_put(root, ref, digest, (uint64_t)st.st_size, err) < 0) {
		free(path);
		return -1;
	}
	snprintf(out->ref, sizeof(out->ref), "%s", ref);
	snprintf(out->digest, sizeof(out->digest), "%s", digest);
	out->size = (uint64_t)st.st_size;
	out->path = path;
	return 0;
}

int sbx_image_store(const char *root, const char *ref, const char *digest, const char *config, size_t config_len,
		    const struct sbx_layer_source *src, const struct sbx_image_limits *limits, struct sbx_image_info *out,
		    sbx_error_t *err)
{
	cleanup_close int lock = sbx_store_lock(root, digest, err);
	if (lock < 0)
		return -1;
	int built;
	if (sbx_store_build(root, digest, config, config_len, src, limits, &built, err) < 0 ||
	    record(root, ref, digest, out, err) < 0)
		return -1;
	out->pulled = built;
	return 0;
}

/* Resolves the manifest to use: an index is narrowed to linux/<host arch>. */
static int resolve_manifest(struct sbx_oci_registry *reg, const struct sbx_image_ref *ref, struct sbx_manifest *m,
			    char digest[SBX_DIGEST_LEN + 1], sbx_error_t *err)
{
	if (sbx_oci_registry_manifest(reg, sbx_image_ref_manifest_key(ref), m, digest, err) < 0)
		return -1;
	if (m->kind == SBX_MANIFEST_IMAGE)
		return 0;
	int i = sbx_manifest_pick_platform(m, sbx_host_arch(), err);
	if (i < 0) {
		sbx_manifest_free(m);
		return -1;
	}
	char chosen[SBX_DIGEST_LEN + 1];
	snprintf(chosen, sizeof(chosen), "%s", m->entries[i].digest);
	sbx_manifest_free(m);
	if (sbx_oci_registry_manifest(reg, chosen, m, digest, err) < 0)
		return -1;
	if (m->kind != SBX_MANIFEST_IMAGE) {
		sbx_manifest_free(m);
		return sbx_error_set(err, 0, "manifest %s for linux/%s is itself an index", chosen, sbx_host_arch());
	}
	return 0;
}

int sbx_image_pull(const char *ref_str, const struct sbx_image_config *cfg, const struct sbx_pull_progress *progress,
		   struct sbx_image_info *out, sbx_error_t *err)
{
	memset(out, 0, sizeof(*out));
	struct sbx_image_ref ref;
	char canonical[sizeof(out->ref)];
	if (sbx_image_ref_parse(ref_str, &ref, err) < 0 || sbx_image_ref_format(&ref, canonical, sizeof(canonical)) < 0)
		return *err ? -1 : sbx_error_set(err, 0, "reference too long");
	char *root = sbx_image_root(err);
	if (root == NULL)
		return -1;
	struct sbx_oci_registry *reg = sbx_oci_registry_open(&ref, cfg, err);
	struct sbx_manifest m = { 0 };
	char digest[SBX_DIGEST_LEN + 1];
	char *config = NULL;
	size_t config_len = 0;
	int rc = -1;
	if (reg == NULL)
		goto out;
	if (resolve_manifest(reg, &ref, &m, digest, err) < 0) {
		sbx_error_prefix(err, "%s (from %s)", canonical, sbx_oci_registry_base(reg));
		goto out;
	}
	for (size_t i = 0; i < m.n_entries; i++) {
		if (!sbx_layer_media_type_ok(m.entries[i].media_type)) {
			sbx_error_set(err, 0, "%s: layer %zu has unsupported media type '%s'", canonical, i + 1,
				      m.entries[i].media_type);
			goto out;
		}
	}
	if (sbx_oci_registry_blob_mem(reg, &m.config, &config, &config_len, err) < 0)
		goto out;
	struct pull_ctx ctx = { .reg = reg, .m = &m, .max_blob_bytes = cfg->limits.max_blob_bytes, .progress = progress };
	pull_log_init(&ctx.log, canonical, progress != NULL && progress->log);
	struct sbx_layer_source src = {
		.n_layers = m.n_entries, .fetch = fetch_layer, .declared = declared_layer, .ud = &ctx,
		.log_steps = ctx.log.enabled
	};
	if (sbx_image_store(root, canonical, digest, config, config_len, &src, &cfg->limits, out, err) < 0) {
		sbx_error_prefix(err, "%s", canonical);
		goto out;
	}
	if (out->pulled)
		pull_log_done(&ctx.log, sbx_oci_registry_base(reg), out->size);
	rc = 0;
out:
	free(config);
	sbx_manifest_free(&m);
	sbx_oci_registry_close(reg);
	free(root);
	return rc;
}

char *sbx_image_ensure(const char *name, const char *ref_str, const struct sbx_image_config *cfg, sbx_error_t *err)
{
	struct sbx_image_ref ref;
	char canonical[2 * SBX_REF_NAME_MAX + 2];
	if (sbx_image_ref_parse(ref_str, &ref, err) < 0 ||
	    sbx_image_ref_format(&ref, canonical, sizeof(canonical)) < 0) {
		if (*err == NULL)
			sbx_error_set(err, 0, "reference too long");
		sbx_error_prefix(err, "auto-install failed for image '%s'", name);
		sbx_error_default_scode(err, SBX_S_TRANSIENT);
		return NULL;
	}
	char *root = sbx_image_root(err);
	if (root == NULL) {
		sbx_error_default_scode(err, SBX_S_TRANSIENT);
		return NULL;
	}
	struct sbx_index idx;
	char *path = NULL;
	bool stale = false;
	if (sbx_index_read(root, &idx, err) == 0) {
		const struct sbx_index_entry *e = sbx_index_find(&idx, canonical);
		if (e != NULL && (path = sbx_image_path(root, e->digest, err)) != NULL && access(path, F_OK) < 0) {
			free(path);
			path = NULL;
		}
		stale = e != NULL && (int64_t)time(NULL) - e->last_used >= TOUCH_INTERVAL_S;
		sbx_index_free(&idx);
	}
	sbx_error_free(err); /* an unreadable index is a miss */
	if (path != NULL) {
		sbx_error_t terr = NULL;
		if (stale && sbx_index_touch(root, canonical, &terr) < 0) {
			sbx_warn("image: %s", sbx_error_msg(terr));
			sbx_error_free(&terr);
		}
		free(root);
		return path;
	}
	free(root);
	if (!cfg->auto_install) {
		sbx_error_scode(err, SBX_S_IMAGE_MISSING,
				"rootfs missing on disk for image '%s'. Run: sandbox-libkrun image pull %s "
				"(or, without network: sandbox-libkrun image import <oci-layout-dir|docker-save.tar> --ref %s) "
				"(see S101 docs)",
				name, canonical, canonical);
		return NULL;
	}
	struct sbx_image_info info;
	const struct sbx_pull_progress log_only = { .log = true };
	int pulled = sbx_image_pull(canonical, cfg, &log_only, &info, err);
	sbx_metric_add(&sbx_m_pulls, (const char *[]){ pulled == 0 ? "ok" : "error" }, 1);
	if (pulled < 0) {
		sbx_error_prefix(err, "auto-install failed for image '%s'", name);
		sbx_error_default_scode(err, SBX_S_TRANSIENT);
		return NULL;
	}
	return info.path;
}
