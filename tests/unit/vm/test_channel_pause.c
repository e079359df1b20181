/* The control channel over a pause (channel.h chan_hold, chan_resume),
 * against fake guests on socketpairs: the hold waits until the peer took
 * every byte (SIOCOUTQ), senders wait within their deadlines, the old
 * socket's EOF is no death, the reader goes on on the new socket with
 * the partial frame it had, RESUMED goes first, a stream released while
 * held gets its KILL at the resume, a signal sent while held does not
 * wait for the resume (it follows RESUMED, once however often it was
 * sent), and chan_close does not hang. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "proto/proto_msg.h"
#include "proto/proto_reader.h"
#include "vm/channel.h"
#include "fake_guest.h"

static int encode(const struct proto_msg *m, struct proto_wbuf *out)
{
	sbx_error_t err = NULL;
	proto_wbuf_init(out);
	int rc = proto_msg_encode(out, m, &err);
	sbx_error_free(&err);
	return rc;
}

/* Whether the guest has bytes to read within ms. */
static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, ms) == 1;
}

static struct chan *setup(struct guest *g)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return NULL;
	guest_init(g, sv[1]);
	sbx_error_t err = NULL;
	return chan_open(sv[0], &err);
}

static struct chan_stream *spawn(struct chan *c, struct guest *g, uint32_t *id)
{
	char *argv[] = { "cat", NULL }, *env[] = { NULL };
	struct proto_spawn sp = { .argv = argv, .env = env, .cwd = "", .flags = PROTO_SPAWN_STDIN };
	sbx_error_t err = NULL;
	struct chan_stream *s = chan_spawn(c, &sp, &err);
	sbx_error_free(&err);
	struct proto_msg in;
	if (s == NULL || guest_recv(g, &in) < 0)
		return NULL;
	*id = in.stream;
	proto_msg_free(&in);
	return s;
}

static struct proto_msg resumed(uint8_t *entropy)
{
	memset(entropy, 7, 32);
	struct proto_msg m = { .stream = 0, .type = PROTO_RESUMED };
	m.u.resumed = (struct proto_resumed){ 123456789, entropy, 32 };
	return m;
}

static int64_t soon(void)
{
	return sbx_now_ms() + 5000;
}

TEST(a_hold_waits_until_the_peer_took_every_byte)
{
	struct guest g;
	struct chan *c = setup(&g);
	CHECK(c != NULL);
	sbx_error_t err = NULL;
	/* A ping the guest does not read yet: the hold cannot complete. */
	CHECK(chan_ping(c, sbx_now_ms() + 10, &err) < 0);
	sbx_error_free(&err);
	CHECK_INT(chan_hold(c, sbx_now_ms() + 200, &err), -1);
	CHECK_INT(err->errnum, ETIMEDOUT);
	CHECK(strstr(sbx_error_msg(err), "did not take") != NULL);
	sbx_error_free(&err);
	/* The failed hold let go: senders pass. */
	struct proto_msg in;
	CHECK_INT(guest_recv(&g, &in), 0);
	CHECK_INT(in.type, PROTO_PING);
	proto_msg_free(&in);
	CHECK_INT(chan_hold(c, soon(), &err), 0);
	CHECK_INT(chan_hold(c, soon(), &err), -1);
	CHECK_INT(err->errnum, EALREADY);
	sbx_error_free(&err);
	/* Held: a ping fails by its deadline and nothing reaches the guest. */
	int64_t t = sbx_now_ms();
	CHECK(chan_ping(c, t + 100, &err) < 0);
	CHECK_INT(err->errnum, ETIMEDOUT);
	CHECK(sbx_now_ms() - t < 2000);
	sbx_error_free(&err);
	CHECK(!readable(g.fd, 50));
	/* A failed pause releases: the next ping goes out. */
	chan_release(c);
	CHECK(chan_ping(c, sbx_now_ms() + 10, &err) < 0);
	sbx_error_free(&err);
	CHECK_INT(guest_recv(&g, &in), 0);
	CHECK_INT(in.type, PROTO_PING);
	proto_msg_free(&in);
	CHECK(!chan_dead(c));
	guest_free(&g);
	chan_close(c);
}

