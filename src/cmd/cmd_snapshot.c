/* `sandbox-libkrun snapshot ls` and `snapshot rm ID...`: the daemon's
 * snapshot::list and snapshot::delete (issue 39) through the control
 * socket; rm takes a full id or a unique prefix of one, as ls shows. */
#include "cmd/cmd_snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/control_client.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: sandbox-libkrun snapshot ls [--json] [--socket PATH]\n"
		     "       sandbox-libkrun snapshot rm [--socket PATH] ID...\n\n"
		     "ls lists the snapshots of sandboxes the daemon keeps (sandbox-libkrun::snapshot).\n"
		     "Columns: ID (first 12 characters; any unique prefix names a snapshot), NAME,\n"
		     "IMAGE, SANDBOX (the sandbox it was taken of), SIZE (MiB on disk), CREATED, USED\n"
		     "(live sandboxes created from it), RESTORABLE (no: this build cannot run it).\n"
		     "rm deletes snapshots (an id or a unique id prefix each); prints each id once\n"
		     "deleted.  Sandboxes created from one run on.\n\n"
		     "  --json          ls: the daemon's answer, {\"snapshots\": [...]}, full ids\n"
		     "  --socket PATH   the daemon's control socket (default $SANDBOX_CONTROL_SOCKET,\n"
		     "                  else " CONTROL_SOCKET_DEFAULT ")\n\n"
		     "exit status: 0, 1 when the daemon failed the request (rm: one of them; the\n"
		     "others are still tried), 2 on bad usage, 125 when the daemon cannot be reached\n"
		     "or refuses us.\n");
}

static const char *str(json_t *r, const char *key)
{
	const char *s = json_string_value(json_object_get(r, key));
	return s != NULL ? s : "-";
}

static void print_table(json_t *res)
{
	printf("%-12s  %-16s  %-10s  %-12s  %8s  %-20s  %4s  %s\n", "ID", "NAME", "IMAGE", "SANDBOX", "SIZE",
	       "CREATED", "USED", "RESTORABLE");
	size_t i;
	json_t *r;
	json_array_foreach(json_object_get(res, "snapshots"), i, r) {
		char size[32];
		snprintf(size, sizeof(size), "%.1f",
			 (double)json_integer_value(json_object_get(r, "size_bytes")) / (1024.0 * 1024.0));
		printf("%-12.12s  %-16.16s  %-10.10s  %-12.12s  %8s  %-20s  %4lld  %s\n", str(r, "snapshot_id"),
		       str(r, "name"), str(r, "image"), str(r, "sandbox_id"), size, str(r, "created_at"),
		       (long long)json_integer_value(json_object_get(r, "sandboxes_using")),
		       json_is_true(json_object_get(r, "restorable")) ? "yes" : "no");
	}
}

/* The one snapshot `ref` names: itself when it is a whole id, else the
 * only one whose id starts with it. */
static int resolve(const struct cli_opts *o, json_t *list, const char *ref, const char **id)
{
	size_t i, hits = 0;
	json_t *r;
	*id = NULL;
	json_array_foreach(json_object_get(list, "snapshots"), i, r) {
		const char *sid = str(r, "snapshot_id");
		if (strcmp(sid, ref) == 0) {
			*id = sid;
			return 0;
		}
		if (ref[0] != '\0' && strncmp(sid, ref, strlen(ref)) == 0) {
			*id = sid;
			hits++;
		}
	}
	if (hits == 1)
		return 0;
	return cli_fail(o, hits == 0 ? "no snapshot '%s'" : "'%s' names more than one snapshot: give more of its id",
			ref);
}

static int remove_all(const struct cli_opts *o, int argc, char **argv)
{
	json_t *list;
	int rc = cli_call(o, json_pack("{s:s}", "op", "snapshots"), &list);
	if (rc != 0)
		return rc;
	int status = 0;
	for (int i = 2; i < argc; i++) {
		const char *id;
		json_t *res;
		if (resolve(o, list, argv[i], &id) != 0) {
			status = CLI_EXIT_FAILED;
			continue;
		}
		rc = cli_call(o, json_pack("{s:s, s:s}", "op", "snapshot_rm", "snapshot", id), &res);
		if (rc == CLI_EXIT_DAEMON) {
			json_decref(list);
			return rc;
		}
		if (rc != 0) {
			status = rc;
			continue;
		}
		printf("%s\n", id);
		json_decref(res);
	}
	json_decref(list);
	return fflush(stdout) == 0 ? status : CLI_EXIT_FAILED;
}

int sbx_cmd_snapshot(int argc, char **argv)
{
	struct cli_opts o;
	int rc = cli_begin(&argc, argv, true, usage, &o);
	if (rc >= 0)
		return rc;
	if (argc < 2)
		return cli_usage_error(&o, "missing the subcommand: ls or rm");
	if (strcmp(argv[1], "ls") == 0) {
		if (argc > 2)
			return cli_usage_error(&o, "ls takes no argument");
		return cli_show_answer(&o, json_pack("{s:s}", "op", "snapshots"), print_table);
	}
	if (strcmp(argv[1], "rm") == 0) {
		if (argc < 3)
			return cli_usage_error(&o, "missing the snapshot id");
		return remove_all(&o, argc, argv);
	}
	return cli_usage_error(&o, "unknown subcommand '%s': ls or rm", argv[1]);
}
