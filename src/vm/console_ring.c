#include "vm/console_ring.h"

#include <string.h>

void console_ring_init(struct console_ring *r)
{
	r->head = 0;
	r->count = 0;
}

void console_ring_append(struct console_ring *r, const void *data, size_t len)
{
	const char *p = data;
	if (len > CONSOLE_RING_SIZE) {
		p += len - CONSOLE_RING_SIZE;
		len = CONSOLE_RING_SIZE;
	}
	while (len > 0) {
		size_t n = CONSOLE_RING_SIZE - r->head;
		if (n > len)
			n = len;
		memcpy(r->buf + r->head, p, n);
		r->head = (r->head + n) % CONSOLE_RING_SIZE;
		r->count = r->count + n > CONSOLE_RING_SIZE ? CONSOLE_RING_SIZE : r->count + n;
		p += n;
		len -= n;
	}
}

/* i-th oldest valid byte. */
static char at(const struct console_ring *r, size_t i)
{
	return r->buf[(r->head + CONSOLE_RING_SIZE - r->count + i) % CONSOLE_RING_SIZE];
}

size_t console_ring_tail(const struct console_ring *r, char *out, size_t max_bytes, int max_lines)
{
	size_t end = r->count;
	/* A trailing newline ends the last line; it does not start a new one. */
	size_t scan = end > 0 && at(r, end - 1) == '\n' ? end - 1 : end;
	size_t start = end > max_bytes ? end - max_bytes : 0;
	int lines = 0;
	for (size_t i = scan; i > start; i--) {
		if (at(r, i - 1) == '\n' && ++lines == max_lines) {
			start = i;
			break;
		}
	}
	/* Cut at a line boundary when the byte cap, not the line cap, chose start. */
	if (start > 0 && lines < max_lines && at(r, start - 1) != '\n') {
		for (size_t i = start; i < scan; i++) {
			if (at(r, i) == '\n') {
				start = i + 1;
				break;
			}
		}
	}
	size_t n = 0;
	for (size_t i = start; i < end; i++) {
		char c = at(r, i);
		if (c == '\r')
			continue;
		unsigned char u = (unsigned char)c;
		out[n++] = (u < 0x20 && c != '\n' && c != '\t') || u == 0x7f ? '?' : c;
	}
	out[n] = '\0';
	return n;
}
