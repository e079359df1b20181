/* create, exec, run, list and stop through sbx_adapter_call() over a fake
 * backend: the admission rules, limits, run's steps and wrapping, and the
 * stop/exec race, without booting anything. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "adapter/adapter.h"
#include "adapter/reaper.h"
#include "harness.h"
#include "adapter_call.h"

struct fake {
	pthread_mutex_t lock;
	int boots, stops, vms_live;
	bool fail_boot, fail_write, block;
	bool time_out; /* an exec prints, then runs past its deadline */
	bool hold_stop; /* a stop waits until the test clears it */
	char argv[4][64];
	char cwd[64];
	uint64_t timeout_ms;
	char written[8][64];
	int n_written;
	char stdin_seen[64];
	bool in_exec;
	char net_args[512]; /* the last boot's helper options, space-separated */
	size_t n_publish;   /* and its published ports' listeners, */
	bool publish_listening; /* each a listening socket when it booted */
	char env0[128];     /* and its first env entry */
};

static struct fake F = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void *fake_boot(void *ctx, const struct sbx_boot_request *req, sbx_error_t *err)
{
	pthread_mutex_lock(&F.lock);
	bool fail = F.fail_boot;
	if (!fail) {
		F.boots++;
		F.vms_live++;
		F.net_args[0] = '\0';
		for (size_t i = 0; req->net_args != NULL && req->net_args[i] != NULL; i++) {
			size_t n = strlen(F.net_args);
			snprintf(F.net_args + n, sizeof(F.net_args) - n, "%s%s", i ? " " : "", req->net_args[i]);
		}
		F.n_publish = req->n_publish;
		F.publish_listening = true;
		for (size_t i = 0; i < req->n_publish; i++) {
			int on = 0;
			socklen_t len = sizeof(on);
			F.publish_listening = F.publish_listening &&
					      getsockopt(req->publish_fds[i], SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 &&
					      on == 1;
		}
		const char *e0 = json_string_value(json_array_get(req->env, 0));
		snprintf(F.env0, sizeof(F.env0), "%s", e0 != NULL ? e0 : "");
	}
	pthread_mutex_unlock(&F.lock);
	if (fail)
		return sbx_error_scode(err, "S300", "VM did not boot: fake"), NULL;
	/* One byte: non-zero once the test "kills" the VM. */
	return calloc(1, 1);
}

static bool fake_alive(void *vm)
{
	return *(volatile char *)vm == 0;
}

static int fake_exec(void *vm, const struct sbx_exec_request *req, struct sbx_exec_result *res, sbx_error_t *err)
{
	if (!fake_alive(vm))
		return sbx_error_scode(err, "S300", "the sandbox's VM exited: killed by signal 9 (Killed)");
	pthread_mutex_lock(&F.lock);
	bool end = false;
	for (int i = 0; i < 4; i++) {
		end = end || req->argv[i] == NULL;
		snprintf(F.argv[i], sizeof(F.argv[i]), "%s", end ? "" : req->argv[i]);
	}
	snprintf(F.cwd, sizeof(F.cwd), "%s", req->cwd != NULL ? req->cwd : "(null)");
	snprintf(F.stdin_seen, sizeof(F.stdin_seen), "%.*s", (int)req->stdin_len,
		 req->stdin_data != NULL ? (const char *)req->stdin_data : "");
	F.timeout_ms = req->timeout_ms;
	F.in_exec = true;
	bool block = F.block;
	pthread_mutex_unlock(&F.lock);
	/* A blocked exec runs until the sandbox is stopped, like a real one
	 * polling its cancel callback. */
	while (block && !req->cancelled(req->cancel_ud))
		usleep(1000);
	pthread_mutex_lock(&F.lock);
	F.in_exec = false;
	bool time_out = F.time_out;
	pthread_mutex_unlock(&F.lock);
	/* Output before the end: only S200's envelope carries it. */
	if (block || time_out) {
		exec_output_append(&res->out, "start\n\xff", 7, err);
		char chunk[4096]; /* 1 MiB and one chunk more: over the cap */
		memset(chunk, 'e', sizeof(chunk));
		for (size_t n = 0; n <= EXEC_OUTPUT_CAP; n += sizeof(chunk))
			exec_output_append(&res->err, chunk, sizeof(chunk), err);
	}
	if (block)
		return sbx_error_scode(err, "S004", "stopped while running");
	if (time_out)
		return sbx_error_scode(err, "S200", "exec timed out after %llu ms", (unsigned long long)req->timeout_ms);
	exec_output_append(&res->out, "out\xff\n", 5, err);
	res->exit_code = strcmp(req->argv[0], "false") == 0 ? 1 : 0;
	res->duration_ms = 7;
	return 0;
}

static int fake_write(void *vm, const char *path, uint32_t mode, bool parents, const void *data, size_t len,
		      sbx_error_t *err)
{
	pthread_mutex_lock(&F.lock);
	bool fail = F.fail_write;
	if (!fail && F.n_written < 8)
		snprintf(F.written[F.n_written++], 64, "%s:%o:%d:%.*s", path, mode, parents, (int)len,
			 (const char *)data);
	pthread_mutex_unlock(&F.lock);
	if (fail)
		return sbx_error_scode(err, "S215", "%s", path);
	return 0;
}

static void fake_stop(void *vm)
{
	pthread_mutex_lock(&F.lock);
	while (F.hold_stop) {
		pthread_mutex_unlock(&F.lock);
		usleep(1000);
		pthread_mutex_lock(&F.lock);
	}
	F.stops++;
	F.vms_live--;
	pthread_mutex_unlock(&F.lock);
	free(vm);
}

/* Every fake VM's network last moved data net_offset_ms from now (0 = never). */
static int64_t net_offset_ms;

static int64_t fake_net_activity(void *vm)
{
	if (net_offset_ms == 0)
		return 0;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + net_offset_ms;
}

/* What the fake backend's templates hold on the host. */
static uint64_t templates_held_mib;

static uint64_t fake_templates_mib(void *ctx)
{
	return templates_held_mib;
}

static const struct sbx_backend_ops fake_ops = { .boot = fake_boot, .exec = fake_exec, .write_file = fake_write,
						  .stop = fake_stop, .alive = fake_alive, .net_activity_ms = fake_net_activity,
						  .templates_mib = fake_templates_mib };

static struct sbx_adapter *make(const char *config)
{
	pthread_mutex_lock(&F.lock);
	F.fail_boot = F.fail_write = F.block = F.hold_stop = F.time_out = false;
	F.n_written = 0;
	pthread_mutex_unlock(&F.lock);
	json_t *v = json_loads(config, 0, NULL);
	sbx_error_t err = NULL;
	struct sbx_config *cfg = sbx_config_parse(v, &err);
	json_decref(v);
	struct sbx_adapter *a = cfg != NULL ? sbx_adapter_new(cfg, &err) : NULL;
	if (a != NULL && sbx_adapter_use_backend(a, &fake_ops, NULL, &err) < 0) {
		sbx_adapter_free(a);
		a = NULL;
	}
	sbx_error_free(&err);
	return a;
}

#define CFG "{\"image_allowlist\":[\"python\",\"node\"]"

static char *create(struct sbx_adapter *a, const char *payload)
{
	json_t *r = adapter_call_json(a, "create", payload);
	char *id = jstr(r, "sandbox_id") != NULL ? strdup(jstr(r, "sandbox_id")) : NULL;
	json_decref(r);
	return id;
}

TEST(create_exec_list_stop)
{
	struct sbx_adapter *a = make(CFG "}");
	CHECK(a != NULL);
	json_t *r = adapter_call_json(a, "create", "{\"image\":\"python\",\"name\":\"n1\"}");
	CHECK_STR(jstr(r, "image"), "python");
	char id[64];
	snprintf(id, sizeof(id), "%s", jstr(r, "sandbox_id"));
	json_decref(r);
	CHECK_INT(strlen(id), 36);
	char req[256];
	snprintf(req, sizeof(req), "{\"sandbox_id\":\"%s\",\"cmd\":\"echo 'a b'\",\"stdin\":\"aGkK\"}", id);
	r = adapter_call_json(a, "exec", req);
	CHECK_STR(jstr(r, "stdout"), "out\xef\xbf\xbd\n");
	CHECK_INT(json_integer_value(json_object_get(r, "exit_code")), 0);
	CHECK(json_is_true(json_object_get(r, "success")));
	CHECK(json_is_false(json_object_get(r, "timed_out")));
	CHECK(json_is_false(json_object_get(r, "stdout_truncated")));
	CHECK_INT(json_integer_value(json_object_get(r, "duration_ms")), 7);
	json_decref(r);
	CHECK_STR(F.argv[0], "echo");
	CHECK_STR(F.argv[1], "a b");
	CHECK_STR(F.stdin_seen, "hi\n");
	CHECK_STR(F.cwd, "(null)");
	CHECK_INT(F.timeout_ms, 300000);
	r = adapter_call_json(a, "list", "{}");
	json_t *sbs = json_object_get(r, "sandboxes");
	CHECK_INT(json_array_size(sbs), 1);
	CHECK_STR(jstr(json_array_get(sbs, 0), "name"), "n1");
	json_decref(r);
	snprintf(req, sizeof(req), "{\"sandbox_id\":\"%s\"}", id);
	int stops = F.stops;
	r = adapter_call_json(a, "stop", req);
	CHECK(json_is_true(json_object_get(r, "stopped")));
	json_decref(r);
	CHECK_INT(F.stops, stops + 1);
	r = adapter_call_json(a, "stop", req);
	CHECK_STR(jstr(r, "code"), "S002");
	json_decref(r);
	snprintf(req, sizeof(req), "{\"sandbox_id\":\"%s\",\"cmd\":\"ls\"}", id);
	r = adapter_call_json(a, "exec", req);
	CHECK_STR(jstr(r, "code"), "S002");
	json_decref(r);
	sbx_adapter_free(a);
}

/* Execs {"sandbox_id": id, <fields>} and returns the reply. */
static json_t *exec_in(struct sbx_adapter *a, const char *id, const char *fields)
{
	char req[512];
	snprintf(req, sizeof(req), "{\"sandbox_id\":\"%s\",%s}", id, fields);
	return adapter_call_json(a, "exec", req);
}

TEST(exec_workdir_resolves_against_root)
{
	struct sbx_adapter *a = make(CFG "}");
	CHECK(a != NULL);
	char *id = create(a, "{\"image\":\"python\"}");
	CHECK(id != NULL);
	const char *cases[][2] = { { "tmp", "/tmp" }, { "/tmp", "/tmp" }, { "a/b", "/a/b" }, { "", "(null)" } };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char fields[128];
		snprintf(fields, sizeof(fields), "\"cmd\":\"pwd\",\"workdir\":\"%s\"", cases[i][0]);
		json_t *r = exec_in(a, id, fields);
		CHECK_INT(json_integer_value(json_object_get(r, "exit_code")), 0);
		json_decref(r);
		CHECK_STR(F.cwd, cases[i][1]);
	}
	free(id);
	sbx_adapter_free(a);
}

