/* terminal::open, terminal::resize, terminal::close: a terminal
 * (terminal.h) whose keys come from one engine channel and whose screen
 * goes to another, both made here with the stream port
 * (stream_backend.h): the caller gets the input's writer ref and the
 * output's reader ref, the adapter keeps the other ends.  The output
 * channel closes normally when the command exits, with an error frame
 * when the terminal broke. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/handlers.h"
#include "adapter/pause/sandbox_pause.h"
#include "adapter/request.h"
#include "adapter/sandbox/env.h"
#include "adapter/terminal/terminal.h"
#include "common/cleanup.h"
#include "common/cleanup_json.h"
#include "common/scodes.h"

/* The image's shell: bash when the image has it, else sh, interactive. */
static char *const default_argv[] = { "/bin/sh", "-c", "if [ -x /bin/bash ]; then exec /bin/bash -i; fi; exec /bin/sh -i",
				      NULL };
#define DEFAULT_TERM "TERM=xterm-256color"

struct chan_io {
	const struct sbx_stream_ops *ops;
	void *keys;   /* reader of the input channel */
	void *screen; /* writer of the output channel; NULL once closed */
};

static ssize_t chan_keys(void *ud, const uint8_t **data, sbx_error_t *err)
{
	struct chan_io *c = ud;
	return c->ops->reader_next(c->keys, data, err);
}

static int chan_screen(void *ud, const void *data, size_t len, sbx_error_t *err)
{
	struct chan_io *c = ud;
	return c->ops->writer_send(c->screen, data, len, err);
}

static void chan_ended(void *ud, int exit_code, const char *fail)
{
	struct chan_io *c = ud;
	(void)exit_code;
	c->ops->writer_close(c->screen, fail);
	c->screen = NULL;
}

/* The command is gone: a keys() blocked on a caller who types nothing
 * more returns, so the input pump ends now. */
static void chan_wake(void *ud)
{
	struct chan_io *c = ud;
	if (c->ops->reader_abort != NULL)
		c->ops->reader_abort(c->keys);
}

static void chan_release(void *ud)
{
	struct chan_io *c = ud;
	if (c->screen != NULL)
		c->ops->writer_close(c->screen, "terminal closed");
	if (c->keys != NULL)
		c->ops->reader_close(c->keys);
	free(c);
}

/* rows and cols: required, 1..SBX_TERMINAL_DIM_MAX. */
static int decode_size(json_t *req, uint16_t *rows, uint16_t *cols, sbx_error_t *err)
{
	uint32_t r = 0, c = 0;
	bool has_r, has_c;
	if (req_u32_opt(req, "rows", &has_r, &r, err) < 0 || req_u32_opt(req, "cols", &has_c, &c, err) < 0)
		return -1;
	if (!has_r || !has_c)
		return sbx_error_scode(err, SBX_SCODE_DECODE, "missing field `%s`", has_r ? "cols" : "rows");
	if (r < 1 || r > SBX_TERMINAL_DIM_MAX || c < 1 || c > SBX_TERMINAL_DIM_MAX)
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "rows and cols must be 1 to %u (got %u x %u)",
				       SBX_TERMINAL_DIM_MAX, r, c);
	*rows = (uint16_t)r;
	*cols = (uint16_t)c;
	return 0;
}

/* The sandbox's S001/S002/S004 before the stream port's S300; a paused
 * one is resumed first (auto_resume). */
static int check_sandbox(struct sbx_adapter *a, const char *id, sbx_error_t *err)
{
	char uuid[SBX_UUID_STRLEN + 1];
	if (req_sandbox_uuid(id, uuid, err) < 0)
		return -1;
	return sandbox_wake_check(a, uuid, err);
}

/* The caller's env with TERM added when it has none. */
static json_t *terminal_env(json_t *env_field, sbx_error_t *err)
{
	json_t *env = env_resolve(env_field, err);
	if (env == NULL)
		return NULL;
	size_t i;
	json_t *v;
	json_array_foreach(env, i, v) {
		if (strncmp(json_string_value(v), "TERM=", 5) == 0)
			return env;
	}
	if (json_array_insert_new(env, 0, json_string(DEFAULT_TERM)) < 0) {
		json_decref(env);
		return sbx_error_errno(err, ENOMEM, "env"), NULL;
	}
	return env;
}

