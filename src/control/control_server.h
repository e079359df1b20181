/* The operator's control socket (docs/cli.md): a unix socket that serve
 * listens on, mode 0600 (0660 with `control_group`), every peer checked
 * with SO_PEERCRED (root, the daemon's own user, or a member of the
 * group).  Each connection is served on a thread of its own, at most
 * CONTROL_CONN_MAX at once, through the adapter's front door. */
#ifndef SBX_CONTROL_CONTROL_SERVER_H
#define SBX_CONTROL_CONTROL_SERVER_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "adapter/adapter_state.h"
#include "common/error.h"

#define CONTROL_CONN_MAX 16

struct control_options {
	const char *path; /* the socket's path */
	bool has_group;   /* members of `gid` may use it too (control_group) */
	gid_t gid;
	/* What status shows that the adapter does not know (engine, jail):
	 * a new object, called on a connection's thread. */
	json_t *(*status)(void *ud);
	void *status_ud;
};

struct control_server;

/* The gid of `control_group`: an unknown group is an error naming the key. */
int control_group_gid(const char *group, gid_t *gid, sbx_error_t *err);

/* Binds and starts listening.  A socket file another daemon still
 * answers on is left alone: that is an error naming it. */
struct control_server *control_server_start(struct sbx_adapter *a, const struct control_options *o,
					    sbx_error_t *err);
/* Stops listening, cuts the open connections, waits for their threads
 * (a call into the adapter in flight ends first) and removes the socket. */
void control_server_stop(struct control_server *s);

#endif