/* A NUL byte in anything that becomes a C string is S001 before the guest
 * sees a silently shortened string. */
TEST(exec_nul_bytes_are_s001)
{
	struct sbx_adapter *a = make(CFG "}");
	CHECK(a != NULL);
	char *id = create(a, "{\"image\":\"python\"}");
	CHECK(id != NULL);
	snprintf(F.argv[0], sizeof(F.argv[0]), "untouched");
	const char *cases[][2] = {
		{ "\"argv\":[\"echo\",\"a\\u0000b\"]", "argv" },
		{ "\"cmd\":\"echo\\u0000 x\"", "cmd" },
		{ "\"cmd\":\"echo\",\"args\":[\"\\u0000\"]", "args" },
		{ "\"cmd\":\"true\",\"env\":{\"A\":\"x\\u0000y\"}", "env" },
		{ "\"cmd\":\"true\",\"env\":[\"B\\u0000=1\"]", "env" },
		{ "\"cmd\":\"pwd\",\"workdir\":\"/tmp\\u0000/x\"", "workdir" },
		{ "\"cmd\":\"pwd\",\"stdin\":\"aGk\\u0000K\"", "stdin" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *r = exec_in(a, id, cases[i][0]);
		CHECK_STR(jstr(r, "code"), "S001");
		char want[64];
		snprintf(want, sizeof(want), "invalid request: %s contains a NUL byte", cases[i][1]);
		CHECK_STR(jstr(r, "message"), want);
		json_decref(r);
	}
	CHECK_STR(F.argv[0], "untouched");
	char req[128];
	snprintf(req, sizeof(req), "{\"sandbox_id\":\"%s\\u0000\",\"cmd\":\"pwd\"}", id);
	json_t *r = adapter_call_json(a, "exec", req);
	CHECK_STR(jstr(r, "message"), "invalid request: sandbox_id contains a NUL byte");
	json_decref(r);
	r = adapter_call_json(a, "create", "{\"image\":\"python\\u0000x\"}");
	CHECK_STR(jstr(r, "message"), "invalid request: image contains a NUL byte");
	json_decref(r);
	free(id);
	sbx_adapter_free(a);
}

TEST(create_network_rewrites_env_and_passes_the_policy)
{
	struct sbx_adapter *a = make(CFG ",\"network_policy\":{\"host_ports\":[8000],\"allow\":[\"203.0.113.0/24\","
				     "\"*.example.org\"],\"dns_servers\":[\"127.0.0.1:5353\"]}}");
	CHECK(a != NULL);
	char *id = create(a, "{\"image\":\"python\",\"network\":true,\"env\":[\"U=ws://localhost:49134/x "
			     "http://127.0.0.1:8000 ://localhost\"]}");
	CHECK(id != NULL);
	CHECK_STR(F.env0, "U=ws://10.0.2.2:49134/x http://10.0.2.2:8000 ://localhost");
	char want[512];
	snprintf(want, sizeof(want),
		 "--sandbox %s --host-port 8000 --allow 203.0.113.0/24 --allow *.example.org --dns-servers "
		 "127.0.0.1:5353",
		 id);
	CHECK_STR(F.net_args, want);
	free(id);
	/* without network: no NIC, no rewrite */
	id = create(a, "{\"image\":\"python\",\"env\":[\"U=ws://localhost:1/\"]}");
	CHECK(id != NULL);
	CHECK_STR(F.net_args, "");
	CHECK_STR(F.env0, "U=ws://localhost:1/");
	free(id);
	/* narrowing passes the sandbox's rules; widening is S001 naming the rule */
	id = create(a, "{\"image\":\"python\",\"network\":{\"allow\":[\"203.0.113.8/29:443\",\"a.example.org\"],"
		       "\"deny\":[\"b.example.org\"]}}");
	CHECK(id != NULL);
	CHECK(strstr(F.net_args, "--sandbox-allow 203.0.113.8/29:443 --sandbox-allow a.example.org --sandbox-deny "
				 "b.example.org") != NULL);
	free(id);
	json_t *r = adapter_call_json(a, "create", "{\"image\":\"python\",\"network\":{\"allow\":[\"198.51.100.0/24\"]}}");
	CHECK_STR(jstr(r, "code"), "S001");
	CHECK(strstr(jstr(r, "message"), "198.51.100.0/24") != NULL);
	json_decref(r);
	r = adapter_call_json(a, "create", "{\"image\":\"python\",\"network\":{\"allow\":[\"example.org\"]}}");
	CHECK_STR(jstr(r, "code"), "S001");
	json_decref(r);
	r = adapter_call_json(a, "create", "{\"image\":\"python\",\"network\":{\"allow\":[\"not a rule\"]}}");
	CHECK_STR(jstr(r, "code"), "S001");
	json_decref(r);
	sbx_adapter_free(a);
}

/* The list entry of id (borrowed from list), NULL when absent. */
static json_t *listed(json_t *list, const char *id)
{
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(list, "sandboxes"), i, e) {
		if (strcmp(jstr(e, "sandbox_id"), id) == 0)
			return e;
	}
	return NULL;
}