/* Both channels: *io holds our ends, *input and *output the caller's. */
static int make_channels(struct sbx_adapter *a, struct chan_io *io, json_t **input, json_t **output, sbx_error_t *err)
{
	const struct sbx_stream_ops *ops = a->streams.ops;
	cleanup_json json_t *in_r = NULL;
	cleanup_json json_t *out_w = NULL;
	io->ops = ops;
	if (ops->create(a->streams.ctx, input, &in_r, err) < 0)
		return -1;
	if (ops->create(a->streams.ctx, &out_w, output, err) < 0)
		return -1;
	if ((io->keys = ops->reader_open(a->streams.ctx, in_r, -1, err)) == NULL)
		return -1;
	if ((io->screen = ops->writer_open(a->streams.ctx, out_w, err)) == NULL)
		return -1;
	return 0;
}

int sbx_op_terminal_open(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id;
	json_t *argv_field = NULL, *env_field = NULL;
	uint16_t rows, cols;
	if (req_object(req, &err) < 0 || req_string(req, "sandbox_id", true, &id, &err) < 0 ||
	    req_string_array(req, "argv", &argv_field, &err) < 0 || decode_size(req, &rows, &cols, &err) < 0 ||
	    env_decode(req, "env", &env_field, &err) < 0)
		return sbx_op_fail(&err, out);
	if (argv_field != NULL && json_array_size(argv_field) == 0) {
		sbx_error_scode(&err, SBX_S_INVALID_REQUEST, "argv is empty (leave it out for the image's shell)");
		return sbx_op_fail(&err, out);
	}
	if (check_sandbox(a, id, &err) < 0)
		return sbx_op_fail(&err, out);
	cleanup_json json_t *env = terminal_env(env_field, &err);
	if (env == NULL)
		return sbx_op_fail(&err, out);
	cleanup_free char **argv = argv_field != NULL ? req_strv_view(argv_field, "argv", &err) : NULL;
	cleanup_free char **envv = req_strv_view(env, "env", &err);
	if ((argv_field != NULL && argv == NULL) || envv == NULL)
		return sbx_op_fail(&err, out);
	if (a->streams.ops == NULL) {
		sbx_error_scode(&err, SBX_S_VM_BOOT, SBX_NO_VM_DETAIL);
		return sbx_op_fail(&err, out);
	}
	struct chan_io *io = calloc(1, sizeof(*io));
	if (io == NULL) {
		sbx_error_errno(&err, ENOMEM, "terminal");
		return sbx_op_fail(&err, out);
	}
	cleanup_json json_t *input = NULL;
	cleanup_json json_t *output = NULL;
	if (make_channels(a, io, &input, &output, &err) < 0) {
		chan_release(io);
		sbx_error_default_scode(&err, SBX_S_FS_CHANNEL);
		return sbx_op_fail(&err, out);
	}
	struct sbx_terminal_io tio = {
		.keys = chan_keys, .screen = chan_screen, .ended = chan_ended, .wake = chan_wake, .release = chan_release, .ud = io,
	};
	struct sbx_terminal_spec spec = { argv != NULL ? argv : default_argv, envv, rows, cols };
	char tid[SBX_UUID_STRLEN + 1];
	if (sbx_terminal_open(a, id, &spec, &tio, tid, &err) < 0) {
		chan_release(io);
		return sbx_op_fail(&err, out);
	}
	*out = json_pack("{s:s, s:O, s:O}", "terminal_id", tid, "input", input, "output", output);
	return 0;
}

int sbx_op_terminal_resize(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id, *tid;
	uint16_t rows, cols;
	if (req_object(req, &err) < 0 || req_string(req, "sandbox_id", true, &id, &err) < 0 ||
	    req_string(req, "terminal_id", true, &tid, &err) < 0 || decode_size(req, &rows, &cols, &err) < 0 ||
	    sbx_terminal_resize(a, id, tid, rows, cols, &err) < 0)
		return sbx_op_fail(&err, out);
	*out = json_pack("{s:b}", "resized", true);
	return 0;
}

int sbx_op_terminal_close(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id, *tid;
	if (req_object(req, &err) < 0 || req_string(req, "sandbox_id", true, &id, &err) < 0 ||
	    req_string(req, "terminal_id", true, &tid, &err) < 0 || sbx_terminal_close(a, id, tid, &err) < 0)
		return sbx_op_fail(&err, out);
	*out = json_pack("{s:b}", "closed", true);
	return 0;
}
