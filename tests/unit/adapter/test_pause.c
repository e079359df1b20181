/* pause and resume (issue 40) through sbx_adapter_call() over a fake
 * backend whose VMs know whether they are paused: the replies, list's
 * state field, the memory budget, the limits, auto_resume on and off, an
 * exec in flight at the pause, stop of a paused sandbox, idle pause and
 * paused_ttl_secs, and the reaper's pure policy. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter/adapter.h"
#include "adapter/adapter_state.h"
#include "common/clock.h"
#include "adapter/reaper.h"
#include "adapter/reaper_policy.h"
#include "adapter/sandbox/sandbox.h"
#include "common/metrics.h"
#include "common/metrics_families.h"
#include "harness.h"
#include "adapter_call.h"

/* ---- the fake backend ------------------------------------------------- */

struct fvm {
	bool paused, dead, aborted;
};

static struct {
	pthread_mutex_t lock;
	int pauses, resumes, stops, exec_on_paused, aborts;
	bool fail_pause, fail_resume, block, in_exec, unblock, fs_gate, in_fs, in_pause, in_resume;
	uint64_t size;
	int resume_ms, pause_ms;
	char dir[512];
} F = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void fk_reset(void)
{
	pthread_mutex_lock(&F.lock);
	F.pauses = F.resumes = F.stops = F.exec_on_paused = F.aborts = 0;
	F.fail_pause = F.fail_resume = F.block = F.in_exec = F.unblock = F.fs_gate = F.in_fs = false;
	F.size = 200ull << 20;
	F.resume_ms = F.pause_ms = 0;
	F.in_pause = F.in_resume = false;
	F.dir[0] = '\0';
	pthread_mutex_unlock(&F.lock);
}

static int fk_get(int *v)
{
	pthread_mutex_lock(&F.lock);
	int n = *v;
	pthread_mutex_unlock(&F.lock);
	return n;
}

static bool fk_in_exec(void)
{
	pthread_mutex_lock(&F.lock);
	bool in = F.in_exec;
	pthread_mutex_unlock(&F.lock);
	return in;
}

static void *fk_boot(void *ctx, const struct sbx_boot_request *req, sbx_error_t *err)
{
	return calloc(1, sizeof(struct fvm));
}

static bool fk_alive(void *vm)
{
	pthread_mutex_lock(&F.lock);
	bool alive = !((struct fvm *)vm)->dead;
	pthread_mutex_unlock(&F.lock);
	return alive;
}

static int fk_exec(void *vm, const struct sbx_exec_request *req, struct sbx_exec_result *res, sbx_error_t *err)
{
	struct fvm *v = vm;
	pthread_mutex_lock(&F.lock);
	/* An exec must never reach a paused VM: the adapter resumes it first. */
	bool paused = v->paused;
	F.exec_on_paused += paused;
	bool block = F.block;
	F.in_exec = true;
	pthread_mutex_unlock(&F.lock);
	if (paused)
		return sbx_error_scode(err, "S300", "exec on a paused VM");
	/* Like the real backend: a cancelled exec ends with S004. */
	while (block && !req->cancelled(req->cancel_ud))
		usleep(1000);
	pthread_mutex_lock(&F.lock);
	F.in_exec = false;
	pthread_mutex_unlock(&F.lock);
	if (block)
		return sbx_error_scode(err, "S004", "stopped while running");
	res->exit_code = 0;
	return exec_output_append(&res->out, "ok\n", 3, err);
}

static int fk_write(void *vm, const char *path, uint32_t mode, bool parents, const void *data, size_t len,
		    sbx_error_t *err)
{
	return 0;
}

static void fk_stop(void *vm)
{
	pthread_mutex_lock(&F.lock);
	F.stops++;
	pthread_mutex_unlock(&F.lock);
	free(vm);
}

static int fk_pause(void *vm, const char *dir, uint64_t *size_bytes, int64_t *duration_ms, int64_t deadline,
		    sbx_error_t *err)
{
	struct fvm *v = vm;
	pthread_mutex_lock(&F.lock);
	F.in_pause = true;
	snprintf(F.dir, sizeof(F.dir), "%s", dir);
	int ms = F.pause_ms;
	pthread_mutex_unlock(&F.lock);
	usleep((useconds_t)ms * 1000);
	pthread_mutex_lock(&F.lock);
	F.in_pause = false;
	bool fail = F.fail_pause;
	if (!fail) {
		v->paused = true;
		F.pauses++;
		snprintf(F.dir, sizeof(F.dir), "%s", dir);
		*size_bytes = F.size;
		*duration_ms = 5;
	}
	pthread_mutex_unlock(&F.lock);
	/* The VM layer's stub's refusal, as the real one says it. */
	return fail ? sbx_error_set(err, ENOTSUP, "pause is not built yet") : 0;
}

static int fk_resume(void *vm, int64_t deadline, sbx_error_t *err)
{
	struct fvm *v = vm;
	pthread_mutex_lock(&F.lock);
	int ms = F.resume_ms;
	bool fail = F.fail_resume;
	F.in_resume = true;
	pthread_mutex_unlock(&F.lock);
	/* Slow enough for concurrent callers to meet it in progress. */
	usleep((useconds_t)ms * 1000);
	pthread_mutex_lock(&F.lock);
	F.resumes++;
	F.in_resume = false;
	if (fail)
		v->dead = true;
	else
		v->paused = false;
	pthread_mutex_unlock(&F.lock);
	return fail ? sbx_error_set(err, EIO, "QEMU did not start again") : 0;
}

