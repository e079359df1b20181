/* worker::prepare {auth, worker, host_path, base_image?, exec?, resources?}
 *   -> {worker, prepared: true, source, base_image, cpus, memory_mb}
 * host_path in the roots (S501) and pinned while prepare reads it,
 * bundles allowed (S504), the manifest
 * (S503), the base image in the store (S101/S102), the data disk, then the
 * record.  Re-preparing costs an index read and a manifest parse, keeps the
 * data disk, and rewrites the record from what the manifest says now. */
#include "worker/worker_ops.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/request.h"
#include "common/cleanup.h"
#include "common/cleanup_json.h"
#include "common/log.h"
#include "common/scodes.h"
#include "common/state_dir.h"
#include "common/strv.h"
#include "worker/worker_manifest.h"
#include "worker/worker_disk.h"
#include "worker/worker_image.h"
#include "worker/worker_record_file.h"
#include "worker/worker_record_json.h"
#include "worker/worker_roots.h"

struct prepare_req {
	const char *worker, *host_path, *base_image;
	json_t *exec; /* borrowed array, NULL when absent */
	struct worker_resources resources;
};

static int parse_request(json_t *req, struct prepare_req *p, sbx_error_t *err)
{
	memset(p, 0, sizeof(*p));
	if (req_string(req, "worker", true, &p->worker, err) < 0 ||
	    req_string(req, "host_path", true, &p->host_path, err) < 0 ||
	    req_string(req, "base_image", false, &p->base_image, err) < 0 ||
	    req_string_array(req, "exec", &p->exec, err) < 0)
		return -1;
	json_t *res = json_object_get(req, "resources");
	if (res != NULL && !json_is_null(res)) {
		if (!json_is_object(res))
			return req_type_error(res, "resources", "a map", err);
		if (worker_resources_parse(res, "resources", false, &p->resources, err) < 0) {
			sbx_error_default_scode(err, SBX_S_INVALID_REQUEST);
			return -1;
		}
	}
	if (p->exec != NULL && json_array_size(p->exec) == 0)
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "exec must not be empty");
	return 0;
}

static bool bundles_disabled(void)
{
	const char *v = getenv("III_BUNDLE_WORKERS_DISABLED");
	return v != NULL && strcmp(v, "1") == 0;
}

/* The manifest's runtime.base_image for a path:// worker, else the
 * request's; a bundle's is always the request's. */
static int pick_base_image(const struct prepare_req *p, const struct worker_manifest *m, bool bundle,
			   const char **name, const char **what, const char **bad_scode, sbx_error_t *err)
{
	if (!bundle && m->base_image != NULL) {
		*name = m->base_image, *what = "runtime.base_image", *bad_scode = SBX_S_MANIFEST;
		return 0;
	}
	*name = p->base_image, *what = "base_image", *bad_scode = SBX_S_INVALID_REQUEST;
	if (*name != NULL)
		return 0;
	if (bundle)
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST,
				       "base_image is required for a bundle (package://) worker: the image its files run on");
	return sbx_error_scode(err, SBX_S_MANIFEST,
			       WORKER_MANIFEST_FILE ": `runtime.base_image` is missing (and the request has no "
						    "base_image): a path:// worker runs in a VM of the image it names");
}

/* Something must run: scripts.start, or the request's exec. */
static int check_runnable(const struct prepare_req *p, const struct worker_manifest *m, sbx_error_t *err)
{
	if (m->start != NULL || p->exec != NULL)
		return 0;
	return sbx_error_scode(err, SBX_S_MANIFEST,
			       WORKER_MANIFEST_FILE ": `scripts.start` is missing and the request has no exec: "
						    "nothing to run");
}

