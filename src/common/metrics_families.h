/* The daemon's metric families (docs/metrics.md), in common so that every
 * room may update them.  Each names its labels; every label's values come
 * from a bounded set, named beside it. */
#ifndef SBX_COMMON_METRICS_FAMILIES_H
#define SBX_COMMON_METRICS_FAMILIES_H

#include "common/metrics.h"

extern struct sbx_metric sbx_m_sandboxes;           /* image (catalog), state (ready, stopping) */
extern struct sbx_metric sbx_m_creates;             /* boot_mode (pool, standby, template, cold) */
extern struct sbx_metric sbx_m_create_seconds;      /* boot_mode */
extern struct sbx_metric sbx_m_calls;               /* function (the 23), outcome (ok or an S-code) */
extern struct sbx_metric sbx_m_call_seconds;        /* function */
extern struct sbx_metric sbx_m_errors;              /* scode */
extern struct sbx_metric sbx_m_memory_committed;
extern struct sbx_metric sbx_m_memory_budget;
extern struct sbx_metric sbx_m_vm_rss;
extern struct sbx_metric sbx_m_vms;
extern struct sbx_metric sbx_m_warm_pool;          /* image (warm_pool's keys) */
extern struct sbx_metric sbx_m_warm_pool_target;   /* image */
extern struct sbx_metric sbx_m_standby;            /* image (catalog) */
extern struct sbx_metric sbx_m_engine_up;
extern struct sbx_metric sbx_m_engine_reconnects;
extern struct sbx_metric sbx_m_engine_queued;
extern struct sbx_metric sbx_m_images_cached;
extern struct sbx_metric sbx_m_images_cached_bytes;
extern struct sbx_metric sbx_m_pulls;              /* outcome (ok, error) */
extern struct sbx_metric sbx_m_pull_bytes;
extern struct sbx_metric sbx_m_published_connections; /* outcome (accepted, refused) */
extern struct sbx_metric sbx_m_pauses; /* op (pause, resume), outcome (ok, failed) */
extern struct sbx_metric sbx_m_snapshots;        /* op (snapshot, create, fork), outcome (ok, failed) */
extern struct sbx_metric sbx_m_snapshot_seconds; /* op (snapshot, create, fork) */
extern struct sbx_metric sbx_m_stored_bytes;     /* kind (snapshots, paused) */
extern struct sbx_metric sbx_m_workers;            /* state (prepared ... failed) */
extern struct sbx_metric sbx_m_net_denials;        /* reason (net/net_report.h's names) */

/* Every family above, in the order of the exposition. */
struct sbx_metric *const *sbx_metric_families(size_t *n);

#endif
