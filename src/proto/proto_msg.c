/* Decoders and encoders for every message of proto.h. */
#include "proto/proto_msg.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_msg_fs.h"
#include "proto/proto_msg_vm.h"


const char *proto_type_name(uint8_t type)
{
	switch (type) {
	case PROTO_HELLO: return "HELLO";
	case PROTO_CONFIG: return "CONFIG";
	case PROTO_READY: return "READY";
	case PROTO_PING: return "PING";
	case PROTO_PONG: return "PONG";
	case PROTO_SHUTDOWN: return "SHUTDOWN";
	case PROTO_WARM_UP: return "WARM_UP";
	case PROTO_RESUMED: return "RESUMED";
	case PROTO_SPAWN: return "SPAWN";
	case PROTO_STARTED: return "STARTED";
	case PROTO_STDIN: return "STDIN";
	case PROTO_STDIN_EOF: return "STDIN_EOF";
	case PROTO_STDOUT: return "STDOUT";
	case PROTO_STDERR: return "STDERR";
	case PROTO_CREDIT: return "CREDIT";
	case PROTO_KILL: return "KILL";
	case PROTO_EXIT: return "EXIT";
	case PROTO_ERROR: return "ERROR";
	case PROTO_SPAWN_PTY: return "SPAWN_PTY";
	case PROTO_RESIZE: return "RESIZE";
	case PROTO_FS_WRITE: return "FS_WRITE";
	case PROTO_FS_ERROR: return "FS_ERROR";
	}
	const char *fs = proto_fs_type_name(type);
	return fs != NULL ? fs : "?";
}

/* Types that only make sense on stream 0; ERROR may travel on both (a boot
 * failure is reported on stream 0). */
static int vm_wide(uint8_t type)
{
	return type >= PROTO_HELLO && type <= PROTO_RESUMED;
}

static int check_stream(uint8_t type, uint32_t stream, sbx_error_t *err)
{
	if (type == PROTO_ERROR)
		return 0;
	if (vm_wide(type) && stream != 0)
		return sbx_error_set(err, 0, "%s on stream %u, expected 0", proto_type_name(type), stream);
	if (!vm_wide(type) && stream == 0)
		return sbx_error_set(err, 0, "%s on stream 0", proto_type_name(type));
	return 0;
}

/* "KEY=VALUE" with a non-empty key. */
static int check_env(char **env, sbx_error_t *err)
{
	for (size_t i = 0; env[i] != NULL; i++) {
		const char *eq = strchr(env[i], '=');
		if (eq == NULL || eq == env[i])
			return sbx_error_set(err, 0, "env entry %zu is not KEY=VALUE", i);
	}
	return 0;
}

static void free_shares(struct proto_config *c)
{
	for (uint32_t i = 0; c->shares != NULL && i < c->n_shares; i++) {
		free(c->shares[i].tag);
		free(c->shares[i].path);
	}
	free(c->shares);
	c->shares = NULL;
	c->n_shares = 0;
}

static int decode_share(struct proto_rbuf *r, struct proto_share *s, sbx_error_t *err)
{
	if (proto_get_str(r, &s->tag, err) < 0)
		return sbx_error_prefix(err, "share tag");
	size_t n = strlen(s->tag);
	if (n == 0 || n > PROTO_MAX_SHARE_TAG)
		return sbx_error_set(err, 0, "share tag of %zu bytes, expected 1..%u", n, PROTO_MAX_SHARE_TAG);
	if (proto_get_path(r, &s->path, "share path", err) < 0)
		return -1;
	if (s->path[0] != '/')
		return sbx_error_set(err, 0, "share path is not absolute");
	return proto_get_flags(r, &s->flags, PROTO_SHARE_RO, "share", err);
}

/* On failure proto_msg_decode frees what was decoded. */
static int decode_shares(struct proto_rbuf *r, struct proto_config *c, sbx_error_t *err)
{
	uint32_t n;
	if (proto_get_u32(r, &n, err) < 0)
		return sbx_error_prefix(err, "shares");
	if (n > PROTO_MAX_SHARES)
		return sbx_error_set(err, 0, "%u shares, at most %u", n, PROTO_MAX_SHARES);
	if (n == 0)
		return 0;
	if ((c->shares = calloc(n, sizeof(*c->shares))) == NULL)
		return sbx_error_errno(err, ENOMEM, "shares");
	c->n_shares = n;
	for (uint32_t i = 0; i < n; i++) {
		if (decode_share(r, &c->shares[i], err) < 0)
			return sbx_error_prefix(err, "share %u", i);
	}
	return 0;
}

