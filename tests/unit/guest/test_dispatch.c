/* The guest dispatcher served over a socketpair on the host: real
 * processes, real pipes, no VM. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guest_client.h"
#include "harness.h"

#define T 60000 /* ms: an upper bound only; ASan on a loaded 2-core machine needed more than 10 s for 10 MiB */

static int run_one(char **argv, char **env, const char *cwd, struct run *r)
{
	struct client c;
	if (client_start(&c, NULL) < 0)
		return -1;
	run_init(r, 1);
	client_spawn(&c, 1, argv, env, cwd, 0);
	client_pump(&c, r, 1, 1, T);
	return client_stop(&c);
}

TEST(spawn_output_and_exit_codes)
{
	struct run r;
	char *a1[] = { "sh", "-c", "echo out; echo err >&2; exit 3", NULL };
	CHECK_INT(run_one(a1, NULL, "", &r), 11); /* peer closed: dispatch_serve returned 1 */
	CHECK(r.pid > 0);
	CHECK_INT(r.code, 3);
	CHECK_STR(r.out, "out\n");
	CHECK_STR(r.err, "err\n");
	run_free(&r);
	char *a2[] = { "true", NULL };
	run_one(a2, NULL, "", &r);
	CHECK_INT(r.code, 0);
	CHECK(r.out == NULL);
	run_free(&r);
}

TEST(env_layers_over_boot_env_and_cwd_applies)
{
	char *boot[] = { "FOO=boot", "KEEP=yes", "PATH=/usr/bin:/bin", NULL };
	char *env[] = { "FOO=spawn", NULL };
	char *argv[] = { "sh", "-c", "echo $FOO $KEEP; pwd", NULL };
	struct client c;
	CHECK_INT(client_start(&c, boot), 0);
	struct run r;
	run_init(&r, 7);
	client_spawn(&c, 7, argv, env, "/tmp", 0);
	CHECK_INT(client_pump(&c, &r, 1, 1, T), 1);
	CHECK_STR(r.out, "spawn yes\n/tmp\n");
	run_free(&r);
	client_stop(&c);
}

TEST(processes_drop_to_the_sandbox_user)
{
	if (geteuid() != 0) {
		sbx_test_skip("needs root to change uid");
		return;
	}
	gid_t groups[] = { 4242, 4343 };
	struct guest_user u = { .uid = 1234, .gid = 5678, .groups = groups, .ngroups = 2, .home = "/" };
	struct client c;
	CHECK_INT(client_start_as(&c, NULL, &u), 0);
	struct run r[2];
	run_init(&r[0], 1);
	run_init(&r[1], 3);
	char *id[] = { "sh", "-c", "id -u; id -g; id -G | tr ' ' '\\n' | sort -n | tr '\\n' ' '", NULL };
	client_spawn(&c, 1, id, NULL, "", 0);
	/* The drop happens before chdir: a directory only root may enter is
	 * refused as the user. */
	char dir[] = "/tmp/sbx-user-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	CHECK_INT(chmod(dir, 0700), 0);
	char *pwd[] = { "pwd", NULL };
	client_spawn(&c, 3, pwd, NULL, dir, 0);
	CHECK_INT(client_pump(&c, r, 2, 1, T), 2);
	rmdir(dir);
	CHECK_STR(r[0].out, "1234\n5678\n4242 4343 5678 ");
	CHECK_INT(r[1].code, 126);
	CHECK(r[1].err != NULL && strstr(r[1].err, "chdir") != NULL);
	CHECK(r[1].err != NULL && strstr(r[1].err, "Permission denied") != NULL);
	run_free(&r[0]);
	run_free(&r[1]);
	client_stop(&c);
}

TEST(stdin_is_piped_and_eof_without_flag)
{
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	char *argv[] = { "cat", NULL };
	struct run r[2];
	run_init(&r[0], 1);
	run_init(&r[1], 2);
	client_spawn(&c, 1, argv, NULL, "", PROTO_SPAWN_STDIN);
	client_spawn(&c, 2, argv, NULL, "", 0); /* must see EOF at once */
	struct proto_msg m = { .stream = 1, .type = PROTO_STDIN };
	m.u.data = (struct proto_data){ (const uint8_t *)"hello ", 6 };
	client_send(&c, &m);
	m.u.data = (struct proto_data){ (const uint8_t *)"world", 5 };
	client_send(&c, &m);
	struct proto_msg eof = { .stream = 1, .type = PROTO_STDIN_EOF };
	client_send(&c, &eof);
	CHECK_INT(client_pump(&c, r, 2, 1, T), 2);
	CHECK_STR(r[0].out, "hello world");
	CHECK_INT(r[0].code, 0);
	CHECK(r[1].out == NULL);
	CHECK_INT(r[1].code, 0);
	run_free(&r[0]);
	run_free(&r[1]);
	client_stop(&c);
}

