/* Paused sandboxes that outlive the daemon: the backend's pause_keep,
 * forget, adopt, adopted_proc and discard_paused ops (backend.h) over the
 * VM layer's sbx_vm_pause_save / sbx_vm_forget / sbx_vm_adopt (vm/vm.h),
 * and the lock that keeps two daemons on one state directory off each
 * other's paused state: `<dir>.lock`, flock'd by whoever owns `dir`. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "adapter/vm_backend/vm_backend_internal.h"
#include "common/cleanup.h"
#include "common/scodes.h"
#include "vm/pause_dir.h"

/* A workdir longer than this is not one an image config gave. */
#define WORKDIR_MAX 4096

int vm_backend_pause_lock(struct sandbox_vm *s, const char *dir, sbx_error_t *err)
{
	cleanup_free char *path = NULL;
	if (asprintf(&path, "%s.lock", dir) < 0) {
		path = NULL;
		return sbx_error_errno(err, ENOMEM, "pause lock");
	}
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return sbx_error_errno(err, errno, "pause lock %s", path);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		close(fd);
		return sbx_error_errno(err, e, "%s is held by another daemon", dir);
	}
	s->pause_lock = fd;
	s->lock_file = sbx_steal_ptr(path);
	return 0;
}

void vm_backend_pause_unlock(struct sandbox_vm *s, bool gone)
{
	if (s->pause_lock < 0)
		return;
	/* Removed while held: a daemon that opens it later makes a new one. */
	if (gone)
		unlink(s->lock_file);
	close(s->pause_lock);
	s->pause_lock = -1;
	free(s->lock_file);
	s->lock_file = NULL;
}

int vm_backend_pause_keep(void *vm, bool sync, int64_t deadline, json_t **state, sbx_error_t *err)
{
	struct sandbox_vm *s = vm;
	*state = NULL;
	if (sbx_vm_pause_save(s->vm, sync, deadline, err) < 0)
		return -1;
	*state = json_pack("{s:s?}", "workdir", s->workdir);
	if (*state == NULL)
		return sbx_error_errno(err, ENOMEM, "paused sandbox record");
	return 0;
}

void vm_backend_forget(void *vm)
{
	struct sandbox_vm *s = vm;
	sbx_vm_forget(s->vm);
	/* The state stays, and its lock file for the next daemon. */
	vm_backend_pause_unlock(s, false);
	free(s->workdir);
	free(s->image);
	free(s);
}

void *vm_backend_adopt(void *ctx, const char *dir, json_t *state, const int *publish_fds, size_t n_publish,
		       sbx_error_t *err)
{
	struct backend *b = ctx;
	json_t *wd = json_object_get(state, "workdir");
	if (wd != NULL && !json_is_null(wd) && (!json_is_string(wd) || json_string_length(wd) > WORKDIR_MAX))
		return sbx_error_scode(err, SBX_S_VM_BOOT, "%s: its record's workdir is not a path", dir), NULL;
	struct sandbox_vm *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return sbx_error_errno(err, ENOMEM, "sandbox"), NULL;
	s->boot_mode = "adopted";
	s->pause_lock = -1;
	if (vm_backend_pause_lock(s, dir, err) < 0) {
		free(s);
		return NULL;
	}
	if (json_is_string(wd) && (s->workdir = strdup(json_string_value(wd))) == NULL) {
		sbx_error_errno(err, ENOMEM, "sandbox");
		goto fail;
	}
	struct sbx_vm_adopt_options opt = { .jail = b->jail, .publish_fds = publish_fds, .n_publish = n_publish,
					    .template_cache_mib = b->cfg->template_cache_mb };
	if ((s->vm = sbx_vm_adopt(dir, &opt, err)) == NULL)
		goto fail;
	return s;
fail:
	vm_backend_pause_unlock(s, false);
	free(s->workdir);
	free(s);
	return NULL;
}

bool vm_backend_discard_paused(void *ctx, const char *dir)
{
	(void)ctx;
	sbx_error_t err = NULL;
	struct sandbox_vm s = { .pause_lock = -1 };
	int rc = vm_backend_pause_lock(&s, dir, &err);
	sbx_error_free(&err);
	if (rc < 0)
		return false;
	pause_dir_remove(dir);
	vm_backend_pause_unlock(&s, true);
	return true;
}

int vm_backend_branch_paused(void *ctx, const char *from, const char *to, const char *sandbox_id, sbx_error_t *err)
{
	(void)ctx;
	return pause_dir_branch(from, to, sandbox_id, err);
}

int vm_backend_check_paused(void *ctx, const char *dir, sbx_error_t *err)
{
	(void)ctx;
	return sbx_vm_adopt_check(dir, err);
}
