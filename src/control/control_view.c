/* What the control socket's ops share: the operator's rows (with QEMU's
 * pid and RSS), a sandbox reference resolved, errors as final lines. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/scode.h"
#include "common/cleanup.h"
#include "common/scodes.h"
#include "control/control_ops.h"

/* Under the registry's lock: only copies what the backend knows. */
static void add_facts(void *vm, json_t *row, void *ud)
{
	const struct sbx_backend *be = ud;
	struct sbx_vm_facts f = { .pid = -1, .console_log = NULL };
	be->ops->facts(vm, &f);
	if (f.pid > 0)
		json_object_set_new(row, "pid", json_integer(f.pid));
	if (f.console_log != NULL)
		json_object_set_new(row, "console_log", json_string(f.console_log));
}

/* VmRSS of /proc/PID/status in KiB, -1 when it cannot be read. */
static long long rss_kib(json_int_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%lld/status", (long long)pid);
	cleanup_file FILE *f = fopen(path, "re");
	if (f == NULL)
		return -1;
	char line[256];
	long long kib = -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "VmRSS: %lld kB", &kib) == 1)
			break;
	}
	return kib;
}

json_t *control_rows(const struct control_ctx *c)
{
	const struct sbx_backend *be = &c->a->backend;
	bool facts = be->ops != NULL && be->ops->facts != NULL;
	json_t *rows = sbx_registry_rows(c->a->reg, facts ? add_facts : NULL, (void *)be);
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r) {
		json_t *pid = json_object_get(r, "pid");
		long long kib = pid != NULL ? rss_kib(json_integer_value(pid)) : -1;
		json_object_set_new(r, "rss_kib", kib >= 0 ? json_integer(kib) : json_null());
	}
	return rows;
}

int control_resolve(const struct control_ctx *c, const char *ref, char id[SBX_UUID_STRLEN + 1], sbx_error_t *err)
{
	json_t *rows = sbx_registry_rows(c->a->reg, NULL, NULL);
	if (rows == NULL)
		return sbx_error_errno(err, ENOMEM, "sandbox rows");
	const char *hit = NULL;
	unsigned prefixed = 0;
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r) {
		const char *sid = json_string_value(json_object_get(r, "sandbox_id"));
		const char *name = json_string_value(json_object_get(r, "name"));
		if (strcmp(sid, ref) == 0 || (name != NULL && strcmp(name, ref) == 0)) {
			hit = sid;
			prefixed = 1;
			break;
		}
		if (strncmp(sid, ref, strlen(ref)) == 0) {
			hit = sid;
			prefixed++;
		}
	}
	int rc = 0;
	if (prefixed == 1)
		snprintf(id, SBX_UUID_STRLEN + 1, "%s", hit);
	else if (prefixed == 0)
		rc = sbx_error_scode(err, SBX_S_NOT_FOUND, "no sandbox with id, id prefix or name `%.64s`", ref);
	else
		rc = sbx_error_scode(err, SBX_S_NOT_FOUND, "`%.64s` is the prefix of %u sandbox ids: give more of it",
				     ref, prefixed);
	json_decref(rows);
	return rc;
}

int control_send_body_error(int fd, const json_t *body, sbx_error_t *err)
{
	json_t *e = control_error_from_body(body);
	if (e == NULL)
		return sbx_error_errno(err, ENOMEM, "control error");
	int rc = control_send_error(fd, json_string_value(json_object_get(e, "code")),
				    json_string_value(json_object_get(e, "message")), err);
	json_decref(e);
	return rc;
}

int control_send_err(int fd, sbx_error_t err_in, sbx_error_t *err)
{
	return control_send_error(fd, err_in != NULL && err_in->scode[0] != '\0' ? err_in->scode : "error",
				  sbx_error_msg(err_in), err);
}
