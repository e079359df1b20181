#include "vm/keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LIFELINE_FD 3
#define PID_REPORT_MS 10000
#define SIDE_REAP_MS 2000

static int status_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 255;
}

/* Whether the keeper died before PR_SET_PDEATHSIG took hold.  A jailed
 * QEMU is PID 1 of its namespace, where getppid() is always 0: it asks
 * the keeper's pidfd instead. */
static bool keeper_died(pid_t keeper, int keeper_fd)
{
	if (keeper_fd < 0)
		return getppid() != keeper;
	struct pollfd p = { .fd = keeper_fd, .events = POLLIN };
	return poll(&p, 1, 0) != 0;
}

/* In the QEMU child: only async-signal-safe calls until execv. */
static void exec_qemu(const struct keeper_spec *s, pid_t keeper, int keeper_fd)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (keeper_died(keeper, keeper_fd))
		_exit(127);
	/* The keeper's pidfd takes the lifeline's place, below the
	 * descriptors the jail closes, until exec closes it. */
	if (keeper_fd >= 0) {
		if (dup3(keeper_fd, LIFELINE_FD, O_CLOEXEC) < 0)
			_exit(127);
		close(keeper_fd);
		keeper_fd = LIFELINE_FD;
	} else {
		close(LIFELINE_FD);
	}
	/* Raising one's own score needs no privilege; a failure leaves the
	 * default, which is no reason not to run. */
	int adj = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (adj >= 0) {
		ssize_t w = write(adj, "1000", 4);
		(void)w;
		close(adj);
	}
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* The side processes' sockets are not QEMU's. */
	syscall(SYS_close_range, KEEPER_QEMU_FD_BASE + s->nfds, ~0u, 0);
	if (s->jail != NULL) {
		static char *const no_env[] = { NULL };
		/* The new uid cleared the parent-death signal; jail_enter set
		 * it again, which is only good if the keeper still lives. */
		if (jail_enter(s->jail, KEEPER_QEMU_FD_BASE + s->nfds) < 0 || keeper_died(keeper, keeper_fd))
			_exit(127);
		execve(s->argv[0], s->argv, no_env);
	} else {
		execv(s->argv[0], s->argv);
	}
	_exit(127);
}

/* In a side process's child: only async-signal-safe calls until execve. */
static void exec_side(const struct keeper_spec *s, int i, pid_t keeper)
{
	const struct keeper_side *side = &s->sides[i];
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != keeper)
		_exit(127);
	setpgid(0, 0);
	/* Over the lifeline: only the keeper may hold it.  The second
	 * descriptor's slot lies above every target. */
	if (dup2(KEEPER_QEMU_FD_BASE + s->nfds + i, KEEPER_SIDE_FD) < 0)
		_exit(127);
	if (side->fd2 >= 0 && dup2(KEEPER_QEMU_FD_BASE + s->nfds + s->nsides + i, KEEPER_SIDE_FD + 1) < 0)
		_exit(127);
	syscall(SYS_close_range, KEEPER_SIDE_FD + (side->fd2 >= 0 ? 2 : 1), ~0u, 0);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (side->enter != NULL && side->enter(side->arg) < 0) {
		static const char msg[] = "keeper: a side process could not be set up; not started\n";
		ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
		(void)w;
		_exit(127);
	}
	static char *const no_env[] = { NULL };
	execve(side->argv[0], side->argv, no_env);
	_exit(127);
}

/* Forks the side processes; -1 when one could not be forked (those
 * started are left in sides[] for kill_sides). */
static int start_sides(const struct keeper_spec *s, pid_t self, pid_t sides[KEEPER_MAX_SIDES])
{
	for (int i = 0; i < s->nsides; i++) {
		pid_t pid = fork();
		if (pid < 0)
			return -1;
		if (pid == 0)
			exec_side(s, i, self);
		setpgid(pid, pid); /* as the child does: whichever runs first */
		sides[i] = pid;
	}
	for (int i = 0; i < 2 * s->nsides; i++)
		close(KEEPER_QEMU_FD_BASE + s->nfds + i);
	return 0;
}

