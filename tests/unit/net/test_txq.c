/* net_txq: frames to the guest leave in the order they were made; while
 * QEMU's socket is full they wait in a queue of at most NET_TXQ_FRAMES
 * frames and NET_TXQ_BYTES bytes (what does not fit is lost, as on a
 * wire); a frame the socket refuses for good is dropped, never retried. */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "harness.h"
#include "helper_fixture.h"

#define BIG 65536

static struct net_helper *h;
static uint8_t frame[BIG];

/* Sends a frame of len bytes numbered seq. */
static void send_seq(uint32_t seq, size_t len)
{
	memset(frame, 0, len);
	memcpy(frame, &seq, sizeof(seq));
	net_send_guest(h, frame, len);
}

/* Sends numbered frames from *seq on until one waits in the queue; how
 * many went straight out (-1 if the socket never filled). */
static long fill_socket(uint32_t *seq, size_t len)
{
	for (long sent = 0; sent < 100000; sent++) {
		send_seq((*seq)++, len);
		if (h->txq_n > 0)
			return sent;
	}
	return -1;
}

/* Reads everything the guest can get, flushing the queue as it empties
 * the socket; checks the frames come numbered first, first + 1, ...;
 * returns how many came, or -1 on a gap, a wrong length or a frame the
 * queue kept. */
static long drain(uint32_t first, size_t len)
{
	static uint8_t buf[BIG + 1];
	long n = 0;
	for (;;) {
		ssize_t r = recv(hf_guest_fd(), buf, sizeof(buf), 0);
		if (r < 0 && errno == EAGAIN) {
			if (!net_txq_flush(h) && h->txq_n == 0 &&
			    recv(hf_guest_fd(), buf, sizeof(buf), MSG_PEEK) < 0 && errno == EAGAIN)
				return h->txq_bytes == 0 ? n : -1;
			continue;
		}
		uint32_t seq;
		memcpy(&seq, buf, sizeof(seq));
		if (r != (ssize_t)len || seq != first + (uint32_t)n)
			return -1;
		n++;
	}
}

TEST(frames_go_out_at_once_while_the_socket_has_room)
{
	h = hf_reset();
	for (uint32_t i = 0; i < 3; i++)
		send_seq(i, 60);
	CHECK_INT(h->txq_n, 0);
	CHECK_INT(drain(0, 60), 3);
}

TEST(a_full_socket_queues_frames_and_keeps_their_order)
{
	h = hf_reset();
	uint32_t seq = 0;
	long direct = fill_socket(&seq, 60);
	CHECK(direct > 0);
	for (int i = 0; i < 5; i++)
		send_seq(seq++, 60);
	CHECK_INT(h->txq_n, 6);
	CHECK_INT(h->txq_bytes, 6 * 60);
	CHECK(net_txq_flush(h)); /* still full: some remain */
	/* room for two: a new frame goes behind the queued ones */
	uint8_t buf[64];
	CHECK_INT(recv(hf_guest_fd(), buf, sizeof(buf), 0), 60);
	CHECK_INT(recv(hf_guest_fd(), buf, sizeof(buf), 0), 60);
	send_seq(seq++, 60);
	CHECK_INT(h->txq_n, 5);
	CHECK_INT(drain(2, 60), direct - 2 + 7);
	CHECK(!net_txq_flush(h));
}

TEST(the_queue_holds_NET_TXQ_FRAMES_frames_and_loses_the_next)
{
	h = hf_reset();
	uint32_t seq = 0;
	long direct = fill_socket(&seq, 60);
	CHECK(direct > 0);
	while (h->txq_n < NET_TXQ_FRAMES)
		send_seq(seq++, 60);
	CHECK_INT(seq, direct + NET_TXQ_FRAMES);
	send_seq(seq++, 60);
	send_seq(seq++, 60);
	CHECK_INT(h->txq_n, NET_TXQ_FRAMES);
	CHECK_INT(h->txq_bytes, NET_TXQ_FRAMES * 60);
	/* every frame up to the bound arrives, in order; the two after it never */
	CHECK_INT(drain(0, 60), direct + NET_TXQ_FRAMES);
}

TEST(the_queue_holds_NET_TXQ_BYTES_bytes_and_loses_the_next)
{
	h = hf_reset();
	uint32_t seq = 0;
	long direct = fill_socket(&seq, BIG);
	CHECK(direct >= 0);
	while (h->txq_bytes < NET_TXQ_BYTES)
		send_seq(seq++, BIG);
	CHECK_INT(h->txq_bytes, NET_TXQ_BYTES);
	CHECK_INT(h->txq_n, NET_TXQ_BYTES / BIG);
	send_seq(seq++, BIG);
	send_seq(seq++, 1);
	CHECK_INT(h->txq_n, NET_TXQ_BYTES / BIG);
	CHECK_INT(drain(0, BIG), direct + NET_TXQ_BYTES / BIG);
}

TEST(a_frame_the_socket_refuses_is_dropped_not_retried)
{
	h = hf_reset();
	uint32_t seq = 0;
	CHECK(fill_socket(&seq, 60) > 0);
	send_seq(seq++, 60);
	CHECK_INT(h->txq_n, 2);
	hf_close_guest(); /* QEMU is gone */
	CHECK(!net_txq_flush(h));
	CHECK_INT(h->txq_n, 0);
	CHECK_INT(h->txq_bytes, 0);
	send_seq(seq++, 60);
	CHECK_INT(h->txq_n, 0);
}

TEST(a_frame_larger_than_the_socket_takes_is_dropped_not_queued)
{
	h = hf_reset();
	int small = 4096;
	CHECK_INT(setsockopt(h->frames_fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	int got;
	socklen_t gl = sizeof(got);
	CHECK_INT(getsockopt(h->frames_fd, SOL_SOCKET, SO_SNDBUF, &got, &gl), 0);
	send_seq(0, (size_t)got); /* EMSGSIZE: beyond the send buffer */
	CHECK_INT(h->txq_n, 0);
	send_seq(1, 60);
	CHECK_INT(drain(1, 60), 1);
}

TEST(freeing_the_queue_empties_it)
{
	h = hf_reset();
	uint32_t seq = 0;
	CHECK(fill_socket(&seq, 100) > 0);
	for (int i = 0; i < 10; i++)
		send_seq(seq++, 100);
	CHECK_INT(h->txq_n, 11);
	net_txq_free(h);
	CHECK_INT(h->txq_n, 0);
	CHECK_INT(h->txq_bytes, 0);
	CHECK(!net_txq_flush(h));
}
