/* The resident memory of the VMs this process runs: every descendant
 * process named qemu-system-* (sandboxes, parked and standby VMs, worker
 * VMs), read from /proc when asked (a metrics scrape). */
#ifndef SBX_VM_VM_RSS_H
#define SBX_VM_VM_RSS_H

#include <stdint.h>

#include "common/error.h"

/* At most this many processes are looked at; a host with more fails. */
#define SBX_VM_RSS_MAX_PROCS 65536

/* Sums VmRSS of the QEMU processes under `root` (a pid) as listed in
 * `proc` ("/proc"); *vms is how many there are. */
int sbx_vm_rss_total(const char *proc, int root, uint64_t *bytes, unsigned *vms, sbx_error_t *err);

#endif