static int decode_config(struct proto_rbuf *r, struct proto_config *c, sbx_error_t *err)
{
	if (proto_get_str(r, &c->hostname, err) < 0)
		return sbx_error_prefix(err, "hostname");
	if (strlen(c->hostname) > PROTO_MAX_HOSTNAME)
		return sbx_error_set(err, 0, "hostname longer than %u bytes", PROTO_MAX_HOSTNAME);
	if (proto_get_strv(r, &c->env, err) < 0)
		return sbx_error_prefix(err, "env");
	if (check_env(c->env, err) < 0)
		return -1;
	if (proto_get_u64(r, &c->memory_bytes, err) < 0 || proto_get_u64(r, &c->nofile, err) < 0 ||
	    proto_get_u64(r, &c->realtime_ns, err) < 0)
		return -1;
	if (proto_get_blob(r, &c->entropy, &c->entropy_len, PROTO_MAX_ENTROPY, err) < 0)
		return sbx_error_prefix(err, "entropy");
	if (proto_get_str(r, &c->user, err) < 0)
		return sbx_error_prefix(err, "user");
	if (strlen(c->user) > PROTO_MAX_USER)
		return sbx_error_set(err, 0, "user longer than %u bytes", PROTO_MAX_USER);
	if (proto_get_u32(r, &c->net_addr, err) < 0 || proto_get_u32(r, &c->net_prefix, err) < 0 ||
	    proto_get_u32(r, &c->net_gateway, err) < 0 || proto_get_u32(r, &c->net_dns, err) < 0)
		return sbx_error_prefix(err, "network");
	if (c->net_prefix > 32)
		return sbx_error_set(err, 0, "network prefix /%u", c->net_prefix);
	if (proto_get_u32(r, &c->pids_max, err) < 0)
		return sbx_error_prefix(err, "pids_max");
	return decode_shares(r, c, err);
}

/* argv, env and cwd of SPAWN and SPAWN_PTY. */
static int decode_command(struct proto_rbuf *r, char ***argv, char ***env, char **cwd, sbx_error_t *err)
{
	if (proto_get_strv(r, argv, err) < 0)
		return sbx_error_prefix(err, "argv");
	if ((*argv)[0] == NULL || (*argv)[0][0] == '\0')
		return sbx_error_set(err, 0, "empty argv");
	if (proto_get_strv(r, env, err) < 0)
		return sbx_error_prefix(err, "env");
	if (check_env(*env, err) < 0)
		return -1;
	if (proto_get_str(r, cwd, err) < 0)
		return sbx_error_prefix(err, "cwd");
	if ((*cwd)[0] != '\0' && (*cwd)[0] != '/')
		return sbx_error_set(err, 0, "cwd is not absolute");
	return 0;
}

static int decode_spawn(struct proto_rbuf *r, struct proto_spawn *s, sbx_error_t *err)
{
	if (decode_command(r, &s->argv, &s->env, &s->cwd, err) < 0)
		return -1;
	return proto_get_flags(r, &s->flags, PROTO_SPAWN_STDIN, "spawn", err);
}

/* The same bounds on both sides: the encoder refuses what this rejects. */
static int decode_fs_write(struct proto_rbuf *r, struct proto_fs_write *w, sbx_error_t *err)
{
	if (proto_get_path(r, &w->path, "path", err) < 0)
		return -1;
	if (proto_get_mode(r, &w->mode, err) < 0)
		return -1;
	return proto_get_flags(r, &w->flags, PROTO_FS_PARENTS, "fs", err);
}

static int decode_fs_error(struct proto_rbuf *r, struct proto_fs_error *e, sbx_error_t *err)
{
	if (proto_get_i32(r, &e->errnum, err) < 0)
		return sbx_error_prefix(err, "errno");
	if (e->errnum <= 0)
		return sbx_error_set(err, 0, "errno %d is not positive", e->errnum);
	return proto_get_str(r, &e->message, err);
}

