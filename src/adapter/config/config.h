/* The adapter's configuration (contract §4 plus our own keys), parsed from
 * the value `configuration::get` returns or from a --config file.  Loading
 * is fail-closed: a value that does not parse is fatal (exit 2), never
 * replaced by defaults.  This is the one parser of the whole configuration;
 * the image store's keys are parsed by src/image/image_config.c, which it
 * calls (src/image may not depend on the adapter, so that is the direction
 * that keeps one parser per key). */
#ifndef SBX_ADAPTER_CONFIG_H
#define SBX_ADAPTER_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "adapter/config/config_metrics.h"
#include "common/error.h"
#include "image/image_config.h"
#include "net/net_config.h"
#include "adapter/config/config_pause.h"
#include "adapter/config/config_publish.h"
#include "jail/jail.h"
#include "vm/accel.h"

#define SBX_WORKER_DISK_DEFAULT_MIB 4096 /* worker_disk_mb: a Compose worker's data disk, sparse */
/* The snapshot templates' bound: a python template's RAM file holds
 * about 100 MiB of the guest's pages (docs/performance.md, "Memory per sandbox"). */
#define SBX_TEMPLATE_CACHE_DEFAULT_MIB 2048
#define SBX_WARM_POOL_MAX_DEFAULT 8
#define SBX_BACKGROUND_MAX 1024u                     /* max_background_per_sandbox: 1..this */
#define SBX_BACKGROUND_LOG_MIN 4096u                 /* background_log_bytes: this.. */
#define SBX_BACKGROUND_LOG_MAX (64u * 1024u * 1024u) /* ..this */
#define SBX_FOLLOWS_MAX 65536u                       /* max_follows, max_follows_per_sandbox: 1..this */

/* warm_pool: how many parked VMs of an image wait for creates. */
struct sbx_warm_pool_entry {
	char *image;
	uint32_t count;
};

struct sbx_image_caps {
	char *image;
	uint32_t max_cpus;
	uint32_t max_memory_mb;
};

struct sbx_config {
	/* auto_install, registry_mirrors, registry_auth, custom_images */
	struct sbx_image_config images;
	char **image_allowlist;
	size_t n_image_allowlist;
	uint64_t default_idle_timeout_secs;
	uint32_t max_concurrent_sandboxes;
	uint32_t max_concurrent_exec_per_sandbox; /* already raised from 0 to 1 */
	uint64_t max_exec_timeout_ms;
	uint32_t max_background_per_sandbox; /* running background processes (issue 26) */
	uint32_t background_log_bytes;       /* each of a background process's stdout and stderr rings */
	uint32_t max_follows_per_sandbox;    /* process::logs follows streaming at once, per sandbox */
	uint32_t max_follows;                /* the same, all sandboxes together */
	uint32_t default_cpus;
	uint32_t default_memory_mb;
	struct sbx_image_caps *per_image_caps;
	size_t n_per_image_caps;
	enum sbx_accel accel;
	/* The process's one decision (serve's at its start, run's and image
	 * pull's for themselves: sbx_config_decide_accel): every VM of this
	 * configuration starts under it, and its cost and cgroup limit follow
	 * it.  Apart from the config so that a VM that cannot start under KVM
	 * moves it to TCG (vm/accel.h) through a const config. */
	struct sbx_accel_choice *accel_in_use;
	char *krunfw_path; /* NULL when not set */
	uint32_t tcg_cache_mb;     /* TCG translation cache per VM */
	uint32_t template_cache_mb; /* all snapshot templates on disk (state and RAM files) */
	struct sbx_warm_pool_entry *warm_pool;
	size_t n_warm_pool;
	uint32_t warm_pool_max;    /* parked VMs of all images together */
	bool standby;              /* QEMU launched ahead for the next create (vm_backend/standby.h) */
	uint32_t scratch_disk_mb;  /* what one sandbox may write */
	uint32_t worker_disk_mb;   /* a Compose worker's persistent data disk */
	uint32_t max_guest_pids;   /* processes one exec may have, 0 = no limit */
	uint64_t memory_budget_mb; /* 0: MemTotal less the host's reserve */
	struct net_config net; /* network_policy */
	struct sbx_publish_config publish; /* publish_* (create's `ports`) */
	struct sbx_pause_config pause;     /* pause and resume (issue 40) */
	enum sbx_jail_mode jail;   /* QEMU's confinement (jail/jail.h) */
	uint32_t jail_uid_base;    /* first uid of the jails' range */
	struct sbx_metrics_listen metrics_listen; /* GET /metrics; off by default */
	char *control_socket;      /* the operator's socket (control/); NULL = the default, "" = none */
	char *control_group;       /* group that may use it besides root; NULL = none */
};

/* Parses a configuration value: NULL or null gives the defaults; a flat map
 * or a list holding exactly one map is read key by key.  Returns a new
 * config, or NULL with a message fit for the operator. */
struct sbx_config *sbx_config_parse(json_t *value, sbx_error_t *err);
struct sbx_config *sbx_config_defaults(sbx_error_t *err);
void sbx_config_free(struct sbx_config *cfg);

/* Every top-level key the parser reads (the image store's, then the
 * adapter's), from the parser's own tables: the first min(n, cap) go to
 * out; returns n.  Unknown keys are ignored with a warning naming the
 * nearest of these. */
#define SBX_CONFIG_MAX_KEYS 64
size_t sbx_config_key_names(const char **out, size_t cap);

bool sbx_config_allows(const struct sbx_config *cfg, const char *image);
/* Probes this host once for `accel` (vm/accel.h); fails (kvm asked for
 * and unusable, the cause said) leaving the decision open. */
int sbx_config_decide_accel(const struct sbx_config *cfg, sbx_error_t *err);
/* KVM or TCG once decided, else `accel` as configured (AUTO: a VM start
 * probes for itself). */
enum sbx_accel sbx_config_accel(const struct sbx_config *cfg);
/* The translation cache a VM of this configuration may have: 0 where
 * `accel` is kvm, or `auto` came to KVM, since only TCG has one. */
uint32_t sbx_config_tcg_cache_mib(const struct sbx_config *cfg);
const struct sbx_image_caps *sbx_config_caps(const struct sbx_config *cfg, const char *image);

#endif
