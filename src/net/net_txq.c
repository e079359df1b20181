/* Frames to the guest: sent on QEMU's socket, or queued while it is full.
 * Below the guard (net_guard.c) and the resolver (net_resolver.c), which
 * both answer the guest through it. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/log_limit.h"
#include "net/net_helper.h"

/* 1 sent, 0 the socket is full, -1 failed (the frame is lost). */
static int send_frame(struct net_helper *h, const uint8_t *buf, size_t len)
{
	if (send(h->frames_fd, buf, len, MSG_DONTWAIT) == (ssize_t)len)
		return 1;
	if (errno == EAGAIN || errno == ENOBUFS)
		return 0;
	sbx_debug_limited("net: send to the guest: %s", strerror(errno));
	return -1;
}

bool net_txq_flush(struct net_helper *h)
{
	while (h->txq_n > 0) {
		struct net_txq_frame *f = &h->txq[h->txq_head];
		if (send_frame(h, f->buf, f->len) == 0)
			return true;
		h->txq_bytes -= f->len;
		free(f->buf);
		f->buf = NULL;
		h->txq_head = (h->txq_head + 1) % NET_TXQ_FRAMES;
		h->txq_n--;
	}
	return false;
}

void net_txq_free(struct net_helper *h)
{
	while (h->txq_n > 0) {
		free(h->txq[h->txq_head].buf);
		h->txq_head = (h->txq_head + 1) % NET_TXQ_FRAMES;
		h->txq_n--;
	}
	h->txq_bytes = 0;
}

void net_send_guest(struct net_helper *h, const uint8_t *buf, size_t len)
{
	if ((h->txq_n == 0 || !net_txq_flush(h)) && send_frame(h, buf, len) != 0)
		return;
	/* Full as well: TCP retransmits a frame lost here, as on a wire. */
	if (h->txq_n == NET_TXQ_FRAMES || h->txq_bytes + len > NET_TXQ_BYTES)
		return;
	uint8_t *copy = malloc(len);
	if (copy == NULL)
		return;
	memcpy(copy, buf, len);
	h->txq[(h->txq_head + h->txq_n) % NET_TXQ_FRAMES] = (struct net_txq_frame){ copy, len };
	h->txq_n++;
	h->txq_bytes += len;
}
