/* terminal::open, resize and close through sbx_adapter_call() over fakes
 * of the process and stream ports (fake_term_ports.h), and the callback
 * entry point the operator's shell uses: keys in, screen out, sizes, the
 * S-codes, the per-sandbox cap, and every way a terminal ends (close,
 * the command's exit, broken keys, a caller gone, `stop`, SIGHUP ignored)
 * letting go of its process and channels. */
#include <pthread.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter/adapter.h"
#include "adapter/config/config.h"
#include "adapter/terminal/terminal.h"
#include "fake_term_ports.h"
#include "harness.h"
#include "adapter_call.h"

#define SB "0b0a3a1e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
#define SB2 "1b0a3a1e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"

static char vm_byte;

static struct sbx_adapter *make(void)
{
	fake_term_set(false, false);
	json_t *v = json_loads("{}", 0, NULL);
	sbx_error_t err = NULL;
	struct sbx_config *cfg = sbx_config_parse(v, &err);
	json_decref(v);
	struct sbx_adapter *a = cfg != NULL ? sbx_adapter_new(cfg, &err) : NULL;
	if (a != NULL && sbx_adapter_use_backend(a, &fake_term_backend, NULL, &err) < 0) {
		sbx_adapter_free(a);
		a = NULL;
	}
	if (a != NULL) {
		a->streams = (struct sbx_stream_host){ &fake_term_streams, NULL };
		if (sbx_registry_reserve(a->reg, 10, &err) < 0 ||
		    sbx_registry_insert_vm(a->reg, SB, NULL, "python", 300, &vm_byte, 0, &err) < 0) {
			sbx_adapter_free(a);
			a = NULL;
		}
	}
	sbx_error_free(&err);
	return a;
}

static bool contains(json_t *j, const char *k, const char *needle)
{
	const char *s = jstr(j, k);
	return s != NULL && strstr(s, needle) != NULL;
}

static bool none_live(const struct fake_term_state *s)
{
	return s->procs_live == 0 && s->readers_open == 0 && s->writers_open == 0;
}

static json_t *open_term(struct sbx_adapter *a)
{
	return adapter_callf(a, "terminal::open", "{\"sandbox_id\":\"%s\",\"rows\":30,\"cols\":100}", SB);
}

TEST(open_types_keys_and_reads_the_screen_at_its_size)
{
	struct sbx_adapter *a = make();
	CHECK(a != NULL);
	json_t *t = open_term(a);
	CHECK(jstr(t, "terminal_id") != NULL);
	json_t *in = json_object_get(t, "input"), *out = json_object_get(t, "output");
	CHECK_STR(jstr(in, "direction"), "write");
	CHECK_STR(jstr(out, "direction"), "read");
	/* The image's shell by default, TERM set. */
	struct fake_term_state s = fake_term_state();
	CHECK(strstr(s.last_argv2, "exec /bin/bash -i") != NULL);
	CHECK_STR(s.last_env0, "TERM=xterm-256color");
	CHECK_INT(s.last_rows, 30);
	fake_chan_write(in, "stty size\n");
	CHECK(fake_chan_wait_for(out, "stty size\r\n30 100\r\n", 2000));
	json_t *r = adapter_callf(a, "terminal::resize", "{\"sandbox_id\":\"%s\",\"terminal_id\":\"%s\",\"rows\":40,\"cols\":120}",
			 SB, jstr(t, "terminal_id"));
	CHECK(json_is_true(json_object_get(r, "resized")));
	json_decref(r);
	fake_chan_write(in, "stty size\n");
	CHECK(fake_chan_wait_for(out, "40 120\r\n", 2000));
	r = adapter_callf(a, "terminal::close", "{\"sandbox_id\":\"%s\",\"terminal_id\":\"%s\"}", SB, jstr(t, "terminal_id"));
	CHECK(json_is_true(json_object_get(r, "closed")));
	json_decref(r);
	char fail[128];
	/* close returns once the screen's channel ended, normally. */
	CHECK(fake_chan_wait_closed(out, 0, fail, sizeof(fail)));
	CHECK_STR(fail, "");
	CHECK(fake_term_state().hups >= 1);
	/* Gone: a second close names it. */
	r = adapter_callf(a, "terminal::close", "{\"sandbox_id\":\"%s\",\"terminal_id\":\"%s\"}", SB, jstr(t, "terminal_id"));
	CHECK_STR(jstr(r, "code"), "S001");
	CHECK(contains(r, "message", jstr(t, "terminal_id")));
	json_decref(r);
	/* The caller closing its writer lets the input pump go. */
	fake_chan_close(in);
	CHECK(fake_term_wait(none_live, 2000));
	json_decref(t);
	sbx_adapter_free(a);
}

