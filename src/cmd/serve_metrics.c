#include "cmd/serve_metrics.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cmd/serve_deadline.h"
#include "common/cleanup.h"
#include "common/log.h"

/* A scrape is one short GET: a request line and headers within the
 * connection's memory, idle connections dropped, and each request answered
 * or dropped within REQUEST_DEADLINE_S however slowly its client sends.  No
 * address holds more than PER_ADDRESS_CONNECTIONS of the connections, so
 * slow clients on one address leave room for a scraper on another (a unix
 * socket's clients have no address: the deadline alone frees their slots). */
#define MAX_CONNECTIONS 32
#define PER_ADDRESS_CONNECTIONS 4
#define CONNECTION_MEMORY (32 * 1024)
#define CONNECTION_TIMEOUT_S 10
#define REQUEST_DEADLINE_S 10
#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct serve_metrics {
	struct MHD_Daemon *daemon;
	int fd;
	char *unix_path; /* removed at stop; NULL for TCP */
	struct serve_deadline *deadline;
	struct serve_metrics_scrape scrape;
};

static void connection_event(void *cls, struct MHD_Connection *c, void **token,
			     enum MHD_ConnectionNotificationCode code)
{
	struct serve_metrics *m = cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		*token = info != NULL ? serve_deadline_opened(m->deadline, info->connect_fd) : NULL;
	} else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		serve_deadline_closed(m->deadline, *token);
		*token = NULL;
	}
}

static void request_done(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode why)
{
	struct serve_metrics *m = cls;
	const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	if (info != NULL)
		serve_deadline_restart(m->deadline, info->socket_context);
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, char *body, size_t len,
			     enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	if (r == NULL) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	enum MHD_Result ok = MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_TYPE);
	if (ok == MHD_YES)
		ok = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ok;
}

/* GET /metrics; anything else is 404, answered before any body is read. */
static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
	struct serve_metrics *m = cls;
	static char not_found[] = "not found: the one resource is GET /metrics\n";
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 || strcmp(url, "/metrics") != 0)
		return reply(c, MHD_HTTP_NOT_FOUND, not_found, strlen(not_found), MHD_RESPMEM_PERSISTENT);
	if (m->scrape.collect != NULL)
		m->scrape.collect(m->scrape.ctx);
	size_t len = 0;
	sbx_error_t err = NULL;
	char *text = sbx_metrics_render(m->scrape.fams, m->scrape.nfams, &len, &err);
	if (text == NULL) {
		sbx_warn("metrics: %s", sbx_error_msg(err));
		sbx_error_free(&err);
		static char failed[] = "metrics could not be rendered\n";
		return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, failed, strlen(failed), MHD_RESPMEM_PERSISTENT);
	}
	return reply(c, MHD_HTTP_OK, text, len, MHD_RESPMEM_MUST_FREE);
}

/* A unix socket is bound in a private directory beside its path, made
 * 0600 there, then renamed into place: it is never reachable with looser
 * permissions.  A stale socket at the path is replaced; any other file is
 * left alone and refused. */
static int bind_unix(int fd, const struct sbx_metrics_listen *l, const char *what, sbx_error_t *err)
{
	const char *path = ((const struct sockaddr_un *)&l->addr)->sun_path;
	struct stat st;
	if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode))
		return sbx_error_set(err, EEXIST, "%s: %s exists and is not a socket", what, path);
	cleanup_free char *dir = NULL;
	size_t dirlen = (size_t)(strrchr(path, '/') - path);
	if (asprintf(&dir, "%.*s/.metrics-XXXXXX", (int)dirlen, path) < 0)
		return sbx_error_errno(err, ENOMEM, "%s", what);
	if (mkdtemp(dir) == NULL)
		return sbx_error_errno(err, errno, "%s: %s", what, dir);
	struct sockaddr_un tmp = { .sun_family = AF_UNIX };
	int rc = -1;
	if ((size_t)snprintf(tmp.sun_path, sizeof(tmp.sun_path), "%s/s", dir) >= sizeof(tmp.sun_path))
		sbx_error_set(err, ENAMETOOLONG, "%s: %s/s: path too long for a socket", what, dir);
	else if (bind(fd, (struct sockaddr *)&tmp, sizeof(tmp)) < 0)
		sbx_error_errno(err, errno, "%s: bind %s", what, tmp.sun_path);
	else if (chmod(tmp.sun_path, 0600) < 0 || rename(tmp.sun_path, path) < 0)
		sbx_error_errno(err, errno, "%s: %s", what, path);
	else
		rc = 0;
	if (rc < 0)
		unlink(tmp.sun_path);
	rmdir(dir);
	return rc;
}