/* Kills each side's process group and reaps every descendant (the keeper
 * is their subreaper: a side's own children come back to it), waiting
 * SIDE_REAP_MS at most for one that left its group. */
static void kill_sides(const pid_t sides[KEEPER_MAX_SIDES], int n)
{
	for (int i = 0; i < n; i++) {
		if (sides[i] > 0)
			kill(-sides[i], SIGKILL);
	}
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	for (int waited = 0; waited < SIDE_REAP_MS;) {
		pid_t r = waitpid(-1, NULL, WNOHANG);
		if (r < 0 && errno != EINTR)
			break; /* ECHILD: all gone */
		if (r == 0) {
			nanosleep(&tick, NULL);
			waited += 10;
		}
	}
}

static void cleanup_files(const struct keeper_spec *s)
{
	for (int i = 0; i < s->nfiles; i++)
		unlink(s->files[i]);
	if (s->dir != NULL)
		rmdir(s->dir);
}

/* The keeper: fds 0-2 are /dev/null, /dev/null, the log; 3 is the lifeline;
 * QEMU's sockets follow.  Never returns. */
static void keeper_main(const struct keeper_spec *s)
{
	setsid();
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	}
	/* The daemon's terminal signals must not kill the keeper before it
	 * cleaned up; its lifeline tells it when to stop. */
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	pid_t self = getpid();
	pid_t sides[KEEPER_MAX_SIDES] = { 0 };
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	/* Before jail_fork: after it, children are born in QEMU's namespace. */
	if (start_sides(s, self, sides) < 0) {
		kill_sides(sides, s->nsides);
		cleanup_files(s);
		_exit(126);
	}
	int self_fd = s->jail != NULL ? (int)syscall(SYS_pidfd_open, self, 0) : -1;
	if (s->jail != NULL && self_fd < 0) {
		kill_sides(sides, s->nsides);
		cleanup_files(s);
		_exit(126);
	}
	pid_t qemu = s->jail != NULL ? jail_fork(s->jail) : fork();
	if (qemu < 0) {
		kill_sides(sides, s->nsides);
		cleanup_files(s);
		_exit(126);
	}
	if (qemu == 0)
		exec_qemu(s, self, self_fd);
	if (self_fd >= 0)
		close(self_fd);
	for (int i = 0; i < s->nfds; i++)
		close(KEEPER_QEMU_FD_BASE + i);
	ssize_t w = write(LIFELINE_FD, &qemu, sizeof(qemu));
	(void)w; /* a daemon already gone shows as EOF below */
	int pidfd = (int)syscall(SYS_pidfd_open, qemu, 0);
	struct pollfd p[2] = { { .fd = LIFELINE_FD, .events = POLLIN }, { .fd = pidfd, .events = POLLIN } };
	for (;;) {
		int n = poll(p, pidfd >= 0 ? 2 : 1, pidfd >= 0 ? -1 : 100);
		if (n < 0 && errno != EINTR)
			break;
		if (p[0].revents != 0)
			break; /* EOF: the daemon is gone or wants QEMU gone */
		if (pidfd >= 0 ? p[1].revents != 0 : waitpid(qemu, NULL, WNOHANG | WNOWAIT) == qemu)
			break;
	}
	kill(qemu, SIGKILL);
	int status = 0;
	while (waitpid(qemu, &status, 0) < 0 && errno == EINTR)
		;
	kill_sides(sides, s->nsides);
	cleanup_files(s);
	/* After the files: removing a cgroup may wait for the kernel to let go
	 * of it, and the VM's files should be gone as soon as QEMU is. */
	if (s->jail != NULL)
		jail_kill(s->jail);
	_exit(status_code(status));
}

/* Moves the descriptors the keeper needs to fixed numbers and closes the
 * rest.  Sources are first lifted above every target so that dup2 never
 * overwrites a source still to be moved. */
