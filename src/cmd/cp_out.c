/* `cp ID:/path DST` (cp_out.h): the guest's tree written on the host under
 * a pinned destination directory.  The entries of fs::stat and fs::ls and
 * the bytes of cp_out come from the guest: each name must be one path
 * component, each mode and size is checked before use, and no host path
 * is ever opened by name past the destination the operator gave. */
#include "cmd/cp_out.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapter/fs/octal.h"
#include "common/cleanup.h"
#include "common/path.h"

struct cp_out {
	const struct cli_opts *o;
	const char *ref;
	mode_t umask;
	uint64_t max_bytes;
	uint64_t declared; /* charged so far: sizes, and CP_ENTRY_BYTES an entry */
};

/* One path component: not empty, ".", "..", nor holding a '/'. */
static bool name_ok(const char *name)
{
	return name != NULL && name[0] != '\0' && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
	       strchr(name, '/') == NULL;
}

/* The guest's mode as the host keeps it: permission bits only (never
 * setuid, setgid nor sticky), masked by the umask. */
static int entry_mode(const struct cp_out *c, json_t *entry, const char *guest, mode_t *mode)
{
	const char *m = json_string_value(json_object_get(entry, "mode"));
	unsigned v;
	cleanup_error sbx_error_t err = NULL;
	if (m == NULL)
		return cli_fail(c->o, "%s: the sandbox gave no mode", guest);
	if (octal_mode_parse(m, &v, &err) < 0)
		return cli_fail(c->o, "%s: %s", guest, sbx_error_msg(err));
	*mode = (mode_t)v & 0777 & ~c->umask;
	return 0;
}

static int entry_size(const struct cp_out *c, json_t *entry, const char *guest, uint64_t *size)
{
	json_t *s = json_object_get(entry, "size");
	if (!json_is_integer(s) || json_integer_value(s) < 0)
		return cli_fail(c->o, "%s: the sandbox gave no size", guest);
	*size = (uint64_t)json_integer_value(s);
	return 0;
}

/* Creating `name` failed: why, and what cp never does. */
static int create_failed(const struct cp_out *c, const char *host)
{
	int e = errno;
	return cli_fail(c->o, "%s: %s%s", host, strerror(e),
			e == EEXIST ? " (refused: cp out creates every entry new, it never replaces nor follows one)"
				    : "");
}

/* A file's bytes, never past what the guest declared. */
struct file_sink {
	const struct cp_out *c;
	const char *host;
	int fd;
	uint64_t left;
	bool over;
};

