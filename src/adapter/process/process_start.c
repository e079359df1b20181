#include "adapter/process/process_start.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/process/process_pump.h"
#include "adapter/process/process_table.h"
#include "adapter/request.h"
#include "common/base64.h"
#include "common/cleanup.h"
#include "common/scodes.h"

/* stdin's bytes (NULL for none: EOF from the start), checked after
 * admission as exec's are. */
static int decode_stdin(const char *b64, uint8_t **in, size_t *len, sbx_error_t *err)
{
	*in = NULL;
	*len = 0;
	if (b64 == NULL || b64[0] == '\0')
		return 0;
	sbx_error_t berr = NULL;
	*in = sbx_base64_decode(b64, strlen(b64), len, &berr);
	if (*in == NULL) {
		sbx_error_scode(err, SBX_S_INVALID_REQUEST, "stdin base64 decode: %s", sbx_error_msg(berr));
		sbx_error_free(&berr);
		return -1;
	}
	return 0;
}

/* Starts it in the held sandbox and hands it to a pump; *p is the new
 * process with the caller's reference. */
static int start(struct sbx_adapter *a, struct sbx_sandbox *sb, const struct sandbox_exec_args *x, uint8_t *in,
		 size_t in_len, struct bg_proc **out, sbx_error_t *err)
{
	const struct sbx_backend_ops *ops = a->backend.ops;
	if (ops == NULL || ops->proc_start == NULL || sb->vm == NULL)
		return sbx_error_scode(err, SBX_S_VM_BOOT, SBX_NO_VM_DETAIL);
	/* A relative workdir resolves against / as exec's does. */
	cleanup_free char *cwd = NULL;
	if (x->workdir != NULL && x->workdir[0] != '\0' &&
	    asprintf(&cwd, "%s%s", x->workdir[0] == '/' ? "" : "/", x->workdir) < 0) {
		cwd = NULL;
		return sbx_error_errno(err, ENOMEM, "exec workdir");
	}
	cleanup_free char **argv = req_strv_view(x->argv, "argv", err);
	cleanup_free char **env = argv != NULL ? req_strv_view(x->env, "env", err) : NULL;
	if (env == NULL)
		return -1;
	struct bg_proc *p = bg_proc_new(x->argv, a->cfg->background_log_bytes, &a->mem, err);
	if (p == NULL)
		return -1;
	struct sbx_proc_request req = { .argv = argv, .env = env, .cwd = cwd, .with_stdin = in != NULL };
	void *h = ops->proc_start(sb->vm, &req, &p->pid, err);
	if (h == NULL) {
		bg_proc_unref(p);
		return -1;
	}
	p->ops = ops;
	p->handle = h;
	if (process_pump_start(a, sb, p, in, in_len, process_table_kept_alive(a->procs, sb->id), err) < 0) {
		ops->proc_free(h);
		bg_proc_unref(p);
		return -1;
	}
	*out = p;
	return 0;
}

json_t *process_exec_background(struct sbx_adapter *a, const char *id, const struct sandbox_exec_args *x,
				sbx_error_t *err)
{
	struct sbx_sandbox *sb = sbx_registry_fs_begin(a->reg, id, err);
	if (sb == NULL)
		return NULL;
	uint32_t cap = a->cfg->max_background_per_sandbox;
	if (process_table_reserve(a->procs, id, cap, err) < 0) {
		sbx_registry_fs_end(a->reg, sb);
		return NULL;
	}
	uint8_t *in = NULL;
	size_t in_len = 0;
	struct bg_proc *p = NULL;
	if (decode_stdin(x->stdin_b64, &in, &in_len, err) < 0 || start(a, sb, x, in, in_len, &p, err) < 0) {
		/* The pump did not take them. */
		free(in);
		process_table_unreserve(a->procs, id);
		/* Asked while the hold keeps the VM from being detached. */
		bool dead = sandbox_vm_dead(a, sb);
		sbx_registry_fs_end(a->reg, sb);
		if (dead)
			sandbox_remove_dead(a, id);
		return NULL;
	}
	process_table_add(a->procs, id, p, cap);
	json_t *j = json_pack("{s:s, s:I}", "process_id", p->id, "pid", (json_int_t)p->pid);
	if (j == NULL)
		sbx_error_errno(err, ENOMEM, "exec reply");
	bg_proc_unref(p);
	return j;
}
