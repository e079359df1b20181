#include "adapter/config/config_metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "common/cleanup.h"

static int parse_port(const char *what, const char *s, uint16_t *port, sbx_error_t *err)
{
	char *end;
	errno = 0;
	unsigned long n = s[0] >= '0' && s[0] <= '9' ? strtoul(s, &end, 10) : 0;
	if (n == 0 || n > 65535 || errno != 0 || *end != '\0')
		return sbx_error_set(err, EINVAL, "%s: port must be 1..65535, got \"%s\"", what, s);
	*port = (uint16_t)n;
	return 0;
}

static int parse_tcp(const char *what, const char *text, struct sbx_metrics_listen *out, sbx_error_t *err)
{
	const char *colon = strrchr(text, ':');
	if (colon == NULL)
		return sbx_error_set(err, EINVAL, "%s: expected a loopback host:port or an absolute unix socket "
						      "path, got \"%s\"",
				     what, text);
	uint16_t port;
	if (parse_port(what, colon + 1, &port, err) < 0)
		return -1;
	cleanup_free char *host = strndup(text, (size_t)(colon - text));
	if (host == NULL)
		return sbx_error_errno(err, ENOMEM, "%s", what);
	size_t hl = strlen(host);
	bool bracketed = hl > 2 && host[0] == '[' && host[hl - 1] == ']';
	if (bracketed)
		host[hl - 1] = '\0';
	bool localhost = strcmp(host, "localhost") == 0;
	struct in_addr v4 = { htonl(INADDR_LOOPBACK) };
	struct in6_addr v6;
	if (!bracketed && (localhost || (inet_pton(AF_INET, host, &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127))) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&out->addr;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		sin->sin_addr = v4;
		out->addr_len = sizeof(*sin);
	} else if (bracketed && inet_pton(AF_INET6, host + 1, &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6)) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&out->addr;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		sin6->sin6_addr = v6;
		out->addr_len = sizeof(*sin6);
	} else {
		return sbx_error_set(err, EINVAL, "%s: \"%s\" is not a loopback address: metrics are served on "
						      "127.0.0.0/8, localhost or [::1], or on a unix socket",
				     what, text);
	}
	out->kind = SBX_METRICS_TCP;
	return 0;
}

static int parse_unix(const char *what, const char *path, struct sbx_metrics_listen *out, sbx_error_t *err)
{
	struct sockaddr_un *sun = (struct sockaddr_un *)&out->addr;
	size_t len = strlen(path);
	if (len >= sizeof(sun->sun_path))
		return sbx_error_set(err, ENAMETOOLONG, "%s: a unix socket path is at most %zu bytes, got %zu", what,
				     sizeof(sun->sun_path) - 1, len);
	if (path[len - 1] == '/')
		return sbx_error_set(err, EINVAL, "%s: \"%s\" names a directory, not a socket", what, path);
	cleanup_free char *dir = strndup(path, (size_t)(strrchr(path, '/') - path));
	if (dir == NULL)
		return sbx_error_errno(err, ENOMEM, "%s", what);
	struct stat st;
	const char *d = dir[0] != '\0' ? dir : "/";
	if (stat(d, &st) < 0)
		return sbx_error_errno(err, errno, "%s: the directory of the socket, %s", what, d);
	if (!S_ISDIR(st.st_mode))
		return sbx_error_set(err, ENOTDIR, "%s: %s is not a directory", what, d);
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path, path, len + 1);
	out->addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
	out->kind = SBX_METRICS_UNIX;
	return 0;
}

int sbx_metrics_listen_parse(const char *what, const char *text, struct sbx_metrics_listen *out, sbx_error_t *err)
{
	if (text == NULL || text[0] == '\0')
		return sbx_error_set(err, EINVAL, "%s: expected a loopback host:port or an absolute unix socket path",
				     what);
	struct sbx_metrics_listen l = { .kind = SBX_METRICS_OFF };
	if ((text[0] == '/' ? parse_unix(what, text, &l, err) : parse_tcp(what, text, &l, err)) < 0)
		return -1;
	if ((l.text = strdup(text)) == NULL)
		return sbx_error_errno(err, ENOMEM, "%s", what);
	sbx_metrics_listen_free(out);
	*out = l;
	return 0;
}

int sbx_config_parse_metrics_listen(json_t *v, struct sbx_metrics_listen *out, sbx_error_t *err)
{
	const char *text = json_string_value(v);
	/* A string with a NUL inside is refused as a whole, not cut at it. */
	if (text != NULL && strlen(text) != json_string_length(v))
		text = NULL;
	return sbx_metrics_listen_parse("config key `metrics_listen`", text, out, err);
}

void sbx_metrics_listen_free(struct sbx_metrics_listen *l)
{
	free(l->text);
	l->text = NULL;
	l->kind = SBX_METRICS_OFF;
}
