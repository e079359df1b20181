/* wss:// against an in-process TLS server: a certificate the trust store
 * holds is accepted; an untrusted one, or one for another host, is not.
 * SSL_CERT_FILE points OpenSSL's default store at the test CA. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "engine/ws_conn.h"
#include "engine/ws_handshake.h"
#include "harness.h"

struct cert {
	EVP_PKEY *key;
	X509 *x509;
};

static int make_cert(struct cert *c, const char *san)
{
	c->key = EVP_EC_gen("P-256");
	c->x509 = X509_new();
	if (c->key == NULL || c->x509 == NULL)
		return -1;
	X509_set_version(c->x509, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(c->x509), (long)arc4random_uniform(1u << 30));
	X509_gmtime_adj(X509_getm_notBefore(c->x509), -60);
	X509_gmtime_adj(X509_getm_notAfter(c->x509), 3600);
	X509_set_pubkey(c->x509, c->key);
	X509_NAME *name = X509_get_subject_name(c->x509);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"sbx-test", -1, -1, 0);
	X509_set_issuer_name(c->x509, name);
	X509V3_CTX ctx;
	X509V3_set_ctx(&ctx, c->x509, c->x509, NULL, NULL, 0);
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_alt_name, san);
	X509_EXTENSION *bc = X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints, "critical,CA:TRUE");
	if (ext == NULL || bc == NULL || !X509_add_ext(c->x509, ext, -1) || !X509_add_ext(c->x509, bc, -1))
		return -1;
	X509_EXTENSION_free(ext);
	X509_EXTENSION_free(bc);
	return X509_sign(c->x509, c->key, EVP_sha256()) > 0 ? 0 : -1;
}

static void free_cert(struct cert *c)
{
	EVP_PKEY_free(c->key);
	X509_free(c->x509);
}

struct server {
	int lfd, port;
	struct cert *cert;
	int served; /* 1 when the upgrade was answered */
};

/* Serves one connection: TLS, the 101 answer, then one text frame. */
static void *serve(void *arg)
{
	struct server *s = arg;
	int fd = accept(s->lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	SSL_CTX_use_certificate(ctx, s->cert->x509);
	SSL_CTX_use_PrivateKey(ctx, s->cert->key);
	SSL *ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	if (SSL_accept(ssl) == 1) {
		char req[4096];
		size_t n = 0;
		while (n < sizeof(req) - 1 && (n < 4 || memcmp(req + n - 4, "\r\n\r\n", 4) != 0)) {
			int r = SSL_read(ssl, req + n, 1);
			if (r <= 0)
				break;
			n += (size_t)r;
		}
		req[n] = '\0';
		char key[64] = "", accept_val[WS_ACCEPT_LEN + 1], resp[256];
		char *k = strcasestr(req, "\r\nSec-WebSocket-Key: ");
		sbx_error_t err = NULL;
		if (k != NULL && sscanf(k + 21, "%63[^\r]", key) == 1 && ws_handshake_accept(key, accept_val, &err) == 0) {
			int rl = snprintf(resp, sizeof(resp),
					  "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
					  "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n\x81\x02hi",
					  accept_val);
			SSL_write(ssl, resp, rl);
			s->served = 1;
			char sink[64];
			SSL_read(ssl, sink, sizeof(sink)); /* until the client goes */
		}
	}
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
	return NULL;
}

static int start_server(struct server *s, struct cert *c)
{
	memset(s, 0, sizeof(*s));
	s->cert = c;
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	if (bind(s->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s->lfd, 1) < 0 ||
	    getsockname(s->lfd, (struct sockaddr *)&a, &al) < 0)
		return -1;
	s->port = ntohs(a.sin_port);
	return 0;
}

/* Connects to wss://127.0.0.1:<port>; 0 with the first text message in got. */
static int try_connect(struct cert *c, char *got, size_t gotlen, char *errbuf, size_t errlen)
{
	struct server s;
	if (start_server(&s, c) < 0)
		return -1;
	pthread_t t;
	pthread_create(&t, NULL, serve, &s);
	char url[64];
	snprintf(url, sizeof(url), "wss://127.0.0.1:%d/", s.port);
	sbx_error_t err = NULL;
	struct ws_conn *conn = ws_conn_open(url, NULL, 5000, -1, 0, &err);
	int ok = -1;
	if (conn != NULL) {
		struct ws_message m;
		if (ws_conn_recv(conn, &m, 5000, &err) == 1 && m.opcode == WS_OP_TEXT) {
			snprintf(got, gotlen, "%.*s", (int)m.len, (const char *)m.data);
			ok = 0;
		}
		ws_conn_free(conn);
	}
	snprintf(errbuf, errlen, "%s", sbx_error_msg(err));
	sbx_error_free(&err);
	pthread_join(t, NULL);
	close(s.lfd);
	return ok;
}

static struct cert trusted, untrusted, other_host;

TEST(tls_trusted_certificate_is_accepted)
{
	CHECK_INT(make_cert(&trusted, "IP:127.0.0.1"), 0);
	CHECK_INT(make_cert(&untrusted, "IP:127.0.0.1"), 0);
	CHECK_INT(make_cert(&other_host, "DNS:engine.example.com"), 0);
	char path[] = "/tmp/sbx-engine-ca-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	FILE *f = fdopen(fd, "w");
	PEM_write_X509(f, trusted.x509);
	PEM_write_X509(f, other_host.x509);
	fclose(f);
	/* Read once, when the client's shared SSL_CTX is created. */
	setenv("SSL_CERT_FILE", path, 1);
	char got[16] = "", errmsg[512];
	int r = try_connect(&trusted, got, sizeof(got), errmsg, sizeof(errmsg));
	unlink(path);
	if (r != 0)
		printf("# %s\n", errmsg);
	CHECK_INT(r, 0);
	CHECK_STR(got, "hi");
}

TEST(tls_untrusted_certificate_is_rejected)
{
	char got[16] = "", errmsg[512];
	CHECK_INT(try_connect(&untrusted, got, sizeof(got), errmsg, sizeof(errmsg)), -1);
	CHECK(strstr(errmsg, "certificate") != NULL);
}

TEST(tls_certificate_for_another_host_is_rejected)
{
	char got[16] = "", errmsg[512];
	CHECK_INT(try_connect(&other_host, got, sizeof(got), errmsg, sizeof(errmsg)), -1);
	CHECK(strstr(errmsg, "certificate") != NULL);
	free_cert(&trusted);
	free_cert(&untrusted);
	free_cert(&other_host);
}

__attribute__((constructor)) static void quiet(void)
{
	sbx_log_set_level(SBX_LOG_ERROR);
}