static void arrange_fds(const struct keeper_spec *s, int null_fd, int log_fd, int life_rd)
{
	int high[KEEPER_MAX_FDS + 2 * KEEPER_MAX_SIDES];
	int n = s->nfds + 2 * s->nsides;
	int hnull = fcntl(null_fd, F_DUPFD, 64), hlog = fcntl(log_fd, F_DUPFD, 64);
	int hlife = fcntl(life_rd, F_DUPFD, 64);
	for (int i = 0; i < n; i++) {
		int j = i - s->nfds, fd;
		if (j < 0)
			fd = s->fds[i];
		else if (j < s->nsides)
			fd = s->sides[j].fd;
		else /* a side without a second descriptor holds /dev/null's slot */
			fd = s->sides[j - s->nsides].fd2 >= 0 ? s->sides[j - s->nsides].fd2 : null_fd;
		high[i] = fcntl(fd, F_DUPFD, 64);
	}
	if (hnull < 0 || hlog < 0 || hlife < 0)
		_exit(126);
	if (dup2(hnull, 0) < 0 || dup2(hnull, 1) < 0 || dup2(hlog, 2) < 0 || dup2(hlife, LIFELINE_FD) < 0)
		_exit(126);
	/* QEMU's descriptors, then the side processes', then their second ones. */
	for (int i = 0; i < n; i++) {
		if (high[i] < 0 || dup2(high[i], KEEPER_QEMU_FD_BASE + i) < 0)
			_exit(126);
	}
	syscall(SYS_close_range, KEEPER_QEMU_FD_BASE + n, ~0u, 0);
}

/* The keeper writes QEMU's pid right after forking it; EOF or silence
 * means it could not (it then exits, and the VM reads as gone). */
static pid_t read_qemu_pid(int lifeline)
{
	struct pollfd p = { .fd = lifeline, .events = POLLIN };
	pid_t pid = -1;
	int n;
	while ((n = poll(&p, 1, PID_REPORT_MS)) < 0 && errno == EINTR)
		;
	if (n == 1 && recv(lifeline, &pid, sizeof(pid), MSG_WAITALL) != (ssize_t)sizeof(pid))
		pid = -1;
	return pid;
}

int keeper_start(struct keeper *k, const struct keeper_spec *s, sbx_error_t *err)
{
	if (s->nfds > KEEPER_MAX_FDS || s->nfiles > KEEPER_MAX_FILES || s->nsides > KEEPER_MAX_SIDES ||
	    s->argv[0][0] != '/')
		return sbx_error_set(err, EINVAL, "keeper: bad spec");
	for (int i = 0; i < s->nsides; i++) {
		if (s->sides[i].argv[0][0] != '/' || s->sides[i].fd < 0)
			return sbx_error_set(err, EINVAL, "keeper: bad side process");
	}
	int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null_fd < 0)
		return sbx_error_errno(err, errno, "open /dev/null");
	int log_fd = open(s->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (log_fd < 0) {
		int e = errno;
		close(null_fd);
		return sbx_error_errno(err, e, "create %s", s->log);
	}
	int life[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, life) < 0) {
		int e = errno;
		close(null_fd);
		close(log_fd);
		return sbx_error_errno(err, e, "socketpair");
	}
	pid_t pid = fork();
	if (pid == 0) {
		arrange_fds(s, null_fd, log_fd, life[0]);
		keeper_main(s);
	}
	int e = errno;
	close(null_fd);
	close(log_fd);
	close(life[0]);
	if (pid < 0) {
		close(life[1]);
		return sbx_error_errno(err, e, "fork");
	}
	k->pid = pid;
	k->lifeline = life[1];
	k->reaped = false;
	k->status = -1;
	k->qemu_pid = read_qemu_pid(k->lifeline);
	return 0;
}

bool keeper_exited(struct keeper *k)
{
	if (k->reaped)
		return true;
	int status;
	pid_t r = waitpid(k->pid, &status, WNOHANG);
	if (r == k->pid) {
		k->reaped = true;
		k->status = status_code(status);
	}
	return k->reaped;
}

int keeper_stop(struct keeper *k)
{
	if (k->lifeline >= 0) {
		close(k->lifeline);
		k->lifeline = -1;
	}
	if (!k->reaped) {
		int status;
		pid_t r;
		while ((r = waitpid(k->pid, &status, 0)) < 0 && errno == EINTR)
			;
		k->reaped = true;
		k->status = r == k->pid ? status_code(status) : 255;
	}
	return k->status;
}
