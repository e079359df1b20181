/* The jail: how every process the daemon starts for a VM (QEMU, and the
 * helpers that run beside it) is confined, like Firecracker's jailer.
 *
 * The daemon decides once at start what this host allows
 * (sbx_jail_host_new: root, the capabilities it needs, a cgroup v1 or v2
 * hierarchy with the memory, pids and cpu controllers) and, per process,
 * prepares everything that can fail with a good message (jail_prepare: a
 * uid of its own from the configured range, a cgroup leaf with its limits,
 * the files it may write handed to that uid, the list of mounts of its
 * root).  A process that forks the jailed child then calls jail_fork in
 * place of fork, and the child calls jail_enter and execs: it joins its
 * cgroup, lowers its rlimits, unshares the mount, PID, IPC, UTS and network
 * namespaces, pivots into a tmpfs root holding only read-only binds of
 * /usr (the binary, its libraries and QEMU's data files), of the files it
 * reads, read-write binds of the files it writes and a private /dev, then
 * becomes its uid/gid with no groups, empty capability sets (bounding and
 * ambient included) and NO_NEW_PRIVS.  jail_fork, jail_enter and jail_kill
 * are async-signal-safe: they run in children of a threaded daemon. */
#ifndef SBX_JAIL_JAIL_H
#define SBX_JAIL_JAIL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

enum sbx_jail_mode { SBX_JAIL_AUTO, SBX_JAIL_REQUIRED, SBX_JAIL_OFF };

#define SBX_JAIL_UID_BASE_DEFAULT 900000u
/* uids (each also the gid) handed out from the base, one per live jail. */
#define SBX_JAIL_UID_COUNT 65536u
/* Host-wide, so that daemons with different state directories never hand
 * out the same uid. */
#define SBX_JAIL_RUN_DIR "/run/sandbox-libkrun"

int sbx_jail_mode_parse(const char *s, enum sbx_jail_mode *out, sbx_error_t *err);
const char *sbx_jail_mode_name(enum sbx_jail_mode m);

struct sbx_jail_host;

/* Probes the host.  Under `auto` a host that does not allow the jail gives
 * an inactive one and one warning naming what is missing and how to enable
 * it; under `required` that is an error.  `off` is inactive, silently. */
struct sbx_jail_host *sbx_jail_host_new(enum sbx_jail_mode mode, uint32_t uid_base, sbx_error_t *err);
bool sbx_jail_host_active(const struct sbx_jail_host *h);
/* One line: which jail is in force ("uid 900000+, cgroup v1, ..."), or why
 * none. */
const char *sbx_jail_host_describe(const struct sbx_jail_host *h);
/* Removes the cgroup leaves a crashed daemon left (their owner pid is gone),
 * killing what still runs in them.  Returns how many. */
unsigned sbx_jail_remove_leftovers(struct sbx_jail_host *h);
void sbx_jail_host_free(struct sbx_jail_host *h);

struct jail_request {
	const char *name;        /* cgroup leaf: unique among live jails, "<owner pid>-..." */
	uint64_t memory_mib;     /* memory limit of the whole process */
	unsigned cpus;           /* CPU quota, in CPUs */
	uint64_t fsize_bytes;    /* RLIMIT_FSIZE */
	const char *const *ro_files; /* opened by path, read-only */
	int n_ro;
	const char *const *rw_files; /* opened by path, read-write: given to the jail's uid */
	int n_rw;
	const char *exe;         /* the program when it lies outside /usr (a build
				    tree's helper): bound read-only, executable */
	bool kvm;                /* /dev/kvm in its /dev */
	bool proc;               /* a /proc of its own PID namespace (QEMU names
				    a template's memfd in /proc/self/fd;
				    sanitizer builds: LeakSanitizer reads
				    /proc/self/task) */
	bool host_net;           /* keeps the host's network namespace: the
				    network helper's sockets are the guest's
				    connections out */
};

struct jail;

struct jail *jail_prepare(struct sbx_jail_host *h, const struct jail_request *r, sbx_error_t *err);
/* For a helper that confines itself and needs root to do it (virtiofsd's
 * own namespace sandbox): only the cgroup leaf with r's memory, pids and
 * CPU limits, and RLIMIT_CORE 0; no uid, namespaces or mounts of ours.
 * The child calls jail_enter_limits before exec (async-signal-safe);
 * jail_kill and jail_release as for a full jail. */
struct jail *jail_prepare_limits(struct sbx_jail_host *h, const struct jail_request *r, sbx_error_t *err);
int jail_enter_limits(const struct jail *j);
uid_t jail_uid(const struct jail *j);
/* fork(), with the child as PID 1 of a new PID namespace.  Call it in a
 * process of its own that forks only this child (the namespace is its
 * children's from then on). */
pid_t jail_fork(const struct jail *j);
/* In the child, before exec: everything else.  Descriptors from
 * `keep_fds` up are closed.  The parent-death signal, which the change of
 * uid clears, is set again: the caller must then check that its parent
 * still lives (a pidfd of it, below `keep_fds`; getppid() is 0 in the new
 * PID namespace).  On failure writes "jail: <step>: <reason>" to fd 2 and
 * returns -1 (the child must then _exit). */
int jail_enter(const struct jail *j, int keep_fds);
/* "<what>: <detail>: <strerror(e)>" and a newline on fd 2, without malloc
 * or stdio: for a child of the threaded daemon before exec. */
void jail_report(const char *what, const char *detail, int e);
/* Kills whatever still runs in the jail's cgroup and removes the leaf. */
void jail_kill(const struct jail *j);
/* jail_kill, then gives the uid back and frees j.  NULL is a no-op. */
void jail_release(struct jail *j);

#endif
