/* Dropping every privilege in a jailed child (async-signal-safe, raw
 * system calls: glibc's set*id wrappers synchronise threads that a forked
 * child does not have). */
#ifndef SBX_JAIL_CAPS_H
#define SBX_JAIL_CAPS_H

#include <stdbool.h>
#include <sys/types.h>

/* Empties the bounding and ambient sets, drops the supplementary groups,
 * becomes uid/gid (which empties the permitted and effective sets),
 * empties the inheritable set and sets NO_NEW_PRIVS.  -1 with errno and
 * *failed naming the step. */
int jail_drop_privileges(uid_t uid, gid_t gid, const char **failed);
/* Whether this process has every capability the jail needs to build one
 * (CAP_SYS_ADMIN, CAP_SETUID, CAP_SETGID, CAP_SETPCAP, CAP_MKNOD,
 * CAP_CHOWN); else *missing names the first one lacking. */
bool jail_caps_sufficient(const char **missing);

#endif