TEST(ten_mib_of_output_arrives_intact)
{
	/* Every line is its own number: a lost, duplicated or reordered
	 * chunk changes the text. */
	char *argv[] = { "sh", "-c", "seq 1 1500000 | head -c 10485760", NULL };
	struct run r;
	run_one(argv, NULL, "", &r);
	CHECK_INT(r.code, 0);
	CHECK_INT(r.out_len, 10485760);
	size_t off = 0;
	for (unsigned long n = 1; off < r.out_len; n++) {
		char line[32];
		int len = snprintf(line, sizeof(line), "%lu\n", n);
		size_t cmp = r.out_len - off < (size_t)len ? r.out_len - off : (size_t)len;
		if (memcmp(r.out + off, line, cmp) != 0) {
			CHECK(!"output corrupted");
		}
		off += cmp;
	}
	run_free(&r);
}

TEST(spawn_failures_are_127_and_126)
{
	struct run r;
	char *a1[] = { "no-such-command-xyz", NULL };
	run_one(a1, NULL, "", &r);
	CHECK_INT(r.code, 127);
	CHECK_STR(r.err, "exec: no-such-command-xyz: not found\n");
	run_free(&r);

	char path[] = "/tmp/sbx-noexec-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK_INT(write(fd, "#!/bin/sh\n", 10), 10);
	close(fd);
	CHECK_INT(chmod(path, 0644), 0);
	char *a2[] = { path, NULL };
	run_one(a2, NULL, "", &r);
	unlink(path);
	CHECK_INT(r.code, 126);
	char want[128];
	snprintf(want, sizeof(want), "exec: %s: permission denied\n", path);
	CHECK_STR(r.err, want);
	run_free(&r);
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

TEST(kill_reaches_the_whole_group)
{
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	char *argv[] = { "sh", "-c", "sleep 100 & sleep 100 & wait", NULL };
	struct run r;
	run_init(&r, 3);
	client_spawn(&c, 3, argv, NULL, "", 0);
	struct proto_msg m;
	CHECK_INT(client_next(&c, &m, T), 1);
	CHECK_INT(m.type, PROTO_STARTED);
	r.pid = m.u.pid;
	usleep(100000); /* let the shell start its children */
	struct proto_msg k = { .stream = 3, .type = PROTO_KILL, .u.signal = SIGKILL };
	client_send(&c, &k);
	CHECK_INT(client_pump(&c, &r, 1, 1, T), 1);
	CHECK_INT(r.code, 128 + SIGKILL);
	CHECK(group_gone((pid_t)r.pid));
	run_free(&r);
	client_stop(&c);
}

TEST(twenty_processes_at_once)
{
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	struct run r[20];
	char code[20][8];
	for (uint32_t i = 0; i < 20; i++) {
		run_init(&r[i], 100 + i);
		snprintf(code[i], sizeof(code[i]), "%u", i);
		char *argv[] = { "sh", "-c", "sleep 0.2; echo $0; exit $0", code[i], NULL };
		client_spawn(&c, 100 + i, argv, NULL, "", 0);
	}
	CHECK_INT(client_pump(&c, r, 20, 1, T), 20);
	for (int i = 0; i < 20; i++) {
		char want[8];
		snprintf(want, sizeof(want), "%d\n", i);
		CHECK_STR(r[i].out, want);
		CHECK_INT(r[i].code, i);
		run_free(&r[i]);
	}
	client_stop(&c);
}

TEST(a_flooder_stalls_on_credit_while_others_flow)
{
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	char *flood[] = { "sh", "-c", "exec cat /dev/zero", NULL };
	char *quick[] = { "sh", "-c", "sleep 0.3; echo done", NULL };
	struct run r[2];
	run_init(&r[0], 1);
	run_init(&r[1], 2);
	client_spawn(&c, 1, flood, NULL, "", 0);
	client_spawn(&c, 2, quick, NULL, "", 0);
	/* Never credit stream 1; stream 2 is credited by hand. */
	size_t flooded = 0;
	int quick_done = 0;
	struct proto_msg m;
	while (!quick_done && client_next(&c, &m, T) == 1) {
		if (m.stream == 1 && m.type == PROTO_STDOUT)
			flooded += m.u.data.len;
		if (m.stream == 2 && m.type == PROTO_EXIT)
			quick_done = 1;
		proto_msg_free(&m);
	}
	CHECK(quick_done);
	/* Nothing more may come for the flooder without credit. */
	while (client_next(&c, &m, 300) == 1) {
		if (m.stream == 1 && m.type == PROTO_STDOUT)
			flooded += m.u.data.len;
		proto_msg_free(&m);
	}
	CHECK_INT(flooded, PROTO_WINDOW);
	/* Credit it; it flows again, then dies on KILL. */
	struct proto_msg cr = { .stream = 1, .type = PROTO_CREDIT, .u.credit = PROTO_WINDOW };
	client_send(&c, &cr);
	size_t more = 0;
	while (more == 0 && client_next(&c, &m, T) == 1) {
		if (m.stream == 1 && m.type == PROTO_STDOUT)
			more += m.u.data.len;
		proto_msg_free(&m);
	}
	CHECK(more > 0);
	struct proto_msg k = { .stream = 1, .type = PROTO_KILL, .u.signal = SIGKILL };
	client_send(&c, &k);
	CHECK_INT(client_pump(&c, &r[0], 1, 1, T), 1);
	CHECK_INT(r[0].code, 128 + SIGKILL);
	run_free(&r[0]);
	run_free(&r[1]);
	client_stop(&c);
}

TEST(stdin_flows_under_credit_both_ways)
{
	/* 4 MiB through cat: the host side may only have PROTO_WINDOW
	 * unacknowledged, so it must wait for the guest's CREDITs. */
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	char *argv[] = { "cat", NULL };
	client_spawn(&c, 9, argv, NULL, "", PROTO_SPAWN_STDIN);
	const size_t total = 4u << 20;
	size_t sent = 0, got = 0, inflight = 0;
	int code = -1, ok = 1;
	static uint8_t chunk[PROTO_MAX_CHUNK];
	while (code < 0) {
		while (sent < total && inflight + sizeof(chunk) <= PROTO_WINDOW) {
			for (size_t i = 0; i < sizeof(chunk); i++)
				chunk[i] = (uint8_t)((sent + i) * 7);
			struct proto_msg d = { .stream = 9, .type = PROTO_STDIN };
			d.u.data = (struct proto_data){ chunk, sizeof(chunk) };
			client_send(&c, &d);
			sent += sizeof(chunk);
			inflight += sizeof(chunk);
			if (sent == total) {
				struct proto_msg eof = { .stream = 9, .type = PROTO_STDIN_EOF };
				client_send(&c, &eof);
			}
		}
		struct proto_msg m;
		if (client_next(&c, &m, T) != 1)
			break;
		if (m.type == PROTO_CREDIT)
			inflight -= m.u.credit;
		else if (m.type == PROTO_STDOUT) {
			for (size_t i = 0; i < m.u.data.len; i++)
				ok &= m.u.data.data[i] == (uint8_t)((got + i) * 7);
			got += m.u.data.len;
			struct proto_msg cr = { .stream = 9, .type = PROTO_CREDIT, .u.credit = (uint32_t)m.u.data.len };
			client_send(&c, &cr);
		} else if (m.type == PROTO_EXIT)
			code = m.u.code;
		proto_msg_free(&m);
	}
	CHECK_INT(code, 0);
	CHECK_INT(got, total);
	CHECK(ok);
	client_stop(&c);
}

TEST(background_grandchild_does_not_hold_exit)
{
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	char *argv[] = { "sh", "-c", "sleep 30 & echo bye", NULL };
	struct run r;
	run_init(&r, 4);
	client_spawn(&c, 4, argv, NULL, "", 0);
	CHECK_INT(client_pump(&c, &r, 1, 1, 3000), 1);
	CHECK_INT(r.code, 0);
	CHECK_STR(r.out, "bye\n");
	kill(-(pid_t)r.pid, SIGKILL);
	run_free(&r);
	client_stop(&c);
}

TEST(malformed_stream_input_fails_only_that_stream)
{
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	/* A SPAWN whose argv count runs past the payload. */
	uint8_t bad[PROTO_HEADER_SIZE + 4];
	struct proto_header h = { .length = 4, .stream = 5, .type = PROTO_SPAWN };
	proto_header_encode(&h, bad);
	memset(bad + PROTO_HEADER_SIZE, 0x01, 4);
	client_send_raw(&c, bad, sizeof(bad));
	/* Credit for a stream never sent anything, on a live stream. */
	char *argv[] = { "sleep", "10", NULL };
	client_spawn(&c, 6, argv, NULL, "", 0);
	struct proto_msg cr = { .stream = 6, .type = PROTO_CREDIT, .u.credit = 10 };
	client_send(&c, &cr);
	struct run r[2];
	run_init(&r[0], 5);
	run_init(&r[1], 6);
	CHECK_INT(client_pump(&c, r, 2, 1, T), 2);
	CHECK(r[0].error != NULL);
	CHECK(r[1].error != NULL);
	CHECK(strstr(r[1].error, "CREDIT") != NULL);
	CHECK(group_gone((pid_t)r[1].pid));
	run_free(&r[0]);
	run_free(&r[1]);
	/* The connection still works. */
	struct proto_msg ping = { .stream = 0, .type = PROTO_PING, .u.nonce = 77 };
	client_send(&c, &ping);
	struct proto_msg m;
	CHECK_INT(client_next(&c, &m, T), 1);
	CHECK_INT(m.type, PROTO_PONG);
	CHECK(m.u.nonce == 77);
	client_stop(&c);
}

TEST(framing_error_ends_the_connection)
{
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	uint8_t bad[PROTO_HEADER_SIZE] = { 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, PROTO_STDIN };
	client_send_raw(&c, bad, sizeof(bad));
	struct proto_msg m;
	CHECK_INT(client_next(&c, &m, T), -1);
	CHECK_INT(client_stop(&c), 10 - 1);
}

TEST(shutdown_kills_everything)
{
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	char *argv[] = { "sleep", "100", NULL };
	client_spawn(&c, 1, argv, NULL, "", 0);
	struct proto_msg m;
	CHECK_INT(client_next(&c, &m, T), 1);
	CHECK_INT(m.type, PROTO_STARTED);
	pid_t pid = (pid_t)m.u.pid;
	struct proto_msg sd = { .stream = 0, .type = PROTO_SHUTDOWN };
	client_send(&c, &sd);
	CHECK_INT(client_next(&c, &m, T), -1);
	CHECK_INT(client_stop(&c), 10);
	CHECK(group_gone(pid));
}

/* Sends one FS_WRITE with `data` in two STDIN frames; returns the EXIT
 * code, or -errno from FS_ERROR (message copied to msg). */
static int fs_write(struct client *c, uint32_t stream, const char *path, uint32_t mode, uint32_t flags,
		    const char *data, char *msg, size_t msg_len)
{
	struct proto_msg w = { .stream = stream, .type = PROTO_FS_WRITE };
	w.u.fs_write = (struct proto_fs_write){ (char *)path, mode, flags };
	size_t half = strlen(data) / 2;
	struct proto_msg d1 = { .stream = stream, .type = PROTO_STDIN };
	d1.u.data = (struct proto_data){ (const uint8_t *)data, half };
	struct proto_msg d2 = { .stream = stream, .type = PROTO_STDIN };
	d2.u.data = (struct proto_data){ (const uint8_t *)data + half, strlen(data) - half };
	struct proto_msg eof = { .stream = stream, .type = PROTO_STDIN_EOF };
	if (client_send(c, &w) < 0 || client_send(c, &d1) < 0 || client_send(c, &d2) < 0 || client_send(c, &eof) < 0)
		return -1000;
	struct proto_msg m;
	while (client_next(c, &m, T) == 1) {
		int rc = 1000;
		if (m.stream == stream && m.type == PROTO_EXIT)
			rc = m.u.code;
		else if (m.stream == stream && m.type == PROTO_FS_ERROR) {
			snprintf(msg, msg_len, "%s", m.u.fs_error.message);
			rc = -m.u.fs_error.errnum;
		}
		proto_msg_free(&m);
		if (rc != 1000)
			return rc;
	}
	return -1001;
}

TEST(fs_write_is_atomic_exact_mode_and_parents)
{
	char dir[] = "/tmp/sbx-fsw-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char path[256], msg[256] = "";
	snprintf(path, sizeof(path), "%s/a/b/c.txt", dir);
	struct client c;
	CHECK(client_start(&c, NULL) == 0);
	/* Missing parents without the flag: ENOENT with the parent hint. */
	int rc = fs_write(&c, 5, path, 0644, 0, "x", msg, sizeof(msg));
	CHECK_INT(rc, -ENOENT);
	CHECK(strstr(msg, "parent not found") != NULL);
	char parent[256];
	snprintf(parent, sizeof(parent), "parent not found: %s/a/b", dir);
	CHECK_STR(msg, parent); /* names the missing parent, not the file */
	/* With parents; the mode is exact (no umask) and the content whole. */
	CHECK_INT(fs_write(&c, 7, path, 0757, PROTO_FS_PARENTS, "hello world", msg, sizeof(msg)), 0);
	struct stat st;
	CHECK(stat(path, &st) == 0);
	CHECK_INT(st.st_mode & 07777, 0757);
	char buf[64] = "";
	int fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	CHECK_INT(read(fd, buf, sizeof(buf) - 1), 11);
	close(fd);
	CHECK_STR(buf, "hello world");
	/* Overwrite replaces; a directory target fails EISDIR; no temp left. */
	CHECK_INT(fs_write(&c, 9, path, 0600, 0, "new", msg, sizeof(msg)), 0);
	snprintf(path, sizeof(path), "%s/a", dir);
	CHECK_INT(fs_write(&c, 11, path, 0644, 0, "x", msg, sizeof(msg)), -EISDIR);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "test \"$(ls -A %s/a/b)\" = c.txt && test \"$(cat %s/a/b/c.txt)\" = new", dir, dir);
	CHECK_INT(system(cmd), 0);
	CHECK_INT(client_stop(&c), 11);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_INT(system(cmd), 0);
}

