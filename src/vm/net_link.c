/* Spawning and reaping the network helper (see net_link.h). */
#include "vm/net_link.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/scodes.h"
#include "proto/proto_net_addr.h"
#include "vm/exe_dir.h"

#define HELPER_NAME "sandbox-net-helper"
#define HELPER_FIX "build it (ninja -C build) or set SANDBOX_NET_HELPER"
#define MAX_ARGS 4096

extern char **environ;

void net_link_init(struct net_link *l)
{
	*l = (struct net_link){ .pid = -1, .status = -1, .lifeline = -1, .beacon = -1, .qemu_fd = -1, .helper_fd = -1 };
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int net_link_open(struct net_link *l, sbx_error_t *err)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0)
		return sbx_error_errno(err, errno, "network socketpair");
	l->qemu_fd = sv[0];
	l->helper_fd = sv[1];
	/* A new helper counts from 0 in a new beacon. */
	l->publish_seen[0] = l->publish_seen[1] = 0;
	if ((l->beacon = memfd_create("net-activity", MFD_CLOEXEC)) < 0)
		return sbx_error_errno(err, errno, "memfd_create");
	/* No payload yet: mtime 0. */
	struct timespec zero[2] = { { 0, 0 }, { 0, 0 } };
	if (futimens(l->beacon, zero) < 0)
		return sbx_error_errno(err, errno, "beacon");
	return 0;
}

/* SANDBOX_NET_HELPER, else where it was installed, else beside the
 * executable or in src/net/ of the build tree that holds it
 * (vm/exe_dir.h). */
static char *find_helper(sbx_error_t *err)
{
	const char *env = getenv("SANDBOX_NET_HELPER");
	if (env != NULL && env[0] != '\0') {
		if (env[0] == '/' && access(env, X_OK) == 0)
			return strdup(env);
		sbx_error_scode(err, SBX_S_VM_BOOT, "SANDBOX_NET_HELPER=%s is not an executable absolute path", env);
		return NULL;
	}
	static const char *const names[] = { HELPER_NAME, "src/net/" HELPER_NAME, NULL };
	char *found = vm_find_part(HELPER_NAME, names, X_OK);
	if (found != NULL)
		return found;
	sbx_error_scode(err, SBX_S_VM_BOOT, "network helper %s not found (installed: " SBX_LIBEXECDIR "/sandbox-libkrun/ under the prefix; build tree: src/net/); %s", HELPER_NAME, HELPER_FIX);
	return NULL;
}

/* Lifts fd above the helper's fixed numbers, so no dup2 of the spawn
 * overwrites a source still to be moved. */
static int lift(int fd)
{
	return fcntl(fd, F_DUPFD_CLOEXEC, NET_HELPER_FD_PUBLISH + NET_MAX_PUBLISH);
}

static void close_all(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		close_fd(&fds[i]);
}

/* The helper's descriptors in their order (proto/proto_net_addr.h): the
 * frames socket, lifeline, keeper pidfd, beacon, then the listeners. */
static int spawn(const struct jail *jail, const char *path, char **argv, const int *src, size_t n, pid_t *pid,
		 sbx_error_t *err)
{
	int fds[NET_HELPER_FDS];
	for (size_t i = 0; i < n; i++)
		fds[i] = -1;
	for (size_t i = 0; i < n; i++) {
		if ((fds[i] = lift(src[i])) < 0) {
			int e = errno;
			close_all(fds, n);
			return sbx_error_errno(err, e, "network helper descriptors");
		}
	}
	/* Only the log level and format (and a sanitizer build's options) cross over:
	 * never the daemon's secrets. */
	static const char *const keep[] = { "SANDBOX_LOG", "SANDBOX_LOG_FORMAT", "ASAN_OPTIONS", "UBSAN_OPTIONS",
					    "LSAN_OPTIONS" };
	char *envp[sizeof(keep) / sizeof(keep[0]) + 1] = { NULL };
	size_t ne = 0;
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		const char *value = getenv(keep[i]);
		if (value != NULL && asprintf(&envp[ne++], "%s=%s", keep[i], value) < 0) {
			envp[--ne] = NULL;
			for (size_t j = 0; j < ne; j++)
				free(envp[j]);
			close_all(fds, n);
			return sbx_error_errno(err, ENOMEM, "network helper env");
		}
	}
	if (jail != NULL) {
		int rc = net_link_jail_spawn(jail, path, argv, envp, fds, n, pid, err);
		for (size_t k = 0; k < ne; k++)
			free(envp[k]);
		close_all(fds, n);
		return rc;
	}
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	/* Its own session: a ^C to the daemon's terminal does not cut the
	 * network of VMs still being stopped. */
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSID);
	int rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	rc = rc ? rc : posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = posix_spawn_file_actions_adddup2(&fa, fds[i], NET_HELPER_FD_FRAMES + (int)i);
	rc = rc ? rc : posix_spawn_file_actions_addclosefrom_np(&fa, NET_HELPER_FD_FRAMES + (int)n);
	rc = rc ? rc : posix_spawn(pid, path, &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	for (size_t j = 0; j < ne; j++)
		free(envp[j]);
	close_all(fds, n);
	if (rc != 0)
		return sbx_error_errno(err, rc, "spawn %s", path);
	return 0;
}

