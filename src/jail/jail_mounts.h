/* The root of a jail: a tmpfs holding only what the jailed program opens
 * by path, at the same paths as on the host (so its command line needs no
 * change): read-only binds of directories (/usr) and files, read-write
 * binds of the files it writes, the host's symlinks (/lib -> usr/lib),
 * and a private /dev of device nodes.  Built as a list of steps in the
 * daemon (jail_mounts_build), played in the jailed child
 * (jail_mounts_apply, async-signal-safe), which then pivots into it. */
#ifndef SBX_JAIL_MOUNTS_H
#define SBX_JAIL_MOUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/error.h"

enum jail_step_kind { JAIL_MKDIR, JAIL_BIND_RO, JAIL_BIND_RW, JAIL_SYMLINK, JAIL_MKNOD, JAIL_PROC };

struct jail_step {
	enum jail_step_kind kind;
	char *path;   /* in the jail, absolute ("/usr") */
	char *target; /* under the root mount point, what the child touches */
	char *source; /* bind: the host path; symlink: its contents */
	bool dir;     /* bind: of a directory */
	bool exec;    /* bind of a file: the program itself, executable */
	unsigned major, minor;
	mode_t mode;  /* mknod */
	bool owned;   /* mknod: owned by the jail's uid */
};

struct jail_mounts {
	char *root; /* the mount point of the tmpfs (an empty host directory) */
	struct jail_step *steps;
	size_t n, cap;
	uid_t uid;
	gid_t gid;
};

struct jail_device {
	const char *name; /* under /dev */
	unsigned major, minor;
	mode_t mode;
	bool owned;
};

struct jail_mount_request {
	const char *const *ro_dirs; /* bound when they exist; a symlink stays a symlink */
	size_t n_ro_dirs;
	const char *const *ro_files; /* skipped when inside a bound directory */
	size_t n_ro_files;
	const char *const *rw_files;
	size_t n_rw_files;
	const char *exe; /* the program, when outside the bound directories (NULL: inside) */
	bool proc;       /* a /proc of its own PID namespace */
	const struct jail_device *devices;
	size_t n_devices;
	uid_t uid;
	gid_t gid;
};

int jail_mounts_build(struct jail_mounts *m, const char *root, const struct jail_mount_request *r,
		      sbx_error_t *err);
/* In a child that unshared its mount namespace: mounts the tmpfs on the
 * root, plays the steps, makes the root read-only and pivots into it.
 * Returns -1 with errno, and *failed naming the path it failed on. */
int jail_mounts_apply(const struct jail_mounts *m, const char **failed);
void jail_mounts_free(struct jail_mounts *m);

#endif