/* r (taken) is an error of this S-code whose message holds needle. */
static bool failed(json_t *r, const char *code, const char *needle)
{
	bool ok = jstr(r, "code") != NULL && strcmp(jstr(r, "code"), code) == 0 && jstr(r, "message") != NULL &&
		  strstr(jstr(r, "message"), needle) != NULL;
	json_decref(r);
	return ok;
}

TEST(create_ports_publishes_and_refuses)
{
	struct sbx_adapter *a = make(CFG ",\"publish_port_range\":[1024,65535],\"publish_max_connections\":9}");
	CHECK(a != NULL);
	/* without network: ingress only, the listeners handed to the VM */
	json_t *r = adapter_call_json(a, "create", "{\"image\":\"python\",\"ports\":[8000,{\"guest\":9000,\"host\":0}]}");
	char id[64];
	snprintf(id, sizeof(id), "%s", jstr(r, "sandbox_id") != NULL ? jstr(r, "sandbox_id") : "");
	json_t *ports = json_object_get(r, "ports");
	CHECK_INT(json_array_size(ports), 2);
	CHECK_INT(json_integer_value(json_object_get(json_array_get(ports, 0), "guest")), 8000);
	CHECK_INT(json_integer_value(json_object_get(json_array_get(ports, 1), "guest")), 9000);
	CHECK_STR(jstr(json_array_get(ports, 0), "address"), "127.0.0.1");
	json_int_t h0 = json_integer_value(json_object_get(json_array_get(ports, 0), "host"));
	json_int_t h1 = json_integer_value(json_object_get(json_array_get(ports, 1), "host"));
	CHECK(h0 > 0 && h1 > 0 && h0 != h1);
	CHECK_INT(json_object_size(r), 3);
	char want[512];
	snprintf(want, sizeof(want),
		 "--sandbox %s --deny 0.0.0.0/0 --dns-servers  --publish-max 9 --publish 8000 --publish 9000", id);
	CHECK_STR(F.net_args, want);
	CHECK_INT(F.n_publish, 2);
	CHECK(F.publish_listening);
	/* list: the same ports; a sandbox without ports has the contract's fields only */
	char *plain = create(a, "{\"image\":\"python\"}");
	CHECK(plain != NULL);
	CHECK_INT(F.n_publish, 0);
	json_t *l = adapter_call_json(a, "list", "{}");
	CHECK(json_equal(json_object_get(listed(l, id), "ports"), ports));
	CHECK(json_object_get(listed(l, plain), "ports") == NULL);
	CHECK_INT(json_object_size(listed(l, plain)), 8);
	json_decref(l);
	json_decref(r);
	free(plain);
	/* with network: the policy's options, then the ports' */
	char *netted = create(a, "{\"image\":\"python\",\"network\":true,\"ports\":[80]}");
	CHECK(netted != NULL);
	CHECK(strstr(F.net_args, " --publish-max 9 --publish 80") != NULL);
	CHECK(strstr(F.net_args, "--deny 0.0.0.0/0") == NULL);
	free(netted);
	/* a taken host port or one outside the range: S400 naming it, nothing booted */
	int taken = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	CHECK(bind(taken, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(taken, 1) == 0 &&
	      getsockname(taken, (struct sockaddr *)&sa, &len) == 0);
	int boots = F.boots;
	char num[16];
	snprintf(num, sizeof(num), "%u", ntohs(sa.sin_port));
	CHECK(failed(adapter_callf(a, "create", "{\"image\":\"python\",\"ports\":[1,{\"guest\":2,\"host\":%s}]}", num),
		     "S400", num));
	close(taken);
	CHECK(failed(adapter_call_json(a, "create", "{\"image\":\"python\",\"ports\":[{\"guest\":2,\"host\":80}]}"),
		     "S400", "host port 80 is outside"));
	CHECK_INT(F.boots, boots);
	l = adapter_call_json(a, "list", "{}");
	CHECK_INT(json_array_size(json_object_get(l, "sandboxes")), 3);
	json_decref(l);
	/* bad shapes: S001 naming the entry; run refuses ports */
	static const char *const bad[] = {
		"[0]", "[65536]", "[\"80\"]", "[{\"guest\":1,\"hots\":2}]", "[{\"host\":5}]",
		"[{\"guest\":1,\"host\":-1}]", "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = adapter_callf(a, "create", "{\"image\":\"python\",\"ports\":%s}", bad[i]);
		CHECK_STR(jstr(r, "code"), "S001");
		json_decref(r);
	}
	r = adapter_call_json(a, "create", "{\"image\":\"python\",\"ports\":\"x\"}");
	CHECK(jstr(r, "decode") != NULL && strstr(jstr(r, "decode"), "`ports`") != NULL);
	json_decref(r);
	CHECK(failed(adapter_call_json(a, "run", "{\"image\":\"python\",\"lang\":\"py\",\"code\":\"1\",\"ports\":[8000]}"),
		     "S001", "`ports`"));
	CHECK_INT(F.boots, boots);
	sbx_adapter_free(a);
}

TEST(create_rejections_and_limits)
{
	struct sbx_adapter *a = make(CFG ",\"max_concurrent_sandboxes\":1,\"max_exec_timeout_ms\":50}");
	CHECK(a != NULL);
	json_t *r = adapter_call_json(a, "create", "{\"image\":\"python\",\"cpus\":0}");
	CHECK_STR(jstr(r, "code"), "S001");
	json_decref(r);
	r = adapter_call_json(a, "create", "{\"image\":\"python\",\"memory_mb\":0}");
	CHECK_STR(jstr(r, "code"), "S001");
	json_decref(r);
	/* a wrongly typed `network` is a decode error, like every field's */
	r = adapter_call_json(a, "create", "{\"image\":\"python\",\"network\":1}");
	CHECK(jstr(r, "decode") != NULL && strstr(jstr(r, "decode"), "`network`") != NULL);
	json_decref(r);
	F.fail_boot = true;
	r = adapter_call_json(a, "create", "{\"image\":\"python\"}");
	CHECK_STR(jstr(r, "code"), "S300");
	json_decref(r);
	F.fail_boot = false;
	/* The failed boot released its slot. */
	char *id = create(a, "{\"image\":\"python\"}");
	CHECK(id != NULL);
	r = adapter_call_json(a, "create", "{\"image\":\"node\"}");
	CHECK_STR(jstr(r, "code"), "S400");
	json_decref(r);
	char req[256];
	snprintf(req, sizeof(req), "{\"sandbox_id\":\"%s\",\"cmd\":\"ls\",\"timeout_ms\":999}", id);
	json_decref(adapter_call_json(a, "exec", req));
	CHECK_INT(F.timeout_ms, 50); /* clamped by max_exec_timeout_ms */
	snprintf(req, sizeof(req), "{\"sandbox_id\":\"%s\",\"cmd\":\"ls\",\"stdin\":\"!!!\"}", id);
	r = adapter_call_json(a, "exec", req);
	CHECK_STR(jstr(r, "code"), "S001");
	json_decref(r);
	free(id);
	int live = F.vms_live;
	sbx_adapter_free(a); /* stops what is left */
	CHECK_INT(F.vms_live, live - 1);
}

struct bg {
	struct sbx_adapter *a;
	char req[256];
	json_t *reply;
};

static void *bg_exec(void *arg)
{
	struct bg *b = arg;
	b->reply = adapter_call_json(b->a, "exec", b->req);
	return NULL;
}

TEST(exec_cap_and_stop_while_running)
{
	struct sbx_adapter *a = make(CFG ",\"max_concurrent_exec_per_sandbox\":0}");
	CHECK(a != NULL);
	char *id = create(a, "{\"image\":\"python\"}");
	CHECK(id != NULL);
	F.block = true;
	struct bg b = { a, "", NULL };
	snprintf(b.req, sizeof(b.req), "{\"sandbox_id\":\"%s\",\"argv\":[\"sleep\",\"9\"]}", id);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, bg_exec, &b) == 0);
	for (int i = 0; i < 2000 && !F.in_exec; i++)
		usleep(1000);
	/* 0 means 1: the second exec is refused. */
	json_t *r = adapter_call_json(a, "exec", b.req);
	CHECK_STR(jstr(r, "code"), "S003");
	json_decref(r);
	r = adapter_call_json(a, "list", "{}");
	json_t *e = json_array_get(json_object_get(r, "sandboxes"), 0);
	CHECK_INT(json_integer_value(json_object_get(e, "exec_in_flight")), 1);
	CHECK_INT(json_integer_value(json_object_get(e, "exec_slots_free")), 0);
	json_decref(r);
	char req[128];
	snprintf(req, sizeof(req), "{\"sandbox_id\":\"%s\"}", id);
	r = adapter_call_json(a, "stop", req); /* waits for the running exec to give up */
	CHECK(json_is_true(json_object_get(r, "stopped")));
	json_decref(r);
	pthread_join(t, NULL);
	CHECK_STR(jstr(b.reply, "code"), "S004");
	/* The contract's envelope only: the output is S200's alone. */
	CHECK_INT(json_object_size(b.reply), 7);
	json_decref(b.reply);
	free(id);
	sbx_adapter_free(a);
}

