#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "engine/ws_headers.h"
#include "harness.h"

/* Parses `text`; returns the block (or NULL) and keeps the error text. */
static char *parse(const char *text, size_t *count, char *why, size_t whylen)
{
	char *block = NULL;
	sbx_error_t err = NULL;
	why[0] = '\0';
	if (ws_headers_parse(text, strlen(text), &block, count, &err) < 0) {
		snprintf(why, whylen, "%s", sbx_error_msg(err));
		sbx_error_free(&err);
		return NULL;
	}
	return block;
}

TEST(headers_parse_lines_comments_and_blanks)
{
	char why[256];
	size_t n = 99;
	char *b = parse("# for the engine's auth function\n\nAuthorization:  Bearer abc \r\n"
			"x-iii-tenant:t1\n  \n#x: y\nX-Empty:\nX-Tab: a\tb", &n, why, sizeof(why));
	CHECK(b != NULL);
	CHECK_STR(b, "Authorization: Bearer abc\r\nx-iii-tenant: t1\r\nX-Empty: \r\nX-Tab: a\tb\r\n");
	CHECK_INT(n, 4);
	free(b);
	b = parse("# nothing\n\n", &n, why, sizeof(why));
	CHECK(b != NULL);
	CHECK_STR(b, "");
	CHECK_INT(n, 0);
	free(b);
}

TEST(headers_refuse_malformed_lines_naming_the_line_not_the_value)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "A: 1\nno colon secret\n", "line 2: expected `Name: value`" },
		{ "Bad Name: secret\n", "line 1: expected `Name: value`" },
		{ "Bad(name): secret\n", "line 1: expected `Name: value`" },
		{ ": secret\n", "line 1: the header name is empty" },
		{ "A: 1\n b: secret\n", "line 2: starts with a blank" },
		{ "A: se\x01" "cret\n", "line 1: the value of A has a control character" },
		{ "A: se\rcret\n", "line 1: the value of A has a control character" },
		{ "A: secret\x7f\n", "line 1: the value of A has a control character" },
		{ "Host: secret\n", "line 1: Host is set by the WebSocket handshake itself" },
		{ "sec-websocket-key: secret\n", "line 1: sec-websocket-key is set by the WebSocket handshake" },
		{ "Connection: secret\n", "line 1: Connection is set" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char why[256];
		size_t n;
		CHECK(parse(bad[i].text, &n, why, sizeof(why)) == NULL);
		CHECK(strstr(why, bad[i].why) == why);
		CHECK(strstr(why, "secret") == NULL && strstr(why, "cret") == NULL);
	}
}

TEST(headers_bound_count_and_size)
{
	char text[WS_HEADERS_MAX_FILE + 2];
	size_t at = 0;
	for (int i = 0; i <= WS_HEADERS_MAX_COUNT; i++)
		at += (size_t)snprintf(text + at, sizeof(text) - at, "X-%d: v\n", i);
	char why[256];
	size_t n;
	CHECK(parse(text, &n, why, sizeof(why)) == NULL);
	CHECK(strstr(why, "more than 32 headers") != NULL);
	memset(text, '#', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	CHECK(parse(text, &n, why, sizeof(why)) == NULL);
	CHECK(strstr(why, "over 8192 bytes") != NULL);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) || fchmod(fd, mode) < 0)
		abort();
	close(fd);
}

TEST(headers_file_must_be_private)
{
	char dir[] = "/tmp/sbx-headers-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char path[64];
	snprintf(path, sizeof(path), "%s/h", dir);
	char *b = NULL;
	size_t n = 0;
	sbx_error_t err = NULL;

	write_file(path, "Authorization: Bearer s3cr3t\n", 0600);
	CHECK_INT(ws_headers_load(path, &b, &n, &err), 0);
	CHECK_STR(b, "Authorization: Bearer s3cr3t\r\n");
	free(b);
	b = NULL;

	for (mode_t m = 0640; m != 0; m = m == 0640 ? 0604 : 0) {
		write_file(path, "Authorization: Bearer s3cr3t\n", m);
		CHECK_INT(ws_headers_load(path, &b, &n, &err), -1);
		CHECK(strstr(sbx_error_msg(err), "readable by group or others") != NULL);
		CHECK(strstr(sbx_error_msg(err), "s3cr3t") == NULL);
		sbx_error_free(&err);
	}
	CHECK(b == NULL);

	/* The environment names it; unset means no headers. */
	write_file(path, "X-A: 1\nbroken\n", 0600);
	setenv(WS_HEADERS_ENV, path, 1);
	CHECK_INT(ws_headers_from_env(&b, &n, &err), -1);
	CHECK(strstr(sbx_error_msg(err), "III_HEADERS_FILE: ") == sbx_error_msg(err));
	CHECK(strstr(sbx_error_msg(err), ": line 2: ") != NULL);
	sbx_error_free(&err);
	unsetenv(WS_HEADERS_ENV);
	CHECK_INT(ws_headers_from_env(&b, &n, &err), 0);
	CHECK(b == NULL);
	CHECK_INT(n, 0);

	CHECK_INT(ws_headers_load(dir, &b, &n, &err), -1);
	CHECK(strstr(sbx_error_msg(err), "not a regular file") != NULL);
	sbx_error_free(&err);
	unlink(path);
	rmdir(dir);
}

