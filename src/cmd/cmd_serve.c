/* `sandbox-libkrun serve`: connect to the engine, read the configuration
 * (configuration::get, or the engine's `--config FILE`), register the 23
 * functions and serve them until SIGTERM/SIGINT or the death of the engine
 * that spawned it (serve_lifeline.h).  III_NAMESPACE and III_ISOLATION go into
 * engine::workers::register.
 *
 * An engine that is not up yet is waited for (the engine client retries
 * with its backoff and warns on every failed attempt): a worker started
 * before its engine comes up when the engine does.  A stop asked for while
 * waiting, or while the configuration is read, exits 0: it is not a
 * configuration failure.
 *
 * III_DISABLE_TRACE_PAYLOADS is honoured trivially: this worker never sends
 * request or reply payloads as telemetry, so auth tokens and guest env never
 * reach the engine's trace store. */
#include "cmd/cmd_serve.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter/adapter.h"
#include "adapter/pause/sandbox_adopt.h"
#include "adapter/pause/sandbox_restart.h"
#include "adapter/snapshot/sandbox_snapshot.h"
#include "adapter/snapshot/snapshot_store.h"
#include "adapter/adapter_metrics.h"
#include "adapter/config/config_fetch.h"
#include "adapter/config/config_file.h"
#include "adapter/vm_backend/template_warm.h"
#include "adapter/vm_backend/vm_backend.h"
#include "adapter/vm_backend/stream_engine.h"
#include "adapter/vm_backend/vm_backend_fs.h"
#include "cmd/cmd_front.h"
#include "cmd/environment_file.h"
#include "cmd/serve_lifeline.h"
#include "cmd/serve_metrics.h"
#include "cmd/serve_notify.h"
#include "cmd/serve_register.h"
#include "cmd/serve_signals.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "common/metrics_families.h"
#include "common/scodes.h"
#include "control/control_proto.h"
#include "control/control_server.h"
#include "engine/engine.h"
#include "engine/engine_metrics.h"
#include "engine/ws_headers.h"
#include "image/image_metrics.h"
#include "net/net_config.h"
#include "vm/accel.h"
#include "vm/leftovers.h"
#include "vm/oom_score.h"
#include "vm/template_cache.h"
#include "vm/vm_rss.h"
#include "worker/worker_metrics.h"
#include "worker/worker_ops.h"
#include "worker/worker_table.h"

#define EXIT_CONFIG 2

/* III_WORKER_NAME (set by compose and iii-worker) else our own name: the
 * name engine::workers::register reports.  Function ids do not change. */
static const char *worker_name(void)
{
	const char *name = getenv("III_WORKER_NAME");
	return name != NULL && name[0] != '\0' ? name : SBX_WORKER_NAME;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: sandbox-libkrun serve [--config FILE] [--front] [--help]\n\n"
		     "Connects to the iii engine and serves sandbox-libkrun::* as worker '%s'.\n"
		     "Until the engine is reachable it keeps retrying, with backoff.\n\n"
		     "  --config FILE   read the configuration map from this YAML file (the engine's\n"
		     "                  spawn form) instead of configuration::get\n"
		     "  --front         serve as the front of a cluster of members (serve --front --help)\n\n"
		     "environment:\n"
		     "  III_URL / III_ENGINE_URL   engine WebSocket URL (default ws://127.0.0.1:49134)\n"
		     "  III_HEADERS_FILE           `Name: value` lines sent on every WebSocket upgrade (an\n"
		     "                             engine's RBAC auth function reads them); mode 600\n"
		     "  III_WORKER_NAME            worker name reported to the engine (default sandbox-libkrun)\n"
		     "  III_NAMESPACE              namespace declared to the engine (empty: the default one)\n"
		     "  III_ISOLATION              isolation reported to the engine (e.g. libkrun)\n"
		     "  III_CONFIG_NAME            configuration entry id (default sandbox-libkrun)\n"
		     "  III_SANDBOX_WORKER_TOKEN   secret every worker::* request must carry in `auth`\n"
		     "  III_COMPOSE_PROJECT_DIR    where worker::prepare's host_path may be (with the cache)\n"
		     "  III_COMPOSE_STATE_DIR      Compose state; its packages/ is the package cache\n"
		     "                             (default ~/.iii/compose/packages)\n"
		     "  III_BUNDLE_WORKERS_DISABLED=1  refuse bundle (package://) workers\n"
		     "  III_LIFELINE_FD            a pipe whose EOF means the engine died: then exit\n"
		     "  III_ENGINE_PID             the engine's pid: exit when it is gone\n"
		     "  SANDBOX_LOG                debug|info|warn|error (default info)\n"
		     "  SANDBOX_LOG_FORMAT         text (default) or json: one JSON object per line\n\n"
		     "exit status: 0 after SIGTERM/SIGINT, 1 on a fatal runtime error, 2 on a bad or\n"
		     "unreadable configuration.\n",
		worker_name());
}

