/* The handlers of the 23 functions, one group per file: handlers_info.c,
 * handlers_sandbox.c, handlers_fs.c, handlers_worker.c.  They see the
 * adapter's state and fail through the S-code helpers; only ops.c, the
 * front door, names them. */
#ifndef SBX_ADAPTER_HANDLERS_H
#define SBX_ADAPTER_HANDLERS_H

#include "adapter/adapter_state.h"
#include "adapter/scode.h"

int sbx_op_adapter_info(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_catalog_list(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_list(struct sbx_adapter *a, json_t *req, json_t **out);

int sbx_op_create(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_run(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_exec(struct sbx_adapter *a, json_t *req, json_t **out);
/* exec for a caller on a connection of its own (live may be NULL). */
int sbx_op_exec_live(struct sbx_adapter *a, json_t *req, const struct sbx_exec_live *live, json_t **out);
int sbx_op_stop(struct sbx_adapter *a, json_t *req, json_t **out);

int sbx_op_fs_ls(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_fs_stat(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_fs_mkdir(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_fs_rm(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_fs_chmod(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_fs_mv(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_fs_grep(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_fs_sed(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_fs_write(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_fs_read(struct sbx_adapter *a, json_t *req, json_t **out);

/* The six worker::* functions: the dispatcher in handlers_worker.c. */
int sbx_op_worker_prepare(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_worker_start(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_worker_status(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_worker_logs(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_worker_stop(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_worker_destroy(struct sbx_adapter *a, json_t *req, json_t **out);

/* The extensions (ops_ext.c): process/handlers_process.c and
 * terminal/handlers_terminal.c, pause/handlers_pause.c,
 * snapshot/handlers_snapshot.c. */
int sbx_op_process_list(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_process_logs(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_process_wait(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_process_signal(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_terminal_open(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_terminal_resize(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_terminal_close(struct sbx_adapter *a, json_t *req, json_t **out);
/* pause/handlers_pause.c (issue 40). */
int sbx_op_pause(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_resume(struct sbx_adapter *a, json_t *req, json_t **out);
/* snapshot/handlers_snapshot.c (issue 39). */
int sbx_op_snapshot(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_fork(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_snapshot_list(struct sbx_adapter *a, json_t *req, json_t **out);
int sbx_op_snapshot_delete(struct sbx_adapter *a, json_t *req, json_t **out);

#endif
