/* Starting the network helper inside its jail (see net_link.h).
 *
 * posix_spawn cannot enter a jail, and jail_fork must run in a process
 * that forks nothing else (the new PID namespace is its children's), so a
 * small intermediate process does it: it forks the jailed helper as PID 1
 * of its own namespace, waits for it, and exits with its status, so that
 * the daemon reaps and reads it as it reads an unjailed helper's. */
#include "vm/net_link.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/proto_net_addr.h"

static const char *const resolv_conf = "/etc/resolv.conf";

struct jail *net_link_jail_prepare(struct sbx_jail_host *h, const char *vm_dir, const char *helper,
				   sbx_error_t *err)
{
	const char *slash = strrchr(vm_dir, '/');
	char name[256];
	int n = snprintf(name, sizeof(name), "%s-net", slash != NULL ? slash + 1 : vm_dir);
	if (n < 0 || (size_t)n >= sizeof(name))
		return sbx_error_set(err, ENAMETOOLONG, "network helper jail name"), NULL;
	/* c-ares reads the host's resolvers when no dns_servers are set. */
	const char *ro[1] = { resolv_conf };
	struct stat st;
	int n_ro = stat(resolv_conf, &st) == 0 && S_ISREG(st.st_mode) ? 1 : 0;
	struct jail_request r = {
		.name = name,
		.memory_mib = NET_HELPER_JAIL_MIB, /* proto/proto_net_addr.h */
		.cpus = 1,
		/* It writes no file; its stderr is the daemon's, which may be
		 * a large log file: a limit would kill it there. */
		.fsize_bytes = UINT64_MAX,
		.ro_files = ro, .n_ro = n_ro,
		.exe = helper,
#ifdef __SANITIZE_ADDRESS__
		/* The helper is a sanitizer build too: its leak check at exit
		 * reads /proc/self. */
		.proc = true,
#endif
		.host_net = true,
	};
	return jail_prepare(h, &r, err);
}

/* In the forked child: never returns.  fds[] are above the helper's
 * highest number (lifted by the caller), so no dup2 overwrites one still
 * to be moved. */
static void intermediate(const struct jail *j, const char *path, char *const *argv, char *const *envp,
			 const int *fds, size_t nfds)
{
	sigset_t none;
	sigemptyset(&none);
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	}
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0)
		_exit(126);
	int last = NET_HELPER_FD_FRAMES + (int)nfds - 1;
	for (size_t i = 0; i < nfds; i++) {
		if (dup2(fds[i], NET_HELPER_FD_FRAMES + (int)i) < 0)
			_exit(126);
	}
	if (syscall(SYS_close_range, (unsigned)last + 1, ~0u, 0) < 0)
		_exit(126);
	pid_t pid = jail_fork(j);
	if (pid < 0)
		_exit(126);
	if (pid == 0) {
		if (jail_enter(j, last + 1) == 0) {
			execve(path, argv, envp);
			jail_report("network helper: exec", path, errno);
		}
		_exit(127);
	}
	/* Only the helper holds the link now: its end of the lifeline and
	 * the frames socket must close when it exits. */
	syscall(SYS_close_range, 3, ~0u, 0);
	int st;
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR)
			_exit(126);
	}
	_exit(WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st));
}

int net_link_jail_spawn(const struct jail *j, const char *path, char *const *argv, char *const *envp,
			const int *fds, size_t nfds, pid_t *pid, sbx_error_t *err)
{
	pid_t child = fork();
	if (child < 0)
		return sbx_error_errno(err, errno, "fork the network helper");
	if (child == 0)
		intermediate(j, path, argv, envp, fds, nfds);
	*pid = child;
	return 0;
}
