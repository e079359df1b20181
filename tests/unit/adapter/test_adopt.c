/* Paused sandboxes outlive the daemon (issue 40 item 4) through
 * sbx_adapter_call() over a fake backend: a daemon that exits keeps a
 * paused sandbox (forget, not stop) with its record beside the state; the
 * next adapter on the state directory finds it again (same id, name,
 * shape, paused, its background process with its log so far and its
 * handle), resumes it at the next exec and removes it at its stop; an
 * unfinished pause is removed, a damaged record left, one held by another
 * daemon skipped; live_restore pauses the running sandboxes for the next
 * daemon, which resumes them. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapter/adapter.h"
#include "adapter/adapter_metrics.h"
#include "adapter/adapter_state.h"
#include "adapter/pause/sandbox_adopt.h"
#include "adapter/pause/sandbox_restart.h"
#include "common/clock.h"
#include "common/metrics.h"
#include "common/metrics_families.h"
#include "harness.h"
#include "adapter_call.h"

/* How long the fake save (pause_keep) takes. */
#define KEEP_MS 30

struct fvm {
	bool paused, adopted;
	char dir[512];
};

struct fproc {
	bool told; /* its one line of output was read */
	bool killed;
};

static struct {
	pthread_mutex_t lock;
	int stops, forgets, adopts, resumes, discards, taken, branches;
	uint64_t size; /* what a pause reports on disk; 0: 4096 */
	bool busy; /* adopt: another daemon holds it */
	char workdir[64];
} F = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void *fk_boot(void *ctx, const struct sbx_boot_request *req, sbx_error_t *err)
{
	return calloc(1, sizeof(struct fvm));
}

static int fk_exec(void *vm, const struct sbx_exec_request *req, struct sbx_exec_result *res, sbx_error_t *err)
{
	if (((struct fvm *)vm)->paused)
		return sbx_error_scode(err, "S300", "exec on a paused VM");
	res->exit_code = 0;
	return 0;
}

static int fk_write(void *vm, const char *path, uint32_t mode, bool parents, const void *data, size_t len,
		    sbx_error_t *err)
{
	return 0;
}