static int decode_u32_range(struct proto_rbuf *r, uint32_t *v, uint32_t lo, uint32_t hi, const char *what,
			    sbx_error_t *err)
{
	if (proto_get_u32(r, v, err) < 0)
		return sbx_error_prefix(err, "%s", what);
	if (*v < lo || *v > hi)
		return sbx_error_set(err, 0, "%s %u out of range %u..%u", what, *v, lo, hi);
	return 0;
}

/* A terminal's size (SPAWN_PTY, RESIZE). */
static int decode_dims(struct proto_rbuf *r, uint32_t *rows, uint32_t *cols, sbx_error_t *err)
{
	if (decode_u32_range(r, rows, 1, PROTO_MAX_TTY_DIM, "rows", err) < 0)
		return -1;
	return decode_u32_range(r, cols, 1, PROTO_MAX_TTY_DIM, "cols", err);
}

static int decode_body(struct proto_rbuf *r, struct proto_msg *m, sbx_error_t *err)
{
	switch (m->type) {
	case PROTO_HELLO:
		return proto_get_u32(r, &m->u.version, err);
	case PROTO_CONFIG:
		return decode_config(r, &m->u.config, err);
	case PROTO_READY:
	case PROTO_SHUTDOWN:
	case PROTO_STDIN_EOF:
		return 0;
	case PROTO_WARM_UP:
		return proto_warm_up_decode(r, &m->u.warm_up, err);
	case PROTO_RESUMED:
		return proto_resumed_decode(r, &m->u.resumed, err);
	case PROTO_PING:
	case PROTO_PONG:
		return proto_get_u64(r, &m->u.nonce, err);
	case PROTO_SPAWN:
		return decode_spawn(r, &m->u.spawn, err);
	case PROTO_SPAWN_PTY:
		if (decode_command(r, &m->u.spawn_pty.argv, &m->u.spawn_pty.env, &m->u.spawn_pty.cwd, err) < 0)
			return -1;
		return decode_dims(r, &m->u.spawn_pty.rows, &m->u.spawn_pty.cols, err);
	case PROTO_RESIZE:
		return decode_dims(r, &m->u.winsize.rows, &m->u.winsize.cols, err);
	case PROTO_STARTED:
		return proto_get_u32(r, &m->u.pid, err);
	case PROTO_STDIN:
	case PROTO_STDOUT:
	case PROTO_STDERR:
		if (r->len > PROTO_MAX_CHUNK)
			return sbx_error_set(err, 0, "data frame of %zu bytes exceeds %u", r->len, PROTO_MAX_CHUNK);
		m->u.data.data = r->p;
		m->u.data.len = r->len;
		r->off = r->len;
		return 0;
	case PROTO_CREDIT:
		return decode_u32_range(r, &m->u.credit, 1, PROTO_WINDOW, "credit", err);
	case PROTO_KILL:
		return decode_u32_range(r, &m->u.signal, 1, PROTO_MAX_SIGNAL, "signal", err);
	case PROTO_EXIT:
		if (proto_get_i32(r, &m->u.code, err) < 0)
			return -1;
		if (m->u.code < 0 || m->u.code > 255)
			return sbx_error_set(err, 0, "exit code %d out of range 0..255", m->u.code);
		return 0;
	case PROTO_ERROR:
		return proto_get_str(r, &m->u.message, err);
	case PROTO_FS_WRITE:
		return decode_fs_write(r, &m->u.fs_write, err);
	case PROTO_FS_ERROR:
		return decode_fs_error(r, &m->u.fs_error, err);
	}
	return proto_fs_decode_body(r, m, err);
}

int proto_msg_decode(const struct proto_header *h, const uint8_t *payload, struct proto_msg *m,
		     sbx_error_t *err)
{
	memset(m, 0, sizeof(*m));
	m->stream = h->stream;
	m->type = h->type;
	if (check_stream(h->type, h->stream, err) < 0)
		return -1;
	struct proto_rbuf r;
	proto_rbuf_init(&r, payload, h->length);
	if (decode_body(&r, m, err) < 0 || proto_get_end(&r, err) < 0) {
		sbx_error_prefix(err, "%s", proto_type_name(h->type));
		proto_msg_free(m);
		return -1;
	}
	return 0;
}

