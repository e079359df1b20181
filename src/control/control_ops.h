/* One request of the control socket, served on its connection's thread:
 * ps and status (control_ops.c), exec, stop and fs through the adapter's
 * front door, file copies and logs (control_files.c), over the shared
 * view (control_view.c). */
#ifndef SBX_CONTROL_CONTROL_OPS_H
#define SBX_CONTROL_CONTROL_OPS_H

#include <stdatomic.h>

#include "adapter/adapter_state.h"
#include "control/control_proto.h"

struct control_ctx {
	struct sbx_adapter *a;
	json_t *(*status)(void *ud);
	void *status_ud;
	atomic_bool *stopping; /* the server is stopping: long streams end */
};

/* Reads the request from r, answers on fd; failures are told to the peer
 * as the final line when the connection still carries it. */
void control_serve(const struct control_ctx *c, struct control_reader *r, int fd);

/* control_files.c: the streams.  Each sends its final line. */
int control_cp_in(const struct control_ctx *c, struct control_reader *r, int fd, const char *id,
		  const struct control_request *q, sbx_error_t *err);
int control_cp_out(const struct control_ctx *c, int fd, const char *id, const struct control_request *q,
		   sbx_error_t *err);
int control_logs(const struct control_ctx *c, int fd, const char *id, const struct control_request *q,
		 sbx_error_t *err);

/* control_shell.c: a terminal over this connection (sends its final line). */
int control_shell(const struct control_ctx *c, struct control_reader *r, int fd, const char *id,
		  const struct control_request *q, sbx_error_t *err);

/* control_view.c, below both: the rows of the operator's view with
 * QEMU's pid, its RSS and the console log's path; a sandbox reference
 * resolved; the adapter's error body sent as the final line.  Each row
 * also counts the sandbox's background processes and terminals. */
json_t *control_rows(const struct control_ctx *c);
/* What runs in sandbox `id` (canonical) besides its execs: {sandbox_id,
 * processes: [process::list's rows], terminals: [{terminal_id, argv, pid,
 * started_at}]}; NULL when out of memory. */
json_t *control_activity(const struct control_ctx *c, const char id[SBX_UUID_STRLEN + 1]);
/* A reference → the id: the full id (any form a call accepts), else a
 * unique id prefix, else a unique name; ids always win over names.  S002
 * naming `ref` when nothing matches or, listing the candidates, when
 * several do at the first rank that matches. */
int control_resolve(const struct control_ctx *c, const char *ref, char id[SBX_UUID_STRLEN + 1], sbx_error_t *err);
int control_send_body_error(int fd, const json_t *body, sbx_error_t *err);
/* Sends err (an S-code error or a plain one) as the final line. */
int control_send_err(int fd, sbx_error_t err_in, sbx_error_t *err);

#endif