static void rm_state(const char *dir)
{
	char path[1100];
	static const char *const names[] = { "state", "sandbox.json", "sandbox.json.new" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

static void fk_stop(void *vm)
{
	struct fvm *v = vm;
	pthread_mutex_lock(&F.lock);
	F.stops++;
	pthread_mutex_unlock(&F.lock);
	if (v->dir[0] != '\0')
		rm_state(v->dir);
	free(vm);
}

static int fk_pause(void *vm, const char *dir, uint64_t *size_bytes, int64_t *duration_ms, int64_t deadline,
		    sbx_error_t *err)
{
	struct fvm *v = vm;
	if (mkdir(dir, 0700) < 0)
		return sbx_error_errno(err, errno, "%s", dir);
	char path[600];
	snprintf(path, sizeof(path), "%s/state", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd >= 0)
		close(fd);
	snprintf(v->dir, sizeof(v->dir), "%s", dir);
	v->paused = true;
	pthread_mutex_lock(&F.lock);
	*size_bytes = F.size > 0 ? F.size : 4096;
	pthread_mutex_unlock(&F.lock);
	*duration_ms = 1;
	return 0;
}

static int fk_resume(void *vm, int64_t deadline, sbx_error_t *err)
{
	struct fvm *v = vm;
	pthread_mutex_lock(&F.lock);
	F.resumes++;
	pthread_mutex_unlock(&F.lock);
	rm_state(v->dir);
	v->paused = false;
	return 0;
}

static void fk_abort_paused(void *vm)
{
}

static int fk_keep(void *vm, bool sync, int64_t deadline, json_t **state, sbx_error_t *err)
{
	usleep(KEEP_MS * 1000); /* the fsyncs of a real save */
	*state = json_pack("{s:s}", "workdir", "/work");
	return 0;
}

static void fk_forget(void *vm)
{
	pthread_mutex_lock(&F.lock);
	F.forgets++;
	pthread_mutex_unlock(&F.lock);
	free(vm);
}

static void *fk_adopt(void *ctx, const char *dir, json_t *state, const int *fds, size_t n, sbx_error_t *err)
{
	pthread_mutex_lock(&F.lock);
	bool busy = F.busy;
	if (!busy) {
		F.adopts++;
		snprintf(F.workdir, sizeof(F.workdir), "%s", json_string_value(json_object_get(state, "workdir")));
	}
	pthread_mutex_unlock(&F.lock);
	if (busy)
		return sbx_error_set(err, EWOULDBLOCK, "%s is held by another daemon", dir), NULL;
	struct fvm *v = calloc(1, sizeof(*v));
	if (v == NULL)
		return sbx_error_errno(err, ENOMEM, "fake"), NULL;
	v->paused = v->adopted = true;
	snprintf(v->dir, sizeof(v->dir), "%s", dir);
	return v;
}

static bool fk_discard(void *ctx, const char *dir)
{
	pthread_mutex_lock(&F.lock);
	F.discards++;
	pthread_mutex_unlock(&F.lock);
	rm_state(dir);
	return true;
}

/* A second name for each file (the fake state has no scratch disk). */
static int fk_branch(void *ctx, const char *from, const char *to, const char *sandbox_id, sbx_error_t *err)
{
	pthread_mutex_lock(&F.lock);
	F.branches++;
	pthread_mutex_unlock(&F.lock);
	if (mkdir(to, 0700) < 0)
		return sbx_error_errno(err, errno, "%s", to);
	static const char *const names[] = { "state", "sandbox.json" };
	for (size_t i = 0; i < 2; i++) {
		char a[600], b[600];
		snprintf(a, sizeof(a), "%s/%s", from, names[i]);
		snprintf(b, sizeof(b), "%s/%s", to, names[i]);
		if (link(a, b) < 0) {
			int e = errno;
			rm_state(to);
			return sbx_error_errno(err, e, "link %s", a);
		}
	}
	return 0;
}

static void *fk_start(void *vm, const struct sbx_proc_request *req, uint32_t *pid, sbx_error_t *err)
{
	*pid = 42;
	return calloc(1, sizeof(struct fproc));
}

static void *fk_adopted_proc(void *vm, uint32_t pid)
{
	pthread_mutex_lock(&F.lock);
	F.taken += pid == 42;
	pthread_mutex_unlock(&F.lock);
	struct fproc *p = pid == 42 ? calloc(1, sizeof(*p)) : NULL;
	if (p != NULL)
		p->told = true; /* a new handle: its old line is in the record */
	return p;
}

/* One line, then nothing until killed. */
static ssize_t fk_read(void *proc, int *fd, void *buf, size_t len, int64_t deadline, sbx_error_t *err)
{
	struct fproc *p = proc;
	pthread_mutex_lock(&F.lock);
	bool told = p->told, killed = p->killed;
	p->told = true;
	pthread_mutex_unlock(&F.lock);
	if (killed)
		return 0;
	if (!told) {
		*fd = 1;
		memcpy(buf, "tick 1\n", 7);
		return 7;
	}
	usleep(5000);
	return sbx_error_set(err, ETIMEDOUT, "fake read deadline");
}

static int fk_signal(void *proc, int sig, sbx_error_t *err)
{
	pthread_mutex_lock(&F.lock);
	((struct fproc *)proc)->killed = true;
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

static const struct sbx_backend_ops fk_ops = {
	.boot = fk_boot, .exec = fk_exec, .write_file = fk_write, .stop = fk_stop, .pause = fk_pause,
	.resume = fk_resume, .abort_paused = fk_abort_paused, .pause_keep = fk_keep, .forget = fk_forget,
	.adopt = fk_adopt, .adopted_proc = fk_adopted_proc, .discard_paused = fk_discard, .branch_paused = fk_branch,
	.proc_start = fk_start,
	.proc_read = fk_read, .proc_close_stdin = fk_close_stdin, .proc_signal = fk_signal, .proc_wait = fk_wait,
	.proc_free = fk_free,
};

static char state_dir[] = "/tmp/sbx-test-adopt-XXXXXX";

static struct sbx_adapter *make_with(const char *config)
{
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

static struct sbx_adapter *make(void)
{
	return make_with("{\"image_allowlist\":[\"python\"],\"default_memory_mb\":256}");
}

static int get(int *v)
{
	pthread_mutex_lock(&F.lock);
	int n = *v;
	pthread_mutex_unlock(&F.lock);
	return n;
}

static json_t *entry_of(struct sbx_adapter *a, const char *id)
{
	json_t *r = adapter_call_json(a, "list", "{}");
	json_t *e = NULL, *x;
	size_t i;
	json_array_foreach(json_object_get(r, "sandboxes"), i, x) {
		if (strcmp(jstr(x, "sandbox_id"), id) == 0)
			e = json_incref(x);
	}
	json_decref(r);
	return e;
}

/* <state dir>/paused/sb-<id>[/file] exists. */
static bool exists(const char *id, const char *file)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/paused/sb-%s%s%s", getenv("III_SANDBOX_STATE_DIR"), id, file ? "/" : "",
		 file ? file : "");
	return access(path, F_OK) == 0;
}

static void put(const char *dir, const char *text)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/paused/%s", getenv("III_SANDBOX_STATE_DIR"), dir);
	mkdir(path, 0700);
	if (text == NULL)
		return;
	strcat(path, "/sandbox.json");
	FILE *f = fopen(path, "w");
	if (f != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

TEST(a_paused_sandbox_outlives_its_daemon_and_is_found_again_with_its_process)
{
	struct sbx_adapter *a = make();
	CHECK(a != NULL);
	json_t *r = adapter_call_json(a, "create", "{\"image\":\"python\",\"name\":\"keeper\",\"cpus\":2}");
	char id[64];
	snprintf(id, sizeof(id), "%s", jstr(r, "sandbox_id") != NULL ? jstr(r, "sandbox_id") : "");
	json_decref(r);
	CHECK(id[0] != '\0');
	r = adapter_callf(a, "exec", "{\"sandbox_id\":\"%s\",\"argv\":[\"ticker\"],\"background\":true}", id);
	char pid_text[64];
	snprintf(pid_text, sizeof(pid_text), "%s", jstr(r, "process_id") != NULL ? jstr(r, "process_id") : "");
	json_decref(r);
	CHECK(pid_text[0] != '\0');
	/* Its first line is in the adapter's log before the pause. */
	for (int i = 0; i < 200; i++) {
		r = adapter_callf(a, "process::logs", "{\"sandbox_id\":\"%s\",\"process_id\":\"%s\"}", id, pid_text);
		bool in = jstr(r, "data") != NULL && strstr(jstr(r, "data"), "tick 1") != NULL;
		json_decref(r);
		if (in)
			break;
		usleep(10000);
	}
	r = adapter_callf(a, "pause", "{\"sandbox_id\":\"%s\"}", id);
	CHECK(json_is_true(json_object_get(r, "paused")));
	/* duration_ms is the whole pause: the backend's (1 ms) and the save. */
	CHECK(json_integer_value(json_object_get(r, "duration_ms")) >= 1 + KEEP_MS);
	json_decref(r);
	CHECK(exists(id, "sandbox.json"));
	/* The daemon exits: the paused sandbox is kept, not stopped. */
	sbx_adapter_free(a);
	CHECK_INT(get(&F.forgets), 1);
	CHECK_INT(get(&F.stops), 0);
	CHECK(exists(id, "state"));

	a = make();
	CHECK(a != NULL);
	CHECK_INT(sandbox_adopt_paused(a, NULL), 1);
	CHECK_INT(get(&F.adopts), 1);
	CHECK_STR(F.workdir, "/work");
	CHECK_INT(get(&F.taken), 1);
	json_t *e = entry_of(a, id);
	CHECK(e != NULL);
	CHECK_STR(jstr(e, "state"), "paused");
	CHECK_STR(jstr(e, "name"), "keeper");
	CHECK_STR(jstr(e, "image"), "python");
	json_decref(e);
	/* Its process, with the log it had, is listed under the same id. */
	r = adapter_callf(a, "process::logs", "{\"sandbox_id\":\"%s\",\"process_id\":\"%s\"}", id, pid_text);
	CHECK(jstr(r, "data") != NULL && strstr(jstr(r, "data"), "tick 1") != NULL);
	json_decref(r);
	/* The next exec resumes it, as any paused sandbox. */
	r = adapter_callf(a, "exec", "{\"sandbox_id\":\"%s\",\"argv\":[\"true\"]}", id);
	CHECK(json_is_integer(json_object_get(r, "exit_code")));
	json_decref(r);
	CHECK_INT(get(&F.resumes), 1);
	e = entry_of(a, id);
	CHECK(e != NULL && json_object_get(e, "state") == NULL);
	json_decref(e);
	/* Running again: a daemon that exits now stops it. */
	sbx_adapter_free(a);
	CHECK_INT(get(&F.stops), 1);
	CHECK(!exists(id, NULL));
}

TEST(a_stop_of_a_found_sandbox_removes_its_state)
{
	struct sbx_adapter *a = make();
	CHECK(a != NULL);
	json_t *r = adapter_call_json(a, "create", "{\"image\":\"python\"}");
	char id[64];
	snprintf(id, sizeof(id), "%s", jstr(r, "sandbox_id") != NULL ? jstr(r, "sandbox_id") : "");
	json_decref(r);
	json_decref(adapter_callf(a, "pause", "{\"sandbox_id\":\"%s\"}", id));
	sbx_adapter_free(a);
	a = make();
	CHECK_INT(sandbox_adopt_paused(a, NULL), 1);
	int stops = get(&F.stops);
	r = adapter_callf(a, "stop", "{\"sandbox_id\":\"%s\"}", id);
	CHECK(jstr(r, "code") == NULL);
	json_decref(r);
	CHECK_INT(get(&F.stops), stops + 1);
	CHECK(!exists(id, NULL));
	CHECK(entry_of(a, id) == NULL);
	sbx_adapter_free(a);
}

TEST(unfinished_pauses_go_damaged_records_stay_and_held_ones_are_skipped)
{
	struct sbx_adapter *a = make();
	CHECK(a != NULL);
	const char *unfinished = "11111111-1111-4111-8111-111111111111";
	const char *damaged = "22222222-2222-4222-8222-222222222222";
	const char *other_format = "33333333-3333-4333-8333-333333333333";
	const char *bad_shape = "44444444-4444-4444-8444-444444444444";
	char name[64];
	snprintf(name, sizeof(name), "sb-%s", unfinished);
	put(name, NULL);
	snprintf(name, sizeof(name), "sb-%s", damaged);
	put(name, "{\"format\":1,\"sandbox\":");
	snprintf(name, sizeof(name), "sb-%s", other_format);
	put(name, "{\"format\":2,\"sandbox\":{},\"processes\":[],\"keep_alive\":false}");
	snprintf(name, sizeof(name), "sb-%s", bad_shape);
	put(name, "{\"format\":1,\"sandbox\":{\"id\":\"44444444-4444-4444-8444-444444444444\",\"image\":\"python\","
		  "\"cpus\":-1,\"memory_mb\":256,\"network\":false,\"idle_timeout_secs\":1,\"paused_bytes\":1,"
		  "\"resume_mib\":1,\"created_ms\":1,\"last_exec_ms\":1,\"last_net_ms\":0,\"paused_ms\":1},"
		  "\"processes\":[],\"keep_alive\":false}");
	int discards = get(&F.discards), adopts = get(&F.adopts);
	CHECK_INT(sandbox_adopt_paused(a, NULL), 0);
	CHECK_INT(get(&F.discards), discards + 1);
	CHECK_INT(get(&F.adopts), adopts);
	CHECK(!exists(unfinished, NULL));
	CHECK(exists(damaged, "sandbox.json"));
	CHECK(exists(other_format, "sandbox.json"));
	CHECK(exists(bad_shape, "sandbox.json"));
	json_t *r = adapter_call_json(a, "list", "{}");
	CHECK_INT(json_array_size(json_object_get(r, "sandboxes")), 0);
	json_decref(r);
	sbx_adapter_free(a);
	char path[600];
	const char *left[] = { damaged, other_format, bad_shape };
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/paused/sb-%s", getenv("III_SANDBOX_STATE_DIR"), left[i]);
		rm_state(path);
	}
}

TEST(a_paused_sandbox_another_daemon_holds_is_left_to_it)
{
	struct sbx_adapter *a = make();
	json_t *r = adapter_call_json(a, "create", "{\"image\":\"python\"}");
	char id[64];
	snprintf(id, sizeof(id), "%s", jstr(r, "sandbox_id") != NULL ? jstr(r, "sandbox_id") : "");
	json_decref(r);
	json_decref(adapter_callf(a, "pause", "{\"sandbox_id\":\"%s\"}", id));
	sbx_adapter_free(a);
	a = make();
	F.busy = true;
	CHECK_INT(sandbox_adopt_paused(a, NULL), 0);
	F.busy = false;
	CHECK(entry_of(a, id) == NULL);
	CHECK(exists(id, "sandbox.json"));
	CHECK_INT(sandbox_adopt_paused(a, NULL), 1);
	sbx_adapter_free(a);
	/* Kept once more by this daemon's exit; tidy up. */
	char path[600];
	snprintf(path, sizeof(path), "%s/paused/sb-%s", getenv("III_SANDBOX_STATE_DIR"), id);
	rm_state(path);
}

static void create_into(struct sbx_adapter *a, char id[64])
{
	json_t *r = adapter_call_json(a, "create", "{\"image\":\"python\"}");
	snprintf(id, 64, "%s", jstr(r, "sandbox_id") != NULL ? jstr(r, "sandbox_id") : "");
	json_decref(r);
}

TEST(live_restore_pauses_the_running_sandboxes_and_the_next_daemon_resumes_them)
{
	struct sbx_adapter *a = make();
	CHECK(a != NULL);
	char run1[64], run2[64], held[64];
	create_into(a, run1);
	create_into(a, run2);
	create_into(a, held);
	CHECK(run1[0] != '\0' && run2[0] != '\0' && held[0] != '\0');
	/* Paused by its caller: the next daemon leaves it paused. */
	json_decref(adapter_callf(a, "pause", "{\"sandbox_id\":\"%s\"}", held));
	CHECK_INT(sandbox_restart_pause(a), 2);
	CHECK(exists(run1, "sandbox.json") && exists(run2, "sandbox.json"));
	int stops = get(&F.stops);
	sbx_adapter_free(a);
	CHECK_INT(get(&F.stops), stops);

	a = make();
	CHECK(a != NULL);
	struct sandbox_ids ids = { NULL, 0, 0 };
	CHECK_INT(sandbox_adopt_paused(a, &ids), 3);
	CHECK_INT(ids.n, 2);
	bool both = ids.n == 2 && ((strcmp(ids.v[0], run1) == 0 && strcmp(ids.v[1], run2) == 0) ||
				   (strcmp(ids.v[0], run2) == 0 && strcmp(ids.v[1], run1) == 0));
	CHECK(both);
	int resumes = get(&F.resumes);
	CHECK_INT(sandbox_restart_resume(a, &ids), 2);
	CHECK_INT(get(&F.resumes), resumes + 2);
	json_t *e1 = entry_of(a, run1), *e2 = entry_of(a, run2), *eh = entry_of(a, held);
	CHECK(e1 != NULL && json_object_get(e1, "state") == NULL);
	CHECK(e2 != NULL && json_object_get(e2, "state") == NULL);
	CHECK(eh != NULL && jstr(eh, "state") != NULL && strcmp(jstr(eh, "state"), "paused") == 0);
	json_decref(e1);
	json_decref(e2);
	json_decref(eh);
	CHECK(!exists(run1, NULL) && !exists(run2, NULL));
	/* Running already (a call resumed it first): no error, no resume. */
	CHECK_INT(sandbox_restart_resume(a, &ids), 2);
	CHECK_INT(get(&F.resumes), resumes + 2);
	sandbox_ids_free(&ids);
	json_decref(adapter_callf(a, "stop", "{\"sandbox_id\":\"%s\"}", held));
	sbx_adapter_free(a);
	CHECK(!exists(held, NULL));
}

/* A sample of sandbox_libkrun_snapshots_total or _snapshot_store_bytes as
 * rendered (`key`: the name with its labels). */
static double metric(struct sbx_metric *m, const char *key)
{
	struct sbx_metric *fams[] = { m };
	size_t len;
	sbx_error_t err = NULL;
	char *text = sbx_metrics_render(fams, 1, &len, &err);
	sbx_error_free(&err);
	char k[160];
	snprintf(k, sizeof(k), "%s ", key);
	const char *at = text != NULL ? strstr(text, k) : NULL;
	double v = at != NULL ? atof(at + strlen(k)) : -1;
	free(text);
	return v;
}

static int64_t jint(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/* The one snapshot snapshot::list shows: its id copied to sid. */
static json_t *listed_snapshot(struct sbx_adapter *a)
{
	json_t *r = adapter_call_json(a, "snapshot::list", "{}");
	json_t *l = json_object_get(r, "snapshots");
	json_t *e = json_array_size(l) == 1 ? json_incref(json_array_get(l, 0)) : NULL;
	json_decref(r);
	return e;
}

/* issue 39: a snapshot of a running sandbox (which runs on: paused and
 * resumed by the backend, never by the registry), sandboxes created from
 * it (a branch adopted under a new id and resumed, with the source's
 * background process), the refusals, the list's count, the deletion. */
TEST(a_snapshot_branches_a_running_sandbox_into_new_sandboxes)
{
	struct sbx_adapter *a = make();
	CHECK(a != NULL);
	char src[64];
	create_into(a, src);
	CHECK(src[0] != '\0');
	json_decref(adapter_callf(a, "exec", "{\"sandbox_id\":\"%s\",\"argv\":[\"ticker\"],\"background\":true}", src));
	int resumes = get(&F.resumes);
	json_t *r = adapter_callf(a, "snapshot", "{\"sandbox_id\":\"%s\",\"name\":\"setup\"}", src);
	char sid[64];
	snprintf(sid, sizeof(sid), "%s", jstr(r, "snapshot_id") != NULL ? jstr(r, "snapshot_id") : "");
	CHECK(sid[0] != '\0');
	CHECK(jstr(r, "sandbox_id") != NULL && strcmp(jstr(r, "sandbox_id"), src) == 0);
	CHECK_INT(jint(r, "size_bytes"), 4096);
	CHECK(jint(r, "memory_mb") == 256 && jint(r, "cpus") == 1 && json_is_false(json_object_get(r, "network")));
	CHECK(jint(r, "paused_ms") >= KEEP_MS && jint(r, "duration_ms") >= jint(r, "paused_ms"));
	json_decref(r);
	/* The source ran on: resumed by the backend, running in the list,
	 * its capture gone, the snapshot whole. */
	CHECK_INT(get(&F.resumes), resumes + 1);
	json_t *e = entry_of(a, src);
	CHECK(e != NULL && json_object_get(e, "state") == NULL);
	json_decref(e);
	char path[700];
	snprintf(path, sizeof(path), "%s/sandbox-snapshots/%s/snapshot.json", getenv("III_SANDBOX_STATE_DIR"), sid);
	CHECK(access(path, F_OK) == 0);
	snprintf(path, sizeof(path), "%s/sandbox-snapshots/.capture-%s", getenv("III_SANDBOX_STATE_DIR"), sid);
	CHECK(access(path, F_OK) < 0);

	r = adapter_callf(a, "create", "{\"snapshot\":\"%s\",\"name\":\"branch\"}", sid);
	char br[64];
	snprintf(br, sizeof(br), "%s", jstr(r, "sandbox_id") != NULL ? jstr(r, "sandbox_id") : "");
	CHECK(br[0] != '\0' && strcmp(br, src) != 0);
	CHECK(jstr(r, "snapshot_id") != NULL && strcmp(jstr(r, "snapshot_id"), sid) == 0);
	CHECK(jstr(r, "image") != NULL && strcmp(jstr(r, "image"), "python") == 0);
	json_decref(r);
	e = entry_of(a, br);
	CHECK(e != NULL && json_object_get(e, "state") == NULL && jstr(e, "name") != NULL &&
	      strcmp(jstr(e, "name"), "branch") == 0);
	json_decref(e);
	CHECK(!exists(br, NULL)); /* resumed: its branch of the state is gone */
	r = adapter_callf(a, "process::list", "{\"sandbox_id\":\"%s\"}", br);
	CHECK_INT(json_array_size(json_object_get(r, "processes")), 1);
	json_decref(r);
	json_t *l = listed_snapshot(a);
	CHECK(l != NULL && jint(l, "sandboxes_using") == 1 && strcmp(jstr(l, "name"), "setup") == 0);
	json_decref(l);
	/* Counted, and the bytes the snapshot holds at the scrape. */
	CHECK(metric(&sbx_m_snapshots, "sandbox_libkrun_snapshots_total{op=\"snapshot\",outcome=\"ok\"}") == 1);
	CHECK(metric(&sbx_m_snapshots, "sandbox_libkrun_snapshots_total{op=\"create\",outcome=\"ok\"}") == 1);
	sbx_adapter_collect_metrics(a);
	CHECK(metric(&sbx_m_stored_bytes, "sandbox_libkrun_snapshot_store_bytes{kind=\"snapshots\"}") == 4096);

	/* Refusals: nothing created, no branch made. */
	int branches = get(&F.branches);
	size_t n = json_array_size(json_object_get(r = adapter_call_json(a, "list", "{}"), "sandboxes"));
	json_decref(r);
	static const char *const bad[] = {
		"\"image\":\"python\"", "\"env\":{\"A\":\"1\"}", "\"cpus\":2", "\"memory_mb\":512", "\"network\":true",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = adapter_callf(a, "create", "{\"snapshot\":\"%s\",%s}", sid, bad[i]);
		CHECK(jstr(r, "code") != NULL && strcmp(jstr(r, "code"), "S001") == 0);
		json_decref(r);
	}
	r = adapter_callf(a, "create", "{\"snapshot\":\"%s-x\"}", sid);
	CHECK(jstr(r, "code") != NULL && strcmp(jstr(r, "code"), "S001") == 0);
	json_decref(r);
	r = adapter_call_json(a, "create", "{\"snapshot\":\"00000000-0000-4000-8000-000000000000\"}");
	CHECK(jstr(r, "code") != NULL && strcmp(jstr(r, "code"), "S001") == 0 &&
	      strstr(jstr(r, "message"), "unknown snapshot_id") != NULL);
	json_decref(r);
	CHECK_INT(get(&F.branches), branches);
	CHECK_INT(json_array_size(json_object_get(r = adapter_call_json(a, "list", "{}"), "sandboxes")), n);
	json_decref(r);

	/* A paused source cannot be captured while being paused; a paused
	 * one is resumed first. */
	json_decref(adapter_callf(a, "pause", "{\"sandbox_id\":\"%s\"}", src));
	r = adapter_callf(a, "snapshot", "{\"sandbox_id\":\"%s\"}", src);
	CHECK(jstr(r, "snapshot_id") != NULL);
	char sid2[64];
	snprintf(sid2, sizeof(sid2), "%s", jstr(r, "snapshot_id") != NULL ? jstr(r, "snapshot_id") : "");
	json_decref(r);

	/* Deleted: out of the list, its sandboxes run on, a second delete S001. */
	r = adapter_callf(a, "snapshot::delete", "{\"snapshot_id\":\"%s\"}", sid);
	CHECK(json_is_true(json_object_get(r, "deleted")));
	json_decref(r);
	l = listed_snapshot(a);
	CHECK(l != NULL && strcmp(jstr(l, "snapshot_id"), sid2) == 0 && jint(l, "sandboxes_using") == 0);
	json_decref(l);
	r = adapter_callf(a, "snapshot::delete", "{\"snapshot_id\":\"%s\"}", sid);
	CHECK(jstr(r, "code") != NULL && strcmp(jstr(r, "code"), "S001") == 0);
	json_decref(r);
	e = entry_of(a, br);
	CHECK(e != NULL);
	json_decref(e);
	r = adapter_callf(a, "snapshot::delete", "{\"snapshot_id\":\"%s\"}", sid2);
	CHECK(json_is_true(json_object_get(r, "deleted")));
	json_decref(r);
	json_decref(adapter_callf(a, "stop", "{\"sandbox_id\":\"%s\"}", br));
	json_decref(adapter_callf(a, "stop", "{\"sandbox_id\":\"%s\"}", src));
	sbx_adapter_free(a);
}

/* fork: count sandboxes from one capture, its snapshot gone after; the
 * bounds, and S400 before anything is captured when they do not fit. */
TEST(fork_makes_count_sandboxes_from_one_capture_all_or_nothing)
{
	struct sbx_adapter *a = make();
	CHECK(a != NULL);
	char src[64];
	create_into(a, src);
	CHECK(src[0] != '\0');
	int branches = get(&F.branches);
	json_t *r = adapter_callf(a, "fork", "{\"sandbox_id\":\"%s\",\"count\":3,\"name\":\"try\"}", src);
	json_t *ids = json_object_get(r, "sandbox_ids");
	CHECK_INT(json_array_size(ids), 3);
	CHECK(jint(r, "ready_ms") >= jint(r, "snapshot_ms") && jint(r, "snapshot_ms") >= KEEP_MS);
	/* The capture's branch and one per fork. */
	CHECK_INT(get(&F.branches), branches + 4);
	size_t i;
	json_t *x;
	json_array_foreach(ids, i, x) {
		json_t *e = entry_of(a, json_string_value(x));
		CHECK(e != NULL && json_object_get(e, "state") == NULL && strcmp(jstr(e, "name"), "try") == 0);
		json_decref(e);
		json_decref(adapter_callf(a, "stop", "{\"sandbox_id\":\"%s\"}", json_string_value(x)));
	}
	json_decref(r);
	r = adapter_call_json(a, "snapshot::list", "{}");
	CHECK_INT(json_array_size(json_object_get(r, "snapshots")), 0);
	json_decref(r);
	branches = get(&F.branches);
	r = adapter_callf(a, "fork", "{\"sandbox_id\":\"%s\",\"count\":0}", src);
	CHECK(jstr(r, "code") != NULL && strcmp(jstr(r, "code"), "S001") == 0);
	json_decref(r);
	r = adapter_callf(a, "fork", "{\"sandbox_id\":\"%s\",\"count\":33}", src);
	CHECK(jstr(r, "code") != NULL && strcmp(jstr(r, "code"), "S001") == 0);
	json_decref(r);
	/* 1 running + 32 > max_concurrent_sandboxes (32). */
	r = adapter_callf(a, "fork", "{\"sandbox_id\":\"%s\",\"count\":32}", src);
	CHECK(jstr(r, "code") != NULL && strcmp(jstr(r, "code"), "S400") == 0 &&
	      strstr(jstr(r, "message"), "max_concurrent_sandboxes") != NULL);
	json_decref(r);
	CHECK_INT(get(&F.branches), branches);
	r = adapter_call_json(a, "list", "{}");
	CHECK_INT(json_array_size(json_object_get(r, "sandboxes")), 1);
	json_decref(r);
	json_decref(adapter_callf(a, "stop", "{\"sandbox_id\":\"%s\"}", src));
	sbx_adapter_free(a);
}

/* Snapshots and paused sandboxes share snapshot_store_mb: a pause counts
 * the snapshots' bytes (fails before: it counted paused sandboxes only),
 * and a snapshot the paused ones'; both S400 naming the key. */
TEST(snapshots_and_pauses_share_snapshot_store_mb)
{
	struct sbx_adapter *a = make_with("{\"image_allowlist\":[\"python\"],\"default_memory_mb\":256,"
					  "\"snapshot_store_mb\":400}");
	CHECK(a != NULL);
	char src[64], other[64];
	create_into(a, src);
	create_into(a, other);
	pthread_mutex_lock(&F.lock);
	F.size = 200ull << 20;
	pthread_mutex_unlock(&F.lock);
	json_t *r = adapter_callf(a, "snapshot", "{\"sandbox_id\":\"%s\"}", src);
	char sid[64];
	snprintf(sid, sizeof(sid), "%s", jstr(r, "snapshot_id") != NULL ? jstr(r, "snapshot_id") : "");
	json_decref(r);
	CHECK(sid[0] != '\0');
	/* 200 MiB of snapshot + up to 256 MiB of pause > 400 MiB. */
	r = adapter_callf(a, "pause", "{\"sandbox_id\":\"%s\"}", other);
	CHECK(jstr(r, "code") != NULL && strcmp(jstr(r, "code"), "S400") == 0 &&
	      strstr(jstr(r, "message"), "snapshots 200 MiB") != NULL);
	json_decref(r);
	r = adapter_callf(a, "snapshot::delete", "{\"snapshot_id\":\"%s\"}", sid);
	json_decref(r);
	r = adapter_callf(a, "pause", "{\"sandbox_id\":\"%s\"}", other);
	CHECK(json_is_true(json_object_get(r, "paused")));
	json_decref(r);
	/* 200 MiB paused + up to 256 MiB of snapshot > 400 MiB. */
	r = adapter_callf(a, "snapshot", "{\"sandbox_id\":\"%s\"}", src);
	CHECK(jstr(r, "code") != NULL && strcmp(jstr(r, "code"), "S400") == 0 &&
	      strstr(jstr(r, "message"), "snapshot_store_mb") != NULL);
	json_decref(r);
	pthread_mutex_lock(&F.lock);
	F.size = 0;
	pthread_mutex_unlock(&F.lock);
	json_decref(adapter_callf(a, "stop", "{\"sandbox_id\":\"%s\"}", other));
	json_decref(adapter_callf(a, "stop", "{\"sandbox_id\":\"%s\"}", src));
	sbx_adapter_free(a);
}

/* A sandbox created from a snapshot says so (ps, snapshot::list's count)
 * after it was paused and a new daemon found it again. */
TEST(a_branch_keeps_its_snapshot_across_a_restart)
{
	struct sbx_adapter *a = make();
	CHECK(a != NULL);
	char src[64];
	create_into(a, src);
	json_t *r = adapter_callf(a, "snapshot", "{\"sandbox_id\":\"%s\"}", src);
	char sid[64], br[64];
	snprintf(sid, sizeof(sid), "%s", jstr(r, "snapshot_id") != NULL ? jstr(r, "snapshot_id") : "");
	json_decref(r);
	r = adapter_callf(a, "create", "{\"snapshot\":\"%s\"}", sid);
	snprintf(br, sizeof(br), "%s", jstr(r, "sandbox_id") != NULL ? jstr(r, "sandbox_id") : "");
	json_decref(r);
	CHECK(sid[0] != '\0' && br[0] != '\0');
	json_decref(adapter_callf(a, "pause", "{\"sandbox_id\":\"%s\"}", br));
	json_decref(adapter_callf(a, "stop", "{\"sandbox_id\":\"%s\"}", src));
	sbx_adapter_free(a);

	a = make();
	CHECK(a != NULL);
	CHECK_INT(sandbox_adopt_paused(a, NULL), 1);
	CHECK_INT(sbx_registry_from_snapshot(a->reg, sid), 1);
	json_t *rows = sbx_registry_rows(a->reg, NULL, NULL);
	CHECK(json_array_size(rows) == 1 && jstr(json_array_get(rows, 0), "snapshot_id") != NULL &&
	      strcmp(jstr(json_array_get(rows, 0), "snapshot_id"), sid) == 0);
	json_decref(rows);
	json_decref(adapter_callf(a, "stop", "{\"sandbox_id\":\"%s\"}", br));
	json_decref(adapter_callf(a, "snapshot::delete", "{\"snapshot_id\":\"%s\"}", sid));
	sbx_adapter_free(a);
}