static int handle(void *userdata, const struct engine_invocation *inv, json_t *data, json_t **out)
{
	struct sbx_adapter *a = userdata;
	const char *prefix = SBX_WORKER_NAME "::";
	const char *op = inv->function_id;
	/* Only our own ids are registered; anything else is refused by name. */
	if (strncmp(op, prefix, strlen(prefix)) == 0)
		op += strlen(prefix);
	return sbx_adapter_call(a, op, data, out);
}

/* Calls beyond the running handlers wait rather than fail: room for every
 * sandbox's execs plus a create and a stop each, and never under 1024. */
static int queue_limit(const struct sbx_config *cfg)
{
	uint64_t n = (uint64_t)cfg->max_concurrent_sandboxes * ((uint64_t)cfg->max_concurrent_exec_per_sandbox + 2);
	return n < 1024 ? 1024 : n > INT32_MAX / 2 ? INT32_MAX / 2 : (int)n;
}

/* What the control socket's status adds to the adapter's own. */
struct serve_status {
	struct engine *e;
	const char *url;
	struct sbx_jail_host *jail;
};

static json_t *serve_status(void *ud)
{
	const struct serve_status *st = ud;
	sbx_error_t err = NULL;
	bool connected = engine_wait_connected(st->e, 0, &err) == 0;
	sbx_error_free(&err);
	return json_pack("{s:{s:s, s:b}, s:{s:b, s:s}}", "engine", "url", st->url, "connected", connected, "jail",
			 "active", sbx_jail_host_active(st->jail), "describe", sbx_jail_host_describe(st->jail));
}

/* The operator's control socket, unless control_socket is "".  One that
 * cannot be bound (another daemon serves that path) only warns: the
 * sandboxes are served all the same. */
static int start_control(struct sbx_adapter *a, struct serve_status *st, struct control_server **out,
			 sbx_error_t *err)
{
	*out = NULL;
	const char *path = a->cfg->control_socket != NULL ? a->cfg->control_socket : CONTROL_SOCKET_DEFAULT;
	if (path[0] == '\0')
		return 0;
	struct control_options o = { .path = path, .status = serve_status, .status_ud = st };
	if (a->cfg->control_group != NULL) {
		if (control_group_gid(a->cfg->control_group, &o.gid, err) < 0)
			return -1;
		o.has_group = true;
	}
	sbx_error_t cerr = NULL;
	*out = control_server_start(a, &o, &cerr);
	if (*out == NULL)
		sbx_warn("no control socket: %s", sbx_error_msg(cerr));
	else
		sbx_info("control socket %s (mode %s)", path, o.has_group ? "0660" : "0600");
	sbx_error_free(&cerr);
	return 0;
}

/* What a scrape of serve reads its gauges from. */
struct serve_sources {
	struct sbx_adapter *adapter;
	void *backend; /* vm_backend's */
	struct engine *engine;
	struct worker_table *workers;
};

/* What is read from files at scrape time: the VMs' memory from /proc, the
 * image cache's index.  A failure keeps the last values. */
