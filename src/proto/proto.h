/* Host <-> guest control protocol, compiled into both sides.
 *
 * One byte stream per VM (the virtio-serial port named "control"), carrying
 * frames:
 *
 *     u32 length | u32 stream | u8 type | payload[length]
 *
 * All integers are big-endian.  `length` counts the payload only and is at
 * most PROTO_MAX_PAYLOAD; a larger value is a protocol error that ends the
 * connection (the reader never allocates from an unchecked length).
 *
 * Stream 0 carries VM-wide messages (hello, config, ready, ping, shutdown).
 * Every other stream id is chosen by the host, one per process (or, later,
 * per fs operation); the guest answers on the same id.  A stream ends with
 * PROTO_EXIT or PROTO_ERROR from the guest.
 *
 * Payloads are sequences of fields written with the proto_buf helpers below:
 *   u32 / i32 / u64 : fixed width, big-endian
 *   str             : u32 length + bytes (no NUL on the wire; length-capped)
 *   strv            : u32 count + that many str
 *   blob            : u32 length + raw bytes (a str that may hold NULs)
 *   bytes           : the rest of the payload (stdout, stdin, ...); a data
 *                     frame (STDIN, STDOUT, STDERR) holds at most
 *                     PROTO_MAX_CHUNK bytes
 * A decoder rejects a payload with missing fields, over-long strings, counts
 * above the caps below, or trailing bytes.
 *
 * Boot sequence:
 *   guest -> HELLO      {u32 version}              once init has its root
 *   host  -> CONFIG     {str hostname, strv env, u64 memory_bytes,
 *                        u64 nofile (0 = keep), u64 realtime_ns,
 *                        blob entropy (<= PROTO_MAX_ENTROPY bytes),
 *                        str user (<= PROTO_MAX_USER bytes, "" = root),
 *                        u32 net_addr, u32 net_prefix, u32 net_gateway,
 *                        u32 net_dns (IPv4, host byte order; net_addr 0
 *                        = no network: the guest configures only lo),
 *                        u32 pids_max,
 *                        u32 n_shares (<= PROTO_MAX_SHARES), then per
 *                        share {str tag (1..PROTO_MAX_SHARE_TAG bytes),
 *                        str path (absolute, <= PROTO_MAX_PATH),
 *                        u32 flags (PROTO_SHARE_RO)}}
 * Each share is a virtio-fs device the guest mounts (creating the mount
 * point) before READY, read-only with PROTO_SHARE_RO.
 *   guest -> READY      {}  or ERROR {str message} on stream 0
 * `user` is the image's OCI User: "name", "uid", "name:group", "uid:gid",
 * "name:gid" or "uid:group".  The guest resolves it against /etc/passwd and
 * /etc/group of the sandbox's root: a name must exist (else ERROR naming
 * it); a numeric uid without a passwd entry runs with gid 0 (unless one is
 * given) and HOME "/"; supplementary groups are the /etc/group entries
 * listing the user's name.  Every spawned process drops to that identity
 * (setgroups, setgid, setuid) before exec, and gets HOME from the passwd
 * entry when neither the boot env nor its own env sets it.  fs operations
 * keep running as root.
 * Nothing identifying the sandbox travels before CONFIG, so a VM stopped at
 * HELLO can be snapshotted and restored as many sandboxes.
 *   host  -> WARM_UP    {strv argv}  only before CONFIG: the guest runs
 *                       `true`, then argv unless it is empty (the image's
 *                       interpreter, e.g. python3 -I -B -c pass; at most
 *                       PROTO_MAX_WARM_UP_ARGS entries of at most
 *                       PROTO_MAX_WARM_UP_ARG bytes, argv[0] non-empty),
 *                       each through its own process server once, and
 *                       leaves nothing of them behind (guest/warm_up.h),
 *                       so that a restored VM waiting in a warm pool has
 *                       the paths of CONFIG, a first exec and the
 *                       interpreter translated (TCG) or faulted in.  No
 *                       reply (a failure is the guest's to log): a PING
 *                       after it answers once it is done.
 *
 *   host  -> RESUMED    {u64 realtime_ns, blob entropy (PROTO_MIN_RESUMED_
 *                       ENTROPY..PROTO_MAX_ENTROPY bytes)}  after the VM
 *                       was paused and resumed (vm.h sbx_vm_pause): its
 *                       memory came back from a file, so its clock lags
 *                       by the pause and its CRNG state was on the host's
 *                       disk.  The guest sets CLOCK_REALTIME (0 = keep)
 *                       and mixes the entropy in and reseeds, as at
 *                       CONFIG.  Sent before any frame held over the
 *                       pause; no reply.
 *
 * Processes (host picks stream id S != 0):
 *   host  -> SPAWN      {strv argv, strv env (layered over the boot env),
 *                        str cwd ("" = /), u32 flags}
 *   guest -> STARTED    {u32 pid}     for every forked process, also one
 *                                     whose exec then fails
 *   host  -> STDIN      {bytes}        only with PROTO_SPAWN_STDIN
 *   host  -> STDIN_EOF  {}
 *   guest -> STDOUT / STDERR {bytes}   at most PROTO_MAX_CHUNK each
 *   both  -> CREDIT     {u32 n}        "I consumed n more bytes of your data
 *                                       on this stream"
 *   host  -> KILL       {u32 signal}   to the process's whole group
 *   guest -> EXIT       {i32 code}     0-255, or 128+signal; after all output
 *   guest -> ERROR      {str message}  the stream failed (not a spawn
 *                                       failure: those are EXIT 127/126 with
 *                                       "exec: <cmd>: not found\n" or
 *                                       "exec: <cmd>: permission denied\n"
 *                                       on STDERR)
 * Terminals (host picks stream id S != 0):
 *   host  -> SPAWN_PTY  {strv argv, strv env, str cwd (as SPAWN),
 *                        u32 rows, u32 cols (each 1..PROTO_MAX_TTY_DIM)}
 *            The process starts in a new session whose controlling
 *            terminal is a fresh pseudo-terminal of rows x cols, which is
 *            also its stdin, stdout and stderr; identity, environment,
 *            cwd, exec cgroup and exec failures are as for SPAWN (a
 *            failure's line comes on STDOUT, ending "\r\n").
 *   guest -> STARTED {u32 pid}, then STDOUT {bytes}: the screen, whatever
 *            the terminal's master side reads (never STDERR), under the
 *            CREDIT window as for SPAWN, then EXIT {i32 code} once the
 *            process exited and the terminal's output ended (nobody holds
 *            its slave side any more, or a background process still does
 *            and the output stayed quiet for the guest's drain time).
 *   host  -> STDIN {bytes}    keys, written to the master side as they are
 *                             (the terminal's line discipline echoes and
 *                             edits; ^C, ^D, ^Z are its to interpret)
 *   host  -> STDIN_EOF {}     ends the keys: later STDIN is a protocol
 *                             error.  Nothing is written and the terminal
 *                             stays open: it ends with the process (or
 *                             KILL), not with the keys.
 *   host  -> RESIZE {u32 rows, u32 cols (each 1..PROTO_MAX_TTY_DIM)}
 *            sets the terminal's size; the kernel sends SIGWINCH to its
 *            foreground process group.  On a stream that is not a
 *            terminal it is a protocol error: the guest ends that stream
 *            with ERROR PROTO_TEXT_UNEXPECTED (as any message a stream
 *            cannot take; the host's chan_stream_resize never sends it
 *            there); for a stream that already ended it is ignored.
 *   host  -> KILL {u32 signal}  as for SPAWN: the session's first process
 *                               group, SIGKILL also the exec's cgroup.
 * Flow control: each side may have at most PROTO_WINDOW bytes of STDOUT+
 * STDERR (guest) or STDIN (host) payload unacknowledged per stream; it stops
 * reading the source (the child's pipe, the caller's input) until CREDIT
 * arrives.  A flooding process therefore blocks on its own pipe and never
 * starves other streams or grows memory without bound.
 *
 * VM-wide, stream 0:
 *   host  -> PING {u64 nonce}   guest -> PONG {u64 nonce}
 *   host  -> SHUTDOWN {}        guest syncs, kills everything, reboots
 *                               (with reboot=t and -no-reboot QEMU exits 0)
 *
 * Filesystem operations (types 0x40-0x5f), each on a fresh stream S != 0:
 *   host  -> FS_WRITE   {str path, u32 mode (0..07777, applied exactly),
 *                        u32 flags (PROTO_FS_PARENTS: create missing
 *                        parent directories, 0755)}
 *   host  -> STDIN ... STDIN_EOF   the file's bytes, under the same CREDIT
 *                                  flow control as a process's stdin
 *   guest -> EXIT {0}              written: the bytes went to a temp sibling
 *                                  that was then renamed over `path`, so a
 *                                  reader never sees a partial file
 *   guest -> FS_ERROR   {i32 errno, str message}  failed (nothing replaced);
 *                        errno is the guest's (ENOENT for a missing parent,
 *                        EISDIR, EACCES, ...), message names the path.
 *                        May come before STDIN_EOF: later frames on the
 *                        stream are then ignored.
 *
 * The other fs operations (contract 7.8-7.18) are one request each, on a
 * fresh stream S != 0.  Every one ends with exactly one of
 *   guest -> FS_DONE    {u64 count, u32 flags}   success (meaning per op)
 *   guest -> FS_ERROR   {i32 errno, str message} failure; nothing follows
 * except FS_READ, which ends with EXIT {0} like a process.  The guest
 * never follows symlinks while walking a tree, and every message names the
 * path it is about.  Requests the guest does not know (an older init) are
 * answered with ERROR "unsupported message type" (the host's S219).
 *
 *   FS_LS    {str path}          -> FS_ENTRIES* then FS_DONE {count = entries}
 *            lstat semantics: a path (or a symlink) that is not a directory
 *            fails with ENOTDIR.  Readdir order, no "." / "..", entries that
 *            vanish mid-listing are skipped.
 *   FS_STAT  {str path}          -> one FS_ENTRIES {1 entry} then FS_DONE {1}
 *            lstat; the entry's name is the path's last component, or the
 *            whole path when it has none ("/", "..").
 *   FS_MKDIR {str path, u32 mode, u32 flags (PARENTS)}
 *            -> FS_DONE {count = 1 created, 0 already existed}
 *            An existing path (any type) is EEXIST without PARENTS, count 0
 *            with it (nothing touched).  Missing parent without PARENTS:
 *            ENOENT "path not found: <path>".  The leaf gets `mode` exactly;
 *            created intermediates get 0755.
 *   FS_RM    {str path, u32 flags (RECURSIVE)} -> FS_DONE {1}
 *            lstat; a non-empty directory without RECURSIVE is ENOTEMPTY
 *            (nothing removed); symlinks are unlinked, never followed.
 *   FS_CHMOD {str path, u32 mode, u32 flags (RECURSIVE, SET_UID, SET_GID),
 *            u32 uid, u32 gid}   -> FS_DONE {count = entries changed}
 *            The path itself follows a symlink (like chmod(2)) and counts 1;
 *            a symlink root is not walked.  RECURSIVE walks the tree and
 *            skips the symlinks inside it (their targets may lie outside).
 *            uid/gid are applied only with their SET_ flag.  The first
 *            error aborts (earlier entries stay changed).
 *   FS_MV    {str src, str dst, u32 flags (OVERWRITE)} -> FS_DONE {1}
 *            src missing: ENOENT "src not found: <src>"; dst exists without
 *            OVERWRITE: EEXIST "dst already exists: <dst>".  rename(2); on
 *            EXDEV a regular file is copied to a temp sibling of dst (mode
 *            kept), renamed over dst, then src is unlinked.
 *   FS_GREP  {str path, str pattern, u32 flags (RECURSIVE, IGNORE_CASE),
 *            strv include, strv exclude, u64 max_matches (0 = unlimited),
 *            u64 max_line_bytes (0 = no limit)}
 *            -> FS_MATCHES* then FS_DONE {count = matches, flags TRUNCATED}
 *            Checks in order: lstat path (ENOENT), compile (PROTO_FS_EREGEX
 *            "bad regex: ..."), directory without RECURSIVE
 *            (PROTO_FS_EINVALID).  PCRE2 with UTF and UCP.  Regular files
 *            only; a NUL in the first 8 KiB skips the file.  Lines split on
 *            \n with a trailing \r dropped; lines that are not UTF-8 are
 *            skipped but counted.  Only the first PROTO_FS_SCAN_LINE bytes of
 *            a longer line are searched.  A reported line longer than
 *            max_line_bytes (and always one longer than PROTO_FS_MAX_CONTENT)
 *            is cut at a UTF-8 boundary and gets "\u2026" appended.
 *            TRUNCATED is set as soon as max_matches is reached.
 *            Globs (gitignore-style) are matched against the path relative
 *            to the root: `*` and `?` stay within one component, `**` spans
 *            any number of them, `[...]` / `[!...]` are classes, `\` escapes;
 *            a pattern holding a `/` (a leading one only anchors) matches the
 *            whole relative path, else any single component; a pattern also
 *            matches every file below a directory it matches, and a trailing
 *            `/` makes it match directories only.  A file is kept when it
 *            matches no exclude and (include empty or) some include.  With a
 *            file root, the globs see its basename.
 *   FS_SED   {strv files, str path, str pattern, str replacement,
 *            u32 flags (RECURSIVE, IGNORE_CASE, REGEX, FIRST_ONLY),
 *            strv include, strv exclude}
 *            exactly one of files (non-empty) / path (non-empty, walked like
 *            FS_GREP after resolving a symlinked root)
 *            -> FS_SED_FILES* then FS_DONE {count = total replacements}
 *            Each file is replaced line by line (the pattern sees the line
 *            without its \n, so `$` anchors at the end of the line), written
 *            to a temp sibling with the original mode and owner, renamed
 *            over it (even with 0 replacements).  A file that fails (missing,
 *            not UTF-8, unreadable) gets its errno and message in its
 *            FS_SED_FILES entry and the others continue.  REGEX: `$1`,
 *            `${1}`, `$name`, `${name}`, `$$` in the replacement (an unknown
 *            group expands to nothing); an empty pattern matches everywhere.
 *            Literal: the replacement is taken verbatim; an empty pattern is
 *            PROTO_FS_EINVALID "pattern is empty".  FIRST_ONLY: the first
 *            match of each line.
 *   FS_READ  {str path}          -> FS_META {u64 size, u32 mode, i64 mtime}
 *            then STDOUT chunks (the file's bytes, under CREDIT flow control
 *            as for a process) then EXIT {0}, or FS_ERROR at any point (the
 *            bytes sent so far are then incomplete).  stat follows symlinks;
 *            a directory is EISDIR, another non-regular file
 *            PROTO_FS_EWRONGTYPE.  The file is read to its end even when it
 *            grew past `size`.
 *   host  -> KILL {any signal} cancels any of these: FS_ERROR ECANCELED.
 *
 * Result batches (each frame's payload stays below PROTO_MAX_PAYLOAD; at
 * most PROTO_FS_MAX_BATCH items per frame):
 *   FS_ENTRIES   {u32 n, n x {str name, u32 mode (low 12 bits), u32 flags
 *                (ENTRY_DIR, ENTRY_SYMLINK), u64 size, i64 mtime (s)}}
 *   FS_MATCHES   {u32 n, n x {str path, u64 line (1-based), str content}}
 *   FS_SED_FILES {u32 n, n x {str path, u64 replacements, i32 errno
 *                (0 = success), str error ("" on success)}}
 *
 * errno values in FS_ERROR are Linux's, plus these guest verdicts:
 *   PROTO_FS_EINVALID    the request is invalid for this path (S210)
 *   PROTO_FS_EREGEX      the pattern does not compile (S217)
 *   PROTO_FS_EWRONGTYPE  the path has the wrong file type (S212)
 * A missing parent of FS_WRITE is ENOENT with a message starting
 * "parent not found: <parent>" (S211 with the fix {parents: true}).
 */
