/* The host's view of a hostile guest: the input is a script (its format:
 * tests/fuzz/seeds/channel_seeds.c) in which the
 * host opens process and fs streams, reads, writes stdin, kills and
 * releases them, while raw bytes arrive as the guest's side of the control
 * port -- through the real channel (src/vm/channel.c: reader thread,
 * demultiplexer, stream table, credit accounting, fs result assembly).
 * After every step the heap the channel holds must stay bounded by what
 * the guest sent; at the end the guest hangs up and every stream must
 * drain and end.  Leaks are LeakSanitizer's.
 *
 * Determinism: after writing guest bytes the script waits until the
 * socket is empty and the reader thread sleeps in read() on it again, so
 * every byte has been handled before the host's next step. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sanitizer/allocator_interface.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "vm/channel.h"

#define MAX_STREAMS 8
/* What the channel may hold beyond the guest's bytes: the reader's buffer
 * and one frame being assembled. */
#define FIXED_BYTES (2 * PROTO_MAX_PAYLOAD + 256 * 1024)
/* Decoded fs results take more room than their frames (one allocation per
 * name); no more than this factor. */
#define GROWTH 16
/* Repeats stop once the guest sent this much: past the 16 MiB cap on an
 * fs operation's results. */
#define FLOOD_MAX (20u << 20)

struct script {
	const uint8_t *p;
	size_t left;
};

static uint8_t next_byte(struct script *s)
{
	if (s->left == 0)
		return 0;
	s->left--;
	return *s->p++;
}

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_channel: %s\n", what);
	abort();
}

/* Reads and drops what the host sends the guest, so no send blocks. */
static void *drain(void *arg)
{
	int fd = *(int *)arg;
	char buf[65536];
	while (recv(fd, buf, sizeof(buf), 0) > 0)
		;
	return NULL;
}

/* True when some thread sleeps in read(fd, ...) (syscall 0 on x86_64,
 * 63 on arm64). */
static bool reader_waiting(int fd)
{
#if defined(__x86_64__)
	const long nr = 0;
#elif defined(__aarch64__)
	const long nr = 63;
#else
#error "fuzz_channel: unknown read syscall number"
#endif
	DIR *d = opendir("/proc/self/task");
	if (d == NULL)
		fail("cannot list threads");
	bool found = false;
	struct dirent *de;
	while (!found && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		char path[64], line[256];
		snprintf(path, sizeof(path), "/proc/self/task/%s/syscall", de->d_name);
		FILE *f = fopen(path, "re");
		if (f == NULL)
			continue;
		long sc, arg;
		if (fgets(line, sizeof(line), f) != NULL && sscanf(line, "%ld 0x%lx", &sc, &arg) == 2)
			found = sc == nr && arg == fd;
		fclose(f);
	}
	closedir(d);
	return found;
}

static void settle(int host_fd, struct chan *c)
{
	int64_t deadline = sbx_now_ms() + 20000;
	while (sbx_now_ms() < deadline) {
		int queued = 0;
		if (ioctl(host_fd, FIONREAD, &queued) < 0)
			fail("FIONREAD");
		if ((queued == 0 && reader_waiting(host_fd)) || chan_dead(c))
			return;
		sched_yield();
	}
	fail("the reader never finished the guest's bytes");
}

/* Sends n bytes `times` times; returns the count sent (less when the host
 * hung up on a protocol error). */
static size_t guest_send(int fd, const uint8_t *p, size_t n, size_t times)
{
	size_t sent = 0;
	for (size_t t = 0; t < times; t++) {
		for (size_t off = 0; off < n;) {
			ssize_t w = send(fd, p + off, n - off, MSG_NOSIGNAL);
			if (w <= 0)
				return sent;
			off += (size_t)w;
			sent += (size_t)w;
		}
	}
	return sent;
}

static void check_heap(size_t base, size_t fed)
{
	size_t now = __sanitizer_get_current_allocated_bytes();
	if (now > base + FIXED_BYTES + GROWTH * fed) {
		fprintf(stderr, "fuzz_channel: %zu bytes held after %zu bytes from the guest\n", now - base, fed);
		abort();
	}
}

static struct chan_stream *open_one(struct chan *c, struct script *s)
{
	static char *argv[] = { "true", NULL };
	static char *env[] = { NULL };
	sbx_error_t err = NULL;
	struct chan_stream *st = NULL;
	uint8_t kind = next_byte(s) % 6;
	struct proto_msg m = { 0 };
	switch (kind) {
	case 0:
	case 1: {
		struct proto_spawn sp = { .argv = argv, .env = env, .cwd = "", .flags = kind ? PROTO_SPAWN_STDIN : 0 };
		st = chan_spawn(c, &sp, &err);
		break;
	}
	case 2: {
		struct proto_fs_write w = { .path = "/f", .mode = 0644 };
		st = chan_fs_write(c, &w, &err);
		break;
	}
	case 3:
		m.type = PROTO_FS_LS;
		m.u.fs_path.path = "/";
		st = chan_fs_start(c, &m, &err);
		break;
	case 4:
		m.type = PROTO_FS_READ;
		m.u.fs_path.path = "/f";
		st = chan_fs_start(c, &m, &err);
		break;
	default:
		m.type = PROTO_FS_GREP;
		m.u.fs_grep = (struct proto_fs_grep){ .path = "/", .pattern = "x", .include = env, .exclude = env };
		st = chan_fs_start(c, &m, &err);
		break;
	}
	sbx_error_free(&err);
	return st;
}