static void collect_files(void)
{
	uint64_t bytes;
	unsigned vms;
	sbx_error_t err = NULL;
	if (sbx_vm_rss_total("/proc", getpid(), &bytes, &vms, &err) == 0) {
		sbx_metric_set(&sbx_m_vm_rss, NULL, (double)bytes);
		sbx_metric_set(&sbx_m_vms, NULL, vms);
	} else {
		sbx_warn("metrics: %s", sbx_error_msg(err));
		sbx_error_free(&err);
	}
	if (sbx_image_collect_metrics(&err) < 0) {
		sbx_warn("metrics: image cache: %s", sbx_error_msg(err));
		sbx_error_free(&err);
	}
}

static void collect(void *ctx)
{
	const struct serve_sources *from = ctx;
	sbx_adapter_collect_metrics(from->adapter);
	vm_backend_collect_metrics(from->backend);
	engine_collect_metrics(from->engine);
	worker_collect_metrics(from->workers);
	collect_files();
}

/* Once at start: on an engine that does not check its callers, code in a
 * networked sandbox that reaches the engine's port can call any function,
 * this adapter's exec on other sandboxes included. */
static void warn_engine_reachable(const struct sbx_config *cfg, const char *url)
{
	unsigned port = net_config_engine_reachable(&cfg->net, url);
	if (port != 0)
		sbx_warn("network_policy.host_ports holds the engine's port %u: code in a sandbox created with "
			 "network: true can call the engine's functions, this adapter's included; set host_ports: [] "
			 "unless guests must reach the engine",
			 port);
}

/* An environment variable, NULL when unset or empty. */
static const char *env_or_null(const char *name)
{
	const char *v = getenv(name);
	return v != NULL && v[0] != '\0' ? v : NULL;
}