#ifndef SBX_PROTO_H
#define SBX_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/strv.h"

#define PROTO_VERSION 8 /* 2: CONFIG carries `user`; 3: and the network; 4: and shares; 5: WARM_UP; 6: its argv;
                           7: SPAWN_PTY, RESIZE; 8: RESUMED */
#define PROTO_HEADER_SIZE 9u
#define PROTO_MAX_PAYLOAD (1024u * 1024u)
#define PROTO_MAX_CHUNK (64u * 1024u)
#define PROTO_WINDOW (256u * 1024u)
#define PROTO_MAX_STR (64u * 1024u)
#define PROTO_MAX_STRV 4096u
#define PROTO_MAX_ENTROPY 512u
#define PROTO_MIN_RESUMED_ENTROPY 32u /* RESUMED: what a reseed needs at least */
#define PROTO_MAX_USER 256u /* CONFIG user: "name:group" */
#define PROTO_MAX_SHARES 8u
#define PROTO_MAX_SHARE_TAG 36u /* virtio-fs's tag field */
#define PROTO_SHARE_RO 1u
#define PROTO_MAX_WARM_UP_ARGS 16u
#define PROTO_MAX_WARM_UP_ARG 256u

enum proto_type {
	PROTO_HELLO = 0x01,
	PROTO_CONFIG = 0x02,
	PROTO_READY = 0x03,
	PROTO_PING = 0x04,
	PROTO_PONG = 0x05,
	PROTO_SHUTDOWN = 0x06,
	PROTO_WARM_UP = 0x07,
	PROTO_RESUMED = 0x08,

