/* Starting one requested process: merged environment, PATH search, pipes
 * or a pseudo-terminal, its own process group (or session), the sandbox
 * user's identity, and exec failures reported through a CLOEXEC error pipe
 * rather than guessed from an exit code.  The same child setup serves both
 * kinds of stream (dispatch_proc.c, dispatch_pty.c). */
#ifndef SBX_GUEST_SPAWN_H
#define SBX_GUEST_SPAWN_H

#include <sys/types.h>

#include "common/error.h"
#include "guest/user_resolve.h"

struct spawn_req {
	char *const *argv;
	char *const *boot_env;  /* may be NULL */
	char *const *env;       /* layered over boot_env; may be NULL */
	const char *cwd;        /* "" = / */
	int want_stdin;         /* else the child's stdin is at EOF (pipes only) */
	/* Nonzero (each 1..PROTO_MAX_TTY_DIM): the child runs in a new session
	 * whose controlling terminal, stdin, stdout and stderr is a fresh
	 * pseudo-terminal of rows x cols, owned by `user`; 0: pipes. */
	unsigned rows, cols;
	int cgroup_procs_fd;    /* cgroup.procs the child joins, or -1 */
	const struct guest_user *user; /* identity to drop to before exec; NULL = keep ours */
};

struct spawn_result {
	pid_t pid;      /* also its process group id */
	int stdin_fd;   /* -1 unless want_stdin; nonblocking, CLOEXEC */
	int stdout_fd;  /* nonblocking, CLOEXEC; -1 with a terminal */
	int stderr_fd;
	int tty_fd;     /* with a terminal: its master side (keys in, screen
			   out), nonblocking, CLOEXEC; else -1 */
	int exec_errno; /* nonzero: the child could not exec and is exiting */
	int exit_hint;  /* 127 or 126 when exec_errno is set */
	char *failure;  /* with exec_errno: the line for the caller's stderr */
};

/* Forks and execs.  Fails (nothing started) only when the fork itself,
 * the pipes or the terminal fail.  An exec failure is a success with exec_errno set: the
 * child exists, is reaped like any other, and exits with exit_hint. */
int spawn_process(const struct spawn_req *req, struct spawn_result *res, sbx_error_t *err);

/* Returns a NULL-terminated copy of base with each "K=V" of over replacing
 * the same K (free with sbx_strv_free). */
char **spawn_merge_env(char *const *base, char *const *over, sbx_error_t *err);

#endif