TEST(the_reader_moves_onto_the_new_socket_with_its_partial_frame)
{
	struct guest g;
	struct chan *c = setup(&g);
	CHECK(c != NULL);
	uint32_t id = 0;
	struct chan_stream *s = spawn(c, &g, &id);
	CHECK(s != NULL);
	sbx_error_t err = NULL;
	CHECK_INT(chan_hold(c, soon(), &err), 0);
	/* The old QEMU delivered half a frame, then went. */
	struct proto_msg out = { .stream = id, .type = PROTO_STDOUT, .u.data = { (const uint8_t *)"hello world", 11 } };
	struct proto_wbuf f;
	CHECK_INT(encode(&out, &f), 0);
	CHECK(write(g.fd, f.data, 7) == 7);
	guest_free(&g);
	usleep(50000);
	CHECK(!chan_dead(c));
	/* The new one delivers the rest. */
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	struct guest g2;
	guest_init(&g2, sv[1]);
	CHECK(write(g2.fd, f.data + 7, f.len - 7) == (ssize_t)(f.len - 7));
	proto_wbuf_free(&f);
	uint8_t entropy[32];
	struct proto_msg r = resumed(entropy);
	CHECK_INT(chan_resume(c, sv[0], &r, soon(), &err), 0);
	struct proto_msg in;
	CHECK_INT(guest_recv(&g2, &in), 0);
	CHECK_INT(in.type, PROTO_RESUMED);
	CHECK(in.u.resumed.realtime_ns == 123456789);
	proto_msg_free(&in);
	char buf[32] = "";
	enum chan_output which;
	CHECK_INT(chan_stream_read(s, &which, buf, sizeof(buf) - 1, soon(), &err), 11);
	CHECK_STR(buf, "hello world");
	/* Its credit and a ping go out on the new socket. */
	CHECK_INT(guest_recv(&g2, &in), 0);
	CHECK_INT(in.type, PROTO_CREDIT);
	CHECK_INT(in.u.credit, 11);
	proto_msg_free(&in);
	struct proto_msg pong = { .stream = 0, .type = PROTO_PONG, .u.nonce = 1 };
	CHECK_INT(encode(&pong, &f), 0);
	CHECK(write(g2.fd, f.data, f.len) == (ssize_t)f.len);
	proto_wbuf_free(&f);
	CHECK_INT(chan_ping(c, soon(), &err), 0);
	CHECK(!chan_dead(c));
	chan_stream_release(s);
	guest_free(&g2);
	chan_close(c);
}

TEST(a_stream_released_while_held_is_killed_after_resumed)
{
	struct guest g;
	struct chan *c = setup(&g);
	CHECK(c != NULL);
	uint32_t id = 0;
	struct chan_stream *s = spawn(c, &g, &id);
	CHECK(s != NULL);
	sbx_error_t err = NULL;
	CHECK_INT(chan_hold(c, soon(), &err), 0);
	int64_t t = sbx_now_ms();
	chan_stream_release(s); /* does not wait for the resume */
	CHECK(sbx_now_ms() - t < 1000);
	guest_free(&g);
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	struct guest g2;
	guest_init(&g2, sv[1]);
	uint8_t entropy[32];
	struct proto_msg r = resumed(entropy);
	CHECK_INT(chan_resume(c, sv[0], &r, soon(), &err), 0);
	struct proto_msg in;
	CHECK_INT(guest_recv(&g2, &in), 0);
	CHECK_INT(in.type, PROTO_RESUMED);
	proto_msg_free(&in);
	CHECK_INT(guest_recv(&g2, &in), 0);
	CHECK_INT(in.type, PROTO_KILL);
	CHECK_INT(in.stream, id);
	CHECK_INT(in.u.signal, 9);
	proto_msg_free(&in);
	guest_free(&g2);
	chan_close(c);
}

