/* A background process's log of one stream: the last `max` bytes it
 * wrote, addressed by absolute offsets (the count of bytes written before
 * them), so a reader can resume where it stopped and learn what the ring
 * let go of.  Memory grows with the output, up to `max`.  Not locked: its
 * owner (process_entry.c) holds a lock around every call. */
#ifndef SBX_ADAPTER_PROCESS_RING_H
#define SBX_ADAPTER_PROCESS_RING_H

#include <stddef.h>
#include <stdint.h>

struct proc_ring {
	uint8_t *buf;
	size_t cap; /* allocated; data wraps only once cap == max */
	size_t max;
	uint64_t end; /* bytes written in all */
};

void proc_ring_init(struct proc_ring *r, size_t max);
void proc_ring_free(struct proc_ring *r);
/* Keeps the newest bytes; the oldest go once `max` are kept.  Never fails:
 * without memory for more, the ring keeps what it has room for. */
void proc_ring_append(struct proc_ring *r, const void *data, size_t len);
/* The offset of the oldest byte kept (== end when none is). */
uint64_t proc_ring_start(const struct proc_ring *r);
/* Copies the bytes [from, from + len) clipped to what is kept and written;
 * returns the count copied from max(from, start). */
size_t proc_ring_copy(const struct proc_ring *r, uint64_t from, void *dst, size_t len);

#endif
