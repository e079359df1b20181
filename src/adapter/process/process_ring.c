#include "adapter/process/process_ring.h"

#include <stdlib.h>
#include <string.h>

#define RING_FIRST_CAP 4096u

void proc_ring_init(struct proc_ring *r, size_t max)
{
	*r = (struct proc_ring){ .max = max > 0 ? max : 1 };
}

void proc_ring_free(struct proc_ring *r)
{
	free(r->buf);
	r->buf = NULL;
	r->cap = 0;
}

/* Room for `need` bytes in all while nothing wrapped yet (data lies at
 * [0, end) then, so a realloc keeps every offset where it was). */
static void grow(struct proc_ring *r, uint64_t need)
{
	if (r->cap >= r->max || need <= r->cap)
		return;
	size_t cap = r->cap > 0 ? r->cap : RING_FIRST_CAP;
	while (cap < need && cap < r->max)
		cap = cap > r->max / 2 ? r->max : cap * 2;
	if (cap > r->max)
		cap = r->max;
	uint8_t *buf = realloc(r->buf, cap);
	if (buf == NULL) {
		/* Out of memory: wrap in what there is. */
		r->max = r->cap;
		return;
	}
	r->buf = buf;
	r->cap = cap;
}

void proc_ring_append(struct proc_ring *r, const void *data, size_t len)
{
	const uint8_t *p = data;
	grow(r, r->end + len);
	if (r->cap == 0) {
		r->end += len;
		return;
	}
	if (len > r->cap) {
		size_t skip = len - r->cap;
		p += skip;
		r->end += skip;
		len = r->cap;
	}
	size_t pos = (size_t)(r->end % r->cap);
	size_t first = len < r->cap - pos ? len : r->cap - pos;
	memcpy(r->buf + pos, p, first);
	memcpy(r->buf, p + first, len - first);
	r->end += len;
}

uint64_t proc_ring_start(const struct proc_ring *r)
{
	return r->end > r->cap ? r->end - r->cap : 0;
}

size_t proc_ring_copy(const struct proc_ring *r, uint64_t from, void *dst, size_t len)
{
	uint64_t start = proc_ring_start(r);
	if (from < start)
		from = start;
	if (from >= r->end || len == 0)
		return 0;
	if (len > r->end - from)
		len = (size_t)(r->end - from);
	size_t pos = (size_t)(from % r->cap);
	size_t first = len < r->cap - pos ? len : r->cap - pos;
	memcpy(dst, r->buf + pos, first);
	memcpy((uint8_t *)dst + first, r->buf, len - first);
	return len;
}
