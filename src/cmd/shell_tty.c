/* The local terminal of `sandbox-libkrun shell` (shell_tty.h). */
#include "cmd/shell_tty.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "control/control_proto.h"

static struct termios saved;
static volatile sig_atomic_t raw_on;
static int winch_pipe[2] = { -1, -1 };

void shell_tty_size(uint16_t *rows, uint16_t *cols)
{
	struct winsize ws;
	*rows = 24;
	*cols = 80;
	if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
		*rows = ws.ws_row > CONTROL_TTY_DIM_MAX ? CONTROL_TTY_DIM_MAX : ws.ws_row;
		*cols = ws.ws_col > CONTROL_TTY_DIM_MAX ? CONTROL_TTY_DIM_MAX : ws.ws_col;
	}
}

void shell_tty_restore(void)
{
	if (raw_on) {
		tcsetattr(STDIN_FILENO, TCSADRAIN, &saved);
		raw_on = 0;
	}
}

static void on_fatal(int sig)
{
	shell_tty_restore();
	signal(sig, SIG_DFL);
	raise(sig);
}

void shell_tty_raw(void)
{
	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved) < 0)
		return;
	struct termios raw = saved;
	cfmakeraw(&raw);
	/* TCSADRAIN, not TCSAFLUSH: keys typed ahead stay and are sent. */
	struct sigaction sa = { .sa_handler = on_fatal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	atexit(shell_tty_restore);
	if (tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) == 0)
		raw_on = 1;
}

static void on_winch(int sig)
{
	(void)sig;
	int saved_errno = errno;
	if (winch_pipe[1] >= 0 && write(winch_pipe[1], "w", 1) < 0) {
		/* The pipe is full: a size is pending anyway. */
	}
	errno = saved_errno;
}

static int send_size(int sock)
{
	uint16_t rows, cols;
	shell_tty_size(&rows, &cols);
	json_t *m = json_pack("{s:i, s:i}", "rows", rows, "cols", cols);
	sbx_error_t err = NULL;
	int rc = m != NULL ? control_send_json(sock, m, &err) : -1;
	json_decref(m);
	sbx_error_free(&err);
	return rc;
}

static void *keys_main(void *arg)
{
	struct shell_keys *k = arg;
	bool input = true;
	uint8_t buf[4096];
	for (;;) {
		struct pollfd p[3] = {
			{ k->stop[0], POLLIN, 0 }, { winch_pipe[0], POLLIN, 0 }, { input ? STDIN_FILENO : -1, POLLIN, 0 },
		};
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[0].revents != 0)
			break;
		if (p[1].revents & POLLIN) {
			char drain[64];
			if (read(winch_pipe[0], drain, sizeof(drain)) < 0 && errno != EAGAIN)
				break;
			if (send_size(k->sock) < 0)
				break;
		}
		if (p[2].revents != 0) {
			ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			sbx_error_t err = NULL;
			int rc = n > 0 ? control_send_frame(k->sock, buf, (size_t)n, &err) : control_send_end(k->sock, &err);
			sbx_error_free(&err);
			if (rc < 0)
				break;
			input = n > 0;
		}
	}
	return NULL;
}

int shell_keys_start(struct shell_keys *k, int sock)
{
	k->sock = sock;
	k->started = false;
	if (pipe2(k->stop, O_CLOEXEC) < 0)
		return -1;
	if (winch_pipe[0] < 0 && pipe2(winch_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	struct sigaction sa = { .sa_handler = on_winch, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGWINCH, &sa, NULL);
	if (pthread_create(&k->thread, NULL, keys_main, k) != 0)
		return -1;
	k->started = true;
	return 0;
}

void shell_keys_stop(struct shell_keys *k)
{
	if (k->started) {
		if (write(k->stop[1], "s", 1) < 0) {
			/* Cannot happen with an empty pipe; the join would hang. */
			abort();
		}
		pthread_join(k->thread, NULL);
		k->started = false;
	}
	close(k->stop[0]);
	close(k->stop[1]);
}
