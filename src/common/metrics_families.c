#include "common/metrics_families.h"

/* Boots under TCG take seconds, restores a fraction of one; under KVM a
 * restore, a standby or a warm pool's VM may be ready in milliseconds. */
static const double boot_buckets[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120 };
/* From a millisecond list to an exec at max_exec_timeout_ms's default. */
static const double call_buckets[] = { 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300 };

#define N(a) (sizeof(a) / sizeof((a)[0]))

struct sbx_metric sbx_m_sandboxes = {
	.name = "sandbox_libkrun_sandboxes",
	.help = "Live sandboxes by image and state, counted at scrape time",
	.kind = SBX_METRIC_GAUGE,
	.labels = { "image", "state" },
};

struct sbx_metric sbx_m_creates = {
	.name = "sandbox_libkrun_creates_total",
	.help = "Sandbox VMs made ready for a create or run, by how they were booted",
	.kind = SBX_METRIC_COUNTER,
	.labels = { "boot_mode" },
};

struct sbx_metric sbx_m_create_seconds = {
	.name = "sandbox_libkrun_create_ready_seconds",
	.help = "Time from a create's boot request to its VM ready for commands",
	.kind = SBX_METRIC_HISTOGRAM,
	.labels = { "boot_mode" },
	.buckets = boot_buckets,
	.nbuckets = N(boot_buckets),
};

struct sbx_metric sbx_m_calls = {
	.name = "sandbox_libkrun_calls_total",
	.help = "Function calls by function and outcome (ok or the S-code of the error)",
	.kind = SBX_METRIC_COUNTER,
	.labels = { "function", "outcome" },
};

struct sbx_metric sbx_m_call_seconds = {
	.name = "sandbox_libkrun_call_duration_seconds",
	.help = "Duration of function calls, by function",
	.kind = SBX_METRIC_HISTOGRAM,
	.labels = { "function" },
	.buckets = call_buckets,
	.nbuckets = N(call_buckets),
};

struct sbx_metric sbx_m_errors = {
	.name = "sandbox_libkrun_errors_total",
	.help = "Function calls that failed, by S-code",
	.kind = SBX_METRIC_COUNTER,
	.labels = { "scode" },
};

struct sbx_metric sbx_m_memory_committed = {
	.name = "sandbox_libkrun_memory_committed_bytes",
	.help = "Memory committed to live VMs at their worst case and held by templates' RAM memfds",
	.kind = SBX_METRIC_GAUGE,
};

struct sbx_metric sbx_m_memory_budget = {
	.name = "sandbox_libkrun_memory_budget_bytes",
	.help = "The memory budget (memory_budget_mb) creates are admitted against",
	.kind = SBX_METRIC_GAUGE,
};

struct sbx_metric sbx_m_vm_rss = {
	.name = "sandbox_libkrun_vm_rss_bytes",
	.help = "Resident memory (VmRSS) of the daemon's QEMU processes together (sandboxes, warm pool, standbys, "
		"workers), read at scrape time",
	.kind = SBX_METRIC_GAUGE,
};

struct sbx_metric sbx_m_vms = {
	.name = "sandbox_libkrun_vm_processes",
	.help = "QEMU processes the daemon runs (sandboxes, warm pool, standbys, workers), counted at scrape time",
	.kind = SBX_METRIC_GAUGE,
};

struct sbx_metric sbx_m_warm_pool = {
	.name = "sandbox_libkrun_warm_pool_parked",
	.help = "Parked VMs of the warm pool ready for a create, by image",
	.kind = SBX_METRIC_GAUGE,
	.labels = { "image" },
};

struct sbx_metric sbx_m_warm_pool_target = {
	.name = "sandbox_libkrun_warm_pool_target",
	.help = "Parked VMs the warm pool keeps per image (warm_pool, cut to warm_pool_max)",
	.kind = SBX_METRIC_GAUGE,
	.labels = { "image" },
};

struct sbx_metric sbx_m_standby = {
	.name = "sandbox_libkrun_standby_ready",
	.help = "1 when a standby QEMU of the image waits for the next create, else 0",
	.kind = SBX_METRIC_GAUGE,
	.labels = { "image" },
};

struct sbx_metric sbx_m_engine_up = {
	.name = "sandbox_libkrun_engine_up",
	.help = "1 while the connection to the engine is open and registered, else 0",
	.kind = SBX_METRIC_GAUGE,
};

struct sbx_metric sbx_m_engine_reconnects = {
	.name = "sandbox_libkrun_engine_reconnects_total",
	.help = "Registrations with the engine that reattached after a lost connection",
	.kind = SBX_METRIC_COUNTER,
};

