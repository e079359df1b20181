/* Processes on a terminal (SPAWN_PTY, RESIZE) through the guest dispatcher
 * served over a socketpair on the host: real pseudo-terminals, real
 * shells, no VM. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guest_client.h"
#include "harness.h"

#define T 60000 /* ms: an upper bound only */

static char *prompt_env[] = { "PS1=$ ", NULL };

static int send_keys(struct client *c, uint32_t stream, const char *keys)
{
	struct proto_msg m = { .stream = stream, .type = PROTO_STDIN };
	m.u.data = (struct proto_data){ (const uint8_t *)keys, strlen(keys) };
	return client_send(c, &m);
}

static int send_simple(struct client *c, uint32_t stream, uint8_t type, uint32_t a, uint32_t b)
{
	struct proto_msg m = { .stream = stream, .type = type };
	if (type == PROTO_KILL)
		m.u.signal = a;
	else if (type == PROTO_RESIZE)
		m.u.winsize = (struct proto_winsize){ a, b };
	return client_send(c, &m);
}

/* One process on a rows x cols terminal, run to its end. */
static void run_pty(char **argv, uint32_t rows, uint32_t cols, struct run *r)
{
	struct client c;
	run_init(r, 1);
	if (client_start(&c, NULL) < 0)
		return;
	client_spawn_pty(&c, 1, argv, NULL, rows, cols);
	client_pump(&c, r, 1, 1, T);
	client_stop(&c);
}

static int group_gone(pid_t pgid)
{
	for (int i = 0; i < 200; i++) {
		if (kill(-pgid, 0) < 0 && errno == ESRCH)
			return 1;
		usleep(10000);
	}
	return 0;
}

TEST(typed_keys_are_echoed_and_run)
{
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	char *argv[] = { "sh", NULL };
	struct run r;
	run_init(&r, 3);
	CHECK_INT(client_spawn_pty(&c, 3, argv, prompt_env, 24, 80), 0);
	CHECK_INT(client_pump_until(&c, &r, "$ ", T), 1); /* an interactive shell: stdin is a terminal */
	CHECK(r.pid > 0);
	send_keys(&c, 3, "echo hi\n");
	/* The terminal echoes the line (ONLCR makes its \n \r\n), then the
	 * shell's output follows. */
	CHECK_INT(client_pump_until(&c, &r, "echo hi\r\nhi\r\n", T), 1);
	send_keys(&c, 3, "exit 5\n");
	CHECK_INT(client_pump(&c, &r, 1, 1, T), 1);
	CHECK_INT(r.code, 5);
	CHECK(r.err == NULL); /* a terminal has no second output */
	CHECK(r.error == NULL);
	run_free(&r);
	CHECK_INT(client_stop(&c), 11);
}

TEST(the_terminal_is_stdio_and_controlling_terminal_of_a_new_session)
{
	char *argv[] = { "sh", "-c",
			 "test -t 0 && test -t 1 && test -t 2 && echo tty; "
			 "read pid comm state ppid pgrp sid rest < /proc/$$/stat; "
			 "[ $pgrp = $$ ] && [ $sid = $$ ] && echo session; "
			 ": < /dev/tty && echo controlling",
			 NULL };
	struct run r;
	run_pty(argv, 24, 80, &r);
	CHECK_INT(r.code, 0);
	CHECK_STR(r.out, "tty\r\nsession\r\ncontrolling\r\n");
	run_free(&r);
}

TEST(stty_size_prints_the_requested_size)
{
	char *argv[] = { "stty", "size", NULL };
	struct run r;
	run_pty(argv, 33, 101, &r);
	CHECK_INT(r.code, 0);
	CHECK_STR(r.out, "33 101\r\n");
	run_free(&r);
	run_pty(argv, 1, PROTO_MAX_TTY_DIM, &r);
	CHECK_STR(r.out, "1 1000\r\n");
	run_free(&r);
}

TEST(resize_sets_the_size_and_signals_the_foreground_group)
{
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	char *argv[] = { "sh", "-c", "trap 'stty size' WINCH; echo ready; while :; do sleep 0.05; done", NULL };
	struct run r;
	run_init(&r, 2);
	client_spawn_pty(&c, 2, argv, NULL, 24, 80);
	CHECK_INT(client_pump_until(&c, &r, "ready\r\n", T), 1);
	send_simple(&c, 2, PROTO_RESIZE, 40, 120);
	CHECK_INT(client_pump_until(&c, &r, "ready\r\n40 120\r\n", T), 1);
	send_simple(&c, 2, PROTO_RESIZE, 7, 9);
	CHECK_INT(client_pump_until(&c, &r, "40 120\r\n7 9\r\n", T), 1);
	send_simple(&c, 2, PROTO_KILL, SIGKILL, 0);
	CHECK_INT(client_pump(&c, &r, 1, 1, T), 1);
	CHECK_INT(r.code, 128 + SIGKILL);
	run_free(&r);
	/* After the exit a late RESIZE is ignored, like a late KILL. */
	send_simple(&c, 2, PROTO_RESIZE, 10, 10);
	struct proto_msg m;
	CHECK_INT(client_next(&c, &m, 300), 0);
	client_stop(&c);
}