void proto_msg_free(struct proto_msg *m)
{
	switch (m->type) {
	case PROTO_CONFIG:
		free(m->u.config.hostname);
		sbx_strv_free(m->u.config.env);
		free(m->u.config.entropy);
		free(m->u.config.user);
		free_shares(&m->u.config);
		break;
	case PROTO_SPAWN:
		sbx_strv_free(m->u.spawn.argv);
		sbx_strv_free(m->u.spawn.env);
		free(m->u.spawn.cwd);
		break;
	case PROTO_SPAWN_PTY:
		sbx_strv_free(m->u.spawn_pty.argv);
		sbx_strv_free(m->u.spawn_pty.env);
		free(m->u.spawn_pty.cwd);
		break;
	case PROTO_ERROR:
		free(m->u.message);
		break;
	case PROTO_WARM_UP:
		sbx_strv_free(m->u.warm_up);
		break;
	case PROTO_RESUMED:
		free(m->u.resumed.entropy);
		break;
	case PROTO_FS_WRITE:
		free(m->u.fs_write.path);
		break;
	case PROTO_FS_ERROR:
		free(m->u.fs_error.message);
		break;
	default:
		proto_fs_free(m);
		break;
	}
	memset(&m->u, 0, sizeof(m->u));
}

static int encode_shares(struct proto_wbuf *b, const struct proto_config *c, sbx_error_t *err)
{
	if (c->n_shares > PROTO_MAX_SHARES)
		return sbx_error_set(err, 0, "%u shares, at most %u", c->n_shares, PROTO_MAX_SHARES);
	proto_put_u32(b, c->n_shares);
	for (uint32_t i = 0; i < c->n_shares; i++) {
		const struct proto_share *s = &c->shares[i];
		size_t tag = s->tag != NULL ? strlen(s->tag) : 0, path = s->path != NULL ? strlen(s->path) : 0;
		if (tag == 0 || tag > PROTO_MAX_SHARE_TAG || path == 0 || path > PROTO_MAX_PATH || s->path[0] != '/' ||
		    (s->flags & ~PROTO_SHARE_RO) != 0)
			return sbx_error_set(err, 0, "share %u: bad tag, path or flags", i);
		proto_put_str(b, s->tag);
		proto_put_str(b, s->path);
		proto_put_u32(b, s->flags);
	}
	return 0;
}

/* What decode_dims accepts. */
static int check_dims(uint32_t rows, uint32_t cols, sbx_error_t *err)
{
	if (rows < 1 || rows > PROTO_MAX_TTY_DIM || cols < 1 || cols > PROTO_MAX_TTY_DIM)
		return sbx_error_set(err, 0, "terminal of %u x %u, each must be 1..%d", rows, cols, PROTO_MAX_TTY_DIM);
	return 0;
}

static int encode_spawn_pty(struct proto_wbuf *b, const struct proto_spawn_pty *s, sbx_error_t *err)
{
	if (s->argv == NULL || s->argv[0] == NULL || s->argv[0][0] == '\0')
		return sbx_error_set(err, 0, "empty argv");
	if (check_dims(s->rows, s->cols, err) < 0)
		return -1;
	proto_put_strv(b, s->argv);
	proto_put_strv(b, s->env);
	proto_put_str(b, s->cwd != NULL ? s->cwd : "");
	proto_put_u32(b, s->rows);
	proto_put_u32(b, s->cols);
	return 0;
}