struct sbx_metric sbx_m_engine_queued = {
	.name = "sandbox_libkrun_engine_queued_invocations",
	.help = "Invocations waiting for a free handler thread",
	.kind = SBX_METRIC_GAUGE,
};

struct sbx_metric sbx_m_images_cached = {
	.name = "sandbox_libkrun_images_cached",
	.help = "References in the image cache's index, read at scrape time",
	.kind = SBX_METRIC_GAUGE,
};

struct sbx_metric sbx_m_images_cached_bytes = {
	.name = "sandbox_libkrun_images_cached_bytes",
	.help = "Size of the cached images' erofs files as the index records them",
	.kind = SBX_METRIC_GAUGE,
};

struct sbx_metric sbx_m_pulls = {
	.name = "sandbox_libkrun_image_pulls_total",
	.help = "Image pulls made for a create (auto_install), by outcome",
	.kind = SBX_METRIC_COUNTER,
	.labels = { "outcome" },
};

struct sbx_metric sbx_m_pull_bytes = {
	.name = "sandbox_libkrun_image_pull_bytes_total",
	.help = "Layer bytes downloaded from registries",
	.kind = SBX_METRIC_COUNTER,
};

struct sbx_metric sbx_m_workers = {
	.name = "sandbox_libkrun_workers",
	.help = "Compose worker VMs this daemon has seen, by state, counted at scrape time",
	.kind = SBX_METRIC_GAUGE,
	.labels = { "state" },
};

struct sbx_metric sbx_m_published_connections = {
	.name = "sandbox_libkrun_published_connections_total",
	.help = "Connections to sandboxes' published ports, by outcome (accepted, refused)",
	.kind = SBX_METRIC_COUNTER,
	.labels = { "outcome" },
};

struct sbx_metric sbx_m_pauses = {
	.name = "sandbox_libkrun_pauses_total",
	.help = "Pauses and resumes of sandboxes the registry admitted (calls, auto-resumes, idle pauses), by op and outcome",
	.kind = SBX_METRIC_COUNTER,
	.labels = { "op", "outcome" },
};

struct sbx_metric sbx_m_snapshots = {
	.name = "sandbox_libkrun_snapshots_total",
	.help = "Snapshots taken, sandboxes created from snapshots and forks, by op and outcome",
	.kind = SBX_METRIC_COUNTER,
	.labels = { "op", "outcome" },
};

struct sbx_metric sbx_m_snapshot_seconds = {
	.name = "sandbox_libkrun_snapshot_duration_seconds",
	.help = "Duration of snapshots (the capture), of creates from a snapshot (to the sandbox answering) and of whole forks",
	.kind = SBX_METRIC_HISTOGRAM,
	.labels = { "op" },
	.buckets = boot_buckets,
	.nbuckets = N(boot_buckets),
};

struct sbx_metric sbx_m_stored_bytes = {
	.name = "sandbox_libkrun_snapshot_store_bytes",
	.help = "Bytes on disk counted against snapshot_store_mb, by kind (snapshots, paused), at scrape time",
	.kind = SBX_METRIC_GAUGE,
	.labels = { "kind" },
};

struct sbx_metric sbx_m_net_denials = {
	.name = "sandbox_libkrun_network_denials_total",
	.help = "Guest connections, DNS queries and frames the network helpers refused, by reason",
	.kind = SBX_METRIC_COUNTER,
	.labels = { "reason" },
};

static struct sbx_metric *const families[] = {
	&sbx_m_sandboxes, &sbx_m_creates, &sbx_m_create_seconds, &sbx_m_calls,     &sbx_m_call_seconds,
	&sbx_m_errors,    &sbx_m_memory_committed, &sbx_m_memory_budget, &sbx_m_vm_rss, &sbx_m_vms,
	&sbx_m_warm_pool, &sbx_m_warm_pool_target, &sbx_m_standby, &sbx_m_engine_up, &sbx_m_engine_reconnects,
	&sbx_m_engine_queued, &sbx_m_images_cached, &sbx_m_images_cached_bytes, &sbx_m_pulls, &sbx_m_pull_bytes,
	&sbx_m_workers, &sbx_m_published_connections, &sbx_m_pauses, &sbx_m_snapshots, &sbx_m_snapshot_seconds,
	&sbx_m_stored_bytes, &sbx_m_net_denials,
};

struct sbx_metric *const *sbx_metric_families(size_t *n)
{
	*n = N(families);
	return families;
}