/* One host step on stream st; never waits (the deadline is now). */
static void host_step(struct chan_stream *st, uint8_t op, struct script *s)
{
	static uint8_t big[PROTO_WINDOW + PROTO_MAX_CHUNK];
	uint8_t buf[4096];
	sbx_error_t err = NULL;
	int64_t now = sbx_now_ms();
	enum chan_output which;
	struct proto_msg m;
	struct proto_fs_done done;
	int code;
	switch (op) {
	case 0:
		if (chan_stream_read(st, &which, buf, 1 + next_byte(s) * 16u, now, &err) > 0 &&
		    which != CHAN_STDOUT && which != CHAN_STDERR)
			fail("output of no kind");
		break;
	case 1:
		if (chan_fs_next(st, &m, &done, now, &err) == 1)
			proto_msg_free(&m);
		break;
	case 2:
		(void)chan_stream_write(st, big, 1 + (size_t)next_byte(s) * 1024u, now, &err);
		break;
	case 3:
		(void)chan_stream_close_stdin(st, &err);
		break;
	case 4:
		(void)chan_stream_kill(st, 9, &err);
		break;
	default:
		(void)chan_stream_wait(st, now, &code, &err);
		break;
	}
	sbx_error_free(&err);
}

/* After the guest hung up, each stream must end: its output and results
 * run out and its wait returns without blocking. */
static void drain_stream(struct chan_stream *st)
{
	uint8_t buf[65536];
	sbx_error_t err = NULL;
	enum chan_output which;
	struct proto_msg m;
	struct proto_fs_done done;
	int code;
	int64_t deadline = sbx_now_ms() + 10000;
	ssize_t n;
	while ((n = chan_stream_read(st, &which, buf, sizeof(buf), deadline, &err)) > 0)
		;
	if (n < 0 && err->errnum == ETIMEDOUT)
		fail("output never ended after the guest hung up");
	sbx_error_free(&err);
	int rc;
	while ((rc = chan_fs_next(st, &m, &done, deadline, &err)) == 1)
		proto_msg_free(&m);
	if (rc < 0 && err->errnum == ETIMEDOUT)
		fail("fs results never ended after the guest hung up");
	sbx_error_free(&err);
	if (chan_stream_wait(st, deadline, &code, &err) < 0 && err->errnum == ETIMEDOUT)
		fail("a stream did not end after the guest hung up");
	sbx_error_free(&err);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	sbx_log_set_level(SBX_LOG_ERROR);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t base = __sanitizer_get_current_allocated_bytes();
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		fail("socketpair");
	int host_fd = sv[0], guest_fd = sv[1];
	sbx_error_t err = NULL;
	struct chan *c = chan_open(host_fd, &err);
	if (c == NULL)
		fail("chan_open");
	pthread_t drainer;
	if (pthread_create(&drainer, NULL, drain, &guest_fd) != 0)
		fail("pthread_create");

	struct chan_stream *streams[MAX_STREAMS] = { 0 };
	struct script s = { data, size };
	size_t fed = 0, last_len = 0;
	const uint8_t *last = NULL;
	while (s.left > 0) {
		uint8_t op = next_byte(&s);
		switch (op & 7) {
		case 0: { /* the host opens a stream */
			for (int i = 0; i < MAX_STREAMS; i++) {
				if (streams[i] == NULL) {
					streams[i] = open_one(c, &s);
					break;
				}
			}
			break;
		}
		case 1:
		case 2: { /* the guest writes raw bytes */
			size_t n = next_byte(&s);
			if (op & 8)
				n = n << 8 | next_byte(&s);
			n = n < s.left ? n : s.left;
			last = s.p;
			last_len = n;
			fed += guest_send(guest_fd, s.p, n, 1);
			s.p += n;
			s.left -= n;
			settle(host_fd, c);
			break;
		}
		case 3: { /* the guest repeats its last bytes: floods from a small input */
			size_t times = next_byte(&s);
			if (op & 8)
				times = times << 8 | next_byte(&s);
			if (last_len > 0 && times > (FLOOD_MAX - fed) / last_len)
				times = fed < FLOOD_MAX ? (FLOOD_MAX - fed) / last_len : 0;
			fed += guest_send(guest_fd, last, last_len, times);
			settle(host_fd, c);
			break;
		}
		case 7: { /* the host lets a stream go */
			struct chan_stream **st = &streams[(op >> 3) % MAX_STREAMS];
			chan_stream_release(*st);
			*st = NULL;
			break;
		}
		default: { /* the host reads, writes or waits */
			struct chan_stream *st = streams[(op >> 3) % MAX_STREAMS];
			if (st != NULL)
				host_step(st, next_byte(&s) % 6, &s);
			break;
		}
		}
		check_heap(base, fed);
	}

	shutdown(guest_fd, SHUT_WR);
	if (chan_wait_dead(c, sbx_now_ms() + 10000, &err) < 0)
		fail("the channel outlived the guest's hang-up");
	for (int i = 0; i < MAX_STREAMS; i++) {
		if (streams[i] != NULL) {
			drain_stream(streams[i]);
			chan_stream_release(streams[i]);
		}
	}
	chan_close(c);
	pthread_join(drainer, NULL);
	close(guest_fd);
	return 0;
}
