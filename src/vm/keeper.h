/* Runs QEMU under a small keeper process so that the VM never outlives the
 * daemon and its files never outlive the VM.
 *
 * The keeper is forked from the daemon, starts its own session (a ^C to the
 * daemon's terminal does not skip the cleanup), forks QEMU with
 * PR_SET_PDEATHSIG (the keeper is single-threaded, so the forking thread
 * lives exactly as long as the keeper) and waits for either QEMU's exit or
 * EOF on a lifeline socket whose other end only the daemon holds.  EOF
 * means the daemon closed it or died: the keeper kills QEMU.  Either way it
 * then removes the VM's files and exits with QEMU's status.  The keeper
 * sends QEMU's pid up the lifeline once, so the daemon can tell later how
 * QEMU died.  With a jail, QEMU is forked into it (jail/jail.h), with an
 * empty environment, and its cgroup is killed and removed after it.
 * Side processes (virtiofsd) are forked before QEMU, each with
 * PR_SET_PDEATHSIG and in a process group of its own; once QEMU is gone
 * the keeper kills each group and, being their child subreaper, reaps
 * every descendant before it exits.
 * QEMU runs with oom_score_adj 1000: a host out of memory loses
 * a VM first, never the daemon or the keeper that cleans up after it.
 * Between fork and exit it calls only async-signal-safe functions. */
#ifndef SBX_VM_KEEPER_H
#define SBX_VM_KEEPER_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/error.h"
#include "jail/jail.h"

/* QEMU finds its inherited sockets at these descriptor numbers, in the
 * order passed to keeper_start. */
#define KEEPER_QEMU_FD_BASE 4
#define KEEPER_MAX_FDS 9
#define KEEPER_MAX_FILES 8
#define KEEPER_MAX_SIDES 4
/* A side process finds its descriptor here, and its second one (when it
 * has one) at KEEPER_SIDE_FD + 1. */
#define KEEPER_SIDE_FD 3

/* A process beside QEMU that lives exactly as long as it. */
struct keeper_side {
	char *const *argv;              /* argv[0] is an absolute path */
	int fd;                         /* passed as KEEPER_SIDE_FD */
	int fd2;                        /* -1, or passed as KEEPER_SIDE_FD + 1
					   (for enter: it closes it) */
	int (*enter)(const void *arg);  /* NULL, or run before exec
					   (async-signal-safe; -1 = do not exec) */
	const void *arg;
};

struct keeper {
	pid_t pid;
	pid_t qemu_pid; /* -1 when the keeper could not start it */
	int lifeline; /* the daemon's end */
	bool reaped;
	int status; /* QEMU's exit status, or 128 + signal, once reaped */
};

struct keeper_spec {
	char *const *argv;   /* argv[0] is an absolute path */
	const int *fds;      /* passed to QEMU as KEEPER_QEMU_FD_BASE + i */
	int nfds;
	const char *log;     /* QEMU's stderr */
	const char *const *files; /* removed after QEMU is gone */
	int nfiles;
	const char *dir;     /* removed last (must then be empty) */
	const struct jail *jail; /* QEMU runs in it (NULL: unconfined) */
	const struct keeper_side *sides; /* started before QEMU, unconfined by the jail */
	int nsides;
};

int keeper_start(struct keeper *k, const struct keeper_spec *spec, sbx_error_t *err);
/* Non-blocking: true once the keeper (and so QEMU) has exited. */
bool keeper_exited(struct keeper *k);
/* Closes the lifeline (QEMU is killed if still running) and reaps the
 * keeper; returns QEMU's status. */
int keeper_stop(struct keeper *k);

#endif
