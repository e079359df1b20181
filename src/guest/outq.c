/* Output queue of the control port (see outq.h). */
#include "guest/outq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void outq_init(struct outq *q)
{
	memset(q, 0, sizeof(*q));
	proto_wbuf_init(&q->frame);
}

void outq_free(struct outq *q)
{
	free(q->buf);
	proto_wbuf_free(&q->frame);
	outq_init(q);
}

int outq_full(const struct outq *q)
{
	return q->len >= OUTQ_HIGH;
}

/* Appends a then b, both or neither. */
static int append(struct outq *q, const uint8_t *a, size_t an, const uint8_t *b, size_t bn, sbx_error_t *err)
{
	size_t n = an + bn;
	if (q->head > 0 && q->head + q->len + n > q->cap) {
		memmove(q->buf, q->buf + q->head, q->len);
		q->head = 0;
	}
	if (q->len + n > q->cap) {
		size_t cap = q->cap ? q->cap : 64 * 1024;
		while (cap < q->len + n)
			cap *= 2;
		uint8_t *nb = realloc(q->buf, cap);
		if (nb == NULL)
			return sbx_error_errno(err, ENOMEM, "output queue");
		q->buf = nb;
		q->cap = cap;
	}
	memcpy(q->buf + q->head + q->len, a, an);
	if (bn > 0)
		memcpy(q->buf + q->head + q->len + an, b, bn);
	q->len += n;
	return 0;
}

int outq_push(struct outq *q, const struct proto_msg *m, sbx_error_t *err)
{
	/* Output bytes, most of what goes out, are copied once: straight in
	 * behind their header, not through the scratch frame. */
	if (m->type == PROTO_STDOUT || m->type == PROTO_STDERR) {
		if (m->u.data.len > PROTO_MAX_CHUNK)
			return sbx_error_set(err, EMSGSIZE, "data frame of %zu bytes exceeds %u", m->u.data.len,
					     PROTO_MAX_CHUNK);
		uint8_t hdr[PROTO_HEADER_SIZE];
		struct proto_header h = { .length = (uint32_t)m->u.data.len, .stream = m->stream, .type = m->type };
		proto_header_encode(&h, hdr);
		return append(q, hdr, sizeof(hdr), m->u.data.data, m->u.data.len, err);
	}
	if (proto_msg_encode(&q->frame, m, err) < 0)
		return -1;
	return append(q, q->frame.data, q->frame.len, NULL, 0, err);
}

int outq_flush(struct outq *q, int fd, sbx_error_t *err)
{
	while (q->len > 0) {
		ssize_t n = write(fd, q->buf + q->head, q->len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			return sbx_error_errno(err, errno, "write control port");
		}
		q->head += (size_t)n;
		q->len -= (size_t)n;
	}
	q->head = 0;
	return 0;
}
