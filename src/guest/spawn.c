/* Process start for the dispatcher (see spawn.h). */
#include "guest/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "proto/proto_msg_types.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static size_t key_len(const char *kv)
{
	const char *eq = strchr(kv, '=');
	return eq != NULL ? (size_t)(eq - kv) : strlen(kv);
}

char **spawn_merge_env(char *const *base, char *const *over, sbx_error_t *err)
{
	size_t nb = 0, no = 0;
	while (base != NULL && base[nb] != NULL)
		nb++;
	while (over != NULL && over[no] != NULL)
		no++;
	char **env = calloc(nb + no + 1, sizeof(*env));
	if (env == NULL) {
		sbx_error_errno(err, ENOMEM, "environment");
		return NULL;
	}
	size_t n = 0;
	for (size_t pass = 0; pass < 2; pass++) {
		char *const *src = pass == 0 ? base : over;
		size_t count = pass == 0 ? nb : no;
		for (size_t i = 0; i < count; i++) {
			size_t k = key_len(src[i]);
			size_t j = 0;
			while (j < n && !(key_len(env[j]) == k && strncmp(env[j], src[i], k) == 0))
				j++;
			char *copy = strdup(src[i]);
			if (copy == NULL) {
				sbx_strv_free(env);
				sbx_error_errno(err, ENOMEM, "environment");
				return NULL;
			}
			if (j < n)
				free(env[j]);
			else
				n++;
			env[j] = copy;
		}
	}
	return env;
}

static const char *env_path(char *const *env)
{
	for (size_t i = 0; env[i] != NULL; i++)
		if (strncmp(env[i], "PATH=", 5) == 0)
			return env[i] + 5;
	return DEFAULT_PATH;
}

/* The exec candidates for argv[0], built before fork so the child only
 * calls execve (nothing that allocates). */
static char **exec_candidates(const char *cmd, const char *path, sbx_error_t *err)
{
	int direct = strchr(cmd, '/') != NULL;
	size_t n = 1;
	for (const char *p = path; *p && !direct; p++)
		n += *p == ':';
	char **c = calloc(n + 1, sizeof(*c));
	if (c == NULL)
		goto oom;
	if (direct) {
		c[0] = strdup(cmd);
		if (c[0] == NULL)
			goto oom;
		return c;
	}
	const char *p = path;
	for (size_t i = 0; i < n; i++) {
		size_t len = strcspn(p, ":");
		/* An empty element means the current directory. */
		if (asprintf(&c[i], "%.*s%s%s", (int)len, p, len ? "/" : "", cmd) < 0) {
			c[i] = NULL;
			goto oom;
		}
		p += len + (p[len] == ':');
	}
	return c;
oom:
	sbx_strv_free(c);
	sbx_error_errno(err, ENOMEM, "PATH");
	return NULL;
}

struct child_failure {
	int stage; /* 0 = exec, 1 = chdir, 2 = setup, 3 = user switch */
	int errnum;
};

static void report_and_exit(int errfd, int stage, int errnum)
{
	struct child_failure f = { stage, errnum };
	ssize_t rc = write(errfd, &f, sizeof(f));
	(void)rc; /* nothing left to tell anyone if even this fails */
	_exit(stage == 0 && (errnum == ENOENT || errnum == ENOTDIR) ? 127 : 126);
}

/* Groups first, uid last: once the uid is dropped, the process may no
 * longer change its groups.  Every step is checked, so a process never runs
 * with a half-dropped identity. */
static int drop_privileges(const struct guest_user *u)
{
	if (setgroups(u->ngroups, u->groups) < 0 || setgid(u->gid) < 0 || setuid(u->uid) < 0)
		return -1;
	return 0;
}

/* Runs in the child: only async-signal-safe calls.  With a terminal,
 * in_r, out_w and err_w are all its slave side. */
static void child(const struct spawn_req *req, char **cands, char **env, int in_r, int out_w, int err_w,
		  int errfd)
{
	/* A new session also makes the child its process group's leader;
	 * without a terminal the parent makes sure of the group too. */
	if (req->rows == 0)
		setpgid(0, 0);
	else if (setsid() < 0)
		report_and_exit(errfd, 2, errno);
	sigset_t none;
	sigemptyset(&none);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (req->cgroup_procs_fd >= 0 && write(req->cgroup_procs_fd, "0", 1) != 1)
		report_and_exit(errfd, 2, errno);
	if (req->rows != 0 && ioctl(out_w, TIOCSCTTY, 0) < 0)
		report_and_exit(errfd, 2, errno);
	if (dup2(in_r, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)
		report_and_exit(errfd, 2, errno);
	/* Before chdir, so the working directory is entered as the user. */
	if (req->user != NULL && drop_privileges(req->user) < 0)
		report_and_exit(errfd, 3, errno);
	if (chdir(req->cwd[0] ? req->cwd : "/") < 0)
		report_and_exit(errfd, 1, errno);
	int best = ENOENT;
	for (size_t i = 0; cands[i] != NULL; i++) {
		execve(cands[i], req->argv, env);
		/* Like execvp: a permission problem beats "not found", and a
		 * later candidate may still work. */
		if (errno != ENOENT && errno != ENOTDIR)
			best = errno;
		if (errno != ENOENT && errno != ENOTDIR && errno != EACCES)
			break;
	}
	report_and_exit(errfd, 0, best);
}

static char *failure_line(const struct spawn_req *req, const struct child_failure *f)
{
	char *s = NULL;
	int rc;
	if (f->stage == 1)
		rc = asprintf(&s, "chdir: %s: %s\n", req->cwd, strerror(f->errnum));
	else if (f->stage == 2)
		rc = asprintf(&s, "exec: %s: setup failed: %s\n", req->argv[0], strerror(f->errnum));
	else if (f->stage == 3)
		rc = asprintf(&s, "exec: %s: cannot switch to uid %u gid %u: %s\n", req->argv[0],
			      (unsigned)req->user->uid, (unsigned)req->user->gid, strerror(f->errnum));
	else if (f->errnum == ENOENT || f->errnum == ENOTDIR)
		rc = asprintf(&s, "exec: %s: not found\n", req->argv[0]);
	else if (f->errnum == EACCES || f->errnum == EPERM)
		rc = asprintf(&s, "exec: %s: permission denied\n", req->argv[0]);
	else
		rc = asprintf(&s, "exec: %s: %s\n", req->argv[0], strerror(f->errnum));
	return rc < 0 ? NULL : s;
}

static void close_pair(int p[2])
{
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	p[0] = p[1] = -1;
}

/* The pipes: the child gets in[0], out[1] and errp[1]; our ends are nonblocking. */
static int open_pipes(int in[2], int out[2], int errp[2], sbx_error_t *err)
{
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0)
		return sbx_error_errno(err, errno, "pipe");
	/* Only the host-side ends are nonblocking: each end of a pipe is its
	 * own open file description, so the child's ends stay blocking. */
	if (fcntl(in[1], F_SETFL, O_NONBLOCK) < 0 || fcntl(out[0], F_SETFL, O_NONBLOCK) < 0 ||
	    fcntl(errp[0], F_SETFL, O_NONBLOCK) < 0)
		return sbx_error_errno(err, errno, "pipe flags");
	return 0;
}