	PROTO_SPAWN = 0x10,
	PROTO_STARTED = 0x11,
	PROTO_STDIN = 0x12,
	PROTO_STDIN_EOF = 0x13,
	PROTO_STDOUT = 0x14,
	PROTO_STDERR = 0x15,
	PROTO_CREDIT = 0x16,
	PROTO_KILL = 0x17,
	PROTO_EXIT = 0x18,
	PROTO_ERROR = 0x19,
	PROTO_SPAWN_PTY = 0x1a,
	PROTO_RESIZE = 0x1b,

	PROTO_FS_FIRST = 0x40,
	PROTO_FS_WRITE = 0x40,
	PROTO_FS_ERROR = 0x41,
	PROTO_FS_LS = 0x42,
	PROTO_FS_STAT = 0x43,
	PROTO_FS_MKDIR = 0x44,
	PROTO_FS_RM = 0x45,
	PROTO_FS_CHMOD = 0x46,
	PROTO_FS_MV = 0x47,
	PROTO_FS_GREP = 0x48,
	PROTO_FS_SED = 0x49,
	PROTO_FS_READ = 0x4a,
	PROTO_FS_ENTRIES = 0x50,
	PROTO_FS_MATCHES = 0x51,
	PROTO_FS_SED_FILES = 0x52,
	PROTO_FS_META = 0x53,
	PROTO_FS_DONE = 0x54,
	PROTO_FS_LAST = 0x5f,
};

