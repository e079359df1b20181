/* The typed messages of the control protocol (proto.h): one struct per
 * payload layout.  Apart from their codec (proto_msg.h) so the fs part of
 * the codec (proto_msg_fs.h) needs only the types, not the codec that
 * calls it. */
#ifndef SBX_PROTO_MSG_TYPES_H
#define SBX_PROTO_MSG_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "proto/proto.h"

#define PROTO_MAX_HOSTNAME 64u /* HOST_NAME_MAX */
#define PROTO_MAX_SIGNAL 64    /* SIGRTMAX on Linux */
#define PROTO_MAX_TTY_DIM 1000 /* rows or columns of a terminal */

struct proto_share {
	char *tag;  /* the virtio-fs device's tag */
	char *path; /* absolute mount point in the guest */
	uint32_t flags; /* PROTO_SHARE_RO */
};

struct proto_config {
	char *hostname;
	char **env; /* "KEY=VALUE" entries */
	uint64_t memory_bytes; /* 0 = no cgroup cap */
	uint64_t nofile;       /* 0 = keep */
	uint64_t realtime_ns;  /* 0 = keep the clock */
	uint8_t *entropy;
	size_t entropy_len;
	char *user; /* OCI User ("" or NULL when encoding = root), <= PROTO_MAX_USER */
	/* eth0 (host byte order); net_addr 0 = no network */
	uint32_t net_addr, net_prefix, net_gateway, net_dns;
	uint32_t pids_max; /* processes one exec may have at once, 0 = no limit */
	struct proto_share *shares;
	uint32_t n_shares; /* <= PROTO_MAX_SHARES */
};

struct proto_resumed {
	uint64_t realtime_ns; /* 0 = keep the clock */
	uint8_t *entropy;     /* PROTO_MIN_RESUMED_ENTROPY..PROTO_MAX_ENTROPY bytes */
	size_t entropy_len;
};

struct proto_spawn {
	char **argv; /* at least one entry, argv[0] non-empty */
	char **env;  /* "KEY=VALUE" entries layered over the boot env */
	char *cwd;   /* "" or an absolute path */
	uint32_t flags;
};

struct proto_spawn_pty {
	char **argv; /* as proto_spawn's */
	char **env;
	char *cwd;
	uint32_t rows, cols; /* 1..PROTO_MAX_TTY_DIM */
};

/* RESIZE */
struct proto_winsize {
	uint32_t rows, cols; /* 1..PROTO_MAX_TTY_DIM */
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

/* FS_LS, FS_STAT, FS_READ */
struct proto_fs_path {
	char *path; /* non-empty, at most PROTO_MAX_PATH bytes (as every fs path) */
};

struct proto_fs_mkdir {
	char *path;
	uint32_t mode;  /* 0..07777 */
	uint32_t flags; /* PROTO_FS_PARENTS */
};

struct proto_fs_rm {
	char *path;
	uint32_t flags; /* PROTO_FS_RECURSIVE */
};

struct proto_fs_chmod {
	char *path;
	uint32_t mode;     /* 0..07777 */
	uint32_t flags;    /* PROTO_FS_RECURSIVE, PROTO_FS_SET_UID, PROTO_FS_SET_GID */
	uint32_t uid, gid; /* used only with their SET_ flag */
};

struct proto_fs_mv {
	char *src, *dst;
	uint32_t flags; /* PROTO_FS_OVERWRITE */
};

struct proto_fs_grep {
	char *path;
	char *pattern;
	uint32_t flags; /* PROTO_FS_RECURSIVE, PROTO_FS_IGNORE_CASE */
	char **include, **exclude; /* at most PROTO_FS_MAX_GLOBS each */
	uint64_t max_matches;      /* 0 = unlimited */
	uint64_t max_line_bytes;   /* 0 = no limit */
};

struct proto_fs_sed {
	char **files; /* either a non-empty list of paths ... */
	char *path;   /* ... or a non-empty path (the other is empty) */
	char *pattern, *replacement;
	uint32_t flags; /* PROTO_FS_RECURSIVE, _IGNORE_CASE, _REGEX, _FIRST_ONLY */
	char **include, **exclude;
};

struct proto_fs_entry {
	char *name;
	uint32_t mode;  /* low 12 bits */
	uint32_t flags; /* PROTO_FS_ENTRY_DIR, PROTO_FS_ENTRY_SYMLINK */
	uint64_t size;
	int64_t mtime;  /* Unix seconds */
};

struct proto_fs_match {
	char *path;
	uint64_t line; /* 1-based */
	char *content; /* at most PROTO_FS_MAX_CONTENT bytes */
};

struct proto_fs_sed_file {
	char *path;
	uint64_t replacements;
	int32_t errnum; /* 0 = success */
	char *error;    /* "" on success */
};

/* FS_ENTRIES, FS_MATCHES, FS_SED_FILES: 1..PROTO_FS_MAX_BATCH items. */
struct proto_fs_batch {
	uint32_t n;
	union {
		struct proto_fs_entry *entries;
		struct proto_fs_match *matches;
		struct proto_fs_sed_file *files;
	} v;
};

struct proto_fs_meta {
	uint64_t size;
	uint32_t mode; /* low 12 bits */
	int64_t mtime;
};

struct proto_fs_done {
	uint64_t count;
	uint32_t flags; /* PROTO_FS_TRUNCATED */
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
		char **warm_up;            /* WARM_UP: argv, empty = only `true` */
		struct proto_resumed resumed; /* RESUMED */
		struct proto_spawn spawn;  /* SPAWN */
		struct proto_spawn_pty spawn_pty; /* SPAWN_PTY */
		struct proto_winsize winsize;     /* RESIZE */
		uint32_t pid;              /* STARTED */
		struct proto_data data;    /* STDIN, STDOUT, STDERR */
		uint32_t credit;           /* CREDIT: 1..PROTO_WINDOW */
		uint32_t signal;           /* KILL: 1..PROTO_MAX_SIGNAL */
		int32_t code;              /* EXIT: 0..255 */
		char *message;             /* ERROR */
		struct proto_fs_write fs_write; /* FS_WRITE */
		struct proto_fs_error fs_error; /* FS_ERROR */
		struct proto_fs_path fs_path;   /* FS_LS, FS_STAT, FS_READ */
		struct proto_fs_mkdir fs_mkdir; /* FS_MKDIR */
		struct proto_fs_rm fs_rm;       /* FS_RM */
		struct proto_fs_chmod fs_chmod; /* FS_CHMOD */
		struct proto_fs_mv fs_mv;       /* FS_MV */
		struct proto_fs_grep fs_grep;   /* FS_GREP */
		struct proto_fs_sed fs_sed;     /* FS_SED */
		struct proto_fs_batch fs_batch; /* FS_ENTRIES, FS_MATCHES, FS_SED_FILES */
		struct proto_fs_meta fs_meta;   /* FS_META */
		struct proto_fs_done fs_done;   /* FS_DONE */
	} u;
};

#endif
