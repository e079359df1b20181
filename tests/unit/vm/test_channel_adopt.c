/* The control channel handed from one process to the next (channel.h
 * chan_save, chan_adopt), against fake guests on socketpairs: the save
 * waits for the reader to read the old socket to its end and for the
 * streams' readers, and keeps a frame read in part, stream ids, pids,
 * credit and kept signals; the adopted channel (through the description's
 * JSON, as a later process reads it) takes the resume's socket, sends
 * RESUMED first, then the kept KILLs (a saved signal, the streams nobody
 * took) and the credit owed; the frame cut by the pause completes on the
 * adopted stream, whose next output and exit arrive; unread output saved
 * at a timed-out save is read after the adoption; a channel adopted and
 * closed without a resume does not hang. */
#include <errno.h>
#include <poll.h>
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
#include "vm/pause_desc.h"

static int64_t soon(void)
{
	return sbx_now_ms() + 5000;
}

/* A spawned stream the guest saw start as pid. */
static struct chan_stream *spawn(struct chan *c, struct guest *g, uint32_t pid, uint32_t *id)
{
	char *argv[] = { "sh", NULL }, *env[] = { NULL };
	struct proto_spawn sp = { .argv = argv, .env = env, .cwd = "" };
	sbx_error_t err = NULL;
	struct chan_stream *s = chan_spawn(c, &sp, &err);
	sbx_error_free(&err);
	struct proto_msg in;
	if (s == NULL || guest_recv(g, &in) < 0)
		return NULL;
	*id = in.stream;
	proto_msg_free(&in);
	struct proto_msg started = { .stream = *id, .type = PROTO_STARTED, .u.pid = pid };
	if (guest_send_part(g, &started, 0, 0) < 0 || chan_stream_started(s, soon(), &pid, &err) < 0) {
		sbx_error_free(&err);
		return NULL;
	}
	return s;
}

static struct proto_msg output(uint32_t id, const char *text)
{
	return (struct proto_msg){ .stream = id, .type = PROTO_STDOUT,
				   .u.data = { (const uint8_t *)text, strlen(text) } };
}

/* The saved channel as a later process reads it: through the JSON. */
static int through_json(struct pause_chan *pc, struct pause_desc *back)
{
	static char *env[] = { NULL };
	struct pause_desc d = {
		.format = PAUSE_DESC_FORMAT, .qemu = { "/q", 0, 0 }, .kernel = { "/k", 0, 0 }, .boot = { "/b", 0, 0 },
		.image_linked = true, .accel = 2, .threads_per_core = 1, .cpus = 1, .memory_mib = 256,
		.tcg_cache_mib = 64, .hostname = "h", .user = "", .env = env, .snap_key = "", .chan = *pc,
	};
	sbx_error_t err = NULL;
	char *text = pause_desc_format(&d, &err);
	int rc = text != NULL ? pause_desc_parse(text, strlen(text), back, &err) : -1;
	if (rc < 0)
		printf("# %s\n", sbx_error_msg(err));
	sbx_error_free(&err);
	free(text);
	return rc;
}