TEST(requests_are_checked_with_their_s_codes)
{
	struct sbx_adapter *a = make();
	CHECK(a != NULL);
	json_t *r = adapter_callf(a, "terminal::open", "{\"sandbox_id\":\"%s\",\"rows\":30,\"cols\":100}", SB2);
	CHECK_STR(jstr(r, "code"), "S002");
	json_decref(r);
	r = adapter_callf(a, "terminal::open", "{\"sandbox_id\":\"%s\",\"rows\":0,\"cols\":100}", SB);
	CHECK_STR(jstr(r, "code"), "S001");
	CHECK(contains(r, "message", "rows and cols must be 1 to 1000"));
	json_decref(r);
	r = adapter_callf(a, "terminal::open", "{\"sandbox_id\":\"%s\",\"rows\":30,\"cols\":1001}", SB);
	CHECK_STR(jstr(r, "code"), "S001");
	json_decref(r);
	r = adapter_callf(a, "terminal::open", "{\"sandbox_id\":\"%s\",\"cols\":100}", SB);
	CHECK(contains(r, "decode", "missing field `rows`"));
	json_decref(r);
	r = adapter_callf(a, "terminal::open", "{\"sandbox_id\":\"%s\",\"rows\":3,\"cols\":4,\"argv\":[]}", SB);
	CHECK_STR(jstr(r, "code"), "S001");
	json_decref(r);
	r = adapter_callf(a, "terminal::resize", "{\"sandbox_id\":\"%s\",\"terminal_id\":\"t-nope\",\"rows\":3,\"cols\":4}", SB);
	CHECK_STR(jstr(r, "code"), "S001");
	CHECK(contains(r, "message", "unknown terminal_id t-nope"));
	json_decref(r);
	r = adapter_callf(a, "terminal::close", "{\"sandbox_id\":\"%s\",\"terminal_id\":\"t-nope\"}", SB2);
	CHECK_STR(jstr(r, "code"), "S002");
	json_decref(r);
	/* The guest cannot start it: S300, nothing left open. */
	fake_term_set(false, true);
	r = open_term(a);
	CHECK_STR(jstr(r, "code"), "S300");
	json_decref(r);
	CHECK(fake_term_wait(none_live, 0));
	/* No stream port: S300. */
	fake_term_set(false, false);
	a->streams.ops = NULL;
	r = open_term(a);
	CHECK_STR(jstr(r, "code"), "S300");
	json_decref(r);
	sbx_adapter_free(a);
}

TEST(argv_and_env_are_the_callers)
{
	struct sbx_adapter *a = make();
	CHECK(a != NULL);
	json_t *t = adapter_callf(a, "terminal::open",
			 "{\"sandbox_id\":\"%s\",\"rows\":5,\"cols\":6,\"argv\":[\"/bin/zsh\",\"-l\",\"x\"],\"env\":{\"TERM\":\"dumb\"}}",
			 SB);
	CHECK(jstr(t, "terminal_id") != NULL);
	struct fake_term_state s = fake_term_state();
	CHECK_STR(s.last_argv2, "x");
	CHECK_STR(s.last_env0, "TERM=dumb");
	fake_chan_write(json_object_get(t, "input"), "exit 3\n");
	char fail[128];
	CHECK(fake_chan_wait_closed(json_object_get(t, "output"), 2000, fail, sizeof(fail)));
	fake_chan_close(json_object_get(t, "input"));
	CHECK(fake_term_wait(none_live, 2000));
	json_decref(t);
	sbx_adapter_free(a);
}

