#include "adapter/process/process_follow.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "adapter/process/process_table.h"
#include "common/clock.h"
#include "common/scodes.h"

struct follower {
	const struct sbx_stream_ops *ops;
	struct process_table *table;
	struct bg_proc *p;
	void *w;
	int fd;
	uint64_t off;
	uint8_t buf[FOLLOW_FRAME_MAX];
};

/* The next bytes from f->off into f->buf: >0, 0 once the process exited
 * and all went, -1 when the ring let go of f->off already. */
static ssize_t next_chunk(struct follower *f)
{
	struct bg_proc *p = f->p;
	const struct proc_ring *r = f->fd == 2 ? &p->err : &p->out;
	pthread_mutex_lock(&p->lock);
	while (p->running && r->end <= f->off) {
		struct timespec ts = sbx_ms_timespec(sbx_now_ms() + 1000);
		pthread_cond_timedwait(&p->changed, &p->lock, &ts);
	}
	ssize_t n = f->off < proc_ring_start(r) ? -1 : (ssize_t)proc_ring_copy(r, f->off, f->buf, sizeof(f->buf));
	pthread_mutex_unlock(&p->lock);
	return n;
}

static void *follow_main(void *arg)
{
	struct follower *f = arg;
	char text[160];
	const char *fail = NULL;
	for (;;) {
		ssize_t n = next_chunk(f);
		if (n == 0)
			break;
		if (n < 0) {
			snprintf(text, sizeof(text),
				 "the log let go of offset %" PRIu64 " before it was sent (background_log_bytes); "
				 "read on with process::logs",
				 f->off);
			fail = text;
			break;
		}
		sbx_error_t e = NULL;
		if (f->ops->writer_send(f->w, f->buf, (size_t)n, &e) < 0) {
			snprintf(text, sizeof(text), "%s", sbx_error_msg(e));
			sbx_error_free(&e);
			fail = text;
			break;
		}
		f->off += (uint64_t)n;
	}
	f->ops->writer_close(f->w, fail);
	bg_proc_unref(f->p);
	process_table_follower_end(f->table);
	free(f);
	return NULL;
}

int process_follow_start(struct sbx_adapter *a, struct bg_proc *p, int fd, uint64_t from, json_t *ref,
			 sbx_error_t *err)
{
	const struct sbx_stream_ops *ops = a->streams.ops;
	if (ops == NULL)
		return sbx_error_scode(err, SBX_S_VM_BOOT, "byte channels are not available in this sandbox-libkrun "
							   "build: call process::logs without `follow`");
	struct follower *f = malloc(sizeof(*f));
	if (f == NULL)
		return sbx_error_errno(err, ENOMEM, "process::logs follow");
	*f = (struct follower){ .ops = ops, .table = a->procs, .p = p, .fd = fd, .off = from };
	if ((f->w = ops->writer_open(a->streams.ctx, ref, err)) == NULL) {
		free(f);
		return -1;
	}
	bg_proc_ref(p);
	process_table_follower_begin(a->procs);
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&t, &attr, follow_main, f);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		ops->writer_close(f->w, "the adapter could not start the follower");
		process_table_follower_end(a->procs);
		bg_proc_unref(p);
		free(f);
		return sbx_error_errno(err, rc, "process::logs follow: pthread_create");
	}
	return 0;
}