/* The record; takes the manifest's and the image's strings. */
static int build_record(const struct prepare_req *p, char *host, bool bundle, struct worker_manifest *m,
			struct worker_image *img, struct worker_resources res, struct worker_record *r,
			sbx_error_t *err)
{
	*r = (struct worker_record){
		.worker = strdup(p->worker),
		.source = bundle ? WORKER_SOURCE_PACKAGE : WORKER_SOURCE_PATH,
		.host_path = host,
		.base_image = sbx_steal_ptr(img->ref),
		.image_erofs = sbx_steal_ptr(img->erofs),
		.cpus = res.cpus,
		.memory_mb = res.memory_mb,
		.env = sbx_steal_ptr(m->env),
		.setup = sbx_steal_ptr(m->setup),
		.install = sbx_steal_ptr(m->install),
		.start = sbx_steal_ptr(m->start),
		.image_env = sbx_steal_ptr(img->rt.env),
		.image_user = sbx_steal_ptr(img->rt.user),
		.image_workdir = sbx_steal_ptr(img->rt.workdir),
	};
	char **view = NULL;
	if (p->exec != NULL && (view = req_strv_view(p->exec, "exec", err)) == NULL)
		return -1;
	r->exec = view != NULL ? sbx_strv_dup(view) : NULL;
	free(view);
	if (r->worker == NULL || (p->exec != NULL && r->exec == NULL))
		return sbx_error_errno(err, ENOMEM, "worker record");
	return 0;
}

/* "prepared", "updated" or "unchanged", for the log. */
static const char *change_of(const struct worker_record *r)
{
	struct worker_record old;
	sbx_error_t err = NULL;
	if (worker_record_load(r->worker, &old, &err) < 0) {
		sbx_error_free(&err);
		return "prepared";
	}
	cleanup_json json_t *a = worker_record_to_json(&old, &err);
	cleanup_json json_t *b = worker_record_to_json(r, &err);
	sbx_error_free(&err);
	worker_record_free(&old);
	return a != NULL && b != NULL && json_equal(a, b) ? "unchanged" : "updated";
}

static int prepare(struct sbx_adapter *a, json_t *req, struct worker_record *r, sbx_error_t *err)
{
	struct prepare_req p;
	if (parse_request(req, &p, err) < 0)
		return -1;
	char *host = NULL;
	bool bundle = false;
	cleanup_close int host_fd = -1;
	if (worker_roots_open(p.host_path, &host, &bundle, &host_fd, err) < 0)
		return -1;
	struct worker_manifest m = { 0 };
	struct worker_image img = { 0 };
	char dir[PATH_MAX];
	int rc = -1;
	if (worker_name_check(p.worker, err) < 0)
		goto out;
	if (bundle && bundles_disabled()) {
		sbx_error_scode(err, SBX_S_BUNDLES_DISABLED,
				"bundle (package://) workers are disabled on this host (III_BUNDLE_WORKERS_DISABLED=1): "
				"worker %s is a bundle in %s",
				p.worker, host);
		goto out;
	}
	const char *image, *what, *bad_scode;
	if (worker_manifest_load(host_fd, host, bundle, &m, err) < 0 || check_runnable(&p, &m, err) < 0 ||
	    pick_base_image(&p, &m, bundle, &image, &what, &bad_scode, err) < 0 ||
	    worker_image_ensure(a->cfg, image, what, bad_scode, &img, err) < 0)
		goto out;
	struct worker_resources res = worker_resources_resolve(p.worker, bundle, p.resources, m.resources);
	bool created;
	if (worker_dir(p.worker, dir, sizeof(dir), err) < 0 || sbx_mkdir_p(dir, 0700, err) < 0 ||
	    worker_data_disk_ensure(dir, a->cfg->worker_disk_mb, &created, err) < 0)
		goto out;
	rc = build_record(&p, sbx_steal_ptr(host), bundle, &m, &img, res, r, err);
	if (rc == 0) {
		const char *change = change_of(r);
		rc = worker_record_save(r, err);
		if (rc == 0)
			sbx_info("worker %s %s: %s %s, image %s, %u vCPUs, %u MiB%s", r->worker, change,
				 worker_source_name(r->source), r->host_path, r->base_image, r->cpus, r->memory_mb,
				 created ? ", new data disk" : "");
	}
out:
	free(host);
	worker_manifest_free(&m);
	worker_image_free(&img);
	return rc;
}

int worker_op_prepare(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	struct worker_record r = { 0 };
	if (prepare(a, req, &r, &err) < 0) {
		worker_record_free(&r);
		return sbx_op_fail(&err, out);
	}
	*out = json_pack("{s:s, s:b, s:s, s:s, s:I, s:I}", "worker", r.worker, "prepared", 1, "source",
			 worker_source_name(r.source), "base_image", r.base_image, "cpus", (json_int_t)r.cpus,
			 "memory_mb", (json_int_t)r.memory_mb);
	worker_record_free(&r);
	if (*out == NULL) {
		sbx_error_set(&err, ENOMEM, "worker::prepare reply");
		return sbx_op_fail(&err, out);
	}
	return 0;
}
