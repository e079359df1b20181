#include "vm/console.h"

#include "common/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static bool write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

/* A failed echo stops echoing; the log and the ring go on. */
static void echo(struct console *c, const char *buf, size_t n)
{
	int64_t t = sbx_now_ms() - c->echo_t0;
	while (n > 0 && c->echo_fd >= 0) {
		if (c->echo_bol) {
			char prefix[40];
			int len = snprintf(prefix, sizeof(prefix), "console +%lld ms: ", (long long)t);
			if (len < 0 || (size_t)len >= sizeof(prefix) || !write_all(c->echo_fd, prefix, (size_t)len)) {
				c->echo_fd = -1;
				break;
			}
		}
		const char *nl = memchr(buf, '\n', n);
		size_t line = nl != NULL ? (size_t)(nl - buf) + 1 : n;
		if (!write_all(c->echo_fd, buf, line))
			c->echo_fd = -1;
		c->echo_bol = nl != NULL;
		buf += line;
		n -= line;
	}
}

static void *console_main(void *arg)
{
	struct console *c = arg;
	char buf[4096];
	for (;;) {
		ssize_t n = read(c->fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		pthread_mutex_lock(&c->lock);
		console_ring_append(&c->ring, buf, (size_t)n);
		pthread_mutex_unlock(&c->lock);
		if (c->echo_fd >= 0)
			echo(c, buf, (size_t)n);
		/* The log is for people debugging a boot: once full, it stops
		 * rather than let a chatty guest fill the disk. */
		if (c->log_fd >= 0 && c->logged < CONSOLE_LOG_MAX) {
			size_t room = CONSOLE_LOG_MAX - c->logged;
			size_t len = (size_t)n < room ? (size_t)n : room;
			if (write(c->log_fd, buf, len) != (ssize_t)len) {
				close(c->log_fd);
				c->log_fd = -1;
			}
			c->logged += len;
		}
	}
	return NULL;
}

void console_init(struct console *c)
{
	c->fd = c->log_fd = -1;
	c->logged = 0;
	c->started = false;
	c->echo_fd = -1;
	c->echo_t0 = 0;
	c->echo_bol = true;
	c->lead = NULL;
	console_ring_init(&c->ring);
	pthread_mutex_init(&c->lock, NULL);
}

void console_echo(struct console *c, int echo_fd, int64_t t0)
{
	c->echo_fd = echo_fd;
	c->echo_t0 = t0;
}

void console_lead(struct console *c, const char *lead)
{
	c->lead = lead;
}

int console_start(struct console *c, int fd, const char *log_path, bool append, sbx_error_t *err)
{
	c->fd = fd;
	if (log_path != NULL) {
		int mode = append ? O_APPEND : O_TRUNC;
		c->log_fd = open(log_path, O_WRONLY | O_CREAT | mode | O_CLOEXEC | O_NOFOLLOW, 0600);
		struct stat st;
		if (c->log_fd < 0 || fstat(c->log_fd, &st) < 0 ||
		    (st.st_size >= (off_t)CONSOLE_LOG_MAX && ftruncate(c->log_fd, 0) < 0)) {
			sbx_error_errno(err, errno, "open %s", log_path);
			console_stop(c);
			return -1;
		}
		/* The lead counts in the log's bound. */
		size_t len = c->lead != NULL ? strlen(c->lead) : 0;
		if (len > CONSOLE_LOG_MAX)
			len = CONSOLE_LOG_MAX;
		/* As a failed write of the guest's bytes: no log, the ring goes on. */
		if (len > 0 && !write_all(c->log_fd, c->lead, len)) {
			close(c->log_fd);
			c->log_fd = -1;
		}
		c->logged = len;
	}
	int rc = pthread_create(&c->thread, NULL, console_main, c);
	if (rc != 0) {
		sbx_error_errno(err, rc, "console thread");
		console_stop(c);
		return -1;
	}
	c->started = true;
	return 0;
}

void console_tail(struct console *c, char out[CONSOLE_TAIL_BYTES + 1])
{
	pthread_mutex_lock(&c->lock);
	console_ring_tail(&c->ring, out, CONSOLE_TAIL_BYTES, CONSOLE_TAIL_LINES);
	pthread_mutex_unlock(&c->lock);
}

size_t console_text(struct console *c, char *out, size_t max)
{
	pthread_mutex_lock(&c->lock);
	size_t n = console_ring_tail(&c->ring, out, max, INT_MAX);
	pthread_mutex_unlock(&c->lock);
	return n;
}

void console_stop(struct console *c)
{
	if (c->started) {
		shutdown(c->fd, SHUT_RDWR);
		pthread_join(c->thread, NULL);
		c->started = false;
	}
	if (c->fd >= 0)
		close(c->fd);
	if (c->log_fd >= 0)
		close(c->log_fd);
	c->fd = c->log_fd = -1;
}

void console_destroy(struct console *c)
{
	pthread_mutex_destroy(&c->lock);
}