/* The VM layer's abort of a paused VM's waiters (backend.h). */
static void fk_abort_paused(void *vm)
{
	pthread_mutex_lock(&F.lock);
	((struct fvm *)vm)->aborted = true;
	F.aborts++;
	pthread_mutex_unlock(&F.lock);
}

/* An fs call that, as the VM layer's, waits while its VM is paused: for
 * the resume, for an abort, or for its deadline (FS_WAIT_MS here, a
 * minute there).  F.fs_gate keeps it in flight until the test opens it. */
#define FS_WAIT_MS 3000

static json_t *fk_fs_call(void *ctx, void *vm, const struct proto_msg *req, sbx_error_t *err)
{
	struct fvm *v = vm;
	int64_t until = sbx_now_ms() + FS_WAIT_MS;
	pthread_mutex_lock(&F.lock);
	F.in_fs = true;
	while ((F.fs_gate || v->paused) && !v->aborted && sbx_now_ms() < until) {
		pthread_mutex_unlock(&F.lock);
		usleep(1000);
		pthread_mutex_lock(&F.lock);
	}
	bool aborted = v->aborted, waited = v->paused;
	F.in_fs = false;
	pthread_mutex_unlock(&F.lock);
	if (aborted)
		return sbx_error_scode(err, "S216", "the VM was stopped while paused"), NULL;
	if (waited)
		return sbx_error_set(err, ETIMEDOUT, "fake fs deadline"), NULL;
	return json_pack("{s:[]}", "entries");
}

static const struct sbx_fs_ops fk_fs_ops = { .call = fk_fs_call };

/* A background process that runs until killed; a signal to a paused VM
 * waits for its resume, as the VM layer's does. */
struct fproc {
	struct fvm *vm;
	bool killed;
};

static void *fk_start(void *vm, const struct sbx_proc_request *req, uint32_t *pid, sbx_error_t *err)
{
	struct fproc *p = calloc(1, sizeof(*p));
	if (p == NULL)
		return sbx_error_errno(err, ENOMEM, "fake process"), NULL;
	p->vm = vm;
	*pid = 42;
	return p;
}

static ssize_t fk_read(void *proc, int *fd, void *buf, size_t len, int64_t deadline, sbx_error_t *err)
{
	struct fproc *p = proc;
	pthread_mutex_lock(&F.lock);
	bool killed = p->killed;
	pthread_mutex_unlock(&F.lock);
	if (killed)
		return 0;
	usleep(5000);
	return sbx_error_set(err, ETIMEDOUT, "fake read deadline");
}

static int fk_signal(void *proc, int sig, sbx_error_t *err)
{
	struct fproc *p = proc;
	pthread_mutex_lock(&F.lock);
	while (p->vm->paused && !F.unblock) {
		pthread_mutex_unlock(&F.lock);
		usleep(1000);
		pthread_mutex_lock(&F.lock);
	}
	p->killed = true;
	pthread_mutex_unlock(&F.lock);
	return 0;
}

static int fk_wait(void *proc, int64_t deadline, int *code, sbx_error_t *err)
{
	*code = 137;
	return 0;
}

static int fk_close_stdin(void *proc, sbx_error_t *err)
{
	return 0;
}

static void fk_free(void *proc)
{
	free(proc);
}

static const struct sbx_backend_ops fk_ops = { .boot = fk_boot, .exec = fk_exec, .write_file = fk_write,
					       .stop = fk_stop, .alive = fk_alive, .pause = fk_pause,
					       .resume = fk_resume, .abort_paused = fk_abort_paused,
					       .proc_start = fk_start, .proc_read = fk_read,
					       .proc_close_stdin = fk_close_stdin, .proc_signal = fk_signal,
					       .proc_wait = fk_wait, .proc_free = fk_free };

/* ---- calls ---------------------------------------------------------------- */

static char state_dir[] = "/tmp/sbx-test-pause-XXXXXX";

static struct sbx_adapter *make(const char *config)
{
	fk_reset();
	if (getenv("III_SANDBOX_STATE_DIR") == NULL &&
	    (mkdtemp(state_dir) == NULL || setenv("III_SANDBOX_STATE_DIR", state_dir, 1) < 0))
		return NULL;
	json_t *v = json_loads(config, 0, NULL);
	sbx_error_t err = NULL;
	struct sbx_config *cfg = sbx_config_parse(v, &err);
	json_decref(v);
	struct sbx_adapter *a = cfg != NULL ? sbx_adapter_new(cfg, &err) : NULL;
	if (a != NULL && sbx_adapter_use_backend(a, &fk_ops, NULL, &err) < 0) {
		sbx_adapter_free(a);
		a = NULL;
	}
	if (err != NULL)
		fprintf(stderr, "# make: %s\n", sbx_error_msg(err));
	sbx_error_free(&err);
	return a;
}

#define CFG "{\"image_allowlist\":[\"python\"],\"default_memory_mb\":256"

