/* What the control socket's ops share: the operator's rows (with QEMU's
 * pid and RSS), a sandbox reference resolved, errors as final lines. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "adapter/process/process_table.h"
#include "adapter/scode.h"
#include "adapter/terminal/terminal.h"
#include "common/cleanup.h"
#include "common/cleanup_json.h"
#include "common/scodes.h"
#include "common/uuid.h"
#include "control/control_ops.h"

/* Under the registry's lock: only copies what the backend knows. */
static void add_facts(void *vm, json_t *row, void *ud)
{
	const struct sbx_backend *be = ud;
	struct sbx_vm_facts f = { .pid = -1, .console_log = NULL, .boot = NULL };
	be->ops->facts(vm, &f);
	if (f.pid > 0)
		json_object_set_new(row, "pid", json_integer(f.pid));
	if (f.console_log != NULL)
		json_object_set_new(row, "console_log", json_string(f.console_log));
	if (f.boot != NULL && f.boot[0] != '\0')
		json_object_set_new(row, "boot", json_string(f.boot));
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

static void add_rss(json_t *row)
{
	json_t *pid = json_object_get(row, "pid");
	long long kib = pid != NULL ? rss_kib(json_integer_value(pid)) : -1;
	json_object_set_new(row, "rss_kib", kib >= 0 ? json_integer(kib) : json_null());
}

/* Its background processes and open terminals, as lists (NULL when out of
 * memory). */
static json_t *process_rows(const struct control_ctx *c, const char *id)
{
	return c->a->procs != NULL ? process_table_rows(c->a->procs, id) : json_array();
}

static json_t *terminal_rows(const struct control_ctx *c, const char *id)
{
	return c->a->terminals != NULL ? sbx_terminal_rows(c->a->terminals, id) : json_array();
}

/* processes: {running, exited}, terminals: N. */
static void add_activity(const struct control_ctx *c, json_t *row)
{
	const char *id = json_string_value(json_object_get(row, "sandbox_id"));
	if (id == NULL)
		return;
	cleanup_json json_t *procs = process_rows(c, id);
	cleanup_json json_t *terms = terminal_rows(c, id);
	json_int_t running = 0, exited = 0;
	size_t i;
	json_t *p;
	json_array_foreach(procs, i, p) {
		if (strcmp(json_string_value(json_object_get(p, "state")) ?: "", "running") == 0)
			running++;
		else
			exited++;
	}
	json_object_set_new(row, "processes", json_pack("{s:I, s:I}", "running", running, "exited", exited));
	json_object_set_new(row, "terminals", json_integer((json_int_t)json_array_size(terms)));
}

/* One row's facts beyond the registry's, each its own step: a new
 * per-sandbox field is one more call here. */
json_t *control_rows(const struct control_ctx *c)
{
	const struct sbx_backend *be = &c->a->backend;
	bool facts = be->ops != NULL && be->ops->facts != NULL;
	json_t *rows = sbx_registry_rows(c->a->reg, facts ? add_facts : NULL, (void *)be);
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r) {
		add_rss(r);
		add_activity(c, r);
	}
	return rows;
}

json_t *control_activity(const struct control_ctx *c, const char id[SBX_UUID_STRLEN + 1])
{
	json_t *procs = process_rows(c, id);
	json_t *terms = terminal_rows(c, id);
	if (procs == NULL || terms == NULL) {
		json_decref(procs);
		json_decref(terms);
		return NULL;
	}
	return json_pack("{s:s, s:o, s:o}", "sandbox_id", id, "processes", procs, "terminals", terms);
}

/* How many candidates an ambiguous reference's refusal lists. */
#define RESOLVE_LIST_MAX 8

/* The rows `ref` designates at one rank: 0 the full id, 1 an id prefix,
 * 2 the name; a new array (empty: none at that rank). */
static json_t *matches(json_t *rows, const char *ref, const char *canon, int rank)
{
	json_t *hits = json_array();
	size_t len = strlen(ref), i;
	json_t *r;
	json_array_foreach(rows, i, r) {
		const char *sid = json_string_value(json_object_get(r, "sandbox_id"));
		const char *name = json_string_value(json_object_get(r, "name"));
		bool hit = rank == 0   ? canon[0] != '\0' && sid != NULL && strcmp(sid, canon) == 0
			   : rank == 1 ? sid != NULL && strncasecmp(sid, ref, len) == 0
				       : name != NULL && strcmp(name, ref) == 0;
		if (hit && hits != NULL && json_array_append(hits, r) < 0)
			json_decref(hits), hits = NULL;
	}
	return hits;
}

/* S002 naming the candidates (at most RESOLVE_LIST_MAX of them). */
static int ambiguous(json_t *hits, const char *ref, int rank, sbx_error_t *err)
{
	char list[RESOLVE_LIST_MAX * (SBX_UUID_STRLEN + 2) + 32] = "";
	size_t used = 0, i;
	json_t *r;
	json_array_foreach(hits, i, r) {
		if (i == RESOLVE_LIST_MAX) {
			snprintf(list + used, sizeof(list) - used, ", ...");
			break;
		}
		int n = snprintf(list + used, sizeof(list) - used, "%s%s", i > 0 ? ", " : "",
				 json_string_value(json_object_get(r, "sandbox_id")));
		if (n > 0)
			used += (size_t)n;
	}
	return sbx_error_scode(err, SBX_S_NOT_FOUND, "`%.64s` is %s %zu sandboxes (%s): give %s", ref,
			       rank == 1 ? "the id prefix of" : "the name of", json_array_size(hits), list,
			       rank == 1 ? "more of the id" : "the id");
}

int control_resolve(const struct control_ctx *c, const char *ref, char id[SBX_UUID_STRLEN + 1], sbx_error_t *err)
{
	if (ref[0] == '\0')
		return sbx_error_scode(err, SBX_S_NOT_FOUND, "an empty sandbox reference designates no sandbox");
	cleanup_json json_t *rows = sbx_registry_rows(c->a->reg, NULL, NULL);
	if (rows == NULL)
		return sbx_error_errno(err, ENOMEM, "sandbox rows");
	/* An id in any form a call accepts; a prefix only of the canonical one. */
	char canon[SBX_UUID_STRLEN + 1] = "";
	if (!sbx_uuid_parse(ref, canon))
		canon[0] = '\0';
	/* Ids win: a name is looked at only when no id or prefix matches, so
	 * no name can take a reference meant for an id. */
	for (int rank = 0; rank < 3; rank++) {
		cleanup_json json_t *hits = matches(rows, ref, canon, rank);
		if (hits == NULL)
			return sbx_error_errno(err, ENOMEM, "sandbox rows");
		if (json_array_size(hits) > 1)
			return ambiguous(hits, ref, rank, err);
		if (json_array_size(hits) == 1) {
			snprintf(id, SBX_UUID_STRLEN + 1, "%s",
				 json_string_value(json_object_get(json_array_get(hits, 0), "sandbox_id")));
			return 0;
		}
	}
	return sbx_error_scode(err, SBX_S_NOT_FOUND, "no sandbox with id, id prefix or name `%.64s`", ref);
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
