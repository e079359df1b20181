/* The console's log file: created afresh or appended to, at most
 * CONSOLE_LOG_MAX bytes per console, an appended file that large emptied
 * first. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "vm/console.h"

static off_t size_of(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? st.st_size : -1;
}

static void write_file(const char *path, const char *text, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0) {
		ssize_t w = write(fd, text, len);
		(void)w;
		close(fd);
	}
}

/* Runs a console over a socketpair (its log led by `lead`), feeds it `len` bytes of `fill`, waits
 * until the log stops growing at `expect` bytes, stops it. */
static int feed(const char *log, bool append, const char *lead, char fill, size_t len, off_t expect)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	struct console c;
	console_init(&c);
	console_lead(&c, lead);
	sbx_error_t err = NULL;
	if (console_start(&c, sv[0], log, append, &err) < 0) {
		sbx_error_free(&err);
		close(sv[1]);
		console_destroy(&c);
		return -1;
	}
	char *buf = malloc(len);
	memset(buf, fill, len);
	for (size_t off = 0; off < len;) {
		ssize_t w = write(sv[1], buf + off, len - off);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	free(buf);
	for (int i = 0; i < 200 && size_of(log) != expect; i++)
		usleep(10000);
	close(sv[1]);
	console_stop(&c);
	console_destroy(&c);
	return 0;
}

TEST(log_created_afresh_or_appended)
{
	char dir[] = "/tmp/sbx-console-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char log[256];
	snprintf(log, sizeof(log), "%s/console.log", dir);
	write_file(log, "old\n", 4);
	CHECK_INT(feed(log, true, NULL, 'a', 10, 14), 0);
	CHECK_INT(size_of(log), 14); /* old\n + 10 bytes */
	CHECK_INT(feed(log, false, NULL, 'b', 10, 10), 0);
	CHECK_INT(size_of(log), 10); /* replaced */

	/* One console writes at most CONSOLE_LOG_MAX bytes. */
	CHECK_INT(feed(log, false, NULL, 'c', CONSOLE_LOG_MAX + 4096, CONSOLE_LOG_MAX), 0);
	CHECK_INT(size_of(log), CONSOLE_LOG_MAX);
	/* An appended log already that large starts over. */
	CHECK_INT(feed(log, true, NULL, 'd', 5, 5), 0);
	CHECK_INT(size_of(log), 5);
	/* Below the cap, appends accumulate across consoles. */
	CHECK_INT(feed(log, true, NULL, 'e', 5, 10), 0);
	CHECK_INT(size_of(log), 10);
	unlink(log);
	rmdir(dir);
}

/* A restored VM's log starts with its template's console (the lead),
 * counted in the log's bound. */
TEST(lead_first_and_counted)
{
	char dir[] = "/tmp/sbx-console-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char log[256];
	snprintf(log, sizeof(log), "%s/console.log", dir);
	CHECK_INT(feed(log, false, "lead\n", 'a', 3, 8), 0);
	char buf[16] = { 0 };
	int fd = open(log, O_RDONLY);
	CHECK(fd >= 0);
	CHECK_INT(read(fd, buf, sizeof(buf) - 1), 8);
	close(fd);
	CHECK_STR(buf, "lead\naaa");
	CHECK_INT(feed(log, false, "lead\n", 'c', CONSOLE_LOG_MAX, CONSOLE_LOG_MAX), 0);
	CHECK_INT(size_of(log), CONSOLE_LOG_MAX);
	unlink(log);
	rmdir(dir);
}