static char *create(struct sbx_adapter *a, const char *extra)
{
	json_t *r = adapter_callf(a, "create", "{\"image\":\"python\"%s}", extra);
	char *id = jstr(r, "sandbox_id") != NULL ? strdup(jstr(r, "sandbox_id")) : NULL;
	if (id == NULL)
		fprintf(stderr, "# create: %s\n", jstr(r, "message") != NULL ? jstr(r, "message") : "?");
	json_decref(r);
	return id;
}

static json_t *on(struct sbx_adapter *a, const char *op, const char *id)
{
	return adapter_callf(a, op, "{\"sandbox_id\":\"%s\"}", id);
}

static json_t *exec_on(struct sbx_adapter *a, const char *id)
{
	return adapter_callf(a, "exec", "{\"sandbox_id\":\"%s\",\"argv\":[\"true\"]}", id);
}

/* list's entry of `id` (a new reference) or NULL. */
static json_t *entry_of(struct sbx_adapter *a, const char *id)
{
	json_t *r = adapter_call_json(a, "list", "{}");
	json_t *e = NULL;
	size_t i;
	json_t *x;
	json_array_foreach(json_object_get(r, "sandboxes"), i, x) {
		if (strcmp(jstr(x, "sandbox_id"), id) == 0)
			e = json_incref(x);
	}
	json_decref(r);
	return e;
}

static uint64_t committed(struct sbx_adapter *a)
{
	uint64_t c, limit;
	sbx_mem_budget_read(&a->mem, &c, &limit);
	return c;
}

/* The value of sandbox_libkrun_pauses_total{op, outcome} as rendered. */
static long long pauses_counted(const char *op, const char *outcome)
{
	struct sbx_metric *fams[] = { &sbx_m_pauses };
	size_t len;
	sbx_error_t err = NULL;
	char *text = sbx_metrics_render(fams, 1, &len, &err);
	sbx_error_free(&err);
	char key[128];
	snprintf(key, sizeof(key), "sandbox_libkrun_pauses_total{op=\"%s\",outcome=\"%s\"} ", op, outcome);
	const char *at = text != NULL ? strstr(text, key) : NULL;
	long long n = at != NULL ? atoll(at + strlen(key)) : 0;
	free(text);
	return n;
}

/* ---- tests ------------------------------------------------------------------ */

TEST(pause_and_resume_reply_and_list_shows_state_only_when_paused)
{
	struct sbx_adapter *a = make(CFG "}");
	CHECK(a != NULL);
	char *id = create(a, ""), *other = create(a, "");
	CHECK(id != NULL && other != NULL);
	uint64_t before = committed(a);
	CHECK(before > 0);
	json_t *r = on(a, "pause", id);
	CHECK(json_is_true(json_object_get(r, "paused")));
	CHECK_INT(json_integer_value(json_object_get(r, "size_bytes")), 200ll << 20);
	/* The backend's 5 ms and the adapter's own part (no save here). */
	json_int_t took = json_integer_value(json_object_get(r, "duration_ms"));
	CHECK(took >= 5 && took < 1000);
	CHECK_INT(json_object_size(r), 3);
	json_decref(r);
	/* Its state goes under <state dir>/paused/sb-<id>, where a later
	 * daemon finds it again (pause/sandbox_adopt.h). */
	char want[600];
	snprintf(want, sizeof(want), "%s/paused/sb-%s", getenv("III_SANDBOX_STATE_DIR"), id);
	CHECK_STR(F.dir, want);
	/* Its memory left the budget: half of what two VMs held. */
	CHECK_INT(committed(a), before / 2);
	json_t *e = entry_of(a, id), *o = entry_of(a, other);
	CHECK_STR(jstr(e, "state"), "paused");
	CHECK_INT(json_object_size(e), 9);
	/* A sandbox never paused keeps exactly the contract's fields. */
	CHECK(json_object_get(o, "state") == NULL);
	CHECK_INT(json_object_size(o), 8);
	json_decref(e);
	json_decref(o);
	/* Pausing it again, or resuming the running one: S001 saying why. */
	r = on(a, "pause", id);
	CHECK_STR(jstr(r, "code"), "S001");
	CHECK(strstr(jstr(r, "message"), "paused already") != NULL);
	json_decref(r);
	r = on(a, "resume", other);
	CHECK_STR(jstr(r, "code"), "S001");
	CHECK(strstr(jstr(r, "message"), "is not paused") != NULL);
	json_decref(r);
	r = on(a, "resume", id);
	CHECK(json_is_true(json_object_get(r, "resumed")));
	CHECK(json_is_integer(json_object_get(r, "ready_ms")));
	CHECK_INT(json_object_size(r), 2);
	json_decref(r);
	CHECK_INT(committed(a), before);
	e = entry_of(a, id);
	CHECK(json_object_get(e, "state") == NULL);
	CHECK_INT(json_object_size(e), 8);
	json_decref(e);
	CHECK_INT(fk_get(&F.pauses), 1);
	CHECK_INT(fk_get(&F.resumes), 1);
	free(id);
	free(other);
	sbx_adapter_free(a);
}

