/* Typed messages of the control protocol (proto.h): one struct per payload
 * layout, one decoder and one encoder for all of them, so host and guest
 * cannot drift apart. */
#ifndef SBX_PROTO_MSG_H
#define SBX_PROTO_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "proto/proto.h"

#define PROTO_MAX_HOSTNAME 64u /* HOST_NAME_MAX */
#define PROTO_MAX_SIGNAL 64    /* SIGRTMAX on Linux */

struct proto_config {
	char *hostname;
	char **env; /* "KEY=VALUE" entries */
	uint64_t memory_bytes; /* 0 = no cgroup cap */
	uint64_t nofile;       /* 0 = keep */
	uint64_t realtime_ns;  /* 0 = keep the clock */
	uint8_t *entropy;
	size_t entropy_len;
};

struct proto_spawn {
	char **argv; /* at least one entry, argv[0] non-empty */
	char **env;  /* "KEY=VALUE" entries layered over the boot env */
	char *cwd;   /* "" or an absolute path */
	uint32_t flags;
};

struct proto_fs_write {
	char *path;     /* non-empty, at most PROTO_MAX_PATH bytes */
	uint32_t mode;  /* 0..07777 */
	uint32_t flags; /* PROTO_FS_PARENTS */
};

struct proto_fs_error {
	int32_t errnum; /* > 0 */
	char *message;
};

struct proto_data {
	const uint8_t *data; /* borrowed: points into the decoded payload */
	size_t len;          /* <= PROTO_MAX_CHUNK */
};

struct proto_msg {
	uint32_t stream;
	uint8_t type;
	union {
		uint32_t version;          /* HELLO */
		struct proto_config config; /* CONFIG */
		uint64_t nonce;            /* PING, PONG */
		struct proto_spawn spawn;  /* SPAWN */
		uint32_t pid;              /* STARTED */
		struct proto_data data;    /* STDIN, STDOUT, STDERR */
		uint32_t credit;           /* CREDIT: 1..PROTO_WINDOW */
		uint32_t signal;           /* KILL: 1..PROTO_MAX_SIGNAL */
		int32_t code;              /* EXIT: 0..255 */
		char *message;             /* ERROR */
		struct proto_fs_write fs_write; /* FS_WRITE */
		struct proto_fs_error fs_error; /* FS_ERROR */
	} u;
};

/* Decodes the payload of a frame whose header proto_header_decode accepted.
 * Checks every field, the caps, trailing bytes and that the type travels on
 * the right stream (VM-wide types on 0, process and fs types elsewhere).
 * Undefined fs types are rejected.  On success free with
 * proto_msg_free; on failure nothing needs freeing. */
int proto_msg_decode(const struct proto_header *h, const uint8_t *payload, struct proto_msg *m,
		     sbx_error_t *err);
void proto_msg_free(struct proto_msg *m);

/* Encodes a whole frame (header + payload) into `out`, replacing its
 * contents.  Fails on values a decoder would reject (oversized fields). */
int proto_msg_encode(struct proto_wbuf *out, const struct proto_msg *m, sbx_error_t *err);

/* Name of a message type for logs ("SPAWN"), "?" when unknown. */
const char *proto_type_name(uint8_t type);

#endif
