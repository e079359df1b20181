#include "guest/warm_up.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/strv.h"
#include "guest/boot_config.h"
#include "guest/boot_mounts.h"
#include "guest/dispatch.h"
#include "proto/proto_msg.h"
#include "proto/proto_reader.h"

#define STREAM 1
/* The exec's cgroup gets a pids.max, as every exec's does. */
#define WARM_UP_PIDS_MAX 16

static int send_all(int fd, const struct proto_msg *m, sbx_error_t *err)
{
	struct proto_wbuf f;
	proto_wbuf_init(&f);
	int rc = proto_msg_encode(&f, m, err);
	for (size_t off = 0; rc == 0 && off < f.len;) {
		ssize_t n = write(fd, f.data + off, f.len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			rc = sbx_error_errno(err, errno, " write");
		else
			off += (size_t)n;
	}
	proto_wbuf_free(&f);
	return rc;
}

/* Reads the server's answers until the exec's EXIT (returns its code) or
 * an ERROR, the server going, or the deadline. */
static int await_exit(int fd, int64_t deadline, sbx_error_t *err)
{
	struct proto_reader rd;
	proto_reader_init(&rd);
	uint8_t buf[4096];
	int rc = -2;
	while (rc == -2) {
		int64_t left = deadline - sbx_now_ms();
		if (left <= 0) {
			rc = sbx_error_set(err, ETIMEDOUT, "did not exit within %d ms", WARM_UP_MS);
			break;
		}
		struct pollfd p = { fd, POLLIN, 0 };
		int n = poll(&p, 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = sbx_error_errno(err, errno, " poll");
			break;
		}
		if (n == 0)
			continue;
		ssize_t got = read(fd, buf, sizeof(buf));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			rc = sbx_error_set(err, EPIPE, "the process server went");
			break;
		}
		for (size_t off = 0; off < (size_t)got && rc == -2;) {
			size_t used;
			struct proto_header h;
			const uint8_t *payload;
			int f = proto_reader_feed(&rd, buf + off, (size_t)got - off, &used, &h, &payload, err);
			off += used;
			if (f < 0) {
				rc = -1;
				break;
			}
			struct proto_msg m;
			if (f == 0 || proto_msg_decode(&h, payload, &m, err) < 0) {
				if (f == 1)
					rc = -1;
				continue;
			}
			if (m.type == PROTO_EXIT)
				rc = m.u.code;
			else if (m.type == PROTO_ERROR)
				rc = sbx_error_set(err, EIO, "%s", m.u.message);
			proto_msg_free(&m);
		}
	}
	proto_reader_free(&rd);
	return rc;
}

/* The server's side, in the child. */
static _Noreturn void serve(int fd, int cgroup_fd, char **env, const struct guest_user *user)
{
	struct dispatch_config cfg = { .boot_env = env, .cgroup_dir_fd = cgroup_fd,
				       .exec_pids_max = WARM_UP_PIDS_MAX, .user = user };
	sbx_error_t err = NULL;
	int rc = dispatch_serve(fd, &cfg, &err);
	sbx_error_free(&err);
	_exit(rc == 1 ? 0 : 1);
}

/* The exec's cgroup of a server that did not end its exec itself: its
 * processes are killed and the cgroup removed once they are gone. */
static void remove_exec_cgroups(int cgroup_fd)
{
	/* The server's first exec is its "e1" (guest/exec_cgroup.h). */
	cleanup_close int fd = openat(cgroup_fd, "e1/cgroup.kill", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, "1", 1) != 1)
		return;
	for (int i = 0; i < 100 && unlinkat(cgroup_fd, "e1", AT_REMOVEDIR) < 0 && errno == EBUSY; i++)
		usleep(10000);
}

/* One exec of argv through a process server of its own, in a child; then
 * nothing of it stays.  Fails when it did not exit 0. */
static int run_one(char *const *argv, int64_t deadline, sbx_error_t *err)
{
	struct proto_config none = { .hostname = "", .user = "" };
	struct guest_user user;
	cleanup_strv char **env = NULL;
	if (boot_resolve_user(&none, &user, &env, err) < 0)
		return -1;
	cleanup_close int cgroup_fd = boot_process_cgroup(0, err);
	int sv[2];
	if (cgroup_fd < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		if (cgroup_fd >= 0)
			sbx_error_errno(err, errno, "socketpair");
		guest_user_free(&user);
		return -1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		serve(sv[1], cgroup_fd, env, &user);
	}
	close(sv[1]);
	guest_user_free(&user);
	if (pid < 0) {
		close(sv[0]);
		return sbx_error_errno(err, errno, "fork");
	}
	struct proto_msg spawn = { .stream = STREAM, .type = PROTO_SPAWN,
				   .u.spawn = { .argv = (char **)argv, .env = NULL, .cwd = "", .flags = 0 } };
	int code = send_all(sv[0], &spawn, err) < 0 ? -1 : await_exit(sv[0], deadline, err);
	/* The server ends when its peer goes, killing what it started. */
	close(sv[0]);
	if (code < 0)
		kill(pid, SIGKILL);
	/* Bounded: a server that does not end in time is killed. */
	for (;;) {
		pid_t r = waitpid(pid, NULL, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			break;
		if (sbx_now_ms() >= deadline)
			kill(pid, SIGKILL);
		usleep(1000);
	}
	remove_exec_cgroups(cgroup_fd);
	/* Orphans of a killed server came to PID 1 (the cgroup is empty once
	 * they died): none may stay a zombie. */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	if (code > 0)
		return sbx_error_set(err, EIO, "exited with %d", code);
	return code < 0 ? -1 : 0;
}

int warm_up_run(char *const *argv, sbx_error_t *err)
{
	int64_t deadline = sbx_now_ms() + WARM_UP_MS;
	char *const truth[] = { "true", NULL };
	if (run_one(truth, deadline, err) < 0)
		return sbx_error_prefix(err, "warm-up: `true`");
	if (argv != NULL && argv[0] != NULL && run_one(argv, deadline, err) < 0)
		return sbx_error_prefix(err, "warm-up: `%s`", argv[0]);
	return 0;
}