TEST(pauses_and_resumes_are_counted_by_outcome)
{
	struct sbx_adapter *a = make(CFG "}");
	CHECK(a != NULL);
	char *id = create(a, "");
	CHECK(id != NULL);
	long long p0 = pauses_counted("pause", "ok"), f0 = pauses_counted("pause", "failed");
	long long r0 = pauses_counted("resume", "ok");
	json_decref(on(a, "pause", id));
	json_decref(on(a, "pause", id)); /* S001: not counted */
	json_decref(exec_on(a, id));     /* the auto-resume */
	F.fail_pause = true;
	json_decref(on(a, "pause", id));
	CHECK_INT(pauses_counted("pause", "ok"), p0 + 1);
	CHECK_INT(pauses_counted("pause", "failed"), f0 + 1);
	CHECK_INT(pauses_counted("resume", "ok"), r0 + 1);
	free(id);
	sbx_adapter_free(a);
}

TEST(pause_and_resume_check_their_sandbox)
{
	struct sbx_adapter *a = make(CFG "}");
	CHECK(a != NULL);
	const char *ops[] = { "pause", "resume" };
	for (int i = 0; i < 2; i++) {
		json_t *r = on(a, ops[i], "00000000-0000-4000-8000-000000000000");
		CHECK_STR(jstr(r, "code"), "S002");
		json_decref(r);
		r = on(a, ops[i], "not-a-uuid");
		CHECK_STR(jstr(r, "code"), "S001");
		json_decref(r);
	}
	json_t *r = adapter_call_json(a, "adapter::info", "{}");
	json_t *ext = json_object_get(r, "extensions");
	bool pause = false, resume = false;
	size_t i;
	json_t *x;
	json_array_foreach(ext, i, x) {
		pause = pause || strcmp(json_string_value(x), "sandbox-libkrun::pause") == 0;
		resume = resume || strcmp(json_string_value(x), "sandbox-libkrun::resume") == 0;
	}
	json_decref(r);
	CHECK(pause && resume);
	sbx_adapter_free(a);
}

struct call {
	struct sbx_adapter *a;
	const char *id;
	json_t *reply;
};

static void *exec_thread(void *arg)
{
	struct call *c = arg;
	c->reply = exec_on(c->a, c->id);
	return NULL;
}