static int to_file(void *ud, int stream, const void *data, size_t len)
{
	struct file_sink *s = ud;
	(void)stream;
	if (len > s->left) {
		s->over = true;
		return -1;
	}
	s->left -= len;
	const uint8_t *p = data;
	while (len > 0) {
		ssize_t n = write(s->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return cli_fail(s->c->o, "%s: write: %s", s->host, strerror(errno));
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The file this copy created and could not finish: emptied through its
 * descriptor, then its name removed if it still names that file. */
static void discard(const struct cp_out *c, int dir, const char *name, int fd, const char *host)
{
	struct stat mine, now;
	if (ftruncate(fd, 0) < 0)
		cli_fail(c->o, "%s: truncate: %s", host, strerror(errno));
	if (fstat(fd, &mine) < 0 || fstatat(dir, name, &now, AT_SYMLINK_NOFOLLOW) < 0 || mine.st_dev != now.st_dev ||
	    mine.st_ino != now.st_ino) {
		cli_fail(c->o, "%s: not removed (no longer the file this copy created)", host);
		return;
	}
	if (unlinkat(dir, name, 0) < 0)
		cli_fail(c->o, "%s: remove: %s", host, strerror(errno));
}

/* Takes `size` bytes and one entry's block from the bound, or refuses:
 * checked before the entry is made. */
static int charge(struct cp_out *c, const char *guest, uint64_t size)
{
	uint64_t left = c->max_bytes - c->declared;
	if (left < CP_ENTRY_BYTES || size > left - CP_ENTRY_BYTES)
		return cli_fail(c->o,
				"%s: its %llu bytes would take the copy past --max-bytes %llu (%llu before it, each "
				"entry counting %u besides its bytes): not copied (raise --max-bytes to copy it)",
				guest, (unsigned long long)size, (unsigned long long)c->max_bytes,
				(unsigned long long)c->declared, CP_ENTRY_BYTES);
	c->declared += size + CP_ENTRY_BYTES;
	return 0;
}

static int get_file(struct cp_out *c, int dir, const char *name, const char *guest, json_t *entry, const char *host)
{
	mode_t mode = 0;
	uint64_t size = 0;
	if (entry_mode(c, entry, guest, &mode) != 0 || entry_size(c, entry, guest, &size) != 0 ||
	    charge(c, guest, size) != 0)
		return CLI_EXIT_FAILED;
	cleanup_close int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return create_failed(c, host);
	struct file_sink s = { c, host, fd, size, false };
	struct cli_conn conn;
	json_t *res = NULL;
	int rc = cli_open(c->o, json_pack("{s:s, s:s, s:s}", "op", "cp_out", "sandbox", c->ref, "path", guest), &conn);
	if (rc == 0) {
		rc = cli_answer(&conn, to_file, &s, &res);
		cli_close(&conn);
	}
	json_decref(res);
	if (s.over)
		rc = cli_fail(c->o, "%s: the sandbox sent more than the %llu bytes it declared: refused", guest,
			      (unsigned long long)size);
	if (rc == 0 && fchmod(fd, mode) < 0)
		rc = cli_fail(c->o, "%s: chmod: %s", host, strerror(errno));
	if (rc != 0)
		discard(c, dir, name, fd, host);
	return rc;
}

static int get_entry(struct cp_out *c, int dir, const char *name, const char *guest, json_t *entry,
		     const char *host);

/* A directory: made new, 0700 while it fills, then the guest's mode. */
static int get_dir(struct cp_out *c, int dir, const char *name, const char *guest, json_t *entry, const char *host)
{
	mode_t mode = 0;
	if (entry_mode(c, entry, guest, &mode) != 0 || charge(c, guest, 0) != 0)
		return CLI_EXIT_FAILED;
	if (mkdirat(dir, name, 0700) < 0)
		return create_failed(c, host);
	cleanup_close int sub = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0)
		return cli_fail(c->o, "%s: %s", host, strerror(errno));
	json_t *res;
	int rc = cli_call(c->o, json_pack("{s:s, s:s, s:s}", "op", "ls", "sandbox", c->ref, "path", guest), &res);
	json_t *entries = json_object_get(res, "entries");
	if (rc == 0 && !json_is_array(entries))
		rc = cli_fail(c->o, "%s: the sandbox's listing has no entries", guest);
	size_t i;
	json_t *e;
	json_array_foreach(entries, i, e) {
		if (rc != 0)
			break;
		json_t *n = json_object_get(e, "name");
		const char *en = json_string_value(n);
		if (!name_ok(en) || strlen(en) != json_string_length(n)) {
			rc = cli_fail(c->o, "%s: the sandbox lists an entry named '%.255s': refused (a name is one "
					    "path component)",
				      guest, en != NULL ? en : "");
			break;
		}
		cleanup_free char *g = sbx_path_join(guest, en);
		cleanup_free char *h = sbx_path_join(host, en);
		rc = g != NULL && h != NULL ? get_entry(c, sub, en, g, e, h) : cli_fail(c->o, "out of memory");
	}
	json_decref(res);
	if (rc == 0 && fchmod(sub, mode | (0700 & ~c->umask)) < 0)
		rc = cli_fail(c->o, "%s: chmod: %s", host, strerror(errno));
	return rc;
}

static int get_entry(struct cp_out *c, int dir, const char *name, const char *guest, json_t *entry,
		     const char *host)
{
	/* A guest path never is longer; the bound also bounds the depth. */
	if (strlen(guest) >= PATH_MAX)
		return cli_fail(c->o, "%.64s...: a path longer than %d bytes: refused", guest, PATH_MAX - 1);
	if (json_is_true(json_object_get(entry, "is_symlink"))) {
		fprintf(stderr, "sandbox-libkrun cp: %s: skipped (a symbolic link)\n", guest);
		return 0;
	}
	if (json_is_true(json_object_get(entry, "is_dir")))
		return get_dir(c, dir, name, guest, entry, host);
	return get_file(c, dir, name, guest, entry, host);
}

int cp_out(const struct cli_opts *o, const char *ref, const char *guest, json_t *entry, const char *dst,
	   uint64_t max_bytes)
{
	struct cp_out c = { .o = o, .ref = ref, .max_bytes = max_bytes };
	c.umask = umask(0);
	umask(c.umask);
	/* The destination the operator named is taken as given (links and
	 * all); below it, nothing is. */
	cleanup_close int pin = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cleanup_free char *name = NULL;
	cleanup_free char *host = NULL;
	if (pin >= 0) {
		name = sbx_path_last(guest);
		if (name != NULL && !name_ok(name))
			return cli_fail(o, "%s: has no name to copy into %s: name a new destination", guest, dst);
		if (name != NULL && asprintf(&host, "%s%s%s", dst, dst[strlen(dst) - 1] == '/' ? "" : "/", name) < 0)
			host = NULL;
	} else if ((errno == ENOENT || errno == ENOTDIR) && dst[strlen(dst) - 1] != '/') {
		cleanup_free char *parent = strdup(dst);
		char *slash = parent != NULL ? strrchr(parent, '/') : NULL;
		if (slash != NULL)
			*slash = '\0';
		const char *pdir = parent == NULL ? NULL : slash == NULL ? "." : slash == parent ? "/" : parent;
		pin = pdir != NULL ? open(pdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
		if (pdir != NULL && pin < 0)
			return cli_fail(o, "%s: %s", pdir, strerror(errno));
		name = strdup(slash != NULL ? slash + 1 : dst);
		host = strdup(dst);
	} else {
		return cli_fail(o, "%s: %s", dst, strerror(errno));
	}
	if (name == NULL || host == NULL)
		return cli_fail(o, "out of memory");
	return get_entry(&c, pin, name, guest, entry, host);
}