/* run's VM is stopped on the reaper's thread: F.stops once it reached n
 * (or what it is after 5 s). */
static int stops_reach(int n)
{
	for (int i = 0; i < 5000; i++) {
		pthread_mutex_lock(&F.lock);
		int stops = F.stops;
		pthread_mutex_unlock(&F.lock);
		if (stops >= n)
			return stops;
		usleep(1000);
	}
	return F.stops;
}

static void *release_stops(void *arg)
{
	usleep(50000);
	pthread_mutex_lock(&F.lock);
	F.hold_stop = false;
	pthread_mutex_unlock(&F.lock);
	return arg;
}

TEST(run_replies_before_its_vm_stops)
{
	/* One sandbox fits the budget (256 + 64 + 32 = 352), two do not. */
	struct sbx_adapter *a = make(CFG ",\"memory_budget_mb\":400,\"tcg_cache_mb\":32,\"default_memory_mb\":256}");
	CHECK(a != NULL);
	int stops = F.stops, live = F.vms_live;
	F.hold_stop = true;
	json_t *r = adapter_call_json(a, "run", "{\"image\":\"python\",\"lang\":\"py\",\"code\":\"print(1)\"}");
	CHECK_INT(json_integer_value(json_object_get(r, "exit_code")), 0);
	json_decref(r);
	/* Replied while its VM is still being stopped; the sandbox is gone. */
	CHECK_INT(F.stops, stops);
	r = adapter_call_json(a, "list", "{}");
	CHECK_INT(json_array_size(json_object_get(r, "sandboxes")), 0);
	json_decref(r);
	/* A create the budget refuses until that VM is gone waits for it. */
	pthread_t t;
	CHECK(pthread_create(&t, NULL, release_stops, NULL) == 0);
	char *id = create(a, "{\"image\":\"python\"}");
	pthread_join(t, NULL);
	CHECK(id != NULL);
	CHECK_INT(F.stops, stops + 1);
	free(id);
	/* The daemon's end stops a VM still handed over, and the live one. */
	F.hold_stop = true;
	r = adapter_call_json(a, "run", "{\"image\":\"python\",\"lang\":\"py\",\"code\":\"print(1)\"}");
	json_decref(r);
	CHECK(pthread_create(&t, NULL, release_stops, NULL) == 0);
	sbx_adapter_free(a);
	pthread_join(t, NULL);
	CHECK_INT(F.vms_live, live);
}

