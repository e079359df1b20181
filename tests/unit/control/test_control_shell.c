/* The shell op's server side (control_shell.c) over a socketpair, with an
 * adapter over fakes of the process and stream ports: the first line, the
 * screen as frames, keys and a size from the client, the final line with
 * the exit status; an unknown sandbox's S002; a client that goes away
 * closing the terminal.  Beside it, over the same fakes, the ops that show
 * or drive what runs in a sandbox (control_ops.c, control_view.c): ps's
 * counts and `processes` with a background process and a terminal, exec
 * with its stdin as frames (and its bound), and an exec ended when its
 * client goes away. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "adapter/adapter.h"
#include "adapter/config/config.h"
#include "../adapter/fake_term_ports.h"
#include "control/control_ops.h"
#include "harness.h"

#define SB "0b0a3a1e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"

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
	if (a != NULL && (sbx_registry_reserve(a->reg, 10, &err) < 0 ||
			  sbx_registry_insert_vm(a->reg, SB, NULL, "python", 300, &vm_byte, 0, &err) < 0)) {
		sbx_adapter_free(a);
		a = NULL;
	}
	sbx_error_free(&err);
	return a;
}

struct server {
	struct control_ctx ctx;
	int fd;
	pthread_t th;
};

static void *serve_main(void *arg)
{
	struct server *s = arg;
	struct control_reader r;
	control_reader_init(&r, s->fd);
	control_serve(&s->ctx, &r, s->fd);
	close(s->fd);
	return NULL;
}

/* Starts the server on one end; returns the client's end. */
static int start(struct server *s, struct sbx_adapter *a, atomic_bool *stopping)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	s->ctx = (struct control_ctx){ .a = a, .stopping = stopping };
	s->fd = sv[0];
	pthread_create(&s->th, NULL, serve_main, s);
	return sv[1];
}

static void send_line(int fd, const char *text)
{
	sbx_error_t err = NULL;
	json_t *j = json_loads(text, 0, NULL);
	control_send_json(fd, j, &err);
	json_decref(j);
	sbx_error_free(&err);
}

/* Reads messages until one that is not a frame; frames' bytes go to screen. */
static json_t *read_until_line(struct control_reader *r, char *screen, size_t cap, const char *stop_at)
{
	for (;;) {
		json_t *m = NULL;
		sbx_error_t err = NULL;
		if (control_read_json(r, &m, &err) <= 0) {
			sbx_error_free(&err);
			return NULL;
		}
		json_t *d = json_object_get(m, "data");
		if (!json_is_integer(d))
			return m;
		size_t n = (size_t)json_integer_value(d), have = strlen(screen);
		char buf[4096];
		if (n >= sizeof(buf) || control_read_exact(r, buf, n, &err) < 0) {
			sbx_error_free(&err);
			json_decref(m);
			return NULL;
		}
		json_decref(m);
		if (have + n < cap) {
			memcpy(screen + have, buf, n);
			screen[have + n] = '\0';
		}
		if (stop_at != NULL && strstr(screen, stop_at) != NULL)
			return json_object();
	}
}

/* How long a wait for the server thread may last before the test calls it
 * hung: not a speed target (the waits end as soon as the state is seen). */
#define HANG_MS 60000

static bool none_live(const struct fake_term_state *s)
{
	return s->procs_live == 0;
}

static bool resized_to_5x6(const struct fake_term_state *s)
{
	return s->last_rows == 5 && s->last_cols == 6;
}