TEST(auto_resume_on_resumes_once_for_concurrent_calls)
{
	struct sbx_adapter *a = make(CFG "}");
	CHECK(a != NULL);
	char *id = create(a, "");
	CHECK(id != NULL);
	json_decref(on(a, "pause", id));
	F.resume_ms = 200;
	struct call c[4];
	pthread_t t[4];
	for (int i = 0; i < 4; i++) {
		c[i] = (struct call){ a, id, NULL };
		CHECK(pthread_create(&t[i], NULL, exec_thread, &c[i]) == 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 4; i++) {
		CHECK_STR(jstr(c[i].reply, "stdout"), "ok\n");
		json_decref(c[i].reply);
	}
	/* One resume; the others waited for it. */
	CHECK_INT(fk_get(&F.resumes), 1);
	CHECK_INT(fk_get(&F.exec_on_paused), 0);
	json_t *e = entry_of(a, id);
	CHECK(json_object_get(e, "state") == NULL);
	json_decref(e);
	/* process::* and fs::* resume too (fs then has no fs port here: S300). */
	json_decref(on(a, "pause", id));
	json_t *r = on(a, "process::list", id);
	CHECK(json_is_array(json_object_get(r, "processes")));
	json_decref(r);
	CHECK_INT(fk_get(&F.resumes), 2);
	json_decref(on(a, "pause", id));
	r = adapter_callf(a, "fs::ls", "{\"sandbox_id\":\"%s\",\"path\":\"/\"}", id);
	CHECK_STR(jstr(r, "code"), "S300");
	json_decref(r);
	CHECK_INT(fk_get(&F.resumes), 3);
	free(id);
	sbx_adapter_free(a);
}

TEST(auto_resume_off_answers_s004_naming_resume)
{
	struct sbx_adapter *a = make(CFG ",\"auto_resume\":false}");
	CHECK(a != NULL);
	char *id = create(a, "");
	CHECK(id != NULL);
	json_decref(on(a, "pause", id));
	char want[160];
	snprintf(want, sizeof(want), "sandbox %s is paused; call sandbox-libkrun::resume", id);
	json_t *r = exec_on(a, id);
	CHECK_STR(jstr(r, "code"), "S004");
	CHECK_STR(jstr(r, "message"), want);
	json_decref(r);
	r = on(a, "process::list", id);
	CHECK_STR(jstr(r, "code"), "S004");
	CHECK_STR(jstr(r, "message"), want);
	json_decref(r);
	r = adapter_callf(a, "fs::ls", "{\"sandbox_id\":\"%s\",\"path\":\"/\"}", id);
	CHECK_STR(jstr(r, "code"), "S004");
	json_decref(r);
	r = adapter_callf(a, "terminal::open", "{\"sandbox_id\":\"%s\",\"rows\":24,\"cols\":80}", id);
	CHECK_STR(jstr(r, "code"), "S004");
	json_decref(r);
	CHECK_INT(fk_get(&F.resumes), 0);
	json_t *e = entry_of(a, id);
	CHECK_STR(jstr(e, "state"), "paused");
	json_decref(e);
	/* An explicit resume still works. */
	r = on(a, "resume", id);
	CHECK(json_is_true(json_object_get(r, "resumed")));
	json_decref(r);
	r = exec_on(a, id);
	CHECK_STR(jstr(r, "stdout"), "ok\n");
	json_decref(r);
	free(id);
	sbx_adapter_free(a);
}

TEST(limits_max_paused_and_snapshot_store)
{
	struct sbx_adapter *a = make(CFG ",\"max_paused_sandboxes\":1}");
	CHECK(a != NULL);
	char *x = create(a, ""), *y = create(a, "");
	CHECK(x != NULL && y != NULL);
	json_decref(on(a, "pause", x));
	json_t *r = on(a, "pause", y);
	CHECK_STR(jstr(r, "code"), "S400");
	CHECK(strstr(jstr(r, "message"), "max_paused_sandboxes (1)") != NULL);
	json_decref(r);
	/* A refused pause leaves the sandbox running. */
	r = exec_on(a, y);
	CHECK_STR(jstr(r, "stdout"), "ok\n");
	json_decref(r);
	free(x);
	free(y);
	sbx_adapter_free(a);

	/* 0 turns pausing off, and says so rather than "reached". */
	a = make(CFG ",\"max_paused_sandboxes\":0}");
	CHECK(a != NULL);
	x = create(a, "");
	CHECK(x != NULL);
	r = on(a, "pause", x);
	CHECK_STR(jstr(r, "code"), "S400");
	CHECK(strstr(jstr(r, "message"), "pausing is turned off (max_paused_sandboxes is 0)") != NULL);
	json_decref(r);
	free(x);
	sbx_adapter_free(a);

	/* 200 MiB paused + 256 MiB of the next guest's RAM > 400 MiB. */
	a = make(CFG ",\"snapshot_store_mb\":400}");
	CHECK(a != NULL);
	x = create(a, "");
	y = create(a, "");
	CHECK(x != NULL && y != NULL);
	r = on(a, "pause", x);
	CHECK(json_is_true(json_object_get(r, "paused")));
	json_decref(r);
	r = on(a, "pause", y);
	CHECK_STR(jstr(r, "code"), "S400");
	CHECK(strstr(jstr(r, "message"), "snapshot_store_mb (400 MiB)") != NULL);
	json_decref(r);
	free(x);
	free(y);
	sbx_adapter_free(a);
}

static bool fk_flag(bool *f)
{
	pthread_mutex_lock(&F.lock);
	bool v = *f;
	pthread_mutex_unlock(&F.lock);
	return v;
}

static void *pause_thread(void *arg)
{
	struct call *c = arg;
	c->reply = on(c->a, "pause", c->id);
	return NULL;
}

static void *resume_thread(void *arg)
{
	struct call *c = arg;
	c->reply = on(c->a, "resume", c->id);
	return NULL;
}

TEST(snapshot_store_counts_a_pause_in_progress)
{
	/* Two 256 MiB guests do not fit 400 MiB, paused one after the other
	 * or both at once. */
	struct sbx_adapter *a = make(CFG ",\"snapshot_store_mb\":400}");
	CHECK(a != NULL);
	char *x = create(a, ""), *y = create(a, "");
	CHECK(x != NULL && y != NULL);
	F.pause_ms = 300;
	struct call c = { a, x, NULL };
	pthread_t t;
	CHECK(pthread_create(&t, NULL, pause_thread, &c) == 0);
	for (int i = 0; i < 2000 && !fk_flag(&F.in_pause); i++)
		usleep(1000);
	F.pause_ms = 0;
	json_t *r = on(a, "pause", y);
	pthread_join(t, NULL);
	CHECK(json_is_true(json_object_get(c.reply, "paused")));
	json_decref(c.reply);
	CHECK_STR(jstr(r, "code"), "S400");
	CHECK(strstr(jstr(r, "message"), "snapshot_store_mb (400 MiB)") != NULL);
	json_decref(r);
	free(x);
	free(y);
	sbx_adapter_free(a);
}

TEST(max_concurrent_counts_a_resume_in_progress)
{
	struct sbx_adapter *a = make(CFG ",\"max_concurrent_sandboxes\":2}");
	CHECK(a != NULL);
	char *x = create(a, ""), *y = create(a, "");
	CHECK(x != NULL && y != NULL);
	json_decref(on(a, "pause", x));
	/* x's slot is free while it is paused ... */
	char *z = create(a, "");
	CHECK(z != NULL);
	json_decref(on(a, "stop", z));
	/* ... and taken again from the start of its resume. */
	F.resume_ms = 300;
	struct call c = { a, x, NULL };
	pthread_t t;
	CHECK(pthread_create(&t, NULL, resume_thread, &c) == 0);
	for (int i = 0; i < 2000 && !fk_flag(&F.in_resume); i++)
		usleep(1000);
	json_t *r = adapter_call_json(a, "create", "{\"image\":\"python\"}");
	pthread_join(t, NULL);
	CHECK(json_is_true(json_object_get(c.reply, "resumed")));
	json_decref(c.reply);
	CHECK_STR(jstr(r, "code"), "S400");
	CHECK(strstr(jstr(r, "message"), "max_concurrent_sandboxes (2)") != NULL);
	json_decref(r);
	free(x);
	free(y);
	free(z);
	sbx_adapter_free(a);
}

TEST(paused_memory_leaves_the_budget_and_resume_needs_it_back)
{
	/* 256 MiB guests cost 352 MiB each with their QEMU: one fits. */
	struct sbx_adapter *a = make(CFG ",\"memory_budget_mb\":500}");
	CHECK(a != NULL);
	char *x = create(a, "");
	CHECK(x != NULL);
	json_t *r = adapter_call_json(a, "create", "{\"image\":\"python\"}");
	CHECK_STR(jstr(r, "code"), "S400");
	json_decref(r);
	json_decref(on(a, "pause", x));
	CHECK_INT(committed(a), 0);
	char *y = create(a, "");
	CHECK(y != NULL);
	/* Its memory is taken: x stays paused. */
	r = on(a, "resume", x);
	CHECK_STR(jstr(r, "code"), "S400");
	CHECK(strstr(jstr(r, "message"), "memory_budget_mb") != NULL);
	json_decref(r);
	json_t *e = entry_of(a, x);
	CHECK_STR(jstr(e, "state"), "paused");
	json_decref(e);
	json_decref(on(a, "stop", y));
	r = on(a, "resume", x);
	CHECK(json_is_true(json_object_get(r, "resumed")));
	json_decref(r);
	free(x);
	free(y);
	sbx_adapter_free(a);
}

struct bg {
	struct sbx_adapter *a;
	char req[256];
	json_t *reply;
};

static void *bg_exec(void *arg)
{
	struct bg *b = arg;
	b->reply = adapter_call_json(b->a, "exec", b->req);
	return NULL;
}

TEST(exec_in_flight_at_pause_ends_with_s004_saying_paused)
{
	struct sbx_adapter *a = make(CFG "}");
	CHECK(a != NULL);
	char *id = create(a, "");
	CHECK(id != NULL);
	F.block = true;
	struct bg b = { a, "", NULL };
	snprintf(b.req, sizeof(b.req), "{\"sandbox_id\":\"%s\",\"argv\":[\"sleep\",\"9\"]}", id);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, bg_exec, &b) == 0);
	for (int i = 0; i < 2000 && !fk_in_exec(); i++)
		usleep(1000);
	json_t *r = on(a, "pause", id);
	pthread_join(t, NULL);
	CHECK(json_is_true(json_object_get(r, "paused")));
	json_decref(r);
	CHECK_STR(jstr(b.reply, "code"), "S004");
	char want[160];
	snprintf(want, sizeof(want), "sandbox %s was paused while the command ran: it was killed", id);
	CHECK_STR(jstr(b.reply, "message"), want);
	json_decref(b.reply);
	free(id);
	sbx_adapter_free(a);
}

