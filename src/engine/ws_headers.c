#include "engine/ws_headers.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

/* RFC 9110 tchar. */
static bool is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static bool reserved_name(const char *name, size_t len)
{
	static const char *const names[] = { "Host", "Upgrade", "Connection", "Content-Length",
					     "Transfer-Encoding" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == len && strncasecmp(name, names[i], len) == 0)
			return true;
	return len >= 14 && strncasecmp(name, "Sec-WebSocket-", 14) == 0;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Appends "name: value\r\n" to out (room checked by the caller's bound). */
static size_t append_line(char *out, size_t at, const char *name, size_t nlen, const char *v, size_t vlen)
{
	memcpy(out + at, name, nlen);
	at += nlen;
	memcpy(out + at, ": ", 2);
	at += 2;
	memcpy(out + at, v, vlen);
	at += vlen;
	memcpy(out + at, "\r\n", 2);
	return at + 2;
}

int ws_headers_parse(const char *text, size_t len, char **block, size_t *count, sbx_error_t *err)
{
	if (len > WS_HEADERS_MAX_FILE)
		return sbx_error_set(err, EFBIG, "over %d bytes", WS_HEADERS_MAX_FILE);
	/* Each line grows by at most 2 bytes (": " for ":", "\r\n" for "\n"). */
	cleanup_free char *out = malloc(2 * len + 4);
	if (out == NULL)
		return sbx_error_errno(err, ENOMEM, "header block");
	size_t at = 0, n = 0, lineno = 0;
	for (size_t pos = 0; pos < len;) {
		lineno++;
		const char *line = text + pos;
		const char *nl = memchr(line, '\n', len - pos);
		size_t llen = nl != NULL ? (size_t)(nl - line) : len - pos;
		pos += llen + (nl != NULL);
		if (llen > 0 && line[llen - 1] == '\r')
			llen--;
		size_t i = 0;
		while (i < llen && is_blank(line[i]))
			i++;
		if (i == llen || line[i] == '#')
			continue;
		if (i > 0)
			return sbx_error_set(err, EINVAL, "line %zu: starts with a blank (folded lines are not allowed)",
					     lineno);
		size_t nlen = 0;
		while (nlen < llen && is_tchar((unsigned char)line[nlen]))
			nlen++;
		if (nlen == llen || line[nlen] != ':')
			return sbx_error_set(err, EINVAL, "line %zu: expected `Name: value` with a name of letters, "
					     "digits and !#$%%&'*+-.^_`|~", lineno);
		if (nlen == 0)
			return sbx_error_set(err, EINVAL, "line %zu: the header name is empty", lineno);
		if (reserved_name(line, nlen))
			return sbx_error_set(err, EINVAL, "line %zu: %.*s is set by the WebSocket handshake itself",
					     lineno, (int)nlen, line);
		const char *v = line + nlen + 1, *vend = line + llen;
		while (v < vend && is_blank(*v))
			v++;
		while (vend > v && is_blank(vend[-1]))
			vend--;
		for (const char *c = v; c < vend; c++)
			if ((unsigned char)*c < 0x20 ? *c != '\t' : *c == 0x7f)
				return sbx_error_set(err, EINVAL, "line %zu: the value of %.*s has a control character",
						     lineno, (int)nlen, line);
		if (++n > WS_HEADERS_MAX_COUNT)
			return sbx_error_set(err, E2BIG, "line %zu: more than %d headers", lineno, WS_HEADERS_MAX_COUNT);
		at = append_line(out, at, line, nlen, v, (size_t)(vend - v));
	}
	out[at] = '\0';
	*block = sbx_steal_ptr(out);
	*count = n;
	return 0;
}

int ws_headers_load(const char *path, char **block, size_t *count, sbx_error_t *err)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return sbx_error_errno(err, errno, "%s", path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return sbx_error_errno(err, errno, "%s", path);
	if (!S_ISREG(st.st_mode))
		return sbx_error_set(err, EINVAL, "%s: not a regular file", path);
	if ((st.st_mode & (S_IRGRP | S_IROTH)) != 0)
		return sbx_error_set(err, EACCES, "%s: readable by group or others (mode %03o); it holds secrets: "
				     "chmod 600 it", path, (unsigned)(st.st_mode & 0777));
	char buf[WS_HEADERS_MAX_FILE + 1];
	size_t len = 0;
	for (;;) {
		ssize_t r = read(fd, buf + len, sizeof(buf) - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return sbx_error_errno(err, errno, "%s", path);
		if (r == 0)
			break;
		len += (size_t)r;
		if (len == sizeof(buf))
			return sbx_error_set(err, EFBIG, "%s: over %d bytes", path, WS_HEADERS_MAX_FILE);
	}
	int rc = ws_headers_parse(buf, len, block, count, err);
	explicit_bzero(buf, sizeof(buf));
	if (rc < 0)
		return sbx_error_prefix(err, "%s", path);
	return 0;
}

int ws_headers_from_env(char **block, size_t *count, sbx_error_t *err)
{
	*block = NULL;
	*count = 0;
	const char *path = getenv(WS_HEADERS_ENV);
	if (path == NULL || path[0] == '\0')
		return 0;
	if (ws_headers_load(path, block, count, err) < 0)
		return sbx_error_prefix(err, WS_HEADERS_ENV);
	return 0;
}
