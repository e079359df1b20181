/* Filesystem operations in a VM's guest: thin handles over one control
 * stream each (proto.h FS_*), adding the S-codes of transport failures. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/scodes.h"
#include "vm/vm_internal.h"

struct sbx_vm_fs {
	struct chan *c;
	struct chan_stream *s;
};

static struct sbx_vm_fs *wrap(struct chan *c, struct chan_stream *s, sbx_error_t *err)
{
	if (s == NULL) {
		sbx_error_default_scode(err, SBX_S_FS_IO);
		return NULL;
	}
	struct sbx_vm_fs *op = calloc(1, sizeof(*op));
	if (op == NULL) {
		chan_stream_release(s);
		sbx_error_set(err, ENOMEM, "fs operation");
		return NULL;
	}
	op->c = c;
	op->s = s;
	return op;
}

struct sbx_vm_fs *sbx_vm_fs_start(struct sbx_vm *vm, const struct proto_msg *req, sbx_error_t *err)
{
	if (req->type < PROTO_FS_LS || req->type > PROTO_FS_SED)
		return sbx_error_set(err, EINVAL, "not a request/answer fs operation"), NULL;
	struct chan *c = vm->chan;
	return wrap(c, chan_fs_start(c, req, err), err);
}

int sbx_vm_fs_next(struct sbx_vm_fs *op, struct proto_msg *batch, struct proto_fs_done *done, int64_t deadline,
		   sbx_error_t *err)
{
	int r = chan_fs_next(op->s, batch, done, deadline, err);
	if (r == 1 && batch->type == PROTO_FS_META) {
		proto_msg_free(batch);
		return sbx_error_scode(err, SBX_S_FS_IO, "the guest sent file metadata to a request that has none");
	}
	return r;
}

struct sbx_vm_fs *sbx_vm_fs_read_open(struct sbx_vm *vm, const char *path, struct proto_fs_meta *meta,
				      int64_t deadline, sbx_error_t *err)
{
	struct chan *c = vm->chan;
	struct proto_msg req = { .type = PROTO_FS_READ, .u.fs_path = { (char *)path } };
	struct sbx_vm_fs *op = wrap(c, chan_fs_start(c, &req, err), err);
	if (op == NULL)
		return NULL;
	struct proto_msg m;
	struct proto_fs_done done;
	int r = chan_fs_next(op->s, &m, &done, deadline, err);
	if (r == 1 && m.type == PROTO_FS_META) {
		*meta = m.u.fs_meta;
		proto_msg_free(&m);
		return op;
	}
	if (r == 1) {
		proto_msg_free(&m);
		sbx_error_scode(err, SBX_S_FS_IO, "the guest answered a read without the file's metadata");
	} else if (r == 0) {
		sbx_error_scode(err, SBX_S_FS_IO, "the guest ended a read without the file's metadata");
	}
	sbx_vm_fs_free(op);
	return NULL;
}

ssize_t sbx_vm_fs_read(struct sbx_vm_fs *op, void *buf, size_t len, int64_t deadline, sbx_error_t *err)
{
	enum chan_output which;
	ssize_t n = chan_stream_read(op->s, &which, buf, len, deadline, err);
	if (n < 0) {
		sbx_error_default_scode(err, SBX_S_FS_IO);
		return -1;
	}
	if (n > 0 && which != CHAN_STDOUT)
		return sbx_error_scode(err, SBX_S_FS_IO, "the guest sent stderr bytes on a file read");
	if (n > 0)
		return n;
	/* The stream ended: EXIT 0, or FS_ERROR when the file failed midway. */
	int code = -1;
	if (chan_stream_wait(op->s, deadline, &code, err) < 0) {
		if (chan_dead(op->c))
			sbx_error_default_scode(err, SBX_S_FS_IO);
		return -1;
	}
	if (code != 0)
		return sbx_error_scode(err, SBX_S_FS_IO, "the guest ended a read with status %d", code);
	return 0;
}

struct sbx_vm_fs *sbx_vm_fs_write_open(struct sbx_vm *vm, const char *path, uint32_t mode, bool parents,
				       sbx_error_t *err)
{
	struct chan *c = vm->chan;
	struct proto_fs_write w = { (char *)path, mode, parents ? PROTO_FS_PARENTS : 0 };
	return wrap(c, chan_fs_write(c, &w, err), err);
}

/* The guest's verdict on a write it ended early (FS_ERROR), which says why
 * better than the failed send did. */
static int write_verdict(struct sbx_vm_fs *op, int64_t deadline, sbx_error_t *err)
{
	int code = -1;
	sbx_error_t verdict = NULL;
	if (chan_stream_wait(op->s, deadline, &code, &verdict) < 0) {
		sbx_error_free(err);
		*err = verdict;
		if (chan_dead(op->c))
			sbx_error_default_scode(err, SBX_S_FS_IO);
		return -1;
	}
	if (*err == NULL && code != 0)
		sbx_error_scode(err, SBX_S_FS_IO, "the guest ended a write with status %d", code);
	return *err == NULL ? 0 : -1;
}

int sbx_vm_fs_write(struct sbx_vm_fs *op, const void *data, size_t len, int64_t deadline, sbx_error_t *err)
{
	const uint8_t *p = data;
	while (len > 0) {
		ssize_t n = chan_stream_write(op->s, p, len, deadline, err);
		if (n < 0) {
			if ((*err)->errnum == ETIMEDOUT) {
				sbx_error_default_scode(err, SBX_S_FS_IO);
				return -1;
			}
			write_verdict(op, deadline, err);
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int sbx_vm_fs_write_end(struct sbx_vm_fs *op, int64_t deadline, sbx_error_t *err)
{
	if (chan_stream_close_stdin(op->s, err) < 0)
		sbx_error_free(err);
	return write_verdict(op, deadline, err);
}

void sbx_vm_fs_free(struct sbx_vm_fs *op)
{
	if (op == NULL)
		return;
	/* Release sends KILL to a stream still running: the guest cancels. */
	chan_stream_release(op->s);
	free(op);
}

int sbx_vm_write_file(struct sbx_vm *vm, const char *path, uint32_t mode, bool parents, const void *data,
		      size_t len, int64_t deadline, sbx_error_t *err)
{
	struct proto_fs_write w = { (char *)path, mode, parents ? PROTO_FS_PARENTS : 0 };
	struct chan_stream *s = chan_fs_write(vm->chan, &w, err);
	if (s == NULL)
		return -1;
	const char *p = data;
	int rc = 0;
	while (len > 0 && rc == 0) {
		size_t chunk = len < PROTO_MAX_CHUNK ? len : PROTO_MAX_CHUNK;
		ssize_t n = chan_stream_write(s, p, chunk, deadline, err);
		if (n < 0) {
			rc = -1;
		} else {
			p += n;
			len -= (size_t)n;
		}
	}
	if (rc == 0)
		rc = chan_stream_close_stdin(s, err);
	/* A write refused mid-way ended the stream: the guest's FS_ERROR,
	 * which wait reports, says why better than the write did. */
	sbx_error_t werr = NULL;
	int code = -1;
	if (chan_stream_wait(s, deadline, &code, &werr) < 0) {
		sbx_error_free(err);
		*err = werr;
		rc = -1;
	} else if (rc == 0 && code != 0) {
		rc = sbx_error_set(err, EIO, "write %s: guest answered %d", path, code);
	}
	sbx_error_free(&werr);
	chan_stream_release(s);
	return rc;
}
