#include "engine/transport.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "common/cleanup.h"
#include "common/clock.h"

struct transport {
	int fd;
	SSL *ssl;
	pthread_mutex_t ssl_lock; /* an SSL object is not safe for concurrent calls */
	short read_events;        /* what the next read waits for (TLS may need POLLOUT) */
};

/* Waits for `events` on fd, or for cancel_fd to become readable.  Returns 1
 * ready, 0 timeout, -1 cancelled or failed. */
static int wait_fd(int fd, short events, int timeout_ms, int cancel_fd, sbx_error_t *err)
{
	int64_t deadline = sbx_now_ms() + timeout_ms;
	for (;;) {
		struct pollfd p[2] = { { .fd = fd, .events = events }, { .fd = cancel_fd, .events = POLLIN } };
		int n = poll(p, cancel_fd >= 0 ? 2 : 1, sbx_ms_left(deadline));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sbx_error_errno(err, errno, "poll");
		if (cancel_fd >= 0 && (p[1].revents & POLLIN))
			return sbx_error_set(err, ECANCELED, "cancelled");
		if (n == 0)
			return 0;
		return 1; /* POLLERR/POLLHUP too: the next I/O call reports them */
	}
}

static SSL_CTX *shared_ctx;
static char shared_ctx_error[256];

static void init_ssl_ctx(void)
{
	/* A TLS write to a dead peer would raise SIGPIPE, which kills a daemon;
	 * plain sockets use MSG_NOSIGNAL instead. */
	struct sigaction old;
	if (sigaction(SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_DFL)
		signal(SIGPIPE, SIG_IGN);

	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (ctx == NULL) {
		snprintf(shared_ctx_error, sizeof(shared_ctx_error), "SSL_CTX_new failed");
		return;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
		snprintf(shared_ctx_error, sizeof(shared_ctx_error), "cannot load the system CA store");
		SSL_CTX_free(ctx);
		return;
	}
	shared_ctx = ctx;
}

static SSL_CTX *get_ssl_ctx(sbx_error_t *err)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, init_ssl_ctx);
	if (shared_ctx == NULL)
		sbx_error_set(err, EIO, "TLS: %s", shared_ctx_error);
	return shared_ctx;
}

static int tls_error(sbx_error_t *err, const char *what)
{
	unsigned long e = ERR_get_error();
	char buf[256] = "unknown error";
	if (e != 0)
		ERR_error_string_n(e, buf, sizeof(buf));
	ERR_clear_error();
	return sbx_error_set(err, EIO, "TLS %s: %s", what, buf);
}

static int connect_one(const struct addrinfo *ai, int64_t deadline, int cancel_fd, sbx_error_t *err)
{
	cleanup_close int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
	if (fd < 0)
		return sbx_error_errno(err, errno, "socket");
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		if (errno != EINPROGRESS)
			return sbx_error_errno(err, errno, "connect");
		int r = wait_fd(fd, POLLOUT, sbx_ms_left(deadline), cancel_fd, err);
		if (r < 0)
			return -1;
		if (r == 0)
			return sbx_error_set(err, ETIMEDOUT, "connect timed out");
		int soerr = 0;
		socklen_t sl = sizeof(soerr);
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
			return sbx_error_errno(err, errno, "getsockopt");
		if (soerr != 0)
			return sbx_error_errno(err, soerr, "connect");
	}
	int one = 1;
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		return sbx_error_errno(err, errno, "TCP_NODELAY");
	return sbx_steal_fd(fd);
}

static int tls_handshake(struct transport *t, const struct ws_url *url, int64_t deadline, int cancel_fd,
			 sbx_error_t *err)
{
	SSL_CTX *ctx = get_ssl_ctx(err);
	if (ctx == NULL)
		return -1;
	t->ssl = SSL_new(ctx);
	if (t->ssl == NULL || SSL_set_fd(t->ssl, t->fd) != 1)
		return tls_error(err, "setup");

	struct in6_addr a6;
	struct in_addr a4;
	bool is_ip = inet_pton(AF_INET, url->host, &a4) == 1 || inet_pton(AF_INET6, url->host, &a6) == 1;
	if (is_ip) {
		if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), url->host) != 1)
			return tls_error(err, "setup");
	} else if (SSL_set_tlsext_host_name(t->ssl, url->host) != 1 || SSL_set1_host(t->ssl, url->host) != 1) {
		return tls_error(err, "setup");
	}

	for (;;) {
		ERR_clear_error();
		int r = SSL_connect(t->ssl);
		if (r == 1)
			return 0;
		short ev;
		switch (SSL_get_error(t->ssl, r)) {
		case SSL_ERROR_WANT_READ:
			ev = POLLIN;
			break;
		case SSL_ERROR_WANT_WRITE:
			ev = POLLOUT;
			break;
		default: {
			long vr = SSL_get_verify_result(t->ssl);
			if (vr != X509_V_OK)
				return sbx_error_set(err, EIO, "TLS certificate of %s rejected: %s", url->host,
						     X509_verify_cert_error_string(vr));
			return tls_error(err, "handshake");
		}
		}
		int w = wait_fd(t->fd, ev, sbx_ms_left(deadline), cancel_fd, err);
		if (w < 0)
			return -1;
		if (w == 0)
			return sbx_error_set(err, ETIMEDOUT, "TLS handshake timed out");
	}
}

