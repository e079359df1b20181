/* The backend's part of adapter::info's `capacity` (backend.h): the
 * catalog images stored, the warm pool and standby VMs waiting, the
 * accelerator.  Answered from memory and one stat of the image index
 * (the index itself read at most every IMAGES_SEEN_MS unless it changed). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter/sandbox/catalog.h"
#include "adapter/vm_backend/vm_backend_internal.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/path.h"
#include "image/image_index.h"
#include "image/image_store.h"
#include "vm/accel.h"

#define IMAGES_SEEN_MS 5000

/* Whether the image of a reference is in the index and its file there. */
static bool stored(const struct sbx_index *idx, const char *root, const char *ref_str)
{
	struct sbx_image_ref ref;
	char canonical[2 * SBX_REF_NAME_MAX + 2];
	sbx_error_t err = NULL;
	if (sbx_image_ref_parse(ref_str, &ref, &err) < 0) {
		sbx_error_free(&err);
		return false;
	}
	if (sbx_image_ref_format(&ref, canonical, sizeof(canonical)) < 0)
		return false;
	const struct sbx_index_entry *e = sbx_index_find(idx, canonical);
	if (e == NULL)
		return false;
	cleanup_free char *path = sbx_image_path(root, e->digest, &err);
	sbx_error_free(&err);
	return path != NULL && access(path, F_OK) == 0;
}

/* The names create accepts (known and allow-listed) whose image is
 * stored, in the catalog's order, at most SBX_CAPACITY_IMAGES_MAX.  An
 * unreadable index is an empty store, as it is a miss for a create. */
static json_t *stored_names(const struct sbx_config *cfg, const char *root, sbx_error_t *err)
{
	json_t *names = json_array(), *catalog = sbx_catalog_list(cfg);
	if (names == NULL || catalog == NULL) {
		json_decref(names);
		json_decref(catalog);
		return sbx_error_errno(err, ENOMEM, "images_cached"), NULL;
	}
	struct sbx_index idx = { 0 };
	sbx_error_t miss = NULL;
	if (sbx_index_read(root, &idx, &miss) < 0)
		sbx_error_free(&miss);
	size_t i;
	json_t *img;
	json_array_foreach(json_object_get(catalog, "images"), i, img) {
		if (json_array_size(names) >= SBX_CAPACITY_IMAGES_MAX)
			break;
		const char *name = json_string_value(json_object_get(img, "name"));
		const char *ref = name != NULL ? sbx_catalog_resolve(cfg, name, &miss) : NULL;
		sbx_error_free(&miss);
		if (ref == NULL || !stored(&idx, root, ref))
			continue;
		if (json_array_append_new(names, json_string(name)) < 0) {
			json_decref(names);
			names = NULL;
			break;
		}
	}
	sbx_index_free(&idx);
	json_decref(catalog);
	if (names == NULL)
		return sbx_error_errno(err, ENOMEM, "images_cached"), NULL;
	return names;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* The index file's metadata, zeroes when there is none (no store, no
 * image pulled yet: no image). */
static void index_stat(struct images_seen *s, struct stat *st)
{
	*st = (struct stat){ 0 };
	if (s->root == NULL) {
		sbx_error_t err = NULL;
		s->root = sbx_image_root(&err);
		sbx_error_free(&err);
		if (s->root == NULL)
			return;
	}
	cleanup_free char *path = sbx_path_join(s->root, "index.json");
	if (path == NULL)
		return;
	if (stat(path, st) < 0)
		*st = (struct stat){ 0 };
}

/* A new reference to the names, made again when the index changed, or
 * IMAGES_SEEN_MS after they were made: a rewrite within one tick of the
 * file system's clock may keep the inode number, size and times. */
static json_t *images_cached(struct backend *b, sbx_error_t *err)
{
	struct images_seen *s = &b->images;
	pthread_mutex_lock(&s->lock);
	struct stat now;
	index_stat(s, &now);
	int64_t now_ms = sbx_now_ms();
	if (!s->valid || !same_file(&now, &s->index) || now_ms - s->made_ms >= IMAGES_SEEN_MS) {
		json_t *names = now.st_ino != 0 ? stored_names(b->cfg, s->root, err) : json_array();
		if (names == NULL && now.st_ino == 0)
			sbx_error_errno(err, ENOMEM, "images_cached");
		json_decref(s->names);
		s->names = names;
		s->index = now;
		s->made_ms = now_ms;
		s->valid = names != NULL;
	}
	json_t *out = json_incref(s->names); /* NULL after a failure */
	pthread_mutex_unlock(&s->lock);
	return out;
}

/* The daemon's decision, as every VM follows it (undecided auto: as a
 * VM's start would probe, once). */
static bool kvm(struct backend *b)
{
	enum sbx_accel accel = sbx_config_accel(b->cfg);
	if (accel != SBX_ACCEL_AUTO)
		return accel == SBX_ACCEL_KVM;
	int known = atomic_load(&b->kvm);
	if (known == 0) {
		sbx_error_t err = NULL;
		known = sbx_accel_choose(accel, &accel, &err) == 0 && accel == SBX_ACCEL_KVM ? 1 : 2;
		sbx_error_free(&err);
		atomic_store(&b->kvm, known);
	}
	return known == 1;
}

int vm_backend_capacity(void *ctx, struct sbx_backend_capacity *c, sbx_error_t *err)
{
	struct backend *b = ctx;
	json_t *names = images_cached(b, err);
	if (names == NULL)
		return -1;
	*c = (struct sbx_backend_capacity){ .images_cached = names, .pool_ready = warm_pool_ready(b->pool),
					    .standby_ready = standby_ready(b->standby), .kvm = kvm(b) };
	return 0;
}