/* A pseudo-terminal of the requested size: the master side (nonblocking)
 * in t[1], the slave side in t[0], owned by the user.  Neither becomes our
 * own controlling terminal (the dispatcher may be PID 1). */
static int open_pty(const struct spawn_req *req, int t[2], sbx_error_t *err)
{
	char name[64];
	if ((t[1] = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
		return sbx_error_errno(err, errno, "pseudo-terminal");
	int rc = grantpt(t[1]) < 0 || unlockpt(t[1]) < 0 ? errno : ptsname_r(t[1], name, sizeof(name));
	if (rc != 0)
		return sbx_error_errno(err, rc, "pseudo-terminal");
	if ((t[0] = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
		return sbx_error_errno(err, errno, "open %s", name);
	struct winsize ws = { .ws_row = (unsigned short)req->rows, .ws_col = (unsigned short)req->cols };
	if (ioctl(t[1], TIOCSWINSZ, &ws) < 0)
		return sbx_error_errno(err, errno, "terminal size");
	if (req->user != NULL && fchown(t[0], req->user->uid, (gid_t)-1) < 0)
		return sbx_error_errno(err, errno, "chown %s", name);
	if (fcntl(t[1], F_SETFL, O_NONBLOCK) < 0)
		return sbx_error_errno(err, errno, "terminal flags");
	return 0;
}

int spawn_process(const struct spawn_req *req, struct spawn_result *res, sbx_error_t *err)
{
	memset(res, 0, sizeof(*res));
	res->stdin_fd = res->stdout_fd = res->stderr_fd = res->tty_fd = -1;
	if ((req->rows == 0) != (req->cols == 0) || req->rows > PROTO_MAX_TTY_DIM || req->cols > PROTO_MAX_TTY_DIM)
		return sbx_error_set(err, EINVAL, "terminal of %u x %u", req->rows, req->cols);
	char **env = spawn_merge_env(req->boot_env, req->env, err);
	if (env == NULL)
		return -1;
	char **cands = exec_candidates(req->argv[0], env_path(env), err);
	if (cands == NULL) {
		sbx_strv_free(env);
		return -1;
	}
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, errp[2] = { -1, -1 }, ep[2] = { -1, -1 };
	int tty[2] = { -1, -1 }; /* slave, master */
	int rc = -1;
	if (req->rows != 0 ? open_pty(req, tty, err) < 0 : open_pipes(in, out, errp, err) < 0)
		goto out;
	if (pipe2(ep, O_CLOEXEC) < 0) {
		sbx_error_errno(err, errno, "pipe");
		goto out;
	}
	pid_t pid = fork();
	if (pid < 0) {
		sbx_error_errno(err, errno, "fork");
		goto out;
	}
	if (pid == 0 && req->rows != 0)
		child(req, cands, env, tty[0], tty[0], tty[0], ep[1]);
	if (pid == 0)
		child(req, cands, env, in[0], out[1], errp[1], ep[1]);
	/* Also from the parent, so a KILL right after STARTED finds the group;
	 * EACCES just means the child already exec'd after its own setpgid.
	 * Not for a new session: setsid fails in a process group leader. */
	if (req->rows == 0)
		(void)setpgid(pid, pid);
	close(ep[1]);
	ep[1] = -1;
	struct child_failure f;
	ssize_t n;
	do
		n = read(ep[0], &f, sizeof(f));
	while (n < 0 && errno == EINTR);
	res->pid = pid;
	if (n == (ssize_t)sizeof(f)) {
		res->exec_errno = f.errnum ? f.errnum : EIO;
		res->exit_hint = f.stage == 0 && (f.errnum == ENOENT || f.errnum == ENOTDIR) ? 127 : 126;
		res->failure = failure_line(req, &f);
	}
	if (req->want_stdin) {
		res->stdin_fd = in[1];
		in[1] = -1;
	}
	res->stdout_fd = out[0];
	res->stderr_fd = errp[0];
	res->tty_fd = tty[1];
	out[0] = errp[0] = tty[1] = -1;
	rc = 0;
out:
	close_pair(tty);
	close_pair(in);
	close_pair(out);
	close_pair(errp);
	close_pair(ep);
	sbx_strv_free(cands);
	sbx_strv_free(env);
	return rc;
}
