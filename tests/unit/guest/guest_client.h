/* Test-side host end of the control protocol: runs dispatch_serve in a
 * forked child over a socketpair and talks to it frame by frame. */
#ifndef SBX_TEST_GUEST_CLIENT_H
#define SBX_TEST_GUEST_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "guest/user_resolve.h"
#include "proto/proto_msg.h"
#include "proto/proto_reader.h"

struct client {
	int fd;
	pid_t server;
	struct proto_reader rd;
	uint8_t buf[64 * 1024];
	size_t off, len;
};

/* What one stream produced. */
struct run {
	uint32_t stream;
	uint32_t pid;
	char *out, *err;
	size_t out_len, err_len;
	int code;  /* -1 until EXIT */
	char *error; /* ERROR message, if any */
	int done;
};

/* Starts a server whose processes get boot_env (may be NULL). */
int client_start(struct client *c, char **boot_env);
/* The same, its processes dropping to `user` (NULL = the test's own). */
int client_start_as(struct client *c, char **boot_env, const struct guest_user *user);
/* Closes the connection and returns the server's exit status (its
 * dispatch_serve result + 10, or 100 + signal). */
int client_stop(struct client *c);
int client_send(struct client *c, const struct proto_msg *m);
int client_send_raw(struct client *c, const void *p, size_t n);
/* Next message within timeout_ms; data borrows until the next call.
 * Returns 1, 0 on timeout, -1 on EOF or error. */
int client_next(struct client *c, struct proto_msg *m, int timeout_ms);
int client_spawn(struct client *c, uint32_t stream, char **argv, char **env, const char *cwd, uint32_t flags);
/* A process on a terminal of rows x cols, cwd "/". */
int client_spawn_pty(struct client *c, uint32_t stream, char **argv, char **env, uint32_t rows, uint32_t cols);
/* Collects messages into runs until every run is done or timeout_ms
 * passes; credits output when `credit` is set.  Returns the count done. */
int client_pump(struct client *c, struct run *runs, size_t n, int credit, int timeout_ms);
/* Collects (and credits) messages into r until its stdout holds `needle`
 * (1), or it ended or timeout_ms passed without it (0). */
int client_pump_until(struct client *c, struct run *r, const char *needle, int timeout_ms);
void run_init(struct run *r, uint32_t stream);
void run_free(struct run *r);

#endif
