#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "adapter/config/config.h"
#include "harness.h"

static struct sbx_config *parse_listen(const char *value, sbx_error_t *err)
{
	json_t *v = json_pack("{s:s}", "metrics_listen", value);
	struct sbx_config *cfg = sbx_config_parse(v, err);
	json_decref(v);
	return cfg;
}

static int fails_with(json_t *value, const char *needle)
{
	json_t *v = json_pack("{s:o}", "metrics_listen", value);
	sbx_error_t err = NULL;
	struct sbx_config *cfg = sbx_config_parse(v, &err);
	json_decref(v);
	int ok = cfg == NULL && err != NULL && strstr(sbx_error_msg(err), "metrics_listen") != NULL &&
		 strstr(sbx_error_msg(err), needle) != NULL;
	if (!ok)
		fprintf(stderr, "# got: %s\n", cfg == NULL ? sbx_error_msg(err) : "(accepted)");
	sbx_config_free(cfg);
	sbx_error_free(&err);
	return ok;
}

TEST(metrics_listen_is_off_by_default)
{
	sbx_error_t err = NULL;
	struct sbx_config *cfg = sbx_config_parse(NULL, &err);
	CHECK(cfg != NULL);
	CHECK_INT(cfg->metrics_listen.kind, SBX_METRICS_OFF);
	sbx_config_free(cfg);
}

TEST(metrics_listen_takes_loopback_host_port)
{
	sbx_error_t err = NULL;
	struct sbx_config *cfg = parse_listen("127.0.0.1:9464", &err);
	CHECK(cfg != NULL);
	CHECK_INT(cfg->metrics_listen.kind, SBX_METRICS_TCP);
	CHECK_STR(cfg->metrics_listen.text, "127.0.0.1:9464");
	const struct sockaddr_in *sin = (const struct sockaddr_in *)&cfg->metrics_listen.addr;
	CHECK_INT(sin->sin_family, AF_INET);
	CHECK_INT(ntohs(sin->sin_port), 9464);
	CHECK_INT(ntohl(sin->sin_addr.s_addr), 0x7f000001);
	sbx_config_free(cfg);

	cfg = parse_listen("127.1.2.3:1", &err);
	CHECK(cfg != NULL);
	CHECK_INT(ntohl(((const struct sockaddr_in *)&cfg->metrics_listen.addr)->sin_addr.s_addr), 0x7f010203);
	sbx_config_free(cfg);

	cfg = parse_listen("localhost:65535", &err);
	CHECK(cfg != NULL);
	CHECK_INT(ntohl(((const struct sockaddr_in *)&cfg->metrics_listen.addr)->sin_addr.s_addr), 0x7f000001);
	sbx_config_free(cfg);

	cfg = parse_listen("[::1]:9464", &err);
	CHECK(cfg != NULL);
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&cfg->metrics_listen.addr;
	CHECK_INT(sin6->sin6_family, AF_INET6);
	CHECK_INT(ntohs(sin6->sin6_port), 9464);
	CHECK(IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr));
	sbx_config_free(cfg);
}

TEST(metrics_listen_takes_a_unix_socket_path)
{
	sbx_error_t err = NULL;
	struct sbx_config *cfg = parse_listen("/tmp/sandbox-libkrun-metrics.sock", &err);
	CHECK(cfg != NULL);
	CHECK_INT(cfg->metrics_listen.kind, SBX_METRICS_UNIX);
	const struct sockaddr_un *sun = (const struct sockaddr_un *)&cfg->metrics_listen.addr;
	CHECK_INT(sun->sun_family, AF_UNIX);
	CHECK_STR(sun->sun_path, "/tmp/sandbox-libkrun-metrics.sock");
	sbx_config_free(cfg);
}

TEST(metrics_listen_refuses_what_is_not_loopback)
{
	CHECK(fails_with(json_string("0.0.0.0:9464"), "is not a loopback address"));
	CHECK(fails_with(json_string("10.0.0.1:9464"), "is not a loopback address"));
	CHECK(fails_with(json_string("128.0.0.1:9464"), "is not a loopback address"));
	CHECK(fails_with(json_string("[::]:9464"), "is not a loopback address"));
	CHECK(fails_with(json_string("[::ffff:127.0.0.1]:9464"), "is not a loopback address"));
	CHECK(fails_with(json_string("example.com:9464"), "is not a loopback address"));
	CHECK(fails_with(json_string(":9464"), "is not a loopback address"));
	CHECK(fails_with(json_string("::1:9464"), "is not a loopback address"));
	CHECK(fails_with(json_string("[127.0.0.1]:9464"), "is not a loopback address"));
}

TEST(metrics_listen_refuses_bad_values)
{
	CHECK(fails_with(json_string("127.0.0.1"), "expected a loopback host:port"));
	CHECK(fails_with(json_string("127.0.0.1:0"), "port must be 1..65535"));
	CHECK(fails_with(json_string("127.0.0.1:65536"), "port must be 1..65535"));
	CHECK(fails_with(json_string("127.0.0.1:-1"), "port must be 1..65535"));
	CHECK(fails_with(json_string("127.0.0.1:80x"), "port must be 1..65535"));
	CHECK(fails_with(json_string("127.0.0.1:"), "port must be 1..65535"));
	CHECK(fails_with(json_string(""), "expected a loopback host:port"));
	CHECK(fails_with(json_integer(9464), "expected a loopback host:port"));
	CHECK(fails_with(json_true(), "expected a loopback host:port"));
	CHECK(fails_with(json_stringn("127.0.0.1:80\0x", 14), "expected a loopback host:port"));
	CHECK(fails_with(json_string("relative/path.sock"), "expected a loopback host:port"));
	CHECK(fails_with(json_string("/no-such-dir-for-metrics/m.sock"), "the directory of the socket"));
	CHECK(fails_with(json_string("/etc/passwd/m.sock"), "is not a directory"));
	CHECK(fails_with(json_string("/tmp/"), "names a directory"));
	char long_path[200];
	memset(long_path, 'a', sizeof(long_path) - 1);
	long_path[0] = '/';
	long_path[sizeof(long_path) - 1] = '\0';
	CHECK(fails_with(json_string(long_path), "a unix socket path is at most 107 bytes"));
}

TEST(metrics_listen_from_elsewhere_names_its_source)
{
	struct sbx_metrics_listen l = { .kind = SBX_METRICS_OFF };
	sbx_error_t err = NULL;
	CHECK(sbx_metrics_listen_parse("III_SANDBOX_METRICS_LISTEN", "0.0.0.0:9464", &l, &err) < 0);
	CHECK(strncmp(sbx_error_msg(err), "III_SANDBOX_METRICS_LISTEN: ", 28) == 0);
	CHECK(strstr(sbx_error_msg(err), "config key") == NULL);
	sbx_error_free(&err);
	CHECK(sbx_metrics_listen_parse("III_SANDBOX_METRICS_LISTEN", NULL, &l, &err) < 0);
	sbx_error_free(&err);
	CHECK_INT(l.kind, SBX_METRICS_OFF);
	CHECK(sbx_metrics_listen_parse("III_SANDBOX_METRICS_LISTEN", "[::1]:9464", &l, &err) == 0);
	CHECK_INT(l.kind, SBX_METRICS_TCP);
	CHECK_STR(l.text, "[::1]:9464");
	sbx_metrics_listen_free(&l);
}