#define PROTO_SPAWN_STDIN 0x1u /* STDIN frames follow; else stdin is at EOF */
/* Request flags of the fs operations (each op accepts the ones it names). */
#define PROTO_FS_PARENTS 0x1u      /* FS_WRITE, FS_MKDIR: create missing parents */
#define PROTO_FS_RECURSIVE 0x2u    /* FS_RM, FS_CHMOD, FS_GREP, FS_SED */
#define PROTO_FS_OVERWRITE 0x4u    /* FS_MV */
#define PROTO_FS_IGNORE_CASE 0x8u  /* FS_GREP, FS_SED */
#define PROTO_FS_REGEX 0x10u       /* FS_SED: pattern is a regex, else literal */
#define PROTO_FS_FIRST_ONLY 0x20u  /* FS_SED: first match of each line only */
#define PROTO_FS_SET_UID 0x40u     /* FS_CHMOD: uid is set */
#define PROTO_FS_SET_GID 0x80u     /* FS_CHMOD: gid is set */
/* FS_DONE flags */
#define PROTO_FS_TRUNCATED 0x1u    /* FS_GREP stopped at max_matches */
/* FS_ENTRIES entry flags */
#define PROTO_FS_ENTRY_DIR 0x1u
#define PROTO_FS_ENTRY_SYMLINK 0x2u
/* Guest verdicts carried as FS_ERROR errno (above every Linux errno). */
#define PROTO_FS_EINVALID 1000
#define PROTO_FS_EREGEX 1001
#define PROTO_FS_EWRONGTYPE 1002
#define PROTO_FS_MAX_BATCH 4096u            /* items per result frame */
#define PROTO_FS_MAX_GLOBS 256u             /* include / exclude entries each */
#define PROTO_FS_MAX_CONTENT (16u * 1024u)  /* FS_MATCHES content, with the ellipsis */
#define PROTO_FS_SCAN_LINE (1024u * 1024u)  /* FS_GREP searches this much of a line */
#define PROTO_MAX_PATH 4096u   /* PATH_MAX */