TEST(at_most_8_per_sandbox)
{
	struct sbx_adapter *a = make();
	CHECK(a != NULL);
	json_t *ts[SBX_TERMINALS_PER_SANDBOX];
	for (unsigned i = 0; i < SBX_TERMINALS_PER_SANDBOX; i++) {
		ts[i] = open_term(a);
		CHECK(jstr(ts[i], "terminal_id") != NULL);
	}
	json_t *r = open_term(a);
	CHECK_STR(jstr(r, "code"), "S003");
	CHECK(contains(r, "message", "open terminals per sandbox (8)"));
	json_decref(r);
	/* One ends by itself: room for another. */
	fake_chan_write(json_object_get(ts[0], "input"), "exit 0\n");
	char fail[128];
	CHECK(fake_chan_wait_closed(json_object_get(ts[0], "output"), 2000, fail, sizeof(fail)));
	usleep(50000);
	json_t *more = open_term(a);
	CHECK(jstr(more, "terminal_id") != NULL);
	/* stop ends them all. */
	json_decref(adapter_callf(a, "stop", "{\"sandbox_id\":\"%s\"}", SB));
	CHECK(fake_term_state().procs_live == 0);
	CHECK(fake_chan_wait_closed(json_object_get(more, "output"), 0, fail, sizeof(fail)));
	fake_chan_close(json_object_get(more, "input"));
	json_decref(more);
	for (unsigned i = 0; i < SBX_TERMINALS_PER_SANDBOX; i++) {
		CHECK(fake_chan_wait_closed(json_object_get(ts[i], "output"), 0, fail, sizeof(fail)));
		fake_chan_close(json_object_get(ts[i], "input"));
		json_decref(ts[i]);
	}
	CHECK(fake_term_wait(none_live, 2000));
	sbx_adapter_free(a);
}

TEST(a_command_ignoring_sighup_gets_sigkill)
{
	struct sbx_adapter *a = make();
	CHECK(a != NULL);
	fake_term_set(true, false);
	json_t *t = open_term(a);
	CHECK(jstr(t, "terminal_id") != NULL);
	int kills = fake_term_state().kills;
	json_t *r = adapter_callf(a, "terminal::close", "{\"sandbox_id\":\"%s\",\"terminal_id\":\"%s\"}", SB, jstr(t, "terminal_id"));
	CHECK(json_is_true(json_object_get(r, "closed")));
	json_decref(r);
	CHECK_INT(fake_term_state().kills, kills + 1);
	fake_chan_close(json_object_get(t, "input"));
	CHECK(fake_term_wait(none_live, 2000));
	json_decref(t);
	sbx_adapter_free(a);
}

TEST(the_end_of_the_keys_leaves_the_command_running_and_broken_keys_close_it)
{
	struct sbx_adapter *a = make();
	CHECK(a != NULL);
	json_t *t = open_term(a);
	CHECK(jstr(t, "terminal_id") != NULL);
	fake_chan_write(json_object_get(t, "input"), "stty size\n");
	fake_chan_close(json_object_get(t, "input"));
	CHECK(fake_chan_wait_for(json_object_get(t, "output"), "30 100", 2000));
	usleep(300000);
	char fail[128];
	CHECK(!fake_chan_wait_closed(json_object_get(t, "output"), 0, fail, sizeof(fail)));
	CHECK_INT(fake_term_state().procs_live, 1);
	CHECK_INT(fake_term_state().stdin_closed, 0);
	json_t *r = adapter_callf(a, "terminal::close", "{\"sandbox_id\":\"%s\",\"terminal_id\":\"%s\"}", SB, jstr(t, "terminal_id"));
	CHECK(json_is_true(json_object_get(r, "closed")));
	json_decref(r);
	CHECK(fake_term_wait(none_live, 2000));
	json_decref(t);
	/* A writer that vanishes: the terminal closes (SIGHUP) by itself. */
	t = open_term(a);
	CHECK(jstr(t, "terminal_id") != NULL);
	int hups = fake_term_state().hups;
	fake_chan_abort(json_object_get(t, "input"));
	CHECK(fake_chan_wait_closed(json_object_get(t, "output"), 2000, fail, sizeof(fail)));
	CHECK_STR(fail, "");
	CHECK_INT(fake_term_state().hups, hups + 1);
	CHECK(fake_term_wait(none_live, 2000));
	json_decref(t);
	sbx_adapter_free(a);
}

/* The callback entry point, as the operator's shell uses it. */
struct cb {
	pthread_mutex_t lock;
	const char *keys[4];
	int next_key;
	char screen[4096];
	int exit_code;
	bool ended, released, woken, screen_fails;
};

