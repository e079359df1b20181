/* `sandbox-libkrun serve --front`: registers the sandbox-libkrun::* ids in
 * the front's namespace and serves them through the members (src/front/).
 * It reads no configuration and owns no VM: the members do.  A second
 * front in the same namespace is refused the worker's lease by the engine
 * and waits, retrying, to take over when the first one's connection ends. */
#include "cmd/cmd_front.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/adapter.h"
#include "adapter/config/config_metrics.h"
#include "cmd/serve_lifeline.h"
#include "cmd/serve_metrics.h"
#include "cmd/serve_notify.h"
#include "cmd/serve_register.h"
#include "cmd/serve_signals.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "engine/engine.h"
#include "engine/engine_metrics.h"
#include "engine/ws_headers.h"
#include "front/front.h"
#include "front/front_metrics.h"

#define METRICS_ENV "III_SANDBOX_METRICS_LISTEN"

static void usage(FILE *out)
{
	fprintf(out, "usage: sandbox-libkrun serve --front [--help]\n\n"
		     "Serves sandbox-libkrun::* as the front of a cluster: each call goes to a member\n"
		     "(a `sandbox-libkrun serve` with III_NAMESPACE set, on any host) through the engine.\n"
		     "Creates go to the member with the most memory budget left; calls naming a sandbox\n"
		     "go to the member that owns it.  See docs/cluster.md.\n\n"
		     "environment:\n"
		     "  III_URL / III_ENGINE_URL   engine WebSocket URL (default ws://127.0.0.1:49134)\n"
		     "  III_HEADERS_FILE           upgrade headers for an engine's RBAC, as for serve\n"
		     "  III_NAMESPACE              the front's namespace (empty: the default one, where\n"
		     "                             callers and the sandbox router find it)\n"
		     "  III_SANDBOX_MEMBERS        comma-separated member namespaces (default: every other\n"
		     "                             namespace serving %s::adapter::info)\n"
		     "  III_WORKER_NAME            worker name reported to the engine (default %s)\n"
		     "  " METRICS_ENV " GET /metrics (Prometheus) on a loopback host:port,\n"
		     "                             [::1]:port or an absolute unix socket path (default: none)\n"
		     "  III_LIFELINE_FD, III_ENGINE_PID, SANDBOX_LOG, SANDBOX_LOG_FORMAT   as for serve\n\n"
		     "exit status: 0 after SIGTERM/SIGINT, 1 on a fatal error, 2 on bad arguments.\n",
		SBX_WORKER_NAME, SBX_WORKER_NAME);
}

static const char *env_or_null(const char *name)
{
	const char *v = getenv(name);
	return v != NULL && v[0] != '\0' ? v : NULL;
}

struct front_sources {
	struct front *f;
	struct engine *e;
};

static void collect(void *ctx)
{
	const struct front_sources *from = ctx;
	front_collect_metrics(from->f);
	engine_collect_metrics(from->e);
}

int sbx_cmd_front(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		}
		if (strcmp(argv[i], "--front") != 0) {
			fprintf(stderr, "sandbox-libkrun serve --front: unknown argument '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}
	sbx_error_t err = NULL;
	if (sbx_log_format_from_env(&err) < 0) {
		fprintf(stderr, "sandbox-libkrun serve --front: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
		return 2;
	}
	if (sbx_log_init_from_env() < 0)
		sbx_warn("SANDBOX_LOG has an unknown value; using info (expected debug, info, warn or error)");
	struct sbx_metrics_listen listen = { .kind = SBX_METRICS_OFF };
	const char *listen_text = env_or_null(METRICS_ENV);
	if (listen_text != NULL && sbx_metrics_listen_parse(METRICS_ENV, listen_text, &listen, &err) < 0) {
		fprintf(stderr, "sandbox-libkrun serve --front: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
		return 2;
	}
	cleanup_free char *headers = NULL;
	size_t nheaders;
	if (ws_headers_from_env(&headers, &nheaders, &err) < 0) {
		fprintf(stderr, "sandbox-libkrun serve --front: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
		sbx_metrics_listen_free(&listen);
		return 2;
	}
	struct serve_signals waiter;
	serve_signals_block(&waiter);

	const char *name = env_or_null("III_WORKER_NAME");
	struct engine_options opts = {
		.url = engine_default_url(),
		.headers = headers,
		.worker_name = name != NULL ? name : SBX_WORKER_NAME,
		.worker_version = SBX_VERSION,
		.description = "front of a sandbox-libkrun cluster: places sandboxes on its members",
		.namespace = env_or_null("III_NAMESPACE"),
		.isolation = env_or_null("III_ISOLATION"),
		.wait_for_lease = true,
		.busy_error = serve_busy_error,
	};
	struct engine *e = engine_new(&opts, &err);
	struct front *f = e != NULL ? front_new(e, opts.namespace, getenv("III_SANDBOX_MEMBERS"), &err) : NULL;
	if (f == NULL || serve_signals_start(&waiter, e, &err) < 0) {
		fprintf(stderr, "sandbox-libkrun serve --front: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
		front_free(f);
		if (e != NULL)
			engine_free(e);
		sbx_metrics_listen_free(&listen);
		return f == NULL && e != NULL ? 2 : 1;
	}
	int status = 1;
	struct serve_metrics *metrics = NULL;
	struct front_sources sources = { f, e };
	struct serve_metrics_scrape scrape = { METRICS_ENV, collect, &sources, NULL, 0 };
	scrape.fams = front_metric_families(&scrape.nfams);
	/* Before connecting: a front waiting for its engine shows engine_up 0. */
	if (listen.kind != SBX_METRICS_OFF && (metrics = serve_metrics_start(&listen, &scrape, &err)) == NULL) {
		fprintf(stderr, "sandbox-libkrun serve --front: %s\n", sbx_error_msg(err));
		goto out;
	}
	sbx_info("connecting to %s as the front '%s'%s%s (%zu upgrade headers from " WS_HEADERS_ENV ")", opts.url,
		 opts.worker_name, opts.namespace != NULL ? " in namespace " : "",
		 opts.namespace != NULL ? opts.namespace : "", nheaders);
	if (lifeline_start(&err) < 0 || serve_register_ops(e, front_handle, f, &err) < 0 ||
	    engine_start(e, &err) < 0 || front_start(f, &err) < 0) {
		fprintf(stderr, "sandbox-libkrun serve --front: %s\n", sbx_error_msg(err));
		goto out;
	}
	serve_notify_waiting(opts.url);
	if (serve_wait_engine(e, &waiter, &err) < 0) {
		if (atomic_load(&waiter.requested))
			status = 0;
		else
			fprintf(stderr, "sandbox-libkrun serve --front: engine %s: %s\n", opts.url, sbx_error_msg(err));
		goto out;
	}
	sbx_info("serving %s::* as a front (version %s)", SBX_WORKER_NAME, SBX_VERSION);
	serve_notify_ready(e, opts.url);
	engine_wait_stopped(e);
	status = engine_fatally_rejected(e) ? 1 : 0;
out:
	sbx_error_free(&err);
	serve_notify_stopping();
	/* A scrape reads the front and the engine: it goes first. */
	serve_metrics_stop(metrics);
	sbx_metrics_listen_free(&listen);
	engine_stop(e);
	serve_signals_end(&waiter);
	front_stop(f);
	engine_free(e);
	front_free(f);
	return status;
}
