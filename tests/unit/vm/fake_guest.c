/* The unit tests' fake guest (fake_guest.h). */
#include "fake_guest.h"

#include <poll.h>
#include <string.h>
#include <unistd.h>

void guest_init(struct guest *g, int fd)
{
	memset(g, 0, sizeof(*g));
	g->fd = fd;
	proto_reader_init(&g->rd);
}

void guest_free(struct guest *g)
{
	if (g->fd >= 0)
		close(g->fd);
	g->fd = -1;
	proto_reader_free(&g->rd);
}

int guest_recv(struct guest *g, struct proto_msg *m)
{
	sbx_error_t err = NULL;
	for (;;) {
		if (g->off == g->have) {
			/* Bounded, so a test whose host never answers fails
			 * instead of hanging the suite. */
			struct pollfd p = { .fd = g->fd, .events = POLLIN };
			if (poll(&p, 1, 10000) != 1)
				break;
			ssize_t n = read(g->fd, g->buf, sizeof(g->buf));
			if (n <= 0)
				break;
			g->have = (size_t)n;
			g->off = 0;
		}
		size_t used;
		struct proto_header h;
		const uint8_t *payload;
		int r = proto_reader_feed(&g->rd, g->buf + g->off, g->have - g->off, &used, &h, &payload, &err);
		g->off += used;
		if (r < 0)
			break;
		if (r == 1 && proto_msg_decode(&h, payload, m, &err) == 0)
			return 0;
		if (r == 1)
			break;
	}
	sbx_error_free(&err);
	return -1;
}

int guest_send_part(struct guest *g, const struct proto_msg *m, size_t from, size_t to)
{
	struct proto_wbuf w;
	proto_wbuf_init(&w);
	sbx_error_t err = NULL;
	int rc = proto_msg_encode(&w, m, &err);
	sbx_error_free(&err);
	if (to == 0 || to > w.len)
		to = w.len;
	if (from > to)
		from = to;
	if (rc == 0 && write(g->fd, w.data + from, to - from) != (ssize_t)(to - from))
		rc = -1;
	proto_wbuf_free(&w);
	return rc;
}

int guest_send(struct guest *g, const struct proto_msg *m)
{
	return guest_send_part(g, m, 0, 0);
}
