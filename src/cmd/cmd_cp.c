/* `sandbox-libkrun cp`: files and directories between the host and a
 * sandbox, through the control socket's cp_in/cp_out (the fs path, with
 * fs::write's and fs::read's checks), streamed in frames. */
#include "cmd/cmd_cp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/control_client.h"
#include "common/cleanup.h"
#include "common/path.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: sandbox-libkrun cp [--socket PATH] SRC DST\n\n"
		     "Copies between the host and a sandbox; exactly one side is ID:/path (an id, a\n"
		     "unique id prefix or a name, then an absolute guest path):\n"
		     "  cp FILE ID:/path     cp DIR ID:/path      (into /path when it is a directory)\n"
		     "  cp ID:/path FILE     cp ID:/path DIR\n"
		     "Directories go whole; modes are kept; symbolic links and special files are\n"
		     "skipped with a warning.  Each file is written atomically in the guest.\n\n"
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

static const char *base(const char *path)
{
	const char *b = strrchr(path, '/');
	return b != NULL && b[1] != '\0' ? b + 1 : path;
}

/* fs::stat in the guest: 0 with *entry; `quiet` for a destination, whose
 * absence is no error to show. */
static int guest_stat(const struct cli_opts *o, const char *ref, const char *path, json_t **entry, bool quiet)
{
	struct cli_opts q = *o;
	q.quiet = quiet;
	return cli_call(&q, json_pack("{s:s, s:s, s:s}", "op", "stat", "sandbox", ref, "path", path), entry);
}

static int upload(const struct cli_opts *o, const char *ref, const char *host, const char *guest, mode_t mode)
{
	cleanup_close int fd = open(host, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "sandbox-libkrun cp: %s: %s\n", host, strerror(errno));
		return CLI_EXIT_FAILED;
	}
	char m[8];
	snprintf(m, sizeof(m), "%04o", (unsigned)(mode & 07777));
	struct cli_conn c;
	int rc = cli_open(o, json_pack("{s:s, s:s, s:s, s:s}", "op", "cp_in", "sandbox", ref, "path", guest, "mode", m),
			  &c);
	if (rc != 0)
		return rc;
	cleanup_free uint8_t *buf = malloc(CONTROL_FRAME_MAX);
	sbx_error_t err = NULL;
	ssize_t n = buf != NULL ? 0 : -1;
	while (buf != NULL && (n = read(fd, buf, CONTROL_FRAME_MAX)) > 0) {
		if (control_send_frame(c.fd, buf, (size_t)n, &err) < 0)
			break;
	}
	if (n < 0) {
		fprintf(stderr, "sandbox-libkrun cp: %s: %s\n", host, buf == NULL ? "out of memory" : strerror(errno));
		cli_close(&c);
		return CLI_EXIT_FAILED;
	}
	/* A send the daemon cut short: its answer says why. */
	if (err == NULL)
		control_send_end(c.fd, &err);
	sbx_error_free(&err);
	json_t *res;
	rc = cli_answer(&c, NULL, NULL, &res);
	cli_close(&c);
	json_decref(res);
	return rc;
}

static int to_fd(void *ud, int stream, const void *data, size_t len)
{
	const uint8_t *p = data;
	while (len > 0) {
		ssize_t n = write(*(int *)ud, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "sandbox-libkrun cp: write: %s\n", strerror(errno));
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int download(const struct cli_opts *o, const char *ref, const char *guest, const char *host, mode_t mode)
{
	cleanup_close int fd = open(host, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode & 07777);
	if (fd < 0) {
		fprintf(stderr, "sandbox-libkrun cp: %s: %s\n", host, strerror(errno));
		return CLI_EXIT_FAILED;
	}
	struct cli_conn c;
	int rc = cli_open(o, json_pack("{s:s, s:s, s:s}", "op", "cp_out", "sandbox", ref, "path", guest), &c);
	json_t *res = NULL;
	if (rc == 0) {
		rc = cli_answer(&c, to_fd, &fd, &res);
		cli_close(&c);
	}
	json_decref(res);
	if (rc == 0 && fchmod(fd, mode & 07777) < 0) {
		fprintf(stderr, "sandbox-libkrun cp: %s: %s\n", host, strerror(errno));
		rc = CLI_EXIT_FAILED;
	}
	if (rc != 0)
		unlink(host);
	return rc;
}

static int guest_mkdir(const struct cli_opts *o, const char *ref, const char *path, mode_t mode)
{
	char m[8];
	snprintf(m, sizeof(m), "%04o", (unsigned)(mode & 07777));
	json_t *res;
	int rc = cli_call(o, json_pack("{s:s, s:s, s:s, s:s}", "op", "mkdir", "sandbox", ref, "path", path, "mode", m),
			  &res);
	json_decref(res);
	return rc;
}

static int put_tree(const struct cli_opts *o, const char *ref, const char *host, const char *guest)
{
	struct stat st;
	if (lstat(host, &st) < 0) {
		fprintf(stderr, "sandbox-libkrun cp: %s: %s\n", host, strerror(errno));
		return CLI_EXIT_FAILED;
	}
	if (S_ISREG(st.st_mode))
		return upload(o, ref, host, guest, st.st_mode);
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "sandbox-libkrun cp: %s: skipped (not a file nor a directory)\n", host);
		return 0;
	}
	int rc = guest_mkdir(o, ref, guest, st.st_mode);
	cleanup_dir DIR *d = rc == 0 ? opendir(host) : NULL;
	if (rc == 0 && d == NULL) {
		fprintf(stderr, "sandbox-libkrun cp: %s: %s\n", host, strerror(errno));
		return CLI_EXIT_FAILED;
	}
	struct dirent *e;
	while (rc == 0 && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		cleanup_free char *h = sbx_path_join(host, e->d_name);
		cleanup_free char *g = sbx_path_join(guest, e->d_name);
		rc = h != NULL && g != NULL ? put_tree(o, ref, h, g) : CLI_EXIT_FAILED;
	}
	return rc;
}

