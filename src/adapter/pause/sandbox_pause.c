/* pause, resume and the auto-resume preamble (sandbox_pause.h). */
#include "adapter/pause/sandbox_pause.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "adapter/pause/pause_record.h"
#include "adapter/sandbox/sandbox.h"
#include "adapter/scode.h"
#include "adapter/terminal/terminal.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/metrics_families.h"
#include "common/scodes.h"
#include "common/state_dir.h"
#include "image/store_space.h"

/* Terminals get SIGHUP, then SIGKILL after their grace (terminal.h). */
#define TERMINALS_CLOSE_MS (2 * SBX_TERMINAL_GRACE_MS + 1000)
#define TERMINALS_POLL_US 20000
/* The pumps take what the guest sent before the pause: a moment. */
#define SANDBOX_KEEP_DEADLINE_MS 5000

char *sandbox_paused_dir(const char *id, sbx_error_t *err)
{
	cleanup_free char *root = sbx_state_subdir("paused", err);
	char *dir = NULL;
	if (root == NULL)
		return NULL;
	/* Named after the sandbox alone: the next daemon finds it again
	 * (sandbox_adopt.h). */
	if (asprintf(&dir, "%s/" SANDBOX_PAUSED_PREFIX "%s", root, id) < 0)
		return sbx_error_errno(err, ENOMEM, "paused state directory"), NULL;
	return dir;
}

/* The state directory's filesystem must hold a guest's RAM and keep what
 * the image store keeps free for the host. */
int sandbox_space_check(const char *dir, const char *what, uint64_t need, sbx_error_t *err)
{
	cleanup_free char *parent = strdup(dir);
	if (parent == NULL)
		return sbx_error_errno(err, ENOMEM, "paused state directory");
	char *slash = strrchr(parent, '/');
	if (slash != NULL && slash != parent)
		*slash = '\0';
	cleanup_close int fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	uint64_t avail;
	if (fd < 0)
		return sbx_error_errno(err, errno, "open '%s'", parent);
	if (sbx_store_space_avail(fd, parent, &avail, err) < 0)
		return -1;
	if (avail >= need + SBX_STORE_SPACE_RESERVE)
		return 0;
	return sbx_error_scode(err, SBX_S_LIMIT,
			       "not enough free space in '%s' to %s: %llu MiB free, %llu MiB needed (up to %llu "
			       "MiB for the guest's memory, %llu MiB kept free for the host)",
			       parent, what, (unsigned long long)(avail >> 20),
			       (unsigned long long)((need + SBX_STORE_SPACE_RESERVE) >> 20),
			       (unsigned long long)(need >> 20), (unsigned long long)(SBX_STORE_SPACE_RESERVE >> 20));
}

/* Open terminals close at a pause (they see sbx_registry_pausing); waits
 * for them to leave the table, at most TERMINALS_CLOSE_MS. */
static void close_terminals(struct sbx_adapter *a, const char *id)
{
	if (a->terminals == NULL)
		return;
	int64_t until = sbx_now_ms() + TERMINALS_CLOSE_MS;
	for (;;) {
		json_t *rows = sbx_terminal_rows(a->terminals, id);
		size_t n = json_array_size(rows);
		json_decref(rows);
		if (n == 0)
			return;
		if (sbx_now_ms() >= until) {
			sbx_warn("sandbox %s: %zu terminal(s) still open; pausing anyway", id, n);
			return;
		}
		usleep(TERMINALS_POLL_US);
	}
}

/* The pauses and resumes the registry admitted (not the S001/S002/S004/
 * limit refusals before them): `failed` is the VM layer's failures, the
 * state directory's, and a resume's memory that did not fit. */
static void count(const char *op, int rc)
{
	sbx_metric_add(&sbx_m_pauses, (const char *[]){ op, rc == 0 ? "ok" : "failed" }, 1);
}

/* An error of the VM layer without an S-code is the platform's. */
void sandbox_as_platform(const char *what, sbx_error_t *err)
{
	if (*err == NULL || (*err)->scode[0] != '\0')
		return;
	sbx_error_t e = *err;
	*err = NULL;
	sbx_error_scode(err, SBX_S_VM_BOOT, "%s failed: %s", what, sbx_error_msg(e));
	sbx_error_free(&e);
}

/* Writes what a later daemon needs to find the paused sandbox again
 * (sandbox_adopt.h); while it is still being paused, so that no resume
 * removes the state under the write.  Failing costs only that: the pause
 * stands, and the sandbox ends with this daemon as before. */