static int encode_body(struct proto_wbuf *b, const struct proto_msg *m, sbx_error_t *err)
{
	switch (m->type) {
	case PROTO_HELLO:
		proto_put_u32(b, m->u.version);
		return 0;
	case PROTO_CONFIG: {
		const struct proto_config *c = &m->u.config;
		if (c->entropy_len > PROTO_MAX_ENTROPY)
			return sbx_error_set(err, 0, "entropy of %zu bytes exceeds %u", c->entropy_len,
					     PROTO_MAX_ENTROPY);
		if (c->user != NULL && strlen(c->user) > PROTO_MAX_USER)
			return sbx_error_set(err, 0, "user longer than %u bytes", PROTO_MAX_USER);
		proto_put_str(b, c->hostname != NULL ? c->hostname : "");
		proto_put_strv(b, c->env);
		proto_put_u64(b, c->memory_bytes);
		proto_put_u64(b, c->nofile);
		proto_put_u64(b, c->realtime_ns);
		proto_put_u32(b, (uint32_t)c->entropy_len);
		proto_put_bytes(b, c->entropy, c->entropy_len);
		proto_put_str(b, c->user != NULL ? c->user : "");
		proto_put_u32(b, c->net_addr);
		proto_put_u32(b, c->net_prefix);
		proto_put_u32(b, c->net_gateway);
		proto_put_u32(b, c->net_dns);
		proto_put_u32(b, c->pids_max);
		return encode_shares(b, c, err);
	}
	case PROTO_READY:
	case PROTO_SHUTDOWN:
	case PROTO_STDIN_EOF:
		return 0;
	case PROTO_WARM_UP:
		if (proto_warm_up_check(m->u.warm_up, err) < 0)
			return -1;
		proto_put_strv(b, m->u.warm_up);
		return 0;
	case PROTO_RESUMED:
		return proto_resumed_encode(b, &m->u.resumed, err);
	case PROTO_PING:
	case PROTO_PONG:
		proto_put_u64(b, m->u.nonce);
		return 0;
	case PROTO_SPAWN: {
		const struct proto_spawn *s = &m->u.spawn;
		proto_put_strv(b, s->argv);
		proto_put_strv(b, s->env);
		proto_put_str(b, s->cwd != NULL ? s->cwd : "");
		proto_put_u32(b, s->flags);
		return 0;
	}
	case PROTO_SPAWN_PTY:
		return encode_spawn_pty(b, &m->u.spawn_pty, err);
	case PROTO_RESIZE:
		if (check_dims(m->u.winsize.rows, m->u.winsize.cols, err) < 0)
			return -1;
		proto_put_u32(b, m->u.winsize.rows);
		proto_put_u32(b, m->u.winsize.cols);
		return 0;
	case PROTO_STARTED:
		proto_put_u32(b, m->u.pid);
		return 0;
	case PROTO_STDIN:
	case PROTO_STDOUT:
	case PROTO_STDERR:
		/* A view of the caller's bytes (proto_msg_encode): no copy here. */
		if (m->u.data.len > PROTO_MAX_CHUNK)
			return sbx_error_set(err, 0, "data frame of %zu bytes exceeds %u", m->u.data.len,
					     PROTO_MAX_CHUNK);
		b->data = (uint8_t *)m->u.data.data;
		b->len = b->cap = m->u.data.len;
		return 0;
	case PROTO_CREDIT:
		proto_put_u32(b, m->u.credit);
		return 0;
	case PROTO_KILL:
		proto_put_u32(b, m->u.signal);
		return 0;
	case PROTO_EXIT:
		proto_put_i32(b, m->u.code);
		return 0;
	case PROTO_ERROR:
		proto_put_str(b, m->u.message != NULL ? m->u.message : "");
		return 0;
	case PROTO_FS_WRITE:
		if (m->u.fs_write.path == NULL || strlen(m->u.fs_write.path) > PROTO_MAX_PATH)
			return sbx_error_set(err, 0, "fs path missing or longer than %u bytes", PROTO_MAX_PATH);
		proto_put_str(b, m->u.fs_write.path);
		proto_put_u32(b, m->u.fs_write.mode);
		proto_put_u32(b, m->u.fs_write.flags);
		return 0;
	case PROTO_FS_ERROR:
		proto_put_i32(b, m->u.fs_error.errnum);
		proto_put_str(b, m->u.fs_error.message != NULL ? m->u.fs_error.message : "");
		return 0;
	}
	return proto_fs_encode_body(b, m, err);
}

int proto_msg_encode(struct proto_wbuf *out, const struct proto_msg *m, sbx_error_t *err)
{
	struct proto_wbuf payload;
	proto_wbuf_init(&payload);
	int rc = encode_body(&payload, m, err);
	if (rc == 0)
		rc = proto_frame(out, m->stream, m->type, &payload, err);
	/* Data frames are most of the bytes: their payload is the caller's
	 * buffer, copied once, into the frame. */
	bool view = m->type == PROTO_STDIN || m->type == PROTO_STDOUT || m->type == PROTO_STDERR;
	if (!view)
		proto_wbuf_free(&payload);
	if (rc < 0)
		sbx_error_prefix(err, "encode %s", proto_type_name(m->type));
	return rc;
}