static int open_listener(const struct sbx_metrics_listen *l, const char *what, sbx_error_t *err)
{
	cleanup_close int fd = socket(l->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sbx_error_errno(err, errno, "%s: socket", what);
	int one = 1;
	if (l->kind == SBX_METRICS_TCP && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		return sbx_error_errno(err, errno, "%s: SO_REUSEADDR", what);
	if (l->kind == SBX_METRICS_UNIX) {
		if (bind_unix(fd, l, what, err) < 0)
			return -1;
	} else if (bind(fd, (const struct sockaddr *)&l->addr, l->addr_len) < 0) {
		return sbx_error_errno(err, errno, "%s: bind %s", what, l->text);
	}
	if (listen(fd, MAX_CONNECTIONS) < 0)
		return sbx_error_errno(err, errno, "%s: listen %s", what, l->text);
	return sbx_steal_fd(fd);
}

struct serve_metrics *serve_metrics_start(const struct sbx_metrics_listen *listen,
					  const struct serve_metrics_scrape *scrape, sbx_error_t *err)
{
	struct serve_metrics *m = calloc(1, sizeof(*m));
	if (m == NULL)
		return sbx_error_errno(err, ENOMEM, "metrics"), NULL;
	m->scrape = *scrape;
	m->fd = open_listener(listen, scrape->setting, err);
	if (m->fd < 0) {
		free(m);
		return NULL;
	}
	if (listen->kind == SBX_METRICS_UNIX && (m->unix_path = strdup(listen->text)) == NULL) {
		sbx_error_errno(err, ENOMEM, "metrics");
		serve_metrics_stop(m);
		return NULL;
	}
	if ((m->deadline = serve_deadline_start(MAX_CONNECTIONS, REQUEST_DEADLINE_S * 1000, err)) == NULL) {
		serve_metrics_stop(m);
		return NULL;
	}
	m->daemon = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, NULL, NULL, handle, m, MHD_OPTION_LISTEN_SOCKET,
		m->fd, MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
		(unsigned)PER_ADDRESS_CONNECTIONS, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT_S, MHD_OPTION_NOTIFY_CONNECTION,
		connection_event, m, MHD_OPTION_NOTIFY_COMPLETED, request_done, m, MHD_OPTION_END);
	if (m->daemon == NULL) {
		sbx_error_set(err, EIO, "%s: cannot start the HTTP server on %s", scrape->setting, listen->text);
		serve_metrics_stop(m);
		return NULL;
	}
	sbx_info("metrics on %s%s", listen->kind == SBX_METRICS_UNIX ? "unix:" : "http://", listen->text);
	return m;
}

void serve_metrics_stop(struct serve_metrics *m)
{
	if (m == NULL)
		return;
	/* The daemon closes the socket it was given. */
	if (m->daemon != NULL)
		MHD_stop_daemon(m->daemon);
	else
		close(m->fd);
	/* After the daemon: its last connections report their close. */
	serve_deadline_stop(m->deadline);
	if (m->unix_path != NULL)
		unlink(m->unix_path);
	free(m->unix_path);
	free(m);
}
