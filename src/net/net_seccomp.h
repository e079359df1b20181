/* The network helper confines itself once its stack and resolver are set
 * up: a seccomp filter kills it at the first system call no network stack
 * needs (exec, changes of identity or namespace, tracing, kernel
 * modules...).  It needs NO_NEW_PRIVS (set before) or CAP_SYS_ADMIN. */
#ifndef SBX_NET_SECCOMP_H
#define SBX_NET_SECCOMP_H

/* 0, or a negative errno with *failed naming the call or step. */
int net_seccomp_install(const char **failed);

#endif
