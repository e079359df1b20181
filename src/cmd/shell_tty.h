/* The local side of `sandbox-libkrun shell` (cmd_shell.c): the terminal in
 * raw mode and back, its size, and the thread that sends keys and sizes
 * to the daemon (control_proto.h, shell). */
#ifndef SBX_CMD_SHELL_TTY_H
#define SBX_CMD_SHELL_TTY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* The size of stdin's terminal; 24 x 80 when stdin is not one. */
void shell_tty_size(uint16_t *rows, uint16_t *cols);
/* Puts stdin's terminal in raw mode (nothing when it is not one), and
 * restores it on exit, on SIGTERM, SIGHUP and SIGQUIT, and in
 * shell_tty_restore(). */
void shell_tty_raw(void);
void shell_tty_restore(void);

struct shell_keys {
	int sock;
	int stop[2]; /* written by shell_keys_stop() */
	pthread_t thread;
	bool started;
};

/* Sends stdin as key frames, {"end": true} at its end, and a size on each
 * SIGWINCH, until shell_keys_stop(). */
int shell_keys_start(struct shell_keys *k, int sock);
void shell_keys_stop(struct shell_keys *k);

#endif
