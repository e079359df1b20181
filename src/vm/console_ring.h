/* Bounded ring of the guest console's most recent bytes; its tail goes
 * into boot-failure errors. */
#ifndef SBX_VM_CONSOLE_RING_H
#define SBX_VM_CONSOLE_RING_H

#include <stddef.h>

#define CONSOLE_RING_SIZE (16u * 1024u)
#define CONSOLE_TAIL_LINES 32
#define CONSOLE_TAIL_BYTES 4096u

struct console_ring {
	char buf[CONSOLE_RING_SIZE];
	size_t head;  /* next write position */
	size_t count; /* valid bytes, <= CONSOLE_RING_SIZE */
};

void console_ring_init(struct console_ring *r);
void console_ring_append(struct console_ring *r, const void *data, size_t len);
/* Writes the last `max_lines` lines, at most `max_bytes` bytes (cut at a
 * line start when possible), NUL-terminated, with control bytes other than
 * newline and tab replaced by '?'.  out must hold max_bytes + 1. */
size_t console_ring_tail(const struct console_ring *r, char *out, size_t max_bytes, int max_lines);

#endif