TEST(a_shell_runs_over_the_connection)
{
	struct sbx_adapter *a = make();
	CHECK(a != NULL);
	atomic_bool stopping = false;
	struct server s;
	int fd = start(&s, a, &stopping);
	CHECK(fd >= 0);
	struct control_reader r;
	control_reader_init(&r, fd);
	send_line(fd, "{\"op\":\"shell\",\"sandbox\":\"" SB "\",\"rows\":30,\"cols\":100,\"term\":\"vt100\"}");
	char screen[8192] = "";
	json_t *first = read_until_line(&r, screen, sizeof(screen), NULL);
	CHECK(json_is_string(json_object_get(first, "terminal_id")));
	json_decref(first);
	CHECK_STR(fake_term_state().last_env0, "TERM=vt100");
	CHECK_INT(fake_term_state().last_rows, 30);
	sbx_error_t err = NULL;
	send_line(fd, "{\"data\":10}");
	control_write_all(fd, "stty size\n", 10, &err);
	json_decref(read_until_line(&r, screen, sizeof(screen), "30 100\r\n"));
	send_line(fd, "{\"rows\":40,\"cols\":120}");
	send_line(fd, "{\"data\":10}");
	control_write_all(fd, "stty size\n", 10, &err);
	json_decref(read_until_line(&r, screen, sizeof(screen), "40 120\r\n"));
	/* The end of the keys is not the end of the shell, and sizes still
	 * apply after it.  The server handles the client's lines in order: once
	 * the size sent after the end has applied, the end has been handled. */
	send_line(fd, "{\"end\":true}");
	send_line(fd, "{\"rows\":5,\"cols\":6}");
	CHECK(fake_term_wait(resized_to_5x6, HANG_MS));
	CHECK_INT(fake_term_state().procs_live, 1);
	/* The client closes its writing side: the terminal closes (SIGHUP). */
	shutdown(fd, SHUT_WR);
	json_t *final = read_until_line(&r, screen, sizeof(screen), NULL);
	CHECK(json_is_true(json_object_get(final, "ok")));
	CHECK_INT(json_integer_value(json_object_get(json_object_get(final, "result"), "exit_code")), 129);
	json_decref(final);
	pthread_join(s.th, NULL);
	close(fd);
	CHECK(fake_term_wait(none_live, HANG_MS));
	sbx_error_free(&err);
	sbx_adapter_free(a);
}

TEST(the_exit_status_comes_in_the_final_line_and_errors_before_the_start)
{
	struct sbx_adapter *a = make();
	CHECK(a != NULL);
	atomic_bool stopping = false;
	struct server s;
	int fd = start(&s, a, &stopping);
	CHECK(fd >= 0);
	struct control_reader r;
	control_reader_init(&r, fd);
	send_line(fd, "{\"op\":\"shell\",\"sandbox\":\"0b0a\",\"rows\":3,\"cols\":4,\"argv\":[\"sh\"]}");
	char screen[8192] = "";
	json_t *first = read_until_line(&r, screen, sizeof(screen), NULL);
	CHECK(json_is_string(json_object_get(first, "terminal_id")));
	json_decref(first);
	sbx_error_t err = NULL;
	send_line(fd, "{\"data\":7}");
	control_write_all(fd, "exit 9\n", 7, &err);
	json_t *final = read_until_line(&r, screen, sizeof(screen), NULL);
	CHECK_INT(json_integer_value(json_object_get(json_object_get(final, "result"), "exit_code")), 9);
	json_decref(final);
	pthread_join(s.th, NULL);
	close(fd);
	/* An unknown sandbox: the final line at once. */
	fd = start(&s, a, &stopping);
	control_reader_init(&r, fd);
	send_line(fd, "{\"op\":\"shell\",\"sandbox\":\"ffff\",\"rows\":3,\"cols\":4}");
	final = read_until_line(&r, screen, sizeof(screen), NULL);
	CHECK(json_is_false(json_object_get(final, "ok")));
	CHECK_STR(json_string_value(json_object_get(json_object_get(final, "error"), "code")), "S002");
	json_decref(final);
	pthread_join(s.th, NULL);
	close(fd);
	CHECK(fake_term_wait(none_live, HANG_MS));
	sbx_error_free(&err);
	sbx_adapter_free(a);
}

static bool one_exec_live(const struct fake_term_state *s)
{
	return s->execs_live == 1;
}

/* The exec asked whether its client went away 20 times since polls_before,
 * and was told no. */
static int polls_before;
static bool polled_20_times(const struct fake_term_state *s)
{
	return s->exec_polls >= polls_before + 20;
}