static void keep(struct sbx_adapter *a, struct sbx_sandbox *sb, const char *dir, uint64_t size_bytes, bool for_restart)
{
	const struct sbx_backend_ops *ops = a->backend.ops;
	sbx_error_t err = NULL;
	json_t *state = NULL;
	if (ops->pause_keep == NULL)
		return;
	if (ops->pause_keep(sb->vm, true, sbx_now_ms() + SANDBOX_KEEP_DEADLINE_MS, &state, &err) < 0 ||
	    pause_record_write(a, sb, size_bytes, state, for_restart, dir, &err) < 0) {
		sbx_warn("sandbox %s: paused, but its state will not outlive this daemon: %s", sb->id,
			 sbx_error_msg(err));
		sbx_error_free(&err);
	} else {
		sbx_registry_set_kept(a->reg, sb);
	}
	json_decref(state);
}

static int pause_held(struct sbx_adapter *a, struct sbx_sandbox *sb, const char *dir, bool for_restart,
		      uint64_t *size_bytes, int64_t *duration_ms, sbx_error_t *err)
{
	const struct sbx_backend_ops *ops = a->backend.ops;
	if (sandbox_space_check(dir, "pause", (uint64_t)sb->memory_mb << 20, err) < 0)
		return -1;
	/* The execs in flight see the pause and end (S004); what they began
	 * is not half-sent into the saved state. */
	sbx_registry_pause_drain(a->reg, sb);
	close_terminals(a, sb->id);
	if (ops->pause(sb->vm, dir, size_bytes, duration_ms, sbx_now_ms() + SANDBOX_PAUSE_DEADLINE_MS, err) < 0) {
		sandbox_as_platform("pause", err);
		return -1;
	}
	/* duration_ms is the whole pause the caller waited for: the state
	 * made durable for a later daemon included. */
	int64_t kept_from = sbx_now_ms();
	keep(a, sb, dir, *size_bytes, for_restart);
	*duration_ms += sbx_now_ms() - kept_from;
	return 0;
}

/* sandbox_pause; with `if_idle`, 1 when the sandbox is no longer idle;
 * `for_restart`: its record says the next daemon resumes it. */
static int pause_one(struct sbx_adapter *a, const char *id, const struct reap_limits *if_idle, bool for_restart,
		     uint64_t *size_bytes, int64_t *duration_ms, sbx_error_t *err)
{
	const struct sbx_backend_ops *ops = a->backend.ops;
	const struct sbx_pause_config *pc = &a->cfg->pause;
	struct sbx_sandbox *sb = sbx_registry_pause_begin(a->reg, id, pc->max_paused_sandboxes,
							  (uint64_t)pc->snapshot_store_mb << 20, if_idle, err);
	if (sb == NULL)
		return *err != NULL ? -1 : 1;
	if (if_idle != NULL)
		sbx_info("sandbox %s: idle past its timeout; pausing it", id);
	int rc;
	cleanup_free char *dir = NULL;
	if (ops == NULL || ops->pause == NULL || sb->vm == NULL)
		rc = sbx_error_scode(err, SBX_S_VM_BOOT, "pause is not supported by this sandbox-libkrun build");
	else if ((dir = sandbox_paused_dir(id, err)) == NULL)
		rc = -1;
	else
		rc = pause_held(a, sb, dir, for_restart, size_bytes, duration_ms, err);
	/* Asked while the pause state keeps the VM from being detached. */
	bool dead = rc < 0 && sandbox_vm_dead(a, sb);
	uint64_t given = sbx_registry_pause_end(a->reg, sb, rc == 0, rc == 0 ? *size_bytes : 0);
	if (given > 0)
		sbx_mem_budget_give(&a->mem, given);
	if (dead)
		sandbox_remove_dead(a, id);
	count("pause", rc);
	if (rc == 0) {
		struct sbx_log_field f[] = { SBX_LF_STR("event", "pause"), SBX_LF_STR("sandbox_id", id),
					     SBX_LF_INT("size_bytes", *size_bytes),
					     SBX_LF_INT("duration_ms", *duration_ms) };
		sbx_log_kv(SBX_LOG_INFO, f, "sandbox %s paused (%llu MiB in %lld ms)", id,
			   (unsigned long long)(*size_bytes >> 20), (long long)*duration_ms);
	}
	return rc;
}