static ssize_t cb_keys(void *ud, const uint8_t **data, sbx_error_t *err)
{
	(void)err;
	struct cb *c = ud;
	for (;;) {
		pthread_mutex_lock(&c->lock);
		const char *k = c->next_key < 4 ? c->keys[c->next_key] : NULL;
		bool woken = c->woken;
		if (k != NULL)
			c->next_key++;
		pthread_mutex_unlock(&c->lock);
		if (k != NULL) {
			*data = (const uint8_t *)k;
			return (ssize_t)strlen(k);
		}
		if (woken)
			return 0;
		usleep(2000);
	}
}

static int cb_screen(void *ud, const void *data, size_t len, sbx_error_t *err)
{
	struct cb *c = ud;
	pthread_mutex_lock(&c->lock);
	bool fails = c->screen_fails;
	size_t n = strlen(c->screen);
	if (!fails && n + len < sizeof(c->screen))
		memcpy(c->screen + n, data, len);
	pthread_mutex_unlock(&c->lock);
	return fails ? sbx_error_set(err, EPIPE, "gone") : 0;
}

static void cb_ended(void *ud, int code, const char *fail)
{
	struct cb *c = ud;
	pthread_mutex_lock(&c->lock);
	c->ended = true;
	c->exit_code = fail == NULL ? code : -2;
	pthread_mutex_unlock(&c->lock);
}

static void cb_wake(void *ud)
{
	struct cb *c = ud;
	pthread_mutex_lock(&c->lock);
	c->woken = true;
	pthread_mutex_unlock(&c->lock);
}

static void cb_release(void *ud)
{
	struct cb *c = ud;
	pthread_mutex_lock(&c->lock);
	c->released = true;
	pthread_mutex_unlock(&c->lock);
}

static bool cb_released(struct cb *c, int ms)
{
	for (int i = 0; i < ms / 5; i++) {
		pthread_mutex_lock(&c->lock);
		bool r = c->released;
		pthread_mutex_unlock(&c->lock);
		if (r)
			return true;
		usleep(5000);
	}
	return false;
}

TEST(callbacks_carry_keys_screen_and_exit_status)
{
	struct sbx_adapter *a = make();
	CHECK(a != NULL);
	struct cb c = { .lock = PTHREAD_MUTEX_INITIALIZER, .keys = { "stty size\n", "exit 7\n" } };
	char *argv[] = { "/bin/sh", NULL };
	char *env[] = { NULL };
	struct sbx_terminal_spec spec = { argv, env, 24, 80 };
	struct sbx_terminal_io io = { cb_keys, cb_screen, cb_ended, cb_wake, cb_release, &c };
	char id[SBX_UUID_STRLEN + 1];
	sbx_error_t err = NULL;
	CHECK_INT(sbx_terminal_open(a, SB, &spec, &io, id, &err), 0);
	CHECK(cb_released(&c, 2000));
	CHECK(c.ended && c.woken);
	CHECK_INT(c.exit_code, 7);
	CHECK(strstr(c.screen, "24 80\r\n") != NULL);
	CHECK(fake_term_wait(none_live, 0));
	/* The terminal left with its command. */
	CHECK_INT(sbx_terminal_resize(a, SB, id, 5, 5, &err), -1);
	CHECK_STR(err->scode, "S001");
	sbx_error_free(&err);
	sbx_adapter_free(a);
}

TEST(a_caller_gone_closes_the_terminal)
{
	struct sbx_adapter *a = make();
	CHECK(a != NULL);
	struct cb c = { .lock = PTHREAD_MUTEX_INITIALIZER, .screen_fails = true };
	char *argv[] = { "/bin/sh", NULL };
	struct sbx_terminal_spec spec = { argv, NULL, 24, 80 };
	struct sbx_terminal_io io = { cb_keys, cb_screen, cb_ended, cb_wake, cb_release, &c };
	char id[SBX_UUID_STRLEN + 1];
	sbx_error_t err = NULL;
	CHECK_INT(sbx_terminal_open(a, SB, &spec, &io, id, &err), 0);
	/* The prompt cannot be shown: SIGHUP, and the terminal ends. */
	CHECK(cb_released(&c, 2000));
	CHECK_INT(c.exit_code, 128 + SIGHUP);
	CHECK(fake_term_wait(none_live, 0));
	sbx_adapter_free(a);
}