static bool one_exec_cancelled(const struct fake_term_state *s)
{
	return s->execs_cancelled == 1 && s->execs_live == 0;
}

/* One request on its own connection; the final line's result (a new
 * reference), frames' bytes into out. */
static json_t *ask(struct sbx_adapter *a, const char *line, char *out, size_t cap)
{
	atomic_bool stopping = false;
	struct server s;
	int fd = start(&s, a, &stopping);
	if (fd < 0)
		return NULL;
	struct control_reader r;
	control_reader_init(&r, fd);
	send_line(fd, line);
	json_t *final = read_until_line(&r, out, cap, NULL);
	pthread_join(s.th, NULL);
	close(fd);
	return final;
}

TEST(ps_counts_and_processes_lists_background_processes_and_terminals)
{
	struct sbx_adapter *a = make();
	CHECK(a != NULL);
	json_t *bg = NULL;
	json_t *req = json_pack("{s:s, s:[s, s], s:b}", "sandbox_id", SB, "argv", "srv", "a b", "background", 1);
	CHECK_INT(sbx_adapter_call(a, "exec", req, &bg), 0);
	json_decref(req);
	const char *process_id = json_string_value(json_object_get(bg, "process_id"));
	CHECK(process_id != NULL);
	/* A terminal, open while we look. */
	atomic_bool stopping = false;
	struct server sh;
	int fd = start(&sh, a, &stopping);
	struct control_reader r;
	control_reader_init(&r, fd);
	send_line(fd, "{\"op\":\"shell\",\"sandbox\":\"" SB "\",\"rows\":3,\"cols\":4,\"argv\":[\"/bin/bash\",\"-l\",\"-i\"]}");
	char screen[8192] = "";
	json_t *first = read_until_line(&r, screen, sizeof(screen), NULL);
	const char *terminal_id = json_string_value(json_object_get(first, "terminal_id"));
	CHECK(terminal_id != NULL);

	char none[64] = "";
	json_t *ps = ask(a, "{\"op\":\"ps\"}", none, sizeof(none));
	json_t *row = json_array_get(json_object_get(json_object_get(ps, "result"), "sandboxes"), 0);
	CHECK_INT(json_integer_value(json_object_get(json_object_get(row, "processes"), "running")), 1);
	CHECK_INT(json_integer_value(json_object_get(json_object_get(row, "processes"), "exited")), 0);
	CHECK_INT(json_integer_value(json_object_get(row, "terminals")), 1);
	json_decref(ps);

	json_t *list = ask(a, "{\"op\":\"processes\",\"sandbox\":\"0b0a3a\"}", none, sizeof(none));
	json_t *res = json_object_get(list, "result");
	CHECK_STR(json_string_value(json_object_get(res, "sandbox_id")), SB);
	json_t *p = json_array_get(json_object_get(res, "processes"), 0);
	CHECK_INT(json_array_size(json_object_get(res, "processes")), 1);
	CHECK_STR(json_string_value(json_object_get(p, "process_id")), process_id);
	CHECK_STR(json_string_value(json_object_get(p, "state")), "running");
	CHECK_INT(json_integer_value(json_object_get(p, "pid")), 42);
	CHECK_STR(json_string_value(json_array_get(json_object_get(p, "argv"), 1)), "a b");
	CHECK(json_is_string(json_object_get(p, "started_at")));
	json_t *t = json_array_get(json_object_get(res, "terminals"), 0);
	CHECK_INT(json_array_size(json_object_get(res, "terminals")), 1);
	CHECK_STR(json_string_value(json_object_get(t, "terminal_id")), terminal_id);
	CHECK_INT(json_integer_value(json_object_get(t, "pid")), 42);
	CHECK_STR(json_string_value(json_array_get(json_object_get(t, "argv"), 0)), "/bin/bash");
	CHECK(json_is_string(json_object_get(t, "started_at")));
	json_decref(list);
	json_decref(first);

	/* An unknown sandbox: S002. */
	json_t *unknown = ask(a, "{\"op\":\"processes\",\"sandbox\":\"ffff\"}", none, sizeof(none));
	CHECK_STR(json_string_value(json_object_get(json_object_get(unknown, "error"), "code")), "S002");
	json_decref(unknown);

	/* The terminal closes with its client: no longer listed. */
	close(fd);
	pthread_join(sh.th, NULL);
	json_t *after = ask(a, "{\"op\":\"processes\",\"sandbox\":\"" SB "\"}", none, sizeof(none));
	CHECK_INT(json_array_size(json_object_get(json_object_get(after, "result"), "terminals")), 0);
	json_decref(after);
	json_decref(bg);
	sbx_adapter_free(a);
}