int net_link_spawn(struct net_link *l, char *const *args, const int *publish, size_t n_publish, pid_t keeper, struct sbx_jail_host *jail_host,
		   const char *vm_dir, sbx_error_t *err)
{
	int rc = -1;
	cleanup_close int vm = -1;
	int life[2] = { -1, -1 };
	size_t n = 0;
	while (args != NULL && args[n] != NULL)
		n++;
	cleanup_free char *path = find_helper(err);
	cleanup_free char **argv = n < MAX_ARGS ? calloc(n + 2, sizeof(char *)) : NULL;
	if (path == NULL)
		goto out;
	if (argv == NULL) {
		sbx_error_set(err, n < MAX_ARGS ? ENOMEM : E2BIG, "network helper arguments");
		goto out;
	}
	argv[0] = (char *)HELPER_NAME;
	for (size_t i = 0; i < n; i++)
		argv[i + 1] = args[i];
	if ((vm = (int)syscall(SYS_pidfd_open, keeper, 0)) < 0) {
		sbx_error_errno(err, errno, "pidfd_open");
		goto out;
	}
	/* Its end stays open (its reports) after ours is shut (its EOF). */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, life) < 0) {
		sbx_error_errno(err, errno, "lifeline socketpair");
		goto out;
	}
	if (sbx_jail_host_active(jail_host) && (l->jail = net_link_jail_prepare(jail_host, vm_dir, path, err)) == NULL)
		goto out;
	int fds[NET_HELPER_FDS] = { l->helper_fd, life[0], vm, l->beacon };
	for (size_t i = 0; i < n_publish && i < NET_MAX_PUBLISH; i++)
		fds[4 + i] = publish[i];
	if (spawn(l->jail, path, argv, fds, 4 + (n_publish < NET_MAX_PUBLISH ? n_publish : NET_MAX_PUBLISH), &l->pid,
		  err) < 0) {
		l->pid = -1;
		goto out;
	}
	l->lifeline = life[1];
	life[1] = -1;
	net_link_report_watch(l);
	rc = 0;
out:
	close_fd(&life[0]);
	close_fd(&life[1]);
	close_fd(&l->qemu_fd);
	close_fd(&l->helper_fd);
	if (rc < 0)
		sbx_error_default_scode(err, SBX_S_VM_BOOT);
	return rc;
}

void net_link_close(struct net_link *l)
{
	/* The helper reads EOF, sends its last report and exits. */
	if (l->lifeline >= 0)
		shutdown(l->lifeline, SHUT_WR);
	if (l->pid > 0) {
		while (waitpid(l->pid, NULL, 0) < 0 && errno == EINTR)
			;
		l->pid = -1;
	}
	net_link_report_end(l);
	close_fd(&l->lifeline);
	/* Whatever the helper left in its cgroup goes with the leaf. */
	jail_release(l->jail);
	l->jail = NULL;
	close_fd(&l->qemu_fd);
	close_fd(&l->helper_fd);
	close_fd(&l->beacon);
}

bool net_link_exited(struct net_link *l)
{
	if (l->status >= 0)
		return true;
	int st;
	if (l->pid <= 0 || waitpid(l->pid, &st, WNOHANG) != l->pid)
		return false;
	l->pid = -1;
	l->status = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
	return true;
}

int64_t net_link_activity_ms(const struct net_link *l)
{
	struct stat st;
	if (l->beacon < 0 || fstat(l->beacon, &st) < 0)
		return 0;
	return (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
}

void net_link_publish_take(struct net_link *l, uint64_t delta[2])
{
	uint64_t now[2] = { 0, 0 };
	delta[0] = delta[1] = 0;
	if (l->beacon < 0 || pread(l->beacon, now, sizeof(now), NET_BEACON_PUBLISH_AT) != (ssize_t)sizeof(now))
		return;
	for (int i = 0; i < 2; i++) {
		if (now[i] > NET_PUBLISH_TOTAL_MAX)
			now[i] = NET_PUBLISH_TOTAL_MAX;
		if (now[i] > l->publish_seen[i]) {
			delta[i] = now[i] - l->publish_seen[i];
			l->publish_seen[i] = now[i];
		}
	}
}