int sandbox_pause(struct sbx_adapter *a, const char *id, uint64_t *size_bytes, int64_t *duration_ms,
		  sbx_error_t *err)
{
	return pause_one(a, id, NULL, false, size_bytes, duration_ms, err);
}

int sandbox_pause_idle(struct sbx_adapter *a, const char *id, const struct reap_limits *lim, sbx_error_t *err)
{
	uint64_t size_bytes;
	int64_t duration_ms;
	return pause_one(a, id, lim, false, &size_bytes, &duration_ms, err);
}

int sandbox_pause_for_restart(struct sbx_adapter *a, const char *id, sbx_error_t *err)
{
	uint64_t size_bytes;
	int64_t duration_ms;
	if (pause_one(a, id, NULL, true, &size_bytes, &duration_ms, err) < 0)
		return -1;
	if (!sbx_registry_is_kept(a->reg, id))
		return sbx_error_scode(err, SBX_S_VM_BOOT, "its paused state could not be kept for the next daemon");
	return 0;
}

/* `want_paused`: a running sandbox is an error (resume), else nothing to
 * do (the auto-resume preamble). */
static int resume(struct sbx_adapter *a, const char *id, bool want_paused, int64_t *ready_ms, sbx_error_t *err)
{
	int64_t t0 = sbx_now_ms();
	bool running;
	uint64_t need_mib;
	*ready_ms = 0;
	struct sbx_sandbox *sb = sbx_registry_resume_begin(a->reg, id, a->cfg->max_concurrent_sandboxes, &running,
							   &need_mib, err);
	if (sb == NULL) {
		if (running && want_paused)
			return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "sandbox %s is not paused", id);
		return running ? 0 : -1;
	}
	const struct sbx_backend_ops *ops = a->backend.ops;
	uint32_t guest = sb->memory_mb > 0 ? sb->memory_mb : (uint32_t)need_mib;
	/* Its memory comes back to the budget before its QEMU does. */
	int rc = sbx_mem_budget_take(&a->mem, need_mib, guest, err);
	bool taken = rc == 0, tried = false;
	if (rc == 0 && (ops == NULL || ops->resume == NULL)) {
		rc = sbx_error_scode(err, SBX_S_VM_BOOT, "resume is not supported by this sandbox-libkrun build");
	} else if (rc == 0) {
		tried = true;
		if (ops->resume(sb->vm, sbx_now_ms() + SANDBOX_RESUME_DEADLINE_MS, err) < 0) {
			sandbox_as_platform("resume", err);
			rc = -1;
		}
	}
	if (rc < 0 && taken)
		sbx_mem_budget_give(&a->mem, need_mib);
	/* A VM that failed to start again is dead (vm.h): its sandbox goes,
	 * and its stop removes the state. */
	bool dead = rc < 0 && tried;
	sbx_registry_resume_end(a->reg, sb, rc == 0);
	if (dead)
		sandbox_remove_dead(a, id);
	count("resume", rc);
	if (rc == 0) {
		*ready_ms = sbx_now_ms() - t0;
		struct sbx_log_field f[] = { SBX_LF_STR("event", "resume"), SBX_LF_STR("sandbox_id", id),
					     SBX_LF_INT("duration_ms", *ready_ms) };
		sbx_log_kv(SBX_LOG_INFO, f, "sandbox %s resumed in %lld ms", id, (long long)*ready_ms);
	}
	return rc;
}

int sandbox_resume(struct sbx_adapter *a, const char *id, int64_t *ready_ms, sbx_error_t *err)
{
	return resume(a, id, true, ready_ms, err);
}

int sandbox_resume_paused(struct sbx_adapter *a, const char *id, int64_t *ready_ms, sbx_error_t *err)
{
	return resume(a, id, false, ready_ms, err);
}

int sandbox_wake(struct sbx_adapter *a, const char *id, sbx_error_t *err)
{
	if (!sbx_registry_is_paused(a->reg, id))
		return 0;
	if (!a->cfg->pause.auto_resume)
		return sbx_error_scode(err, SBX_S_STOPPED, SBX_PAUSED_FMT, id);
	int64_t ready_ms;
	return resume(a, id, false, &ready_ms, err);
}

int sandbox_wake_check(struct sbx_adapter *a, const char *id, sbx_error_t *err)
{
	if (sandbox_wake(a, id, err) < 0)
		return -1;
	return sbx_registry_check(a->reg, id, err);
}