TEST(exec_takes_its_stdin_as_frames_and_bounds_it)
{
	struct sbx_adapter *a = make();
	CHECK(a != NULL);
	atomic_bool stopping = false;
	struct server s;
	int fd = start(&s, a, &stopping);
	struct control_reader r;
	control_reader_init(&r, fd);
	send_line(fd, "{\"op\":\"exec\",\"sandbox\":\"" SB "\",\"argv\":[\"cat\"],\"stdin\":true}");
	sbx_error_t err = NULL;
	send_line(fd, "{\"data\":3}");
	control_write_all(fd, "hi\n", 3, &err);
	send_line(fd, "{\"data\":4}");
	control_write_all(fd, "yo\0\n", 4, &err);
	send_line(fd, "{\"end\":true}");
	char out[64] = "";
	json_t *final = read_until_line(&r, out, sizeof(out), NULL);
	CHECK(json_is_true(json_object_get(final, "ok")));
	CHECK_INT(json_integer_value(json_object_get(json_object_get(final, "result"), "exit_code")), 0);
	CHECK_STR(out, "hi\nyo");
	json_decref(final);
	pthread_join(s.th, NULL);
	close(fd);

	/* More than CONTROL_STDIN_MAX: refused before the command runs. */
	fd = start(&s, a, &stopping);
	control_reader_init(&r, fd);
	send_line(fd, "{\"op\":\"exec\",\"sandbox\":\"" SB "\",\"argv\":[\"cat\"],\"stdin\":true}");
	uint8_t *mib = calloc(1, CONTROL_FRAME_MAX);
	CHECK(mib != NULL);
	for (unsigned i = 0; err == NULL && i <= CONTROL_STDIN_MAX / CONTROL_FRAME_MAX; i++)
		control_send_frame(fd, mib, CONTROL_FRAME_MAX, &err);
	sbx_error_free(&err);
	free(mib);
	out[0] = '\0';
	final = read_until_line(&r, out, sizeof(out), NULL);
	CHECK(json_is_false(json_object_get(final, "ok")));
	CHECK(strstr(json_string_value(json_object_get(json_object_get(final, "error"), "message")), "stdin holds more than") != NULL);
	CHECK_STR(out, "");
	json_decref(final);
	pthread_join(s.th, NULL);
	close(fd);
	sbx_adapter_free(a);
}

TEST(an_exec_ends_when_its_client_goes_away)
{
	struct sbx_adapter *a = make();
	CHECK(a != NULL);
	atomic_bool stopping = false;
	struct server s;
	int fd = start(&s, a, &stopping);
	polls_before = fake_term_state().exec_polls;
	send_line(fd, "{\"op\":\"exec\",\"sandbox\":\"" SB "\",\"argv\":[\"sleep\",\"600\"],\"timeout_ms\":600000}");
	CHECK(fake_term_wait(one_exec_live, HANG_MS));
	/* Not ended while the client is there: 20 polls of cancelled()
	 * answered no (counted, not a sleep a loaded machine may fill with
	 * none), and the exec still runs. */
	CHECK(fake_term_wait(polled_20_times, HANG_MS));
	CHECK_INT(fake_term_state().execs_cancelled, 0);
	CHECK_INT(fake_term_state().execs_live, 1);
	close(fd);
	CHECK(fake_term_wait(one_exec_cancelled, HANG_MS));
	pthread_join(s.th, NULL);
	sbx_adapter_free(a);
}