struct killer {
	struct chan_stream *s;
	int sig, times, rc;
	atomic_bool done;
};

static void *kill_main(void *arg)
{
	struct killer *k = arg;
	sbx_error_t err = NULL;
	for (int i = 0; i < k->times && k->rc == 0; i++)
		k->rc = chan_stream_kill(k->s, k->sig, &err);
	sbx_error_free(&err);
	k->done = true;
	return NULL;
}

TEST(a_signal_sent_while_held_does_not_wait_and_follows_resumed)
{
	struct guest g;
	struct chan *c = setup(&g);
	CHECK(c != NULL);
	uint32_t id = 0;
	struct chan_stream *s = spawn(c, &g, &id);
	CHECK(s != NULL);
	sbx_error_t err = NULL;
	CHECK_INT(chan_hold(c, soon(), &err), 0);
	/* In a thread: a kill that waited for the resume would wait here for
	 * ever, the resume being this thread's. */
	struct killer k = { .s = s, .sig = 15, .times = 100 };
	pthread_t t;
	CHECK_INT(pthread_create(&t, NULL, kill_main, &k), 0);
	for (int i = 0; i < 100 && !k.done; i++)
		usleep(10000);
	CHECK(k.done);
	CHECK_INT(k.rc, 0);
	CHECK(!readable(g.fd, 0)); /* nothing went to the old QEMU */
	guest_free(&g);
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	struct guest g2;
	guest_init(&g2, sv[1]);
	uint8_t entropy[32];
	struct proto_msg r = resumed(entropy);
	CHECK_INT(chan_resume(c, sv[0], &r, soon(), &err), 0);
	CHECK_INT(pthread_join(t, NULL), 0);
	struct proto_msg in;
	CHECK_INT(guest_recv(&g2, &in), 0);
	CHECK_INT(in.type, PROTO_RESUMED);
	proto_msg_free(&in);
	CHECK_INT(guest_recv(&g2, &in), 0);
	CHECK_INT(in.type, PROTO_KILL);
	CHECK_INT(in.stream, id);
	CHECK_INT(in.u.signal, 15);
	proto_msg_free(&in);
	/* A hundred kills kept as one. */
	CHECK(!readable(g2.fd, 100));
	/* Unheld, a signal goes at once. */
	CHECK_INT(chan_stream_kill(s, 2, &err), 0);
	CHECK_INT(guest_recv(&g2, &in), 0);
	CHECK_INT(in.type, PROTO_KILL);
	CHECK_INT(in.u.signal, 2);
	proto_msg_free(&in);
	chan_stream_release(s);
	guest_free(&g2);
	chan_close(c);
}

TEST(a_held_channel_closes_without_a_resume)
{
	struct guest g;
	struct chan *c = setup(&g);
	CHECK(c != NULL);
	sbx_error_t err = NULL;
	CHECK_INT(chan_hold(c, soon(), &err), 0);
	guest_free(&g); /* the reader waits for a socket that never comes */
	usleep(20000);
	int64_t t = sbx_now_ms();
	chan_close(c);
	CHECK(sbx_now_ms() - t < 1000);
}

TEST(an_aborted_hold_fails_the_waiting_senders)
{
	struct guest g;
	struct chan *c = setup(&g);
	CHECK(c != NULL);
	sbx_error_t err = NULL;
	CHECK_INT(chan_hold(c, soon(), &err), 0);
	chan_abort_hold(c, "the VM did not resume");
	CHECK(chan_dead(c));
	CHECK(chan_ping(c, soon(), &err) < 0);
	CHECK(strstr(sbx_error_msg(err), "did not resume") != NULL || err->errnum == EPIPE);
	sbx_error_free(&err);
	guest_free(&g);
	chan_close(c);
}
