/* `sandbox-libkrun cp`: files and directories between the host and a
 * sandbox, through the control socket's cp_in/cp_out (the fs path, with
 * fs::write's and fs::read's checks), streamed in frames. */
#include "cmd/cmd_cp.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/control_client.h"
#include "cmd/cp_in.h"
#include "cmd/cp_out.h"
#include "common/cleanup.h"
#include "common/path.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: sandbox-libkrun cp [--max-bytes SIZE] [--socket PATH] SRC DST\n\n"
		     "Copies between the host and a sandbox; exactly one side is ID:/path (an id, a\n"
		     "unique id prefix or a name, then an absolute guest path):\n"
		     "  cp FILE ID:/path     cp DIR ID:/path      (into /path when it is a directory)\n"
		     "  cp ID:/path FILE     cp ID:/path DIR\n"
		     "Directories go whole; modes are kept; symbolic links and special files are\n"
		     "skipped with a warning.  Each file is written atomically in the guest.  Out of\n"
		     "a sandbox, every host file and directory is created new (an existing one, a\n"
		     "symbolic link too, is refused: never replaced nor followed), modes lose the\n"
		     "setuid, setgid and sticky bits and are masked by the umask, and a file gets no\n"
		     "byte past the size the sandbox declared for it.\n\n"
		     "  --max-bytes SIZE  out of a sandbox: the most its files may hold in all, each\n"
		     "                    file or directory counting 4K besides its bytes; N or N\n"
		     "                    with K, M, G or T (powers of 1024; default 1G)\n"
		     "  --socket PATH   the daemon's control socket (default $SANDBOX_CONTROL_SOCKET,\n"
		     "                  else " CONTROL_SOCKET_DEFAULT ")\n\n"
		     "exit status: 0, 1 when a copy failed, 2 on bad usage, 125 when the daemon\n"
		     "cannot be reached or refuses us.\n");
}

struct side {
	const char *ref; /* NULL: the host */
	char *path;
};

/* "REF:/path" names a sandbox: a colon before any slash. */
static void split(char *arg, struct side *s)
{
	char *colon = strchr(arg, ':');
	char *slash = strchr(arg, '/');
	if (colon != NULL && colon != arg && (slash == NULL || colon < slash)) {
		*colon = '\0';
		s->ref = arg;
		s->path = colon + 1;
	} else {
		s->ref = NULL;
		s->path = arg;
	}
}

/* fs::stat in the guest: 0 with *entry; `quiet` for a destination, whose
 * absence is no error to show. */
static int guest_stat(const struct cli_opts *o, const char *ref, const char *path, json_t **entry, bool quiet)
{
	struct cli_opts q = *o;
	q.quiet = quiet;
	return cli_call(&q, json_pack("{s:s, s:s, s:s}", "op", "stat", "sandbox", ref, "path", path), entry);
}

static int copy_in(const struct cli_opts *o, const struct side *src, const struct side *dst)
{
	json_t *entry = NULL;
	int rc = guest_stat(o, dst->ref, dst->path, &entry, true);
	if (rc == CLI_EXIT_DAEMON)
		return rc;
	bool into = (rc == 0 && json_is_true(json_object_get(entry, "is_dir"))) ||
		    dst->path[strlen(dst->path) - 1] == '/';
	json_decref(entry);
	cleanup_free char *name = into ? sbx_path_last(src->path) : NULL;
	cleanup_free char *target = !into ? strdup(dst->path) : name != NULL ? sbx_path_join(dst->path, name) : NULL;
	if (target == NULL)
		return cli_fail(o, "out of memory");
	return cp_in(o, dst->ref, src->path, target);
}

static int copy_out(const struct cli_opts *o, const struct side *src, const struct side *dst, uint64_t max_bytes)
{
	json_t *entry;
	int rc = guest_stat(o, src->ref, src->path, &entry, false);
	if (rc != 0)
		return rc;
	rc = cp_out(o, src->ref, src->path, entry, dst->path, max_bytes);
	json_decref(entry);
	return rc;
}

/* --max-bytes: N, or N with K, M, G or T (powers of 1024); at least 1. */
static int parse_bytes(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0 || s[0] < '0' || s[0] > '9' || v == 0)
		return -1;
	static const char units[] = "KMGT";
	const char *u = *end != '\0' ? strchr(units, *end) : NULL;
	if (u != NULL) {
		for (const char *k = units; k <= u; k++) {
			if (v > UINT64_MAX / 1024)
				return -1;
			v *= 1024;
		}
		end++;
	}
	if (*end != '\0')
		return -1;
	*out = v;
	return 0;
}

int sbx_cmd_cp(int argc, char **argv)
{
	struct cli_opts o;
	int rc = cli_begin(&argc, argv, false, usage, &o);
	if (rc >= 0)
		return rc;
	uint64_t max_bytes = CP_MAX_BYTES_DEFAULT;
	char *args[2];
	int n = 0;
	bool rest = false; /* after "--": paths only */
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		if (!rest && strcmp(argv[i], "--") == 0) {
			rest = true;
			continue;
		} else if (!rest && strcmp(argv[i], "--max-bytes") == 0) {
			if (i + 1 >= argc)
				return cli_usage_error(&o, "--max-bytes needs a size");
			v = argv[++i];
		} else if (!rest && strncmp(argv[i], "--max-bytes=", 12) == 0) {
			v = argv[i] + 12;
		} else if (n == 2) {
			return cli_usage_error(&o, "unexpected argument '%s'", argv[i]);
		} else {
			args[n++] = argv[i];
			continue;
		}
		if (parse_bytes(v, &max_bytes) < 0)
			return cli_usage_error(&o, "--max-bytes takes a size (N, or N with K, M, G or T), not '%s'", v);
	}
	if (n < 2)
		return cli_usage_error(&o, "missing SRC or DST");
	if (args[0][0] == '\0' || args[1][0] == '\0')
		return cli_usage_error(&o, "an empty path");
	struct side src, dst;
	split(args[0], &src);
	split(args[1], &dst);
	if ((src.ref == NULL) == (dst.ref == NULL))
		return cli_usage_error(&o, "exactly one of SRC and DST must be ID:/path");
	const struct side *g = src.ref != NULL ? &src : &dst;
	if (g->path[0] != '/')
		return cli_usage_error(&o, "the sandbox path must be absolute, not '%s'", g->path);
	return src.ref != NULL ? copy_out(&o, &src, &dst, max_bytes) : copy_in(&o, &src, &dst);
}
