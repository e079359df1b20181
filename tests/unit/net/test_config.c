/* network_policy parsing (bad values name the field), the default host
 * port from III_URL, and the helper's command line. */
#include <stdlib.h>

#include "harness.h"
#include "net/net_config.h"

static int parse(const char *text, struct net_config *c, char *msg, size_t cap)
{
	json_t *v = json_loads(text, 0, NULL);
	sbx_error_t err = NULL;
	int rc = net_config_parse(v, c, &err);
	snprintf(msg, cap, "%s", rc < 0 ? sbx_error_msg(err) : "");
	sbx_error_free(&err);
	json_decref(v);
	return rc;
}

TEST(default_host_port_is_the_loopback_engines)
{
	CHECK_INT(net_loopback_port("ws://127.0.0.1:49134"), 49134);
	CHECK_INT(net_loopback_port("ws://localhost:8080/ws"), 8080);
	CHECK_INT(net_loopback_port("ws://[::1]:7000"), 7000);
	CHECK_INT(net_loopback_port("wss://127.0.0.2"), 443);
	CHECK_INT(net_loopback_port("ws://engine.example:49134"), 0);
	CHECK_INT(net_loopback_port("ws://10.0.0.1:49134"), 0);
	CHECK_INT(net_loopback_port("http://127.0.0.1:1"), 0);
	setenv("III_URL", "ws://127.0.0.1:5555", 1);
	struct net_config c;
	net_config_init(&c);
	CHECK_INT(c.policy.n_host_ports, 1);
	CHECK_INT(c.policy.host_ports[0], 5555);
	net_config_free(&c);
	setenv("III_URL", "wss://engine.example", 1);
	net_config_init(&c);
	CHECK_INT(c.policy.n_host_ports, 0);
	net_config_free(&c);
	unsetenv("III_URL");
}

/* serve's warning at start: guests reach the engine when its loopback port
 * is among host_ports, as it is by default. */
TEST(engine_reachable_when_host_ports_hold_its_loopback_port)
{
	setenv("III_URL", "ws://127.0.0.1:5555", 1);
	struct net_config c;
	net_config_init(&c);
	CHECK_INT(net_config_engine_reachable(&c, "ws://127.0.0.1:5555"), 5555);
	CHECK_INT(net_config_engine_reachable(&c, "ws://localhost:5555/ws"), 5555);
	CHECK_INT(net_config_engine_reachable(&c, "ws://127.0.0.1:6666"), 0);
	CHECK_INT(net_config_engine_reachable(&c, "ws://engine.example:5555"), 0);
	char msg[256];
	CHECK_INT(parse("{\"host_ports\":[]}", &c, msg, sizeof(msg)), 0);
	CHECK_INT(net_config_engine_reachable(&c, "ws://127.0.0.1:5555"), 0);
	CHECK_INT(parse("{\"host_ports\":[8000,5555]}", &c, msg, sizeof(msg)), 0);
	CHECK_INT(net_config_engine_reachable(&c, "ws://[::1]:5555"), 5555);
	net_config_free(&c);
	unsetenv("III_URL");
}

TEST(parses_a_policy_and_builds_the_helper_command_line)
{
	struct net_config c;
	net_config_init(&c);
	char msg[256];
	CHECK_INT(parse("{\"allow\":[\"203.0.113.0/24\",\"*.pypi.org\"],\"deny\":[\"203.0.113.9\"],\"host_ports\":[8000,"
			"9000],\"dns_servers\":[\"127.0.0.1:5353\",\"192.0.2.53\"]}",
			&c, msg, sizeof(msg)),
		  0);
	CHECK_STR(c.dns_servers, "127.0.0.1:5353,192.0.2.53:53");
	sbx_error_t err = NULL;
	char **args = net_config_helper_args(&c, NULL, "ID", &err);
	CHECK(args != NULL);
	const char *want[] = { "--sandbox", "ID", "--host-port", "8000", "--host-port", "9000", "--allow", "203.0.113.0/24",
			       "--allow", "*.pypi.org", "--deny", "203.0.113.9", "--dns-servers",
			       "127.0.0.1:5353,192.0.2.53:53", NULL };
	for (int i = 0; want[i] != NULL; i++)
		CHECK_STR(args[i], want[i]);
	CHECK(args[14] == NULL);
	net_args_free(args);
	/* an empty list means no resolver at all */
	CHECK_INT(parse("{\"dns_servers\":[]}", &c, msg, sizeof(msg)), 0);
	CHECK_STR(c.dns_servers, "");
	net_config_free(&c);
}

TEST(bad_values_name_the_field)
{
	const char *bad[][2] = {
		{ "[]", "network_policy" },
		{ "{\"allow\":\"x\"}", "allow" },
		{ "{\"allow\":[\"10.0.0.1/8\"]}", "allow[0]" },
		{ "{\"deny\":[1]}", "deny[0]" },
		{ "{\"host_ports\":[0]}", "host_ports[0]" },
		{ "{\"host_ports\":[65536]}", "host_ports[0]" },
		{ "{\"dns_servers\":[\"dns.example\"]}", "dns_servers[0]" },
		{ "{\"dns_servers\":[\"1.1.1.1:0\"]}", "dns_servers[0]" },
		{ "{\"alow\":[]}", "alow" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct net_config c;
		net_config_init(&c);
		char msg[256];
		if (parse(bad[i][0], &c, msg, sizeof(msg)) == 0 || strstr(msg, bad[i][1]) == NULL)
			sbx_test_fail(__FILE__, __LINE__, "%s: '%s'", bad[i][0], msg);
		net_config_free(&c);
	}
}