TEST(stop_of_a_paused_sandbox_stops_its_vm_and_frees_nothing_twice)
{
	struct sbx_adapter *a = make(CFG "}");
	CHECK(a != NULL);
	char *id = create(a, "");
	CHECK(id != NULL);
	json_decref(on(a, "pause", id));
	json_t *r = on(a, "stop", id);
	CHECK(json_is_true(json_object_get(r, "stopped")));
	json_decref(r);
	CHECK_INT(fk_get(&F.stops), 1);
	CHECK_INT(committed(a), 0);
	r = on(a, "resume", id);
	CHECK_STR(jstr(r, "code"), "S002");
	json_decref(r);
	free(id);
	sbx_adapter_free(a);
}

static void *stop_thread(void *arg)
{
	struct call *c = arg;
	c->reply = on(c->a, "stop", c->id);
	return NULL;
}

TEST(stop_of_a_paused_sandbox_with_a_background_process_does_not_wait_for_a_resume)
{
	struct sbx_adapter *a = make(CFG "}");
	CHECK(a != NULL);
	char *id = create(a, "");
	CHECK(id != NULL);
	json_t *r = adapter_callf(a, "exec", "{\"sandbox_id\":\"%s\",\"argv\":[\"sleep\",\"inf\"],\"background\":true}",
				  id);
	CHECK(jstr(r, "process_id") != NULL);
	json_decref(r);
	json_decref(on(a, "pause", id));
	struct call c = { a, id, NULL };
	pthread_t t;
	CHECK(pthread_create(&t, NULL, stop_thread, &c) == 0);
	/* Its pump must not send the kill a paused VM would hold. */
	for (int i = 0; i < 300 && fk_get(&F.stops) == 0; i++)
		usleep(10000);
	bool stopped = fk_get(&F.stops) == 1;
	if (!stopped) {
		/* Unblock the stop so the test ends. */
		pthread_mutex_lock(&F.lock);
		F.unblock = true;
		pthread_mutex_unlock(&F.lock);
	}
	pthread_join(t, NULL);
	CHECK(stopped);
	CHECK(json_is_true(json_object_get(c.reply, "stopped")));
	json_decref(c.reply);
	free(id);
	sbx_adapter_free(a);
}

static bool fk_in_fs(void)
{
	pthread_mutex_lock(&F.lock);
	bool in = F.in_fs;
	pthread_mutex_unlock(&F.lock);
	return in;
}

static void *ls_thread(void *arg)
{
	struct call *c = arg;
	c->reply = adapter_callf(c->a, "fs::ls", "{\"sandbox_id\":\"%s\",\"path\":\"/\"}", c->id);
	return NULL;
}

/* stop, or run's own stop (sandbox_stop_soon), of a sandbox paused with
 * an fs call waiting for its resume: the call ends at once with S004. */
