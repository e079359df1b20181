#include "guest/guest_fs_reply.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void fs_reply_init(struct fs_reply *r, int fd, uint32_t stream)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->stream = stream;
	proto_wbuf_init(&r->frame);
}

static void batch_clear(struct fs_reply *r)
{
	proto_msg_free(&r->batch); /* frees the items and their strings */
	r->batch = (struct proto_msg){ 0 };
	r->batch_bytes = 0;
}

void fs_reply_free(struct fs_reply *r)
{
	batch_clear(r);
	proto_wbuf_free(&r->frame);
}

static int write_all(int fd, const uint8_t *p, size_t n, sbx_error_t *err)
{
	while (n > 0) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return sbx_error_errno(err, errno, "write result pipe");
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

int fs_reply_send(struct fs_reply *r, struct proto_msg *m, sbx_error_t *err)
{
	m->stream = r->stream;
	if (proto_msg_encode(&r->frame, m, err) < 0)
		return -1;
	return write_all(r->fd, r->frame.data, r->frame.len, err);
}

/* The header of a STDOUT frame of n bytes into hdr. */
static int data_header(const struct fs_reply *r, size_t n, uint8_t hdr[PROTO_HEADER_SIZE], sbx_error_t *err)
{
	if (n > PROTO_MAX_CHUNK)
		return sbx_error_set(err, EMSGSIZE, "data frame of %zu bytes exceeds %u", n, PROTO_MAX_CHUNK);
	struct proto_header h = { .length = (uint32_t)n, .stream = r->stream, .type = PROTO_STDOUT };
	proto_header_encode(&h, hdr);
	return 0;
}

int fs_reply_data(struct fs_reply *r, uint8_t *frame, size_t n, sbx_error_t *err)
{
	if (data_header(r, n, frame, err) < 0)
		return -1;
	return write_all(r->fd, frame, PROTO_HEADER_SIZE + n, err);
}

int fs_reply_data_header(struct fs_reply *r, size_t n, sbx_error_t *err)
{
	uint8_t hdr[PROTO_HEADER_SIZE];
	if (data_header(r, n, hdr, err) < 0)
		return -1;
	return write_all(r->fd, hdr, sizeof(hdr), err);
}

static int batch_flush(struct fs_reply *r, sbx_error_t *err)
{
	if (r->batch.u.fs_batch.n == 0)
		return 0;
	int rc = fs_reply_send(r, &r->batch, err);
	batch_clear(r);
	return rc;
}

/* Makes room for one more item of `type`; returns its index. */
static long batch_slot(struct fs_reply *r, uint8_t type, size_t item_size, sbx_error_t *err)
{
	if (r->batch.u.fs_batch.n > 0 && r->batch.type != type && batch_flush(r, err) < 0)
		return -1;
	if (r->batch.u.fs_batch.n == 0) {
		/* Every batch array shares one pointer in the union. */
		void *v = calloc(PROTO_FS_MAX_BATCH, item_size);
		if (v == NULL)
			return sbx_error_errno(err, ENOMEM, "result batch");
		r->batch.type = type;
		r->batch.u.fs_batch.v.entries = v;
	}
	return r->batch.u.fs_batch.n;
}

static int batch_added(struct fs_reply *r, size_t bytes, sbx_error_t *err)
{
	r->batch.u.fs_batch.n++;
	r->batch_bytes += bytes;
	if (r->batch.u.fs_batch.n == PROTO_FS_MAX_BATCH || r->batch_bytes >= FS_REPLY_BATCH_BYTES)
		return batch_flush(r, err);
	return 0;
}

int fs_reply_entry(struct fs_reply *r, const struct proto_fs_entry *e, sbx_error_t *err)
{
	long i = batch_slot(r, PROTO_FS_ENTRIES, sizeof(struct proto_fs_entry), err);
	if (i < 0)
		return -1;
	struct proto_fs_entry *d = &r->batch.u.fs_batch.v.entries[i];
	*d = *e;
	if ((d->name = strdup(e->name)) == NULL) {
		r->batch.u.fs_batch.n++;
		return sbx_error_errno(err, ENOMEM, "result batch");
	}
	return batch_added(r, strlen(e->name) + 32, err);
}

int fs_reply_match(struct fs_reply *r, const char *path, uint64_t line, const char *content, sbx_error_t *err)
{
	long i = batch_slot(r, PROTO_FS_MATCHES, sizeof(struct proto_fs_match), err);
	if (i < 0)
		return -1;
	struct proto_fs_match *d = &r->batch.u.fs_batch.v.matches[i];
	d->line = line;
	d->path = strdup(path);
	d->content = strdup(content);
	if (d->path == NULL || d->content == NULL) {
		/* counted so that batch_clear frees the half-built item */
		r->batch.u.fs_batch.n++;
		return sbx_error_errno(err, ENOMEM, "result batch");
	}
	return batch_added(r, strlen(path) + strlen(content) + 16, err);
}

int fs_reply_sed_file(struct fs_reply *r, const char *path, uint64_t replacements, int errnum, const char *error,
		      sbx_error_t *err)
{
	long i = batch_slot(r, PROTO_FS_SED_FILES, sizeof(struct proto_fs_sed_file), err);
	if (i < 0)
		return -1;
	struct proto_fs_sed_file *d = &r->batch.u.fs_batch.v.files[i];
	d->replacements = replacements;
	d->errnum = errnum;
	d->path = strdup(path);
	d->error = strdup(errnum != 0 ? error : "");
	if (d->path == NULL || d->error == NULL) {
		r->batch.u.fs_batch.n++;
		return sbx_error_errno(err, ENOMEM, "result batch");
	}
	return batch_added(r, strlen(path) + strlen(d->error) + 20, err);
}

int fs_reply_done(struct fs_reply *r, uint64_t count, uint32_t flags, sbx_error_t *err)
{
	if (batch_flush(r, err) < 0)
		return -1;
	struct proto_msg m = { .type = PROTO_FS_DONE, .u.fs_done = { count, flags } };
	return fs_reply_send(r, &m, err);
}

void fs_reply_fail(struct fs_reply *r, sbx_error_t e)
{
	batch_clear(r);
	struct proto_msg m = { .type = PROTO_FS_ERROR };
	m.u.fs_error.errnum = e != NULL && e->errnum > 0 ? e->errnum : EIO;
	m.u.fs_error.message = (char *)sbx_error_msg(e);
	sbx_error_t ignored = NULL;
	fs_reply_send(r, &m, &ignored);
	sbx_error_free(&ignored);
}