int sbx_cmd_serve(int argc, char **argv)
{
	const char *config_file = NULL;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--front") == 0)
			return sbx_cmd_front(argc, argv);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		}
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
			config_file = argv[++i];
			continue;
		}
		if (strncmp(argv[i], "--config=", 9) == 0) {
			config_file = argv[i] + 9;
			continue;
		}
		fprintf(stderr, "sandbox-libkrun serve: unknown argument '%s'\n", argv[i]);
		usage(stderr);
		return 2;
	}
	sbx_error_t ferr = NULL;
	if (sbx_log_format_from_env(&ferr) < 0) {
		fprintf(stderr, "sandbox-libkrun serve: %s\n", sbx_error_msg(ferr));
		sbx_error_free(&ferr);
		return EXIT_CONFIG;
	}
	if (sbx_log_init_from_env() < 0)
		sbx_warn("SANDBOX_LOG has an unknown value; using info (expected debug, info, warn or error)");

	sbx_error_t err = NULL;
	cleanup_free char *headers = NULL;
	size_t nheaders;
	if (ws_headers_from_env(&headers, &nheaders, &err) < 0) {
		fprintf(stderr, "sandbox-libkrun serve: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
		return EXIT_CONFIG;
	}
	struct serve_signals waiter;
	serve_signals_block(&waiter);

	struct engine_options opts = {
		.url = engine_default_url(),
		.headers = headers,
		.worker_name = worker_name(),
		.worker_version = SBX_VERSION,
		.description = "libkrun-style microVM sandboxes (QEMU microvm) for the iii sandbox contract",
		.namespace = env_or_null("III_NAMESPACE"),
		.isolation = env_or_null("III_ISOLATION"),
		.busy_error = serve_busy_error,
	};
	struct engine *e = engine_new(&opts, &err);
	if (e == NULL) {
		fprintf(stderr, "sandbox-libkrun serve: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
		return 1;
	}
	int status = 1;
	struct sbx_adapter *a = NULL;
	void *backend = NULL;
	struct template_warm *warm = NULL;
	struct serve_metrics *metrics = NULL;
	struct control_server *control = NULL;
	struct sandbox_ids resume = { NULL, 0, 0 };
	struct serve_status status_src = { .e = e, .url = NULL, .jail = NULL };
	if (serve_signals_start(&waiter, e, &err) < 0) {
		fprintf(stderr, "sandbox-libkrun serve: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
		engine_free(e);
		return 1;
	}
	if (lifeline_start(&err) < 0) {
		fprintf(stderr, "sandbox-libkrun serve: %s\n", sbx_error_msg(err));
		goto out;
	}
	/* --config's file is read before any connection: a bad one fails at once. */
	struct sbx_config *cfg = NULL;
	if (config_file != NULL && (cfg = sbx_config_load_yaml_file(config_file, &err)) == NULL) {
		fprintf(stderr, "sandbox-libkrun serve: configuration: %s\n", sbx_error_msg(err));
		status = EXIT_CONFIG;
		goto out;
	}
	sbx_info("connecting to %s as worker '%s'%s%s (%zu upgrade headers from " WS_HEADERS_ENV ")", opts.url,
		 opts.worker_name, opts.namespace != NULL ? " in namespace " : "",
		 opts.namespace != NULL ? opts.namespace : "", nheaders);
	serve_notify_waiting(opts.url);
	if (engine_start(e, &err) < 0 || serve_wait_engine(e, &waiter, &err) < 0) {
		sbx_config_free(cfg);
		if (atomic_load(&waiter.requested))
			status = 0;
		else
			fprintf(stderr, "sandbox-libkrun serve: engine %s: %s\n", opts.url, sbx_error_msg(err));
		goto out;
	}
	if (cfg == NULL && (cfg = sbx_config_fetch(e, &err)) == NULL) {
		if (atomic_load(&waiter.requested)) {
			status = 0;
		} else {
			fprintf(stderr, "sandbox-libkrun serve: configuration: %s\n", sbx_error_msg(err));
			status = EXIT_CONFIG;
		}
		goto out;
	}
	engine_set_max_queued(e, queue_limit(cfg));
	/* Decided once, before the memory budget is sized: with KVM no VM has
	 * a translation cache to charge.  A kvm that cannot be had fails each
	 * create with its own S300; the budget then counts as configured. */
	if (sbx_config_decide_accel(cfg, &err) < 0) {
		sbx_warn("%s", sbx_error_msg(err));
		sbx_error_free(&err);
	}
	struct sbx_jail_host *jail = sbx_jail_host_new(cfg->jail, cfg->jail_uid_base, &err);
	if (jail == NULL) {
		fprintf(stderr, "sandbox-libkrun serve: configuration: %s\n", sbx_error_msg(err));
		sbx_config_free(cfg);
		status = EXIT_CONFIG;
		goto out;
	}
	warn_engine_reachable(cfg, opts.url);
	environment_file_check();
	sbx_oom_protect_self();
	unsigned stale = sbx_vm_remove_leftovers();
	if (stale > 0)
		sbx_info("removed %u VM director%s left by an earlier run", stale, stale == 1 ? "y" : "ies");
	/* Paused states named after their daemon (`<pid>-<id>`) are of a
	 * build whose paused sandboxes ended with it: nothing can resume
	 * them.  Today's (`sb-<id>`) are adopted below. */
	unsigned paused = sbx_vm_remove_leftovers_of("paused");
	if (paused > 0)
		sbx_info("removed the paused state of %u sandbox%s left by an earlier build, which could not keep them",
			 paused, paused == 1 ? "" : "es");
	sbx_jail_remove_leftovers(jail);
	unsigned old = template_cache_sweep() + template_cache_trim(cfg->template_cache_mb);
	if (old > 0)
		sbx_info("removed %u snapshot template%s that can no longer be used or do not fit template_cache_mb", old,
			 old == 1 ? "" : "s");
	a = sbx_adapter_new(cfg, &err);
	if (a == NULL)
		sbx_jail_host_free(jail);
	if (a != NULL && (backend = vm_backend_new(a->cfg, jail, &err)) != NULL &&
	    sbx_adapter_use_backend(a, &vm_backend_ops, backend, &err) < 0) {
		fprintf(stderr, "sandbox-libkrun serve: %s\n", sbx_error_msg(err));
		goto out;
	}
	if (a != NULL && backend != NULL) {
		/* Before the handlers are registered: a create may come at once. */
		vm_backend_start_pool(backend);
		/* Before the handlers too: a call may name one at once. */
		sandbox_adopt_paused(a, &resume);
		/* What a capture or a snapshot being written left. */
		if (a->backend.ops != NULL && a->backend.ops->discard_paused != NULL)
			snapshot_sweep(a->backend.ops->discard_paused, a->backend.ctx);
		sandbox_snapshot_account(a);
		a->fs = (struct sbx_fs_host){ &vm_backend_fs_ops, e };
		a->streams = (struct sbx_stream_host){ &stream_engine_ops, e };
		a->workers = &worker_ops_vm;
		a->worker_vms = worker_table_new(a->cfg, jail, &a->mem, &err);
	}
	struct serve_sources sources = { a, backend, e, a != NULL ? a->worker_vms : NULL };
	struct serve_metrics_scrape scrape = { "metrics_listen", collect, &sources, NULL, 0 };
	scrape.fams = sbx_metric_families(&scrape.nfams);
	if (a != NULL && backend != NULL && a->worker_vms != NULL && a->cfg->metrics_listen.kind != SBX_METRICS_OFF &&
	    (metrics = serve_metrics_start(&a->cfg->metrics_listen, &scrape, &err)) == NULL) {
		fprintf(stderr, "sandbox-libkrun serve: %s\n", sbx_error_msg(err));
		goto out;
	}
	if (a == NULL || backend == NULL || a->worker_vms == NULL) {
		fprintf(stderr, "sandbox-libkrun serve: %s\n", sbx_error_msg(err));
		goto out;
	}
	status_src.url = opts.url;
	status_src.jail = jail;
	/* Before the handlers are registered: once the daemon is seen ready,
	 * its control socket is there too. */
	if (start_control(a, &status_src, &control, &err) < 0) {
		fprintf(stderr, "sandbox-libkrun serve: configuration: %s\n", sbx_error_msg(err));
		status = EXIT_CONFIG;
		goto out;
	}
	if (serve_register_ops(e, handle, a, &err) < 0) {
		fprintf(stderr, "sandbox-libkrun serve: %s\n", sbx_error_msg(err));
		goto out;
	}
	sbx_info("serving %s::* (version %s)", SBX_WORKER_NAME, SBX_VERSION);
	/* Once calls come: one on a sandbox being resumed waits for it. */
	sandbox_restart_resume(a, &resume);
	warm = template_warm_start(a->cfg, &vm_backend_ops, backend);
	serve_notify_ready(e, opts.url);
	engine_wait_stopped(e);
	if (engine_fatally_rejected(e))
		fprintf(stderr, "sandbox-libkrun serve: the engine rejected this worker; is another '%s' running?\n",
			opts.worker_name);
	else
		status = 0;
out:
	sbx_error_free(&err);
	serve_notify_stopping();
	/* A scrape reads the engine, the adapter and the backend, and the
	 * operator's calls use the adapter and the engine: both go first. */
	serve_metrics_stop(metrics);
	control_server_stop(control);
	engine_stop(e);
	serve_signals_end(&waiter);
	engine_free(e);
	template_warm_stop(warm);
	sandbox_ids_free(&resume);
	/* No call comes any more: live_restore keeps the running sandboxes
	 * for the next daemon, paused, before the rest stop below. */
	if (a != NULL && backend != NULL && a->cfg->pause.live_restore)
		sandbox_restart_pause(a);
	/* Stops every worker and sandbox VM: SIGTERM ends serve, never the
	 * VMs' lives. */
	if (a != NULL)
		worker_table_free(a->worker_vms);
	sbx_adapter_free(a);
	vm_backend_free(backend);
	return status;
}