/* Message texts the host recognises in the guest's answers: each side uses
 * these names, so neither can drift from the other. */
#define PROTO_TEXT_UNSUPPORTED "unsupported message type" /* ERROR: an op this guest lacks */
#define PROTO_TEXT_UNEXPECTED "unexpected message"        /* ERROR: a message the stream cannot take */
#define PROTO_TEXT_PARENT_MISSING "parent not found"      /* FS_ERROR ENOENT of FS_WRITE */

struct proto_header {
	uint32_t length;
	uint32_t stream;
	uint8_t type;
};

/* Encodes a header into 9 bytes. */
void proto_header_encode(const struct proto_header *h, uint8_t out[PROTO_HEADER_SIZE]);
/* Decodes 9 bytes; fails when length > PROTO_MAX_PAYLOAD or the type is
 * unknown. */
int proto_header_decode(const uint8_t in[PROTO_HEADER_SIZE], struct proto_header *h, sbx_error_t *err);

/* Growable output buffer for building one frame. */
struct proto_wbuf {
	uint8_t *data;
	size_t len, cap;
	int failed; /* set on allocation failure or overflow; checked at the end */
};
void proto_wbuf_init(struct proto_wbuf *b);
void proto_wbuf_free(struct proto_wbuf *b);
void proto_put_u32(struct proto_wbuf *b, uint32_t v);
void proto_put_i32(struct proto_wbuf *b, int32_t v);
void proto_put_u64(struct proto_wbuf *b, uint64_t v);
void proto_put_str(struct proto_wbuf *b, const char *s);
void proto_put_strn(struct proto_wbuf *b, const char *s, size_t n);
void proto_put_strv(struct proto_wbuf *b, char *const *v); /* NULL-terminated */
void proto_put_bytes(struct proto_wbuf *b, const void *p, size_t n);
/* Writes a whole frame (header + payload) into `out` (reset first). */
int proto_frame(struct proto_wbuf *out, uint32_t stream, uint8_t type, const struct proto_wbuf *payload,
		sbx_error_t *err);