TEST(run_steps_and_cleanup)
{
	struct sbx_adapter *a = make(CFG "}");
	CHECK(a != NULL);
	int stops = F.stops;
	json_t *r = adapter_call_json(a, "run", "{\"image\":\"python\",\"lang\":\"py\",\"code\":\"print(1)\","
				   "\"files\":[{\"path\":\"/w/lib.py\",\"content\":\"X=1\"}],\"env\":{\"K\":\"v\"}}");
	CHECK_INT(json_integer_value(json_object_get(r, "exit_code")), 0);
	CHECK(json_object_get(r, "sandbox_id") == NULL);
	json_decref(r);
	CHECK_INT(F.n_written, 2);
	CHECK_STR(F.written[0], "/w/lib.py:644:1:X=1");
	CHECK_STR(F.written[1], "/tmp/run.py:644:1:print(1)");
	CHECK_STR(F.argv[0], "python3");
	CHECK_STR(F.argv[1], "/tmp/run.py");
	CHECK_INT(stops_reach(stops + 1), stops + 1);
	/* keep_sandbox: the id comes back and the sandbox stays. */
	r = adapter_call_json(a, "run", "{\"image\":\"python\",\"lang\":\"false\",\"code\":\"\",\"keep_sandbox\":true}");
	CHECK(jstr(r, "sandbox_id") != NULL);
	CHECK(json_is_false(json_object_get(r, "success")));
	CHECK_STR(F.argv[1], "/tmp/run.txt");
	json_decref(r);
	r = adapter_call_json(a, "list", "{}");
	CHECK_INT(json_array_size(json_object_get(r, "sandboxes")), 1);
	json_decref(r);
	/* A failing write: wrapped with its step, the sandbox stopped. */
	F.fail_write = true;
	stops = F.stops;
	r = adapter_call_json(a, "run", "{\"image\":\"python\",\"lang\":\"sh\",\"code\":\"true\"}");
	CHECK_STR(jstr(r, "code"), "S215");
	const char *want = "during sandbox::run step `fs::write (code)` (sandbox_id=";
	CHECK(strncmp(jstr(r, "message"), want, strlen(want)) == 0);
	CHECK_STR(jstr(json_object_get(r, "fix"), "inner_code"), "S215");
	json_decref(r);
	CHECK_INT(stops_reach(stops + 1), stops + 1);
	/* create failure: step create, empty sandbox id. */
	r = adapter_call_json(a, "run", "{\"image\":\"ruby\",\"lang\":\"sh\",\"code\":\"true\"}");
	CHECK_STR(jstr(r, "code"), "S100");
	CHECK_STR(jstr(json_object_get(r, "fix"), "sandbox_id"), "");
	json_decref(r);
	sbx_adapter_free(a);
}

