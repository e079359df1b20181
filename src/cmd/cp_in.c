/* `cp SRC ID:/path` (cp_in.h): the host tree walked with descriptors.  A
 * local user who owns part of the source may swap a file or directory for
 * a link at any moment: each entry is pinned (O_PATH|O_NOFOLLOW) before
 * it is looked at, and only that descriptor is read, so what is sent is
 * what was looked at. */
#include "cmd/cp_in.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/path.h"

static int upload(const struct cli_opts *o, const char *ref, int fd, const char *host, const char *guest, mode_t mode)
{
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
		cli_close(&c);
		sbx_error_free(&err);
		return cli_fail(o, "%s: %s", host, buf == NULL ? "out of memory" : strerror(errno));
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

static int put_entry(const struct cli_opts *o, const char *ref, int dir, const char *name, const char *host,
		     const char *guest);

/* The directory `fd` (opened for reading, taken): made in the guest, then
 * each of its entries. */
static int put_dir(const struct cli_opts *o, const char *ref, int fd, const char *host, const char *guest,
		   mode_t mode)
{
	cleanup_close int owned = fd;
	cleanup_dir DIR *d = fdopendir(owned);
	if (d == NULL)
		return cli_fail(o, "%s: %s", host, strerror(errno));
	owned = -1; /* the DIR's now */
	int rc = guest_mkdir(o, ref, guest, mode);
	while (rc == 0) {
		errno = 0;
		struct dirent *e = readdir(d);
		if (e == NULL) {
			if (errno != 0)
				rc = cli_fail(o, "%s: %s", host, strerror(errno));
			break;
		}
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		cleanup_free char *h = sbx_path_join(host, e->d_name);
		cleanup_free char *g = sbx_path_join(guest, e->d_name);
		rc = h != NULL && g != NULL ? put_entry(o, ref, dirfd(d), e->d_name, h, g) : cli_fail(o, "out of memory");
	}
	return rc;
}

/* `name` under the directory `dir` (or AT_FDCWD): pinned without following
 * a link, looked at, then read through a descriptor reopened from the pin
 * (the very inode looked at: never a link's target, never a device). */
static int put_entry(const struct cli_opts *o, const char *ref, int dir, const char *name, const char *host,
		     const char *guest)
{
	cleanup_close int pin = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (pin < 0 || fstat(pin, &st) < 0)
		return cli_fail(o, "%s: %s", host, strerror(errno));
	if (S_ISLNK(st.st_mode)) {
		fprintf(stderr, "sandbox-libkrun cp: %s: skipped (a symbolic link)\n", host);
		return 0;
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "sandbox-libkrun cp: %s: skipped (not a file nor a directory)\n", host);
		return 0;
	}
	cleanup_close int fd = -1;
	if (S_ISDIR(st.st_mode)) {
		fd = openat(pin, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	} else {
		char self[64];
		snprintf(self, sizeof(self), "/proc/self/fd/%d", pin);
		fd = open(self, O_RDONLY | O_NOCTTY | O_CLOEXEC);
	}
	if (fd < 0)
		return cli_fail(o, "%s: %s", host, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return put_dir(o, ref, sbx_steal_fd(fd), host, guest, st.st_mode);
	return upload(o, ref, fd, host, guest, st.st_mode);
}

int cp_in(const struct cli_opts *o, const char *ref, const char *src, const char *guest)
{
	return put_entry(o, ref, AT_FDCWD, src, src, guest);
}
