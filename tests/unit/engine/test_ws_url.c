#include <stdlib.h>

#include "common/error.h"
#include "engine/ws_url.h"
#include "harness.h"

TEST(url_defaults)
{
	struct ws_url u;
	sbx_error_t err = NULL;
	CHECK_INT(ws_url_parse("ws://127.0.0.1", &u, &err), 0);
	CHECK(!u.tls);
	CHECK_STR(u.host, "127.0.0.1");
	CHECK_INT(u.port, 80);
	CHECK_STR(u.path, "/");
	CHECK_STR(u.authority, "127.0.0.1");
	ws_url_free(&u);

	CHECK_INT(ws_url_parse("WSS://engine.example.com", &u, &err), 0);
	CHECK(u.tls);
	CHECK_INT(u.port, 443);
	CHECK_STR(u.authority, "engine.example.com");
	ws_url_free(&u);
}

TEST(url_port_path_query)
{
	struct ws_url u;
	sbx_error_t err = NULL;
	CHECK_INT(ws_url_parse("ws://localhost:49134/ws/channels/abc?key=k%2F1&dir=read", &u, &err), 0);
	CHECK_STR(u.host, "localhost");
	CHECK_INT(u.port, 49134);
	CHECK_STR(u.path, "/ws/channels/abc?key=k%2F1&dir=read");
	CHECK_STR(u.authority, "localhost:49134");
	ws_url_free(&u);

	CHECK_INT(ws_url_parse("ws://h?x=1", &u, &err), 0);
	CHECK_STR(u.path, "/?x=1");
	ws_url_free(&u);

	/* An explicit default port is left out of the Host header. */
	CHECK_INT(ws_url_parse("wss://h:443/", &u, &err), 0);
	CHECK_STR(u.authority, "h");
	ws_url_free(&u);
}

TEST(url_ipv6)
{
	struct ws_url u;
	sbx_error_t err = NULL;
	CHECK_INT(ws_url_parse("ws://[::1]:8080/x", &u, &err), 0);
	CHECK_STR(u.host, "::1");
	CHECK_INT(u.port, 8080);
	CHECK_STR(u.authority, "[::1]:8080");
	ws_url_free(&u);
	CHECK_INT(ws_url_parse("wss://[2001:db8::7]", &u, &err), 0);
	CHECK_STR(u.host, "2001:db8::7");
	CHECK_INT(u.port, 443);
	ws_url_free(&u);
}

TEST(url_rejects)
{
	static const char *const bad[] = {
		"http://h/", "ws:/h", "ws://", "ws://:80", "ws://h:", "ws://h:0", "ws://h:65536", "ws://h:123456",
		"ws://h:8x", "ws://user@h/", "ws://h/#frag", "ws://h#f", "ws://[::1", "ws://[zz::1]/", "ws://[::1]x/",
		"ws://h/a b", "ws://h/a\r\nX-Injected: 1", "ws://h\x01/", "ws://h/\x7f", "ws://ho st/", "h:80",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ws_url u;
		sbx_error_t err = NULL;
		if (ws_url_parse(bad[i], &u, &err) == 0) {
			ws_url_free(&u);
			CHECK_STR(bad[i], "(rejected)");
		}
		CHECK(err != NULL);
		sbx_error_free(&err);
	}
	struct ws_url u;
	sbx_error_t err = NULL;
	CHECK_INT(ws_url_parse(NULL, &u, &err), -1);
	sbx_error_free(&err);
}

TEST(url_channel)
{
	sbx_error_t err = NULL;
	char *u = ws_url_channel("ws://127.0.0.1:49134/ignored?x", "1c7f-ab", "k+/=&? %", "read", &err);
	CHECK(u != NULL);
	CHECK_STR(u, "ws://127.0.0.1:49134/ws/channels/1c7f-ab?key=k%2B%2F%3D%26%3F%20%25&dir=read");
	free(u);
	u = ws_url_channel("wss://[::1]", "c", "k", "write", &err);
	CHECK(u != NULL);
	CHECK_STR(u, "wss://[::1]/ws/channels/c?key=k&dir=write");
	/* What it builds parses back. */
	struct ws_url parsed;
	CHECK_INT(ws_url_parse(u, &parsed, &err), 0);
	CHECK_STR(parsed.path, "/ws/channels/c?key=k&dir=write");
	ws_url_free(&parsed);
	free(u);
	CHECK(ws_url_channel("ws://h", "c", "k", "both", &err) == NULL);
	sbx_error_free(&err);
	CHECK(ws_url_channel("ws://h", "", "k", "read", &err) == NULL);
	sbx_error_free(&err);
	CHECK(ws_url_channel("http://h", "c", "k", "read", &err) == NULL);
	sbx_error_free(&err);
}