/* The member names of an object, in order, comma-separated. */
static void keys_of(json_t *o, char *buf, size_t size)
{
	buf[0] = '\0';
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		size_t n = strlen(buf);
		snprintf(buf + n, size - n, "%s%s", n ? "," : "", k);
	}
}

#define ENVELOPE_KEYS "type,code,message,docs_url,retryable,fix,fix_note"
#define PRINTED_KEYS "stdout,stderr,stdout_truncated,stderr_truncated"

/* What a timed-out command had printed, capped and decoded as a reply's. */
static void check_printed(json_t *env)
{
	char keys[256];
	keys_of(env, keys, sizeof(keys));
	CHECK_STR(keys, ENVELOPE_KEYS "," PRINTED_KEYS);
	CHECK_STR(jstr(env, "stdout"), "start\n\xef\xbf\xbd");
	CHECK_INT(json_string_length(json_object_get(env, "stderr")), EXEC_OUTPUT_CAP);
	CHECK(json_is_false(json_object_get(env, "stdout_truncated")));
	CHECK(json_is_true(json_object_get(env, "stderr_truncated")));
}

TEST(exec_and_run_timeout_keep_the_output)
{
	struct sbx_adapter *a = make(CFG "}");
	CHECK(a != NULL);
	char *id = create(a, "{\"image\":\"python\"}");
	CHECK(id != NULL);
	F.time_out = true;
	char req[256];
	snprintf(req, sizeof(req), "{\"sandbox_id\":\"%s\",\"cmd\":\"python3 t.py\",\"timeout_ms\":1500}", id);
	json_t *r = adapter_call_json(a, "exec", req);
	CHECK_STR(jstr(r, "code"), "S200");
	CHECK_STR(jstr(r, "message"), "exec timed out after 1500 ms");
	CHECK(json_is_null(json_object_get(r, "fix")));
	check_printed(r);
	json_decref(r);
	/* run: the same members after the wrapped envelope's. */
	r = adapter_call_json(a, "run", "{\"image\":\"python\",\"code\":\"x\",\"lang\":\"py\",\"timeout_ms\":1500}");
	CHECK_STR(jstr(r, "code"), "S200");
	CHECK_STR(jstr(json_object_get(r, "fix"), "inner_code"), "S200");
	const char *want = "during sandbox::run step `exec` (sandbox_id=";
	CHECK(strncmp(jstr(r, "message"), want, strlen(want)) == 0);
	check_printed(r);
	json_decref(r);
	/* A call that does not time out keeps the contract's reply. */
	F.time_out = false;
	r = adapter_call_json(a, "exec", req);
	char keys[256];
	keys_of(r, keys, sizeof(keys));
	CHECK_STR(keys, "stdout,stderr,exit_code,timed_out,duration_ms,success,stdout_truncated,stderr_truncated");
	json_decref(r);
	free(id);
	sbx_adapter_free(a);
}

