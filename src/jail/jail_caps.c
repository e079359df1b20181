#include "jail/jail_caps.h"

#include <errno.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int jail_drop_privileges(uid_t uid, gid_t gid, const char **failed)
{
	*failed = "capability bounding set";
	/* PR_CAPBSET_READ fails past the kernel's last capability. */
	for (int cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
			return -1;
	}
	*failed = "ambient capabilities";
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -1;
	*failed = "setgroups";
	if (syscall(SYS_setgroups, 0, NULL) < 0)
		return -1;
	*failed = "setresgid";
	if (syscall(SYS_setresgid, gid, gid, gid) < 0)
		return -1;
	*failed = "setresuid";
	if (syscall(SYS_setresuid, uid, uid, uid) < 0)
		return -1;
	*failed = "capset";
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = { { 0, 0, 0 } };
	if (syscall(SYS_capset, &hdr, none) < 0)
		return -1;
	*failed = "no_new_privs";
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

bool jail_caps_sufficient(const char **missing)
{
	static const struct {
		int cap;
		const char *name;
	} need[] = { { CAP_SYS_ADMIN, "CAP_SYS_ADMIN" }, { CAP_SETUID, "CAP_SETUID" },
		     { CAP_SETGID, "CAP_SETGID" },       { CAP_SETPCAP, "CAP_SETPCAP" },
		     { CAP_MKNOD, "CAP_MKNOD" },         { CAP_CHOWN, "CAP_CHOWN" } };
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = { { 0, 0, 0 } };
	if (syscall(SYS_capget, &hdr, d) < 0) {
		*missing = "capget";
		return false;
	}
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		int c = need[i].cap;
		if (!(d[c / 32].effective & (1u << (c % 32)))) {
			*missing = need[i].name;
			return false;
		}
	}
	return true;
}
