/* The cgroup of a jail, on either hierarchy behind one interface:
 *   v2: one leaf <delegated>/sandbox-libkrun/<name> with memory.max,
 *       memory.swap.max 0, memory.oom.group 1, pids.max, cpu.max; killed
 *       with cgroup.kill.
 *   v1: one leaf per controller (memory, pids, cpu), each under the
 *       daemon's own cgroup of that controller: memory.limit_in_bytes and
 *       memory.memsw.limit_in_bytes (no swap), pids.max, cpu.cfs_quota_us;
 *       killed pid by pid from cgroup.procs.
 * jail_cg_join and jail_cg_kill are async-signal-safe. */
#ifndef SBX_JAIL_CGROUP_H
#define SBX_JAIL_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

#define JAIL_CG_MAX_DIRS 3
#define JAIL_CG_MAX_SETTINGS 8
#define JAIL_CG_SUBDIR "sandbox-libkrun"
#define JAIL_CG_PERIOD_US 100000
/* QEMU's threads: main, RCU, one per vCPU, its I/O thread pool (64 at
 * most), with room; a fork bomb cannot get far. */
#define JAIL_CG_PIDS_MAX 256

enum jail_cg_version { JAIL_CG_NONE, JAIL_CG_V1, JAIL_CG_V2 };

struct jail_cg_limits {
	uint64_t memory_bytes;
	uint64_t pids_max;
	uint64_t cpu_quota_us, cpu_period_us;
};

void jail_cg_limits(uint64_t memory_mib, unsigned cpus, struct jail_cg_limits *out);

/* One file of the leaf to write: `dir` indexes the leaf directories (v1:
 * memory, pids, cpu; v2: the one leaf).  An optional file may be absent
 * (memory.memsw.* without swap accounting, memory.swap.max without swap). */
struct jail_cg_setting {
	int dir;
	const char *file;
	char value[48];
	bool optional;
};

/* The files to write, in order; returns how many. */
size_t jail_cg_settings(enum jail_cg_version v, const struct jail_cg_limits *l,
			struct jail_cg_setting out[JAIL_CG_MAX_SETTINGS]);

struct jail_cg_host {
	enum jail_cg_version v;
	char *parent[JAIL_CG_MAX_DIRS]; /* where the leaves go */
	int n;
};

/* Picks the hierarchy (v2 with memory, pids and cpu available, else the
 * three v1 controllers) and creates the parent directories.  On failure
 * *why says what is missing and how to enable it. */
int jail_cg_probe(struct jail_cg_host *h, char *why, size_t len);
void jail_cg_host_free(struct jail_cg_host *h);

/* From /proc/self/mountinfo text: the mount point of the cgroup hierarchy
 * of `fstype` ("cgroup2", or "cgroup" with `controller` among its
 * options), and in *root the directory of the hierarchy mounted there; or
 * NULL. */
char *jail_cg_mount_point(const char *mountinfo, const char *fstype, const char *controller, char **root);
/* The directory of this process's cgroup `own` (from /proc/self/cgroup) in
 * a hierarchy mounted at `mnt` from its directory `root`; NULL when `own`
 * is not below that root. */
char *jail_cg_own_dir(const char *mnt, const char *root, const char *own);
/* From /proc/self/cgroup text: this process's path in the hierarchy of
 * `controller` (NULL: the v2 line "0::"), or NULL. */
char *jail_cg_own_path(const char *proc_cgroup, const char *controller);

struct jail_cg {
	enum jail_cg_version v;
	char *leaf[JAIL_CG_MAX_DIRS];
	char *procs[JAIL_CG_MAX_DIRS]; /* <leaf>/cgroup.procs */
	char *kill;                    /* v2: <leaf>/cgroup.kill */
	int n;
};

int jail_cg_create(const struct jail_cg_host *h, const char *name, const struct jail_cg_limits *l,
		   struct jail_cg *cg, sbx_error_t *err);
/* Moves the calling process into the leaf; -1 with errno. */
int jail_cg_join(const struct jail_cg *cg);
/* Kills every process in the leaf and removes it. */
void jail_cg_kill(const struct jail_cg *cg);
void jail_cg_free(struct jail_cg *cg);

/* The owner pid of a leaf name "<pid>-...", false for other names. */
bool jail_cg_owner(const char *name, pid_t *pid);
unsigned jail_cg_remove_leftovers(const struct jail_cg_host *h);

#endif