static mode_t entry_mode(json_t *entry)
{
	const char *m = json_string_value(json_object_get(entry, "mode"));
	return m != NULL ? (mode_t)strtoul(m, NULL, 8) : 0644;
}

static int get_tree(const struct cli_opts *o, const char *ref, const char *guest, json_t *entry, const char *host)
{
	if (json_is_true(json_object_get(entry, "is_symlink"))) {
		fprintf(stderr, "sandbox-libkrun cp: %s: skipped (a symbolic link)\n", guest);
		return 0;
	}
	if (!json_is_true(json_object_get(entry, "is_dir")))
		return download(o, ref, guest, host, entry_mode(entry));
	if (mkdir(host, entry_mode(entry) | 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "sandbox-libkrun cp: %s: %s\n", host, strerror(errno));
		return CLI_EXIT_FAILED;
	}
	json_t *res;
	int rc = cli_call(o, json_pack("{s:s, s:s, s:s}", "op", "ls", "sandbox", ref, "path", guest), &res);
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(res, "entries"), i, e) {
		if (rc != 0)
			break;
		const char *name = json_string_value(json_object_get(e, "name"));
		if (name == NULL || strchr(name, '/') != NULL || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			continue;
		cleanup_free char *g = sbx_path_join(guest, name);
		cleanup_free char *h = sbx_path_join(host, name);
		rc = g != NULL && h != NULL ? get_tree(o, ref, g, e, h) : CLI_EXIT_FAILED;
	}
	json_decref(res);
	return rc;
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
	cleanup_free char *target = into ? sbx_path_join(dst->path, base(src->path)) : strdup(dst->path);
	if (target == NULL)
		return CLI_EXIT_FAILED;
	return put_tree(o, dst->ref, src->path, target);
}

static int copy_out(const struct cli_opts *o, const struct side *src, const struct side *dst)
{
	json_t *entry;
	int rc = guest_stat(o, src->ref, src->path, &entry, false);
	if (rc != 0)
		return rc;
	struct stat st;
	bool into = stat(dst->path, &st) == 0 && S_ISDIR(st.st_mode);
	cleanup_free char *target = into ? sbx_path_join(dst->path, base(src->path)) : strdup(dst->path);
	rc = target != NULL ? get_tree(o, src->ref, src->path, entry, target) : CLI_EXIT_FAILED;
	json_decref(entry);
	return rc;
}

int sbx_cmd_cp(int argc, char **argv)
{
	struct cli_opts o;
	int rc = cli_parse_common(&argc, argv, false, &o);
	if (rc != 0)
		return rc;
	if (o.help) {
		usage(stdout);
		return 0;
	}
	if (argc < 3)
		return cli_usage_error(&o, "missing SRC or DST");
	if (argc > 3)
		return cli_usage_error(&o, "unexpected argument '%s'", argv[3]);
	struct side src, dst;
	split(argv[1], &src);
	split(argv[2], &dst);
	if ((src.ref == NULL) == (dst.ref == NULL))
		return cli_usage_error(&o, "exactly one of SRC and DST must be ID:/path");
	const struct side *g = src.ref != NULL ? &src : &dst;
	if (g->path[0] != '/')
		return cli_usage_error(&o, "the sandbox path must be absolute, not '%s'", g->path);
	return src.ref != NULL ? copy_out(&o, &src, &dst) : copy_in(&o, &src, &dst);
}
