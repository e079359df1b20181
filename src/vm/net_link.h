/* A networked VM's link to its network helper (src/net/, one process per
 * VM): a SOCK_DGRAM socketpair carrying one Ethernet frame per datagram
 * between QEMU's `-netdev dgram` and the helper, which runs the guest's
 * TCP/IP peer (libslirp) and the egress policy.
 *
 * The helper is spawned with a lifeline socket (SOCK_SEQPACKET) whose
 * other end only the daemon holds, and a pidfd of the VM's keeper: it
 * exits when the daemon shuts its end or dies (kill -9 included) and when
 * the VM is gone.  It stamps the mtime of a memfd when payload is relayed:
 * the reaper's activity beacon.  Its denials come back on the lifeline as
 * reports (net/net_report.h), read into
 * sandbox_libkrun_network_denials_total by net_link_report.c. */
#ifndef SBX_VM_NET_LINK_H
#define SBX_VM_NET_LINK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "jail/jail.h"
#include "proto/proto_net_addr.h"
#include "net/net_report.h"

struct net_link {
	pid_t pid;     /* the helper, -1 = none */
	int status;    /* its exit status (128 + signal) once it exited, else -1 */
	int lifeline;  /* write end */
	int beacon;    /* memfd whose mtime the helper stamps */
	uint64_t publish_seen[2]; /* the published ports' totals last taken */
	int qemu_fd;   /* QEMU's end until spawned */
	int helper_fd; /* the helper's end until spawned */
	struct jail *jail; /* the helper's jail, NULL when it runs unconfined */
	/* Its reports (net_link_report.c, under that file's lock). */
	struct net_report seen; /* the counts last accepted */
	bool report_bad;        /* a report was refused: the helper is not read again */
	bool listed;
	pid_t report_pid;       /* the helper's, for a warning once it is reaped */
	struct net_link *prev, *next;
};

void net_link_init(struct net_link *l);
/* The socketpair and the beacon; l->qemu_fd goes to QEMU. */
int net_link_open(struct net_link *l, sbx_error_t *err);
/* Starts the helper with args (sandbox-net-helper options) and the
 * published ports' listeners (at most NET_MAX_PUBLISH, the caller's: a
 * helper started again gets them again) once the keeper runs; closes both socket ends here either way.  With an active
 * jail host the helper runs jailed as QEMU does (jail/jail.h), in a cgroup
 * leaf named after vm_dir, except that it keeps the host's network
 * namespace: its sockets are the guest's connections out. */
int net_link_spawn(struct net_link *l, char *const *args, const int *publish, size_t n_publish, pid_t keeper, struct sbx_jail_host *jail_host,
		   const char *vm_dir, sbx_error_t *err);
/* Shuts the lifeline, reaps the helper, adds its last report to the
 * metric and closes everything. */
void net_link_close(struct net_link *l);
/* The jailed helper (net_link_jail.c): its jail, and its start through an
 * intermediate process whose exit status is the helper's.  fds are the
 * frames socket, lifeline, keeper pidfd and beacon, then the published
 * ports' listeners (nfds in all, at most NET_HELPER_FDS), numbered above
 * the highest descriptor the helper gets. */
#define NET_HELPER_FDS (4 + NET_MAX_PUBLISH)
struct jail *net_link_jail_prepare(struct sbx_jail_host *h, const char *vm_dir, const char *helper,
				   sbx_error_t *err);
int net_link_jail_spawn(const struct jail *j, const char *path, char *const *argv, char *const *envp,
			const int *fds, size_t nfds, pid_t *pid, sbx_error_t *err);
/* Non-blocking: true once the helper exited on its own (l->status says
 * how); false while it runs and for a VM without one.  Not thread-safe. */
bool net_link_exited(struct net_link *l);
/* What the helper's published ports accepted (delta[0]) and refused
 * (delta[1]) since the last call, from the totals it keeps in the beacon
 * (NET_BEACON_PUBLISH_AT), read as a compromised helper's: each total at
 * most NET_PUBLISH_TOTAL_MAX, and one lower than the last adds nothing. */
#define NET_PUBLISH_TOTAL_MAX (1ull << 40)
void net_link_publish_take(struct net_link *l, uint64_t delta[2]);
/* CLOCK_REALTIME ms of the last relayed payload, 0 = none yet. */
int64_t net_link_activity_ms(const struct net_link *l);

/* net_link_report.c: the helpers' reports.  A spawned helper's link is
 * listed until net_link_report_end.  Reading never blocks nor allocates:
 * at most NET_LINK_REPORTS_READ messages of a link at a time, each
 * checked by net_report_accept; a link whose report is refused is warned
 * about once and not read again. */
#define NET_LINK_REPORTS_READ 64
void net_link_report_watch(struct net_link *l);
/* The helper has exited: reads what it sent last, unlists the link. */
void net_link_report_end(struct net_link *l);
/* Reads the waiting reports of every listed helper into the metric, whose
 * every reason then has a series (0 before any denial): the scrape. */
void net_link_report_collect(void);
/* Reads at most max reports waiting on fd into the metric, against *seen;
 * false once a report was refused (warned about, naming who).  The
 * functions above use it; for the unit tests. */
bool net_link_report_read(int fd, struct net_report *seen, unsigned max, const char *who);

#endif