TEST(a_stopped_sandbox_refuses_and_its_terminals_end)
{
	struct sbx_adapter *a = make();
	CHECK(a != NULL);
	struct cb c = { .lock = PTHREAD_MUTEX_INITIALIZER };
	char *argv[] = { "/bin/sh", NULL };
	struct sbx_terminal_spec spec = { argv, NULL, 24, 80 };
	struct sbx_terminal_io io = { cb_keys, cb_screen, cb_ended, cb_wake, cb_release, &c };
	char id[SBX_UUID_STRLEN + 1];
	sbx_error_t err = NULL;
	CHECK_INT(sbx_terminal_open(a, SB, &spec, &io, id, &err), 0);
	json_decref(adapter_callf(a, "stop", "{\"sandbox_id\":\"%s\"}", SB));
	CHECK(cb_released(&c, 2000));
	CHECK_INT(c.exit_code, 128 + SIGHUP);
	json_t *r = open_term(a);
	CHECK_STR(jstr(r, "code"), "S002");
	json_decref(r);
	CHECK(fake_term_wait(none_live, 0));
	sbx_adapter_free(a);
}

/* ---- pause (issue 40): open terminals are closed first ------------------ */

static int fk_pause(void *vm, const char *dir, uint64_t *size_bytes, int64_t *duration_ms, int64_t deadline,
		    sbx_error_t *err)
{
	*size_bytes = 4096;
	*duration_ms = 1;
	return 0;
}

static int fk_resume(void *vm, int64_t deadline, sbx_error_t *err)
{
	return 0;
}

TEST(a_pause_closes_the_open_terminals_and_open_resumes)
{
	static char state[] = "/tmp/sbx-test-term-pause-XXXXXX";
	CHECK(mkdtemp(state) != NULL);
	CHECK(setenv("III_SANDBOX_STATE_DIR", state, 1) == 0);
	static struct sbx_backend_ops with_pause;
	with_pause = fake_term_backend;
	with_pause.pause = fk_pause;
	with_pause.resume = fk_resume;
	struct sbx_adapter *a = make();
	CHECK(a != NULL);
	/* The same fakes, with pause and resume (the reaper runs already). */
	a->backend.ops = &with_pause;
	sbx_error_t err = NULL;
	struct cb c = { .lock = PTHREAD_MUTEX_INITIALIZER };
	char *argv[] = { "/bin/sh", NULL };
	struct sbx_terminal_spec spec = { argv, NULL, 24, 80 };
	struct sbx_terminal_io io = { cb_keys, cb_screen, cb_ended, cb_wake, cb_release, &c };
	char id[SBX_UUID_STRLEN + 1];
	CHECK_INT(sbx_terminal_open(a, SB, &spec, &io, id, &err), 0);
	int hups = fake_term_state().hups;
	json_t *r = adapter_callf(a, "pause", "{\"sandbox_id\":\"%s\"}", SB);
	CHECK(json_is_true(json_object_get(r, "paused")));
	json_decref(r);
	/* Its command got SIGHUP and left the table before the pause answered
	 * (its callbacks are let go of just after). */
	CHECK_INT(fake_term_state().hups, hups + 1);
	json_t *rows = sbx_terminal_rows(a->terminals, SB);
	CHECK_INT(json_array_size(rows), 0);
	json_decref(rows);
	CHECK(cb_released(&c, 2000));
	CHECK_INT(c.exit_code, 128 + SIGHUP);
	/* terminal::open resumes the sandbox (auto_resume) and opens. */
	r = open_term(a);
	CHECK(jstr(r, "terminal_id") != NULL);
	json_t *l = adapter_call_json(a, "list", "{}");
	CHECK(json_object_get(json_array_get(json_object_get(l, "sandboxes"), 0), "state") == NULL);
	json_decref(l);
	json_decref(adapter_callf(a, "stop", "{\"sandbox_id\":\"%s\"}", SB));
	CHECK(fake_chan_wait_closed(json_object_get(r, "output"), 3000, NULL, 0));
	/* The caller closing its writer lets the input pump go. */
	fake_chan_close(json_object_get(r, "input"));
	json_decref(r);
	CHECK(fake_term_wait(none_live, 3000));
	sbx_adapter_free(a);
	rmdir(state);
}