TEST(a_saved_channel_goes_on_in_the_adopting_process)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	struct guest g;
	guest_init(&g, sv[1]);
	sbx_error_t err = NULL;
	struct chan *c = chan_open(sv[0], &err);
	CHECK(c != NULL);
	uint32_t kept_id = 0, other_id = 0, gone_id = 0;
	struct chan_stream *kept = spawn(c, &g, 101, &kept_id);
	struct chan_stream *other = spawn(c, &g, 102, &other_id);
	struct chan_stream *gone = spawn(c, &g, 103, &gone_id);
	CHECK(kept != NULL && other != NULL && gone != NULL);
	CHECK_INT(chan_hold(c, soon(), &err), 0);
	/* Output read while held: its credit is owed to the resume. */
	struct proto_msg m = output(kept_id, "mid\n");
	CHECK_INT(guest_send_part(&g, &m, 0, 0), 0);
	char buf[64];
	enum chan_output which;
	CHECK_INT(chan_stream_read(kept, &which, buf, sizeof(buf), soon(), &err), 4);

	/* Not parked yet (the old socket is open): the save waits, in vain. */
	struct pause_chan pc;
	CHECK_INT(chan_save(c, sbx_now_ms() + 100, &pc, &err), -1);
	CHECK_INT(err->errnum, ETIMEDOUT);
	sbx_error_free(&err);
	/* The old QEMU delivers 5 bytes of a frame, then ends; a signal is
	 * kept for the resume, a handle released (its KILL kept too). */
	m = output(kept_id, "after the pause\n");
	CHECK_INT(guest_send_part(&g, &m, 0, 5), 0);
	guest_free(&g);
	CHECK_INT(chan_stream_kill(other, 15, &err), 0);
	chan_stream_release(gone);
	CHECK_INT(chan_save(c, soon(), &pc, &err), 0);
	CHECK_INT(pc.partial_len, 5);
	CHECK_INT(pc.n_streams, 2);
	CHECK_INT(pc.n_kills, 2);
	/* The first process ends: its handles go with it, no KILL sent. */
	chan_close(c);

	struct pause_desc d;
	CHECK_INT(through_json(&pc, &d), 0);
	pause_chan_free(&pc);
	struct chan *a = chan_adopt(&d.chan, &err);
	CHECK(a != NULL);
	CHECK(chan_take_adopted(a, 999) == NULL);
	struct chan_stream *s = chan_take_adopted(a, 101);
	CHECK(s != NULL);
	CHECK(chan_take_adopted(a, 101) == NULL); /* once */
	CHECK_INT(chan_stream_pid(s), 101);
	chan_release_adopted(a); /* 102: killed after RESUMED */

	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	struct guest g2;
	guest_init(&g2, sv[1]);
	/* The resumed guest sends the rest of the cut frame. */
	CHECK_INT(guest_send_part(&g2, &m, 5, 0), 0);
	uint8_t entropy[32] = { 0 };
	struct proto_msg r = { .stream = 0, .type = PROTO_RESUMED };
	r.u.resumed = (struct proto_resumed){ 1, entropy, 32 };
	CHECK_INT(chan_resume(a, sv[0], &r, soon(), &err), 0);
	struct proto_msg in;
	CHECK_INT(guest_recv(&g2, &in), 0);
	CHECK_INT(in.type, PROTO_RESUMED);
	proto_msg_free(&in);
	/* The kept signals in their order, then the nobody's stream's KILL. */
	uint32_t want[][2] = { { other_id, 15 }, { gone_id, 9 }, { other_id, 9 } };
	for (size_t i = 0; i < 3; i++) {
		CHECK_INT(guest_recv(&g2, &in), 0);
		CHECK_INT(in.type, PROTO_KILL);
		CHECK_INT(in.stream, want[i][0]);
		CHECK_INT(in.u.signal, want[i][1]);
		proto_msg_free(&in);
	}
	/* The credit owed from before the pause. */
	CHECK_INT(guest_recv(&g2, &in), 0);
	CHECK_INT(in.type, PROTO_CREDIT);
	CHECK_INT(in.stream, kept_id);
	CHECK_INT(in.u.credit, 4);
	proto_msg_free(&in);
	ssize_t n = chan_stream_read(s, &which, buf, sizeof(buf), soon(), &err);
	CHECK_INT(n, 16);
	CHECK(memcmp(buf, "after the pause\n", 16) == 0);
	struct proto_msg exit_m = { .stream = kept_id, .type = PROTO_EXIT, .u.code = 3 };
	CHECK_INT(guest_send_part(&g2, &exit_m, 0, 0), 0);
	int code = -1;
	CHECK_INT(chan_stream_wait(s, soon(), &code, &err), 0);
	CHECK_INT(code, 3);
	chan_stream_release(s);
	pause_desc_free(&d);
	guest_free(&g2);
	chan_close(a);
}

TEST(output_unread_at_the_save_is_read_after_the_adoption)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	struct guest g;
	guest_init(&g, sv[1]);
	sbx_error_t err = NULL;
	struct chan *c = chan_open(sv[0], &err);
	CHECK(c != NULL);
	uint32_t id = 0;
	struct chan_stream *s = spawn(c, &g, 7, &id);
	CHECK(s != NULL);
	CHECK_INT(chan_hold(c, soon(), &err), 0);
	struct proto_msg m = output(id, "unread\n");
	CHECK_INT(guest_send_part(&g, &m, 0, 0), 0);
	guest_free(&g);
	/* Nobody reads: the save takes it by its deadline. */
	struct pause_chan pc;
	CHECK_INT(chan_save(c, sbx_now_ms() + 200, &pc, &err), 0);
	chan_close(c);
	CHECK_INT(pc.partial_len, 0);
	CHECK(pc.n_streams == 1 && pc.streams[0].n_out == 1);
	struct pause_desc d;
	CHECK_INT(through_json(&pc, &d), 0);
	pause_chan_free(&pc);
	struct chan *a = chan_adopt(&d.chan, &err);
	pause_desc_free(&d);
	CHECK(a != NULL);
	struct chan_stream *t = chan_take_adopted(a, 7);
	CHECK(t != NULL);
	char buf[16];
	enum chan_output which;
	CHECK_INT(chan_stream_read(t, &which, buf, sizeof(buf), soon(), &err), 7);
	CHECK(memcmp(buf, "unread\n", 7) == 0);
	/* Never resumed: the close ends its reader, nothing hangs. */
	chan_stream_release(t);
	chan_close(a);
}

TEST(a_damaged_partial_frame_is_refused)
{
	/* A whole frame is no part of one. */
	struct proto_msg m = output(1, "x");
	struct proto_wbuf w;
	proto_wbuf_init(&w);
	sbx_error_t err = NULL;
	CHECK_INT(proto_msg_encode(&w, &m, &err), 0);
	struct pause_chan pc = { .next_id = 2, .partial = w.data, .partial_len = w.len };
	CHECK(chan_adopt(&pc, &err) == NULL);
	CHECK_INT(err->errnum, EINVAL);
	sbx_error_free(&err);
	/* A header no guest sends. */
	uint8_t junk[PROTO_HEADER_SIZE] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	pc.partial = junk;
	pc.partial_len = sizeof(junk);
	CHECK(chan_adopt(&pc, &err) == NULL);
	sbx_error_free(&err);
	proto_wbuf_free(&w);
}