static void stop_ends_the_fs_call_waiting_for_a_resume(bool run_stop)
{
	struct sbx_adapter *a = make(CFG "}");
	CHECK(a != NULL);
	a->fs = (struct sbx_fs_host){ &fk_fs_ops, NULL };
	char *id = create(a, "");
	CHECK(id != NULL);
	/* An fs call in flight when the pause comes: it waits for the resume. */
	F.fs_gate = true;
	struct call c = { a, id, NULL };
	pthread_t t;
	CHECK(pthread_create(&t, NULL, ls_thread, &c) == 0);
	for (int i = 0; i < 2000 && !fk_in_fs(); i++)
		usleep(1000);
	json_t *r = on(a, "pause", id);
	CHECK(json_is_true(json_object_get(r, "paused")));
	json_decref(r);
	pthread_mutex_lock(&F.lock);
	F.fs_gate = false;
	pthread_mutex_unlock(&F.lock);
	/* The stop ends it at once, not at its deadline. */
	int64_t t0 = sbx_now_ms();
	sbx_error_t err = NULL;
	if (run_stop) {
		CHECK_INT(sandbox_stop_soon(a, id, &err), 0);
	} else {
		r = on(a, "stop", id);
		CHECK(json_is_true(json_object_get(r, "stopped")));
		json_decref(r);
	}
	int64_t took = sbx_now_ms() - t0;
	pthread_join(t, NULL);
	CHECK(took < FS_WAIT_MS / 2);
	CHECK_INT(fk_get(&F.aborts), 1);
	/* run's VM is stopped by the reaper's thread. */
	for (int i = 0; i < 300 && fk_get(&F.stops) == 0; i++)
		usleep(10000);
	CHECK_INT(fk_get(&F.stops), 1);
	char want[160];
	snprintf(want, sizeof(want), "sandbox %s was stopped while the call waited for its resume", id);
	CHECK_STR(jstr(c.reply, "code"), "S004");
	CHECK(strstr(jstr(c.reply, "message"), want) != NULL);
	json_decref(c.reply);
	/* A running sandbox's stop aborts nothing. */
	char *other = create(a, "");
	CHECK(other != NULL);
	if (run_stop)
		CHECK_INT(sandbox_stop_soon(a, other, &err), 0);
	else
		json_decref(on(a, "stop", other));
	CHECK_INT(fk_get(&F.aborts), 1);
	free(other);
	free(id);
	sbx_adapter_free(a);
}

TEST(stop_of_a_paused_sandbox_ends_an_fs_call_waiting_for_its_resume)
{
	stop_ends_the_fs_call_waiting_for_a_resume(false);
}

TEST(runs_own_stop_of_a_paused_sandbox_ends_an_fs_call_waiting_for_its_resume)
{
	stop_ends_the_fs_call_waiting_for_a_resume(true);
}

TEST(failed_pause_leaves_it_running_and_failed_resume_removes_it)
{
	struct sbx_adapter *a = make(CFG "}");
	CHECK(a != NULL);
	char *id = create(a, "");
	CHECK(id != NULL);
	uint64_t before = committed(a);
	F.fail_pause = true;
	json_t *r = on(a, "pause", id);
	CHECK_STR(jstr(r, "code"), "S300");
	CHECK(strstr(jstr(r, "message"), "pause is not built yet") != NULL);
	json_decref(r);
	CHECK_INT(committed(a), before);
	json_t *e = entry_of(a, id);
	CHECK(e != NULL && json_object_get(e, "state") == NULL);
	json_decref(e);
	r = exec_on(a, id);
	CHECK_STR(jstr(r, "stdout"), "ok\n");
	json_decref(r);
	F.fail_pause = false;
	F.fail_resume = true;
	json_decref(on(a, "pause", id));
	r = exec_on(a, id);
	CHECK_STR(jstr(r, "code"), "S300");
	CHECK(strstr(jstr(r, "message"), "QEMU did not start again") != NULL);
	json_decref(r);
	/* Its VM is dead: the sandbox is gone and its memory with it. */
	CHECK(entry_of(a, id) == NULL);
	CHECK_INT(fk_get(&F.stops), 1);
	CHECK_INT(committed(a), 0);
	free(id);
	sbx_adapter_free(a);
}

TEST(idle_pause_then_paused_ttl_deletes)
{
	struct sbx_adapter *a = make(CFG ",\"idle_action\":\"pause\",\"paused_ttl_secs\":1}");
	CHECK(a != NULL);
	char *id = create(a, ",\"idle_timeout_secs\":0");
	CHECK(id != NULL);
	usleep(5000);
	CHECK_INT(reaper_scan(a, false), 1);
	CHECK_INT(fk_get(&F.pauses), 1);
	CHECK_INT(fk_get(&F.stops), 0);
	json_t *e = entry_of(a, id);
	CHECK_STR(jstr(e, "state"), "paused");
	json_decref(e);
	/* Not before its TTL. */
	CHECK_INT(reaper_scan(a, false), 0);
	e = entry_of(a, id);
	CHECK(e != NULL);
	json_decref(e);
	usleep(1100000);
	CHECK_INT(reaper_scan(a, false), 1);
	CHECK(entry_of(a, id) == NULL);
	CHECK_INT(fk_get(&F.stops), 1);
	free(id);
	sbx_adapter_free(a);
}

static void *scan_thread(void *arg)
{
	struct call *c = arg;
	c->reply = json_integer(reaper_scan(c->a, false));
	return NULL;
}