TEST(idle_sandbox_is_reaped)
{
	struct sbx_adapter *a = make(CFG "}");
	CHECK(a != NULL);
	char *id = create(a, "{\"image\":\"python\",\"idle_timeout_secs\":0}");
	char *keep = create(a, "{\"image\":\"python\"}");
	CHECK(id != NULL && keep != NULL);
	usleep(5000);
	CHECK_INT(reaper_scan(a, false), 1);
	char req[128];
	snprintf(req, sizeof(req), "{\"sandbox_id\":\"%s\",\"cmd\":\"ls\"}", id);
	json_t *r = adapter_call_json(a, "exec", req);
	CHECK_STR(jstr(r, "code"), "S002");
	json_decref(r);
	r = adapter_call_json(a, "list", "{}");
	CHECK_INT(json_array_size(json_object_get(r, "sandboxes")), 1);
	json_decref(r);
	free(id);
	free(keep);
	sbx_adapter_free(a);
}

/* Each VM counts at guest memory + QEMU's base + the translation cache. */
TEST(memory_budget_admission)
{
	/* 2 x (256 + 64 + 32) = 704 fits in 800; a third does not. */
	struct sbx_adapter *a = make(CFG ",\"memory_budget_mb\":800,\"tcg_cache_mb\":32,\"default_memory_mb\":256}");
	CHECK(a != NULL);
	char *one = create(a, "{\"image\":\"python\"}");
	char *two = create(a, "{\"image\":\"python\"}");
	CHECK(one != NULL && two != NULL);
	json_t *r = adapter_call_json(a, "create", "{\"image\":\"python\"}");
	CHECK_STR(jstr(r, "code"), "S400");
	const char *m = jstr(r, "message");
	CHECK(m != NULL && strstr(m, "needs 352 MiB (256 MiB guest memory + 96 MiB for its VM)") != NULL);
	CHECK(m != NULL && strstr(m, "704 of memory_budget_mb 800 MiB are committed to 2 sandboxes") != NULL);
	CHECK(m != NULL && strstr(m, "raise memory_budget_mb") != NULL);
	json_decref(r);
	/* Nor does the smallest guest: 704 + 64 + 64 + 32 = 864. */
	r = adapter_call_json(a, "create", "{\"image\":\"python\",\"memory_mb\":64}");
	CHECK_STR(jstr(r, "code"), "S400");
	json_decref(r);
	/* A refused create gave nothing away, and a stop gives its VM's share back. */
	char req[128];
	snprintf(req, sizeof(req), "{\"sandbox_id\":\"%s\"}", one);
	json_decref(adapter_call_json(a, "stop", req));
	char *three = create(a, "{\"image\":\"python\"}");
	CHECK(three != NULL);
	/* A failed boot gives its share back too. */
	F.fail_boot = true;
	r = adapter_call_json(a, "create", "{\"image\":\"python\"}");
	CHECK_STR(jstr(r, "code"), "S400");
	json_decref(r);
	snprintf(req, sizeof(req), "{\"sandbox_id\":\"%s\"}", two);
	json_decref(adapter_call_json(a, "stop", req));
	r = adapter_call_json(a, "create", "{\"image\":\"python\"}");
	CHECK_STR(jstr(r, "code"), "S300");
	json_decref(r);
	F.fail_boot = false;
	CHECK_INT(a->mem.committed_mib, 352);
	CHECK_INT(a->mem.vms, 1);
	/* The templates' RAM files count too: 352 + 352 fits in 800 beside
	 * 96 MiB of them, not beside 97. */
	templates_held_mib = 97;
	r = adapter_call_json(a, "create", "{\"image\":\"python\"}");
	CHECK_STR(jstr(r, "code"), "S400");
	m = jstr(r, "message");
	CHECK(m != NULL && strstr(m, "97 MiB held by snapshot templates") != NULL);
	json_decref(r);
	templates_held_mib = 96;
	char *four = create(a, "{\"image\":\"python\"}");
	CHECK(four != NULL);
	templates_held_mib = 0;
	free(one);
	free(two);
	free(three);
	free(four);
	sbx_adapter_free(a);
}

static void kill_vm(struct sbx_adapter *a, const char *id)
{
	sbx_error_t err = NULL;
	struct sbx_sandbox *sb = sbx_registry_acquire(a->reg, id, &err);
	if (sb != NULL) {
		*(volatile char *)sb->vm = 1;
		sbx_registry_release(a->reg, sb);
	}
	sbx_error_free(&err);
}