/* Bounds-checked reader over one payload. */
struct proto_rbuf {
	const uint8_t *p;
	size_t len, off;
};
void proto_rbuf_init(struct proto_rbuf *r, const void *p, size_t len);
int proto_get_u32(struct proto_rbuf *r, uint32_t *v, sbx_error_t *err);
int proto_get_i32(struct proto_rbuf *r, int32_t *v, sbx_error_t *err);
int proto_get_u64(struct proto_rbuf *r, uint64_t *v, sbx_error_t *err);
/* Returns a freshly allocated NUL-terminated copy; rejects embedded NULs. */
int proto_get_str(struct proto_rbuf *r, char **s, sbx_error_t *err);
/* Returns a freshly allocated NULL-terminated vector (free with
 * sbx_strv_free). */
int proto_get_strv(struct proto_rbuf *r, char ***v, sbx_error_t *err);
/* Returns a freshly allocated copy of at most `max` raw bytes (NULs
 * allowed); *p is NULL when *n is 0. */
int proto_get_blob(struct proto_rbuf *r, uint8_t **p, size_t *n, size_t max, sbx_error_t *err);
/* A path of 1..PROTO_MAX_PATH bytes; `what` names it in errors. */
int proto_get_path(struct proto_rbuf *r, char **p, const char *what, sbx_error_t *err);
/* A mode of at most 07777. */
int proto_get_mode(struct proto_rbuf *r, uint32_t *mode, sbx_error_t *err);
/* Flags within `allowed`; errors say "unknown <what> flags". */
int proto_get_flags(struct proto_rbuf *r, uint32_t *flags, uint32_t allowed, const char *what, sbx_error_t *err);
/* Fails when bytes are left over. */
int proto_get_end(struct proto_rbuf *r, sbx_error_t *err);

#endif
