/* The host end of the control channel, shared by its four files, each
 * calling only those below it: channel.c (the connection: reader thread,
 * framing, the boot handshake), channel_fs.c (assembling fs results),
 * channel_stream.c (streams: ids, output buffers and CREDIT both ways) and
 * channel_link.c (the wait, the lost connection, sending under one lock);
 * channel_pause.c (holding the host's frames over a pause and moving the
 * connection onto a new socket) sits between channel.c and channel_link.c;
 * channel_adopt.c (the channel saved by one process, re-created by the
 * next) sits above channel.c. */
#ifndef SBX_VM_CHANNEL_INTERNAL_H
#define SBX_VM_CHANNEL_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/proto_reader.h"
#include "vm/channel.h"

/* Consumed output is acknowledged in batches, or at once when the buffer
 * runs empty (so a guest stalled on a full window always gets credit). */
#define CREDIT_BATCH (64u * 1024u)
/* All result frames of one fs operation together; a guest that sends more
 * fails that operation (a reply this large could not travel anyway). */
#define FS_RESULT_MAX (16u * 1024u * 1024u)

struct out_chunk {
	struct out_chunk *next;
	enum chan_output which;
	size_t len, off;
	uint8_t data[];
};

/* A result message of an fs operation, waiting for its reader. */
struct fs_item {
	struct fs_item *next;
	struct proto_msg m;
};

struct chan_stream {
	struct chan *c;
	struct chan_stream *next;
	uint32_t id;
	uint32_t pid;
	struct out_chunk *head, *tail;
	size_t out_bytes;  /* buffered, <= PROTO_WINDOW */
	size_t uncredited; /* consumed, not yet acknowledged */
	size_t stdin_unacked;
	bool stdin_open;
	bool pty; /* opened by SPAWN_PTY: RESIZE may follow */
	bool ended;
	bool lost; /* ended because the connection did */
	int code;
	bool adopted; /* re-created from a save (channel_adopt.c), not handed out yet */
	char *error; /* the guest's ERROR or FS_ERROR message */
	int errnum;  /* FS_ERROR's errno, else 0 */
	struct fs_item *fs_head, *fs_tail; /* FS_ENTRIES, FS_MATCHES, FS_SED_FILES, FS_META */
	size_t fs_bytes;                   /* payload bytes of every result frame so far */
	bool has_done;
	struct proto_fs_done done;
};

/* A KILL kept over a pause (channel_pause.c chan_defer_kill). */
struct chan_kill {
	uint32_t id, sig;
};

struct chan {
	int fd;
	pthread_t reader;
	pthread_mutex_t lock; /* everything below */
	pthread_cond_t cond;  /* broadcast on every state change */
	pthread_mutex_t wlock; /* one frame at a time on the socket */
	bool dead;
	int64_t dead_ms; /* sbx_now_ms() when it ended */
	char *dead_reason;
	bool hello, ready;
	char *boot_error;
	uint64_t ping_next, pong_max;
	uint32_t next_id;
	struct chan_stream *streams;
	/* A pause (channel_pause.c).  held: senders wait at a frame
	 * boundary (chan_send); sending: senders past that gate. */
	bool held;
	unsigned sending;
	bool swapping;     /* an EOF is the old QEMU's end: wait for next_fd */
	bool closing;      /* chan_close: a swapping reader gives up */
	int next_fd;       /* the new socket for the reader, -1 = none yet */
	bool swapped;      /* the reader took next_fd */
	struct chan_kill *kills; /* KILLs while held: sent at the resume */
	size_t n_kills, cap_kills;
	/* A reader waiting for next_fd (parked) leaves the frame it read in
	 * part here, for a save (channel_adopt.c); partial_lost: out of
	 * memory for it. */
	bool parked, partial_lost;
	uint8_t *partial;
	size_t partial_len;
	/* An adopted channel's reader starts from this one (taken by it). */
	struct proto_reader *carry;
};

/* channel.c, for channel_adopt.c: a channel on fd (-1: none yet) with
 * its locks (on failure fd is closed), and its reader thread started. */
struct chan *chan_new(int fd, sbx_error_t *err);
int chan_start(struct chan *c, sbx_error_t *err);

/* channel_link.c; "lock held" means c->lock. */
/* Waits on the condition (lock held); ETIMEDOUT once the deadline passed. */
int chan_wait_until(struct chan *c, int64_t deadline);
/* Ends the connection and every stream on it (lock held). */
void chan_mark_dead(struct chan *c, const char *reason);
/* The error of a lost connection (lock held). */
int chan_dead_error(struct chan *c, sbx_error_t *err);
/* Sends one frame (not under c->lock); a failed send kills the connection.
 * While the channel is held (a pause) it waits for the release, until
 * the deadline (chan_send: none). */
int chan_send(struct chan *c, const struct proto_msg *m, sbx_error_t *err);
int chan_send_by(struct chan *c, const struct proto_msg *m, int64_t deadline, sbx_error_t *err);
/* The holder's own frames (RESUMED): past the hold. */
int chan_send_held(struct chan *c, const struct proto_msg *m, sbx_error_t *err);
/* The open stream with this id, or NULL (lock held). */
struct chan_stream *chan_find_stream(struct chan *c, uint32_t id);

/* channel_pause.c */
/* The reader at EOF or a read error: true when it goes on with a new
 * socket (a resume), keeping its partial frame (rd, copied into the
 * channel while it waits); false: the end. */
bool chan_take_next_fd(struct chan *c, const struct proto_reader *rd);
/* A KILL (a released stream's, or a caller's signal) while the channel is
 * held: 1 when it was queued for the resume (not sent now; a signal
 * already queued for the stream is not queued twice), 0 when the channel
 * is not held (send it now), -1 (ENOMEM) when it could not be kept. */
int chan_defer_kill(struct chan *c, uint32_t id, uint32_t sig, sbx_error_t *err);
/* Sends KILL now, or keeps it for the resume while the channel is held:
 * never waits for a pause to end. */
int chan_send_kill(struct chan *c, uint32_t id, uint32_t sig, sbx_error_t *err);
/* A stream's CREDIT while the channel is held: true when it was added
 * back to s->uncredited, for the resume to send. */
bool chan_defer_credit(struct chan_stream *s, size_t credit);

/* channel_stream.c */
int chan_stream_output(struct chan_stream *s, const struct proto_msg *m, sbx_error_t *err);
void chan_stream_free(struct chan_stream *s);
/* Opens a stream whose first frame is `first` (its stream id is filled in). */
struct chan_stream *chan_stream_open(struct chan *c, struct proto_msg *first, bool stdin_open, sbx_error_t *err);

/* channel_fs.c (lock held) */
/* Queues a result message of an fs operation, taking its contents (*taken)
 * unless the stream already ended or the answer grew too large. */
void chan_fs_queue(struct chan_stream *s, struct proto_msg *m, uint32_t length, bool *taken);
void chan_fs_end(struct chan_stream *s, const struct proto_msg *m);

#endif
