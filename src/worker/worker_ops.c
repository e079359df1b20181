#include "worker/worker_ops.h"

const struct sbx_worker_ops worker_ops_vm = {
	.prepare = worker_op_prepare,
	.start = worker_op_start,
	.status = worker_op_status,
	.logs = worker_op_logs,
	.stop = worker_op_stop,
	.destroy = worker_op_destroy,
};
