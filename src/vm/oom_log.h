/* Whether the kernel's OOM killer killed a process: its log (/dev/kmsg)
 * says "Killed process <pid> (<comm>)" for the global OOM killer and for a
 * cgroup's alike.  Without per-VM cgroups this is how a VM killed for
 * memory is told from one killed by hand. */
#ifndef SBX_VM_OOM_LOG_H
#define SBX_VM_OOM_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads kmsg-format records ("pri,seq,usec,flags;text", one per line,
 * continuation lines starting with a space) from fd until EOF or EAGAIN,
 * and tells whether one logged at or after `since_us` (the kernel's clock,
 * CLOCK_MONOTONIC) reports `pid` killed. */
bool oom_log_killed(int fd, pid_t pid, uint64_t since_us);
/* The same on /dev/kmsg; false when it cannot be read. */
bool oom_killed(pid_t pid, uint64_t since_us);

#endif
