/* The network helper's seccomp filter (see net_seccomp.h).
 *
 * A denylist, as QEMU's -sandbox is: libslirp, glib and c-ares use a wide
 * and version-dependent set of ordinary calls (sockets, poll, timers,
 * memory), so an allowlist would break with a library update, while the
 * calls below are what turns a memory-safety bug in the stack into more
 * than a crash of one sandbox's network: running a program, changing
 * identity or namespaces, tracing or reading other processes, loading code
 * into the kernel, and kernel interfaces with a history of exploits. */
#include "net/net_seccomp.h"

#include <errno.h>
#include <seccomp.h>
#include <stddef.h>

static const char *const denied[] = {
	/* a program of the attacker's */
	"execve", "execveat",
	/* identity, privilege, namespaces */
	"setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setfsuid", "setfsgid",
	"setgroups", "capset", "unshare", "setns", "chroot", "pivot_root",
	"mount", "umount2", "fsopen", "fsmount", "fsconfig", "move_mount", "open_tree", "mount_setattr",
	/* other processes (LeakSanitizer traces its own threads at exit) */
#ifndef __SANITIZE_ADDRESS__
	"ptrace",
#endif
	"process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	/* the kernel itself */
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
	"swapon", "swapoff", "acct", "syslog", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"sethostname", "setdomainname", "iopl", "ioperm", "quotactl",
	/* interfaces attackers like */
	"bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
	"open_by_handle_at", "name_to_handle_at", "io_uring_setup", "io_uring_enter", "io_uring_register",
	"personality", "uselib", "vm86", "vm86old", "lookup_dcookie", "nfsservctl",
};

int net_seccomp_install(const char **failed)
{
	*failed = "seccomp_init";
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (ctx == NULL)
		return -ENOMEM;
	int rc = 0;
	for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]) && rc == 0; i++) {
		int nr = seccomp_syscall_resolve_name(denied[i]);
		/* A call this architecture does not have needs no rule. */
		if (nr == __NR_SCMP_ERROR)
			continue;
		*failed = denied[i];
		rc = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, nr, 0);
	}
	if (rc == 0) {
		*failed = "seccomp_load";
		rc = seccomp_load(ctx);
	}
	seccomp_release(ctx);
	return rc;
}