TEST(resize_then_stty_size_in_an_interactive_shell)
{
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	char *argv[] = { "sh", NULL };
	struct run r;
	run_init(&r, 4);
	client_spawn_pty(&c, 4, argv, prompt_env, 24, 80);
	CHECK_INT(client_pump_until(&c, &r, "$ ", T), 1);
	send_simple(&c, 4, PROTO_RESIZE, 50, 132);
	send_keys(&c, 4, "stty size\n");
	CHECK_INT(client_pump_until(&c, &r, "stty size\r\n50 132\r\n", T), 1);
	send_simple(&c, 4, PROTO_KILL, SIGKILL, 0);
	CHECK_INT(client_pump(&c, &r, 1, 1, T), 1);
	CHECK_INT(r.code, 128 + SIGKILL);
	CHECK(group_gone((pid_t)r.pid));
	run_free(&r);
	client_stop(&c);
}

/* A frame the encoder would refuse: SPAWN_PTY or RESIZE of rows x cols. */
static int send_raw_dims(struct client *c, uint32_t stream, uint8_t type, uint32_t rows, uint32_t cols)
{
	char *argv[] = { "sh", NULL }, *none[] = { NULL };
	struct proto_wbuf p, f;
	proto_wbuf_init(&p);
	proto_wbuf_init(&f);
	if (type == PROTO_SPAWN_PTY) {
		proto_put_strv(&p, argv);
		proto_put_strv(&p, none);
		proto_put_str(&p, "");
	}
	proto_put_u32(&p, rows);
	proto_put_u32(&p, cols);
	sbx_error_t err = NULL;
	int rc = proto_frame(&f, stream, type, &p, &err);
	if (rc == 0)
		rc = client_send_raw(c, f.data, f.len);
	sbx_error_free(&err);
	proto_wbuf_free(&p);
	proto_wbuf_free(&f);
	return rc;
}

TEST(sizes_out_of_range_are_rejected)
{
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	static const struct {
		uint32_t rows, cols;
		const char *why;
	} bad[] = {
		{ 0, 80, "rows 0 out of range 1..1000" },
		{ 24, 0, "cols 0 out of range 1..1000" },
		{ 1001, 80, "rows 1001 out of range 1..1000" },
		{ 24, 1001, "cols 1001 out of range 1..1000" },
	};
	for (uint32_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct run r;
		run_init(&r, 10 + i);
		CHECK_INT(send_raw_dims(&c, 10 + i, PROTO_SPAWN_PTY, bad[i].rows, bad[i].cols), 0);
		CHECK_INT(client_pump(&c, &r, 1, 1, T), 1);
		CHECK(r.pid == 0); /* nothing started */
		CHECK(r.error != NULL && strstr(r.error, bad[i].why) != NULL);
		run_free(&r);
	}
	/* A RESIZE out of range fails its terminal like any broken frame. */
	char *argv[] = { "sh", NULL };
	struct run r;
	run_init(&r, 20);
	client_spawn_pty(&c, 20, argv, prompt_env, 24, 80);
	CHECK_INT(client_pump_until(&c, &r, "$ ", T), 1);
	CHECK_INT(send_raw_dims(&c, 20, PROTO_RESIZE, 24, 1001), 0);
	CHECK_INT(client_pump(&c, &r, 1, 1, T), 1);
	CHECK(r.error != NULL && strstr(r.error, "cols 1001") != NULL);
	CHECK(group_gone((pid_t)r.pid));
	run_free(&r);
	CHECK_INT(client_stop(&c), 11); /* the connection survived it all */
}

TEST(kill_ends_it_with_128_plus_the_signal)
{
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	char *argv[] = { "sh", NULL };
	struct run r;
	run_init(&r, 6);
	client_spawn_pty(&c, 6, argv, prompt_env, 24, 80);
	CHECK_INT(client_pump_until(&c, &r, "$ ", T), 1);
	send_simple(&c, 6, PROTO_KILL, SIGKILL, 0);
	CHECK_INT(client_pump(&c, &r, 1, 1, T), 1);
	CHECK_INT(r.code, 128 + SIGKILL);
	CHECK(group_gone((pid_t)r.pid));
	run_free(&r);
	client_stop(&c);
}

TEST(a_process_that_exits_gives_its_code)
{
	char *argv[] = { "sh", "-c", "printf done; exit 7", NULL };
	struct run r;
	run_pty(argv, 24, 80, &r);
	CHECK(r.pid > 0);
	CHECK_INT(r.code, 7);
	CHECK_STR(r.out, "done");
	run_free(&r);
}

