/* Frames waiting to be written to the control port.  The dispatcher stops
 * reading its sources while the queue is above OUTQ_HIGH, so the queue stays
 * bounded by OUTQ_HIGH plus what one step can add. */
#ifndef SBX_GUEST_OUTQ_H
#define SBX_GUEST_OUTQ_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "proto/proto_msg.h"

#define OUTQ_HIGH (1024u * 1024u)

struct outq {
	uint8_t *buf;
	size_t head, len, cap; /* pending bytes are buf[head, head+len) */
	struct proto_wbuf frame; /* scratch for encoding */
};

void outq_init(struct outq *q);
void outq_free(struct outq *q);
int outq_full(const struct outq *q);
/* Encodes and appends one message. */
int outq_push(struct outq *q, const struct proto_msg *m, sbx_error_t *err);
/* Writes as much as the nonblocking fd takes; -1 on a write error other
 * than EAGAIN. */
int outq_flush(struct outq *q, int fd, sbx_error_t *err);

#endif
