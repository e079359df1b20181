/* Applies CONFIG inside the VM (see boot_config.h). */
#include "guest/boot_config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "guest/boot_net.h"
#include "guest/clock_rng.h"
#include "guest/spawn.h"

int boot_apply_config(const struct proto_config *c, sbx_error_t *err)
{
	if (c->hostname[0] != '\0' && sethostname(c->hostname, strlen(c->hostname)) < 0)
		return sbx_error_errno(err, errno, "sethostname");
	if (c->nofile != 0) {
		struct rlimit rl = { (rlim_t)c->nofile, (rlim_t)c->nofile };
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			return sbx_error_errno(err, errno, "setrlimit NOFILE %llu", (unsigned long long)c->nofile);
	}
	if (guest_set_clock(c->realtime_ns, err) < 0)
		return -1;
	if (boot_net_configure(c, err) < 0)
		return -1;
	return guest_seed_rng(c->entropy, c->entropy_len, err);
}

/* Reads a whole text file of at most USER_MAX_FILE bytes; an absent file
 * gives *buf NULL.  The image controls the file: its size is checked as
 * read, not taken from stat. */
static int read_small(const char *path, char **buf, size_t *len, sbx_error_t *err)
{
	*buf = NULL;
	*len = 0;
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return 0;
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return sbx_error_errno(err, errno, "open %s", path);
	if (!S_ISREG(st.st_mode))
		return sbx_error_set(err, EINVAL, "%s is not a regular file", path);
	cleanup_free char *b = NULL;
	size_t cap = 0, n = 0;
	for (;;) {
		if (n == cap) {
			if (cap == USER_MAX_FILE)
				return sbx_error_set(err, EFBIG, "%s is larger than %u bytes", path, USER_MAX_FILE);
			size_t ncap = cap == 0 ? 8192 : cap * 2 > USER_MAX_FILE ? USER_MAX_FILE : cap * 2;
			char *nb = realloc(b, ncap);
			if (nb == NULL)
				return sbx_error_errno(err, ENOMEM, "read %s", path);
			b = nb;
			cap = ncap;
		}
		ssize_t got = read(fd, b + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return sbx_error_errno(err, errno, "read %s", path);
		if (got == 0)
			break;
		n += (size_t)got;
	}
	*buf = sbx_steal_ptr(b);
	*len = n;
	return 0;
}

/* The image's default user (CONFIG's "") as resolved before HELLO. */
static struct guest_user default_user;
static bool default_known;

void boot_resolve_default_user(void)
{
	cleanup_free char *passwd = NULL, *group = NULL;
	size_t plen, glen;
	sbx_error_t err = NULL;
	if (read_small("/etc/passwd", &passwd, &plen, &err) == 0 && read_small("/etc/group", &group, &glen, &err) == 0 &&
	    user_resolve("", passwd, plen, group, glen, &default_user, &err) == 0)
		default_known = true;
	sbx_error_free(&err);
}

static int copy_user(const struct guest_user *from, struct guest_user *to, sbx_error_t *err)
{
	*to = (struct guest_user){ .uid = from->uid, .gid = from->gid, .ngroups = from->ngroups };
	to->home = strdup(from->home);
	to->groups = from->ngroups > 0 ? calloc(from->ngroups, sizeof(gid_t)) : NULL;
	if (to->home == NULL || (from->ngroups > 0 && to->groups == NULL)) {
		guest_user_free(to);
		return sbx_error_errno(err, ENOMEM, "user");
	}
	if (from->ngroups > 0)
		memcpy(to->groups, from->groups, from->ngroups * sizeof(gid_t));
	return 0;
}

/* Shares are mounted at CONFIG, and one may cover /etc: then the files
 * are read again. */
static int resolve(const char *spec, bool shares, struct guest_user *u, sbx_error_t *err)
{
	if (spec[0] == '\0' && default_known && !shares)
		return copy_user(&default_user, u, err);
	cleanup_free char *passwd = NULL, *group = NULL;
	size_t plen, glen;
	if (read_small("/etc/passwd", &passwd, &plen, err) < 0 || read_small("/etc/group", &group, &glen, err) < 0)
		return sbx_error_prefix(err, "user \"%s\"", spec);
	return user_resolve(spec, passwd, plen, group, glen, u, err);
}

int boot_resolve_user(const struct proto_config *c, struct guest_user *u, char ***env, sbx_error_t *err)
{
	const char *spec = c->user != NULL ? c->user : "";
	if (resolve(spec, c->n_shares > 0, u, err) < 0)
		return -1;
	cleanup_free char *home = NULL;
	if (asprintf(&home, "HOME=%s", u->home) < 0) {
		guest_user_free(u);
		return sbx_error_errno(err, ENOMEM, "HOME");
	}
	char *base[] = { home, NULL };
	*env = spawn_merge_env(base, c->env, err);
	if (*env == NULL) {
		guest_user_free(u);
		return -1;
	}
	return 0;
}