/* A VM that dies under a call fails that call with the cause, and the
 * sandbox leaves the registry; one that dies idle goes at the next scan. */
TEST(dead_vm_leaves_the_registry)
{
	struct sbx_adapter *a = make(CFG ",\"memory_budget_mb\":100000}");
	CHECK(a != NULL);
	char *busy = create(a, "{\"image\":\"python\"}");
	char *idle = create(a, "{\"image\":\"python\"}");
	CHECK(busy != NULL && idle != NULL);
	uint64_t committed = a->mem.committed_mib;
	int stops = F.stops;
	kill_vm(a, busy);
	char req[128];
	snprintf(req, sizeof(req), "{\"sandbox_id\":\"%s\",\"cmd\":\"ls\"}", busy);
	json_t *r = adapter_call_json(a, "exec", req);
	CHECK_STR(jstr(r, "code"), "S300");
	CHECK(strstr(jstr(r, "message"), "killed by signal 9") != NULL);
	json_decref(r);
	CHECK_INT(F.stops, stops + 1);
	r = adapter_call_json(a, "exec", req);
	CHECK_STR(jstr(r, "code"), "S002");
	json_decref(r);
	kill_vm(a, idle);
	CHECK_INT(reaper_scan(a, false), 1);
	CHECK_INT(F.stops, stops + 2);
	r = adapter_call_json(a, "list", "{}");
	CHECK_INT(json_array_size(json_object_get(r, "sandboxes")), 0);
	json_decref(r);
	CHECK_INT(a->mem.committed_mib, 0);
	CHECK(committed > 0);
	free(busy);
	free(idle);
	sbx_adapter_free(a);
}

TEST(network_activity_keeps_a_sandbox_from_the_reaper)
{
	struct sbx_adapter *a = make(CFG "}");
	CHECK(a != NULL);
	char *id = create(a, "{\"image\":\"python\",\"idle_timeout_secs\":2}");
	CHECK(id != NULL);
	/* idle 3 s by its execs, but its network relayed data 1 s ago */
	net_offset_ms = -1000;
	sleep(3);
	CHECK_INT(reaper_scan(a, false), 0);
	/* a beacon in the future counts as active now */
	net_offset_ms = 60000;
	CHECK_INT(reaper_scan(a, false), 0);
	/* the transfer stopped 3 s ago: idle past 2 s */
	net_offset_ms = -3000;
	CHECK_INT(reaper_scan(a, false), 1);
	net_offset_ms = 0;
	free(id);
	sbx_adapter_free(a);
}

/* Whether a line of `log` names sandbox `id` and holds `want`. */
static bool logged(const char *log, const char *id, const char *want)
{
	for (const char *p = log; (p = strstr(p, id)) != NULL; p++) {
		const char *bol = p, *eol = strchr(p, '\n');
		while (bol > log && bol[-1] != '\n')
			bol--;
		size_t len = eol != NULL ? (size_t)(eol - bol) : strlen(bol);
		char line[1024];
		snprintf(line, sizeof(line), "%.*s", (int)len, bol);
		if (strstr(line, want) != NULL)
			return true;
	}
	return false;
}

/* Each stop logs its reason: a stop call, the idle reaper, a VM that died,
 * the daemon's shutdown; each create its event line. */
TEST(stop_lines_say_their_reason)
{
	FILE *f = tmpfile();
	int saved = dup(2);
	CHECK(f != NULL && saved >= 0 && dup2(fileno(f), 2) >= 0);
	struct sbx_adapter *a = make(CFG ",\"memory_budget_mb\":100000}");
	char *caller = a != NULL ? create(a, "{\"image\":\"python\"}") : NULL;
	char *idle = a != NULL ? create(a, "{\"image\":\"python\",\"idle_timeout_secs\":0}") : NULL;
	char *dead = a != NULL ? create(a, "{\"image\":\"node\"}") : NULL;
	char *last = a != NULL ? create(a, "{\"image\":\"python\"}") : NULL;
	if (caller != NULL && idle != NULL && dead != NULL && last != NULL) {
		char req[128];
		snprintf(req, sizeof(req), "{\"sandbox_id\":\"%s\"}", caller);
		json_decref(adapter_call_json(a, "stop", req));
		kill_vm(a, dead);
		usleep(5000);
		reaper_scan(a, false);
	}
	sbx_adapter_free(a);
	dup2(saved, 2);
	close(saved);
	long n = ftell(f);
	char *log = n >= 0 ? calloc(1, (size_t)n + 1) : NULL;
	if (log != NULL) {
		rewind(f);
		if (fread(log, 1, (size_t)n, f) != (size_t)n)
			log[0] = '\0';
	}
	fclose(f);
	CHECK(log != NULL && caller != NULL && idle != NULL && dead != NULL && last != NULL);
	CHECK(logged(log, caller, "event=create") && logged(log, caller, "image=python"));
	CHECK(logged(log, dead, "image=node") && logged(log, dead, "ready_ms="));
	CHECK(logged(log, caller, "event=stop") && logged(log, caller, "reason=caller"));
	CHECK(logged(log, idle, "reason=idle"));
	CHECK(logged(log, dead, "reason=vm_death"));
	CHECK(logged(log, last, "reason=shutdown"));
	CHECK(!logged(log, last, "reason=idle"));
	free(log);
	free(caller);
	free(idle);
	free(dead);
	free(last);
}
