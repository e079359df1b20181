/* Applies CONFIG inside the VM: hostname, open-file limit, clock, network
 * (boot_net.h), kernel RNG seed, and the identity processes run as. */
#ifndef SBX_GUEST_BOOT_CONFIG_H
#define SBX_GUEST_BOOT_CONFIG_H

#include "common/error.h"
#include "guest/user_resolve.h"
#include "proto/proto_msg.h"

int boot_apply_config(const struct proto_config *c, sbx_error_t *err);
/* Resolves c->user against /etc/passwd and /etc/group of the (already
 * mounted) sandbox root, as user_resolve.h describes, and returns in *env
 * the boot env with HOME=<the user's home> beneath it (a HOME in the boot
 * env wins).  Fails, naming the user, when it cannot be resolved. */
/* Before HELLO: resolves the image's default user (CONFIG's user "") so
 * that a template holds the answer and boot_resolve_user need not read and
 * parse /etc/passwd and /etc/group again under a cold translation cache.
 * Nothing can have changed them before CONFIG: no process ran (a CONFIG
 * with shares, one of which may cover them, resolves again).  Errors are
 * boot_resolve_user's to report (it resolves again). */
void boot_resolve_default_user(void);
int boot_resolve_user(const struct proto_config *c, struct guest_user *u, char ***env, sbx_error_t *err);

#endif
