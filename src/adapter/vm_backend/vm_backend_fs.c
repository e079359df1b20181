/* fs::* request/answer operations and fs::write over the VM layer; the
 * byte channels of fs::write come from the engine (the ops' context). */
#include "adapter/vm_backend/vm_backend_fs.h"

#include <errno.h>

#include "adapter/fs/fs_reply.h"
#include "adapter/vm_backend/vm_backend.h"
#include "common/scodes.h"
#include "engine/engine_channel.h"
#include "vm/vm.h"

static json_t *run_call(void *vm, const struct proto_msg *req, sbx_error_t *err)
{
	struct sbx_vm_fs *op = sbx_vm_fs_start(vm_backend_vm(vm), req, err);
	if (op == NULL)
		return NULL;
	int64_t deadline = sbx_now_ms() + FS_OP_TIMEOUT_MS;
	struct fs_reply r;
	fs_reply_init(&r, req->type);
	json_t *out = NULL;
	for (;;) {
		struct proto_msg batch;
		struct proto_fs_done done;
		int n = sbx_vm_fs_next(op, &batch, &done, deadline, err);
		if (n < 0)
			break;
		if (n == 0) {
			out = fs_reply_finish(&r, &done, err);
			break;
		}
		int rc = fs_reply_add(&r, &batch, err);
		proto_msg_free(&batch);
		if (rc < 0)
			break;
	}
	fs_reply_free(&r);
	sbx_vm_fs_free(op);
	return out;
}

/* Streams a channel's bytes into the guest file; S218 when the channel
 * stalls or aborts (the guest then drops its temp file). */
static int write_from_channel(struct engine *e, struct sbx_vm_fs *op, json_t *ref_json, uint64_t *written,
			      sbx_error_t *err)
{
	struct channel_ref ref;
	if (channel_ref_parse(ref_json, &ref, err) < 0)
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "content: %s", sbx_error_msg(*err));
	struct channel_reader *rd = channel_reader_open(e, &ref, CHANNEL_IDLE_MS, err);
	channel_ref_free(&ref);
	if (rd == NULL)
		return -1;
	int rc = 0;
	for (;;) {
		const uint8_t *data;
		ssize_t n = channel_reader_next(rd, &data, err);
		if (n <= 0) {
			rc = (int)n;
			break;
		}
		rc = sbx_vm_fs_write(op, data, (size_t)n, sbx_now_ms() + FS_CHUNK_TIMEOUT_MS, err);
		if (rc < 0)
			break;
		*written += (uint64_t)n;
	}
	channel_reader_free(rd);
	return rc;
}

static int write_from_source(struct sbx_vm_fs *op, const struct sbx_fs_write_req *w, uint64_t *written,
			     sbx_error_t *err)
{
	for (;;) {
		const void *data;
		ssize_t n = w->source(w->source_ud, &data, err);
		if (n <= 0)
			return (int)n;
		if (sbx_vm_fs_write(op, data, (size_t)n, sbx_now_ms() + FS_CHUNK_TIMEOUT_MS, err) < 0)
			return -1;
		*written += (uint64_t)n;
	}
}

static int run_write(void *ctx, void *vm, const struct sbx_fs_write_req *w, uint64_t *written, sbx_error_t *err)
{
	*written = 0;
	struct sbx_vm_fs *op = sbx_vm_fs_write_open(vm_backend_vm(vm), w->path, w->mode, w->parents, err);
	if (op == NULL)
		return -1;
	int rc;
	if (w->data != NULL) {
		rc = sbx_vm_fs_write(op, w->data, w->len, sbx_now_ms() + FS_CHUNK_TIMEOUT_MS, err);
		*written = w->len;
	} else if (w->source != NULL) {
		rc = write_from_source(op, w, written, err);
	} else {
		rc = write_from_channel(ctx, op, w->channel, written, err);
	}
	if (rc == 0)
		rc = sbx_vm_fs_write_end(op, sbx_now_ms() + FS_CHUNK_TIMEOUT_MS, err);
	/* Freed before the end, the write is cancelled and nothing replaced. */
	sbx_vm_fs_free(op);
	return rc;
}

/* Each operation that fails because the VM went answers S300 with the
 * cause, as exec does, not the S216 of a lost connection. */
static json_t *call(void *ctx, void *vm, const struct proto_msg *req, sbx_error_t *err)
{
	(void)ctx;
	json_t *out = run_call(vm, req, err);
	if (out == NULL)
		vm_backend_blame_death(vm, err);
	return out;
}

static int write(void *ctx, void *vm, const struct sbx_fs_write_req *w, uint64_t *written, sbx_error_t *err)
{
	int rc = run_write(ctx, vm, w, written, err);
	if (rc < 0)
		vm_backend_blame_death(vm, err);
	return rc;
}

static json_t *read_file(void *ctx, void *vm, const char *path, void (*done)(void *ud), void *done_ud, sbx_error_t *err)
{
	json_t *out = vm_backend_fs_read(ctx, vm, path, done, done_ud, err);
	if (out == NULL)
		vm_backend_blame_death(vm, err);
	return out;
}

static int read_to(void *ctx, void *vm, const char *path, sbx_fs_sink_fn sink, void *ud, uint64_t *size,
		   sbx_error_t *err)
{
	(void)ctx;
	int rc = vm_backend_fs_read_to(vm, path, sink, ud, size, err);
	if (rc < 0)
		vm_backend_blame_death(vm, err);
	return rc;
}

const struct sbx_fs_ops vm_backend_fs_ops = {
	.call = call,
	.write = write,
	.read = read_file,
	.read_to = read_to,
};
