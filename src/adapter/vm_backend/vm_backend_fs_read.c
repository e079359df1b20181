/* fs::read (contract §7.18): open the file in the guest, read an inline
 * body for small UTF-8 files, create a channel and return its reader ref;
 * a background pump then streams the whole file into the writer end in
 * 64 KiB frames, so memory stays flat whatever the file's size. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/fs/fs_reply.h"
#include "adapter/vm_backend/vm_backend_fs.h"
#include "adapter/vm_backend/vm_backend.h"
#include "common/log.h"
#include "common/scodes.h"
#include "engine/engine_channel.h"
#include "vm/vm.h"

#define BODY_MAX (1024u * 1024u) /* inline body only below this size */

struct pump {
	struct engine *e;
	struct sbx_vm_fs *op;
	struct channel_ref writer;
	uint8_t *prefix; /* bytes already read for the body, sent first */
	size_t prefix_len;
	bool at_end;     /* the prefix is the whole file */
	void (*done)(void *ud);
	void *done_ud;
};

static void pump_free(struct pump *p)
{
	sbx_vm_fs_free(p->op);
	channel_ref_free(&p->writer);
	free(p->prefix);
	if (p->done != NULL)
		p->done(p->done_ud);
	free(p);
}

/* Sends the file; on a guest failure the reader gets the error frame. */
static int pump_stream(struct pump *p, struct channel_writer *w, sbx_error_t *err)
{
	if (channel_writer_send(w, p->prefix, p->prefix_len, err) < 0)
		return -1;
	uint8_t *buf = p->at_end ? NULL : malloc(CHANNEL_FRAME_MAX);
	if (!p->at_end && buf == NULL)
		return sbx_error_errno(err, ENOMEM, "read buffer");
	int rc = 0;
	while (!p->at_end) {
		ssize_t n = sbx_vm_fs_read(p->op, buf, CHANNEL_FRAME_MAX, sbx_now_ms() + FS_CHUNK_TIMEOUT_MS, err);
		if (n < 0) {
			sbx_error_prefix(err, "read from supervisor failed");
			sbx_error_t ferr = NULL;
			if (channel_writer_fail(w, sbx_error_msg(*err), &ferr) < 0)
				sbx_error_free(&ferr);
			rc = -1;
			break;
		}
		if (n == 0)
			break;
		if (channel_writer_send(w, buf, (size_t)n, err) < 0) {
			rc = -1;
			break;
		}
	}
	free(buf);
	return rc;
}

static void pump_main(void *arg)
{
	struct pump *p = arg;
	sbx_error_t err = NULL;
	struct channel_writer *w = channel_writer_open(p->e, &p->writer, &err);
	if (w != NULL && pump_stream(p, w, &err) == 0)
		channel_writer_close(w, &err);
	else if (w != NULL) {
		sbx_error_t cerr = NULL;
		channel_writer_close(w, &cerr);
		sbx_error_free(&cerr);
	}
	if (err != NULL)
		sbx_warn("fs::read: channel %s: %s", p->writer.channel_id, sbx_error_msg(err));
	sbx_error_free(&err);
	channel_writer_free(w);
	pump_free(p);
}

/* Reads the body candidate: the whole file when it has fewer than
 * BODY_MAX bytes. */
static int read_prefix(struct pump *p, uint64_t size, sbx_error_t *err)
{
	if (size >= BODY_MAX)
		return 0;
	p->prefix = malloc(BODY_MAX);
	if (p->prefix == NULL)
		return sbx_error_errno(err, ENOMEM, "read buffer");
	while (p->prefix_len < BODY_MAX) {
		ssize_t n = sbx_vm_fs_read(p->op, p->prefix + p->prefix_len, BODY_MAX - p->prefix_len,
					   sbx_now_ms() + FS_CHUNK_TIMEOUT_MS, err);
		if (n < 0)
			return -1;
		if (n == 0) {
			p->at_end = true;
			break;
		}
		p->prefix_len += (size_t)n;
	}
	return 0;
}

static json_t *reply(struct pump *p, const struct proto_fs_meta *meta, const struct channel_ref *reader)
{
	char mode[5];
	fs_mode_string(meta->mode, mode);
	json_t *j = json_pack("{s:o, s:I, s:s, s:I}", "content", channel_ref_json(reader), "size",
			      (json_int_t)meta->size, "mode", mode, "mtime", (json_int_t)meta->mtime);
	/* json_stringn() refuses bytes that are not UTF-8: then no body. */
	json_t *body = p->at_end ? json_stringn(p->prefix_len > 0 ? (char *)p->prefix : "", p->prefix_len) : NULL;
	if (j != NULL && body != NULL)
		json_object_set_new(j, "body", body);
	else
		json_decref(body);
	return j;
}

json_t *vm_backend_fs_read(void *ctx, void *vm, const char *path, void (*done)(void *ud), void *done_ud, sbx_error_t *err)
{
	struct pump *p = calloc(1, sizeof(*p));
	if (p == NULL)
		return sbx_error_errno(err, ENOMEM, "fs::read"), NULL;
	p->e = ctx;
	struct proto_fs_meta meta;
	struct channel_ref reader = { 0 };
	json_t *j = NULL;
	p->op = sbx_vm_fs_read_open(vm_backend_vm(vm), path, &meta, sbx_now_ms() + FS_CHUNK_TIMEOUT_MS, err);
	if (p->op == NULL || read_prefix(p, meta.size, err) < 0)
		goto fail;
	if (channel_create(p->e, NULL, CHANNEL_DEFAULT_BUFFER, &p->writer, &reader, err) < 0) {
		sbx_error_prefix(err, "create_channel");
		sbx_error_default_scode(err, SBX_S_FS_IO);
		goto fail;
	}
	j = reply(p, &meta, &reader);
	channel_ref_free(&reader);
	if (j == NULL) {
		sbx_error_errno(err, ENOMEM, "fs::read reply");
		goto fail;
	}
	p->done = done;
	p->done_ud = done_ud;
	if (engine_run_background(p->e, pump_main, p, err) < 0) {
		p->done = NULL;
		json_decref(j);
		goto fail;
	}
	return j;
fail:
	pump_free(p);
	return NULL;
}

int vm_backend_fs_read_to(void *vm, const char *path, sbx_fs_sink_fn sink, void *ud, uint64_t *size, sbx_error_t *err)
{
	struct proto_fs_meta meta;
	struct sbx_vm_fs *op = sbx_vm_fs_read_open(vm_backend_vm(vm), path, &meta, sbx_now_ms() + FS_CHUNK_TIMEOUT_MS, err);
	if (op == NULL)
		return -1;
	*size = meta.size;
	uint8_t *buf = malloc(CHANNEL_FRAME_MAX);
	int rc = buf == NULL ? sbx_error_errno(err, ENOMEM, "read buffer") : 0;
	while (rc == 0) {
		ssize_t n = sbx_vm_fs_read(op, buf, CHANNEL_FRAME_MAX, sbx_now_ms() + FS_CHUNK_TIMEOUT_MS, err);
		if (n <= 0) {
			rc = (int)n;
			break;
		}
		rc = sink(ud, buf, (size_t)n, err);
	}
	free(buf);
	sbx_vm_fs_free(op);
	return rc;
}