struct transport *transport_connect(const struct ws_url *url, int timeout_ms, int cancel_fd, sbx_error_t *err)
{
	int64_t deadline = sbx_now_ms() + timeout_ms;
	char port[8];
	snprintf(port, sizeof(port), "%d", url->port);
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	int gr = getaddrinfo(url->host, port, &hints, &res);
	if (gr != 0) {
		sbx_error_set(err, EHOSTUNREACH, "resolve %s: %s", url->host, gai_strerror(gr));
		return NULL;
	}
	int fd = -1;
	for (struct addrinfo *ai = res; ai != NULL && fd < 0; ai = ai->ai_next) {
		fd = connect_one(ai, deadline, cancel_fd, err);
		if (fd < 0 && (*err)->errnum == ECANCELED)
			break;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		sbx_error_prefix(err, "%s:%d", url->host, url->port);
		return NULL;
	}
	sbx_error_free(err);

	struct transport *t = calloc(1, sizeof(*t));
	if (t == NULL) {
		close(fd);
		sbx_error_errno(err, ENOMEM, "transport");
		return NULL;
	}
	t->fd = fd;
	t->read_events = POLLIN;
	pthread_mutex_init(&t->ssl_lock, NULL);
	if (url->tls && tls_handshake(t, url, deadline, cancel_fd, err) < 0) {
		sbx_error_prefix(err, "%s:%d", url->host, url->port);
		transport_free(t);
		return NULL;
	}
	return t;
}

ssize_t transport_read(struct transport *t, void *buf, size_t len, sbx_error_t *err)
{
	if (t->ssl == NULL) {
		ssize_t n = recv(t->fd, buf, len, MSG_DONTWAIT);
		if (n > 0)
			return n;
		if (n == 0)
			return sbx_error_set(err, EPIPE, "connection closed by peer");
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return 0;
		return sbx_error_errno(err, errno, "recv");
	}
	pthread_mutex_lock(&t->ssl_lock);
	ERR_clear_error();
	size_t got = 0;
	int r = SSL_read_ex(t->ssl, buf, len, &got);
	int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(t->ssl, r);
	t->read_events = e == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN;
	pthread_mutex_unlock(&t->ssl_lock);
	switch (e) {
	case SSL_ERROR_NONE:
		return (ssize_t)got;
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		return 0;
	case SSL_ERROR_ZERO_RETURN:
		return sbx_error_set(err, EPIPE, "connection closed by peer");
	default:
		return tls_error(err, "read");
	}
}

int transport_wait_readable(struct transport *t, int timeout_ms, int cancel_fd, sbx_error_t *err)
{
	if (t->ssl != NULL) {
		pthread_mutex_lock(&t->ssl_lock);
		int pending = SSL_has_pending(t->ssl);
		pthread_mutex_unlock(&t->ssl_lock);
		if (pending)
			return 1;
	}
	return wait_fd(t->fd, t->read_events, timeout_ms, cancel_fd, err);
}

ssize_t transport_write_some(struct transport *t, const void *buf, size_t len, short *events, sbx_error_t *err)
{
	*events = POLLOUT;
	if (t->ssl == NULL) {
		ssize_t n = send(t->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n >= 0)
			return n;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return sbx_error_errno(err, errno, "send");
		return 0;
	}
	pthread_mutex_lock(&t->ssl_lock);
	ERR_clear_error();
	size_t put = 0;
	int r = SSL_write_ex(t->ssl, buf, len, &put);
	int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(t->ssl, r);
	pthread_mutex_unlock(&t->ssl_lock);
	if (e == SSL_ERROR_NONE)
		return (ssize_t)put;
	if (e == SSL_ERROR_WANT_READ)
		*events = POLLIN;
	else if (e != SSL_ERROR_WANT_WRITE)
		return tls_error(err, "write");
	return 0;
}

int transport_write_all(struct transport *t, const void *buf, size_t len, int timeout_ms, int cancel_fd,
			sbx_error_t *err)
{
	int64_t deadline = sbx_now_ms() + timeout_ms;
	const char *p = buf;
	while (len > 0) {
		short ev;
		ssize_t n = transport_write_some(t, p, len, &ev, err);
		if (n < 0)
			return -1;
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		int w = wait_fd(t->fd, ev, sbx_ms_left(deadline), cancel_fd, err);
		if (w < 0)
			return -1;
		if (w == 0)
			return sbx_error_set(err, ETIMEDOUT, "send timed out");
	}
	return 0;
}

int transport_fd(const struct transport *t)
{
	return t->fd;
}

void transport_shutdown(struct transport *t)
{
	shutdown(t->fd, SHUT_RDWR);
}

void transport_free(struct transport *t)
{
	if (t == NULL)
		return;
	if (t->ssl != NULL)
		SSL_free(t->ssl);
	if (t->fd >= 0)
		close(t->fd);
	pthread_mutex_destroy(&t->ssl_lock);
	free(t);
}