TEST(idle_pause_leaves_a_sandbox_called_during_the_scan_running)
{
	struct sbx_adapter *a = make(CFG ",\"idle_action\":\"pause\"}");
	CHECK(a != NULL);
	char *x = create(a, ",\"idle_timeout_secs\":1"), *y = create(a, ",\"idle_timeout_secs\":1");
	CHECK(x != NULL && y != NULL);
	usleep(1100000);
	/* Both are idle when the scan starts; one is called while the other
	 * is being paused. */
	F.pause_ms = 300;
	struct call c = { a, NULL, NULL };
	pthread_t t;
	CHECK(pthread_create(&t, NULL, scan_thread, &c) == 0);
	for (int i = 0; i < 2000 && !fk_flag(&F.in_pause); i++)
		usleep(1000);
	pthread_mutex_lock(&F.lock);
	const char *first = strstr(F.dir, x) != NULL ? x : y, *called = first == x ? y : x;
	F.pause_ms = 0;
	pthread_mutex_unlock(&F.lock);
	json_t *r = exec_on(a, called);
	CHECK_STR(jstr(r, "stdout"), "ok\n");
	json_decref(r);
	pthread_join(t, NULL);
	CHECK_INT(json_integer_value(c.reply), 1);
	json_decref(c.reply);
	CHECK_INT(fk_get(&F.pauses), 1);
	json_t *e = entry_of(a, first), *o = entry_of(a, called);
	CHECK_STR(jstr(e, "state"), "paused");
	CHECK(o != NULL && json_object_get(o, "state") == NULL);
	json_decref(e);
	json_decref(o);
	free(x);
	free(y);
	sbx_adapter_free(a);
}

TEST(idle_stop_is_still_the_default)
{
	struct sbx_adapter *a = make(CFG "}");
	CHECK(a != NULL);
	char *id = create(a, ",\"idle_timeout_secs\":0");
	CHECK(id != NULL);
	usleep(5000);
	CHECK_INT(reaper_scan(a, false), 1);
	CHECK_INT(fk_get(&F.pauses), 0);
	CHECK_INT(fk_get(&F.stops), 1);
	CHECK(entry_of(a, id) == NULL);
	free(id);
	sbx_adapter_free(a);
}

TEST(reaper_policy_for_paused_sandboxes)
{
	/* Paused: kept until past the TTL; 0 keeps it forever. */
	CHECK_INT(reaper_decide_paused(true, false, 1000, 1, false, REAP_KEEP), REAP_KEEP);
	CHECK_INT(reaper_decide_paused(true, false, 1001, 1, false, REAP_KEEP), REAP_EXPIRED);
	CHECK_INT(reaper_decide_paused(true, false, UINT64_MAX, 0, true, REAP_IDLE), REAP_KEEP);
	CHECK_INT(reaper_decide_paused(true, false, UINT64_MAX, UINT64_MAX, false, REAP_KEEP), REAP_KEEP);
	/* Being paused or resumed: never reaped under it. */
	CHECK_INT(reaper_decide_paused(false, true, 0, 1, true, REAP_IDLE), REAP_KEEP);
	CHECK_INT(reaper_decide_paused(true, true, 5000, 1, true, REAP_WEDGED), REAP_KEEP);
	/* Running: idle is paused under idle_action pause, wedged still stopped. */
	CHECK_INT(reaper_decide_paused(false, false, 0, 1, true, REAP_IDLE), REAP_PAUSE);
	CHECK_INT(reaper_decide_paused(false, false, 0, 1, false, REAP_IDLE), REAP_IDLE);
	CHECK_INT(reaper_decide_paused(false, false, 0, 1, true, REAP_WEDGED), REAP_WEDGED);
	CHECK_INT(reaper_decide_paused(false, false, 0, 1, true, REAP_KEEP), REAP_KEEP);
}

TEST(config_keys_parse_and_refuse)
{
	const char *bad[] = { "{\"idle_action\":\"sleep\"}", "{\"auto_resume\":1}", "{\"max_paused_sandboxes\":-1}",
			      "{\"paused_ttl_secs\":\"1d\"}", "{\"snapshot_store_mb\":1.5}", "{\"live_restore\":\"yes\"}" };
	const char *key[] = { "idle_action", "auto_resume", "max_paused_sandboxes", "paused_ttl_secs",
			      "snapshot_store_mb", "live_restore" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *v = json_loads(bad[i], 0, NULL);
		sbx_error_t err = NULL;
		struct sbx_config *cfg = sbx_config_parse(v, &err);
		json_decref(v);
		CHECK(cfg == NULL);
		CHECK(strstr(sbx_error_msg(err), key[i]) != NULL);
		sbx_error_free(&err);
	}
	json_t *v = json_loads("{}", 0, NULL);
	sbx_error_t err = NULL;
	struct sbx_config *cfg = sbx_config_parse(v, &err);
	json_decref(v);
	CHECK(cfg != NULL);
	CHECK(cfg->pause.auto_resume);
	CHECK_INT(cfg->pause.max_paused_sandboxes, 256);
	CHECK_INT(cfg->pause.snapshot_store_mb, 16384);
	CHECK_INT(cfg->pause.idle_action, SBX_IDLE_STOP);
	CHECK_INT(cfg->pause.paused_ttl_secs, 604800);
	CHECK(!cfg->pause.live_restore);
	sbx_config_free(cfg);
}
