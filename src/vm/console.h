/* Captures the guest console (hvc0) into a ring and a size-capped log file,
 * on a thread of its own. */
#ifndef SBX_VM_CONSOLE_H
#define SBX_VM_CONSOLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "vm/console_ring.h"

#define CONSOLE_LOG_MAX (1024u * 1024u)

struct console {
	int fd;     /* our end of QEMU's console socket */
	int log_fd; /* -1 when there is no log file */
	size_t logged;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	struct console_ring ring;
	int echo_fd;      /* -1: no echo */
	int64_t echo_t0;  /* CLOCK_MONOTONIC ms the echo's times count from */
	bool echo_bol;    /* the next echoed byte starts a line */
	const char *lead; /* written to the log before the guest's bytes, or NULL */
};

/* Prepares an idle console (safe to query and stop). */
void console_init(struct console *c);
/* Before console_start: copy every line to echo_fd (not owned) prefixed
 * with its arrival time in ms since t0, to measure a boot from the host. */
void console_echo(struct console *c, int echo_fd, int64_t t0);
/* Before console_start: the log starts with `lead` (not owned; counted in
 * its CONSOLE_LOG_MAX). */
void console_lead(struct console *c, const char *lead);
/* Takes ownership of fd.  The log (NULL: none) is created afresh, or with
 * `append` added to; either way this console writes at most
 * CONSOLE_LOG_MAX bytes to it, and an appended log already that large is
 * emptied first (the oldest boots go), so it stays under twice that. */
int console_start(struct console *c, int fd, const char *log_path, bool append, sbx_error_t *err);
/* The last lines of output, NUL-terminated; out holds CONSOLE_TAIL_BYTES+1. */
void console_tail(struct console *c, char out[CONSOLE_TAIL_BYTES + 1]);
/* All the ring holds, as console_ring_tail prints it; out holds max + 1. */
size_t console_text(struct console *c, char *out, size_t max);
/* Stops reading, joins the thread, closes the descriptors. */
void console_stop(struct console *c);
void console_destroy(struct console *c);

#endif