TEST(an_exec_failure_is_the_first_line_on_the_screen)
{
	char *argv[] = { "sbx-no-such-command", NULL };
	struct run r;
	run_pty(argv, 24, 80, &r);
	CHECK(r.pid > 0);
	CHECK_INT(r.code, 127);
	CHECK_STR(r.out, "exec: sbx-no-such-command: not found\r\n");
	CHECK(r.err == NULL);
	run_free(&r);
}

TEST(stdin_eof_keeps_the_terminal_open)
{
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	char *argv[] = { "cat", NULL };
	struct run r;
	run_init(&r, 8);
	client_spawn_pty(&c, 8, argv, NULL, 24, 80);
	send_keys(&c, 8, "abc\n");
	CHECK_INT(client_pump_until(&c, &r, "abc\r\nabc\r\n", T), 1); /* the echo, then cat's copy */
	send_simple(&c, 8, PROTO_STDIN_EOF, 0, 0);
	CHECK_INT(client_pump(&c, &r, 1, 1, 500), 0); /* cat got no end of file */
	/* Keys after STDIN_EOF break the protocol: the stream fails. */
	send_keys(&c, 8, "more\n");
	CHECK_INT(client_pump(&c, &r, 1, 1, T), 1);
	CHECK(r.error != NULL && strstr(r.error, "STDIN after STDIN_EOF") != NULL);
	CHECK(group_gone((pid_t)r.pid));
	run_free(&r);
	client_stop(&c);
}

TEST(resize_on_a_pipe_stream_is_unexpected)
{
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	char *argv[] = { "sleep", "30", NULL };
	struct run r;
	run_init(&r, 5);
	client_spawn(&c, 5, argv, NULL, "", 0);
	struct proto_msg m;
	CHECK_INT(client_next(&c, &m, T), 1);
	CHECK_INT(m.type, PROTO_STARTED);
	r.pid = m.u.pid;
	send_simple(&c, 5, PROTO_RESIZE, 24, 80);
	CHECK_INT(client_pump(&c, &r, 1, 1, T), 1);
	CHECK(r.error != NULL && strstr(r.error, PROTO_TEXT_UNEXPECTED) != NULL);
	CHECK(group_gone((pid_t)r.pid));
	run_free(&r);
	client_stop(&c);
}

TEST(a_background_holder_of_the_terminal_does_not_hold_exit)
{
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	/* The subshell ignores the hangup its session leader's exit sends, so
	 * it keeps the terminal open: EXIT comes once the output went quiet.
	 * The shell exits only once the subshell ignores it (file $f). */
	char *argv[] = { "sh", "-c",
			 "f=$(mktemp -u); (trap '' HUP; : > \"$f\"; exec sleep 30) & "
			 "while [ ! -e \"$f\" ]; do sleep 0.01; done; rm \"$f\"; echo bye",
			 NULL };
	struct run r;
	run_init(&r, 4);
	client_spawn_pty(&c, 4, argv, NULL, 24, 80);
	CHECK_INT(client_pump(&c, &r, 1, 1, 3000), 1);
	CHECK_INT(r.code, 0);
	CHECK_STR(r.out, "bye\r\n");
	CHECK(kill(-(pid_t)r.pid, 0) == 0); /* the sleep still runs */
	kill(-(pid_t)r.pid, SIGKILL);
	run_free(&r);
	client_stop(&c);
}

TEST(a_flood_of_output_arrives_intact_under_credit)
{
	char *argv[] = { "seq", "200000", NULL };
	struct run r;
	run_pty(argv, 24, 80, &r);
	CHECK_INT(r.code, 0);
	size_t want = 0;
	for (int i = 1; i <= 200000; i++)
		want += (size_t)snprintf(NULL, 0, "%d", i) + 2; /* ONLCR: "\r\n" */
	CHECK_INT(r.out_len, want);
	CHECK(r.out != NULL && strncmp(r.out, "1\r\n2\r\n", 6) == 0);
	CHECK(r.out != NULL && strcmp(r.out + r.out_len - 8, "200000\r\n") == 0);
	run_free(&r);
}

TEST(the_process_drops_to_the_user_who_owns_the_terminal)
{
	if (geteuid() != 0) {
		sbx_test_skip("needs root to change uid");
		return;
	}
	gid_t groups[] = { 4242 };
	struct guest_user u = { .uid = 1234, .gid = 5678, .groups = groups, .ngroups = 1, .home = "/" };
	struct client c;
	CHECK_INT(client_start_as(&c, NULL, &u), 0);
	char *argv[] = { "sh", "-c", "id -u; stat -c %u \"$(tty)\"", NULL };
	struct run r;
	run_init(&r, 1);
	client_spawn_pty(&c, 1, argv, NULL, 24, 80);
	CHECK_INT(client_pump(&c, &r, 1, 1, T), 1);
	CHECK_INT(r.code, 0);
	CHECK_STR(r.out, "1234\r\n1234\r\n");
	run_free(&r);
	client_stop(&c);
}