/* The next message on `stream` within T: 1 and *m (free it), or 0. */
static int next_on(struct client *c, uint32_t stream, struct proto_msg *m)
{
	while (client_next(c, m, T) == 1) {
		if (m->stream == stream)
			return 1;
		proto_msg_free(m);
	}
	return 0;
}

TEST(an_opener_on_a_stream_in_use_fails_that_stream_whatever_its_kind)
{
	char dir[] = "/tmp/sbx-coll-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char path[256];
	snprintf(path, sizeof(path), "%s/f", dir);
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	/* A SPAWN on a file write's stream ends the write with EBUSY. */
	struct proto_msg w = { .stream = 21, .type = PROTO_FS_WRITE };
	w.u.fs_write = (struct proto_fs_write){ path, 0644, 0 };
	CHECK_INT(client_send(&c, &w), 0);
	char *argv[] = { "sleep", "10", NULL };
	CHECK_INT(client_spawn(&c, 21, argv, NULL, "", 0), 0);
	struct proto_msg m;
	CHECK_INT(next_on(&c, 21, &m), 1);
	CHECK_INT(m.type, PROTO_FS_ERROR);
	CHECK_INT(m.u.fs_error.errnum, EBUSY);
	CHECK_STR(m.u.fs_error.message, "SPAWN on a stream already in use");
	proto_msg_free(&m);
	struct stat st;
	CHECK(stat(path, &st) < 0 && errno == ENOENT); /* nothing was written */
	/* An FS_WRITE on a process's stream kills the process. */
	CHECK_INT(client_spawn(&c, 23, argv, NULL, "", 0), 0);
	CHECK_INT(next_on(&c, 23, &m), 1);
	CHECK_INT(m.type, PROTO_STARTED);
	pid_t pid = (pid_t)m.u.pid;
	proto_msg_free(&m);
	w.stream = 23;
	CHECK_INT(client_send(&c, &w), 0);
	CHECK_INT(next_on(&c, 23, &m), 1);
	CHECK_INT(m.type, PROTO_ERROR);
	CHECK_STR(m.u.message, "FS_WRITE on a stream already in use");
	proto_msg_free(&m);
	CHECK(group_gone(pid));
	/* A message no stream takes, on an unused stream, is refused. */
	struct proto_msg bad = { .stream = 25, .type = PROTO_EXIT, .u.code = 0 };
	CHECK_INT(client_send(&c, &bad), 0);
	CHECK_INT(next_on(&c, 25, &m), 1);
	CHECK_INT(m.type, PROTO_ERROR);
	CHECK(strstr(m.u.message, PROTO_TEXT_UNEXPECTED) != NULL);
	proto_msg_free(&m);
	CHECK_INT(client_stop(&c), 11);
	CHECK_INT(rmdir(dir), 0);
}
