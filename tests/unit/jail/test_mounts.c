/* The root of a jail as a list of steps (jail/jail_mounts.h), built from a
 * small tree: bound directories, a symlink kept a symlink, files inside a
 * bound directory not bound again, parents made once, devices last. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "harness.h"
#include "jail/jail_mounts.h"

static char base[64];
static char p_usr[128], p_lib[128], p_qemu[128], p_kernel[128], p_scratch[128], p_missing[128], p_exe[128];

static void make_tree(void)
{
	strcpy(base, "/tmp/sbx-jail-mounts.XXXXXX");
	if (mkdtemp(base) == NULL)
		abort();
	snprintf(p_usr, sizeof(p_usr), "%s/usr", base);
	snprintf(p_lib, sizeof(p_lib), "%s/lib", base);
	snprintf(p_qemu, sizeof(p_qemu), "%s/usr/qemu", base);
	snprintf(p_kernel, sizeof(p_kernel), "%s/k/vmlinux", base);
	snprintf(p_scratch, sizeof(p_scratch), "%s/vms/1-0-a/scratch.ext4", base);
	snprintf(p_missing, sizeof(p_missing), "%s/lib64", base);
	snprintf(p_exe, sizeof(p_exe), "%s/k/helper", base);
	char d[160];
	mkdir(p_usr, 0755);
	snprintf(d, sizeof(d), "%s/k", base);
	mkdir(d, 0755);
	snprintf(d, sizeof(d), "%s/vms", base);
	mkdir(d, 0755);
	snprintf(d, sizeof(d), "%s/vms/1-0-a", base);
	mkdir(d, 0755);
	if (symlink("usr/lib", p_lib) < 0)
		abort();
	const char *files[] = { p_qemu, p_kernel, p_scratch, p_exe };
	for (int i = 0; i < 4; i++)
		close(open(files[i], O_WRONLY | O_CREAT, 0644));
}

static void remove_tree(void)
{
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0)
		fprintf(stderr, "# could not remove %s\n", base);
}

static const struct jail_step *find(const struct jail_mounts *m, const char *path)
{
	for (size_t i = 0; i < m->n; i++) {
		if (strcmp(m->steps[i].path, path) == 0)
			return &m->steps[i];
	}
	return NULL;
}

static size_t index_of(const struct jail_mounts *m, const struct jail_step *s)
{
	return (size_t)(s - m->steps);
}

TEST(mount_list)
{
	make_tree();
	const char *dirs[] = { p_usr, p_lib, p_missing };
	const char *ro[] = { p_qemu, p_kernel };
	const char *rw[] = { p_scratch };
	struct jail_device dev[] = { { "null", 1, 3, 0666, false }, { "kvm", 10, 232, 0600, true } };
	struct jail_mount_request r = { .ro_dirs = dirs, .n_ro_dirs = 3, .ro_files = ro, .n_ro_files = 2,
					.rw_files = rw, .n_rw_files = 1, .exe = p_exe, .proc = true, .devices = dev, .n_devices = 2,
					.uid = 900001, .gid = 900001 };
	struct jail_mounts m;
	sbx_error_t err = NULL;
	int rc = jail_mounts_build(&m, "/jr", &r, &err);
	CHECK_INT(rc, 0);
	const struct jail_step *usr = find(&m, p_usr), *lib = find(&m, p_lib);
	CHECK(usr != NULL && usr->kind == JAIL_BIND_RO && usr->dir);
	CHECK_STR(usr->source, p_usr);
	char target[200];
	snprintf(target, sizeof(target), "/jr%s", p_usr);
	CHECK_STR(usr->target, target);
	CHECK(lib != NULL && lib->kind == JAIL_SYMLINK);
	CHECK_STR(lib->source, "usr/lib");
	CHECK(find(&m, p_missing) == NULL); /* absent on the host: nothing */
	CHECK(find(&m, p_qemu) == NULL);    /* inside the bound usr */
	const struct jail_step *k = find(&m, p_kernel), *s = find(&m, p_scratch);
	CHECK(k != NULL && k->kind == JAIL_BIND_RO && !k->dir && !k->exec);
	CHECK(s != NULL && s->kind == JAIL_BIND_RW && !s->dir && !s->exec);
	/* The program outside the bound directories: read-only, the one file
	 * bound executable. */
	const struct jail_step *exe = find(&m, p_exe);
	CHECK(exe != NULL && exe->kind == JAIL_BIND_RO && !exe->dir && exe->exec);
	const struct jail_step *proc = find(&m, "/proc");
	CHECK(proc != NULL && proc->kind == JAIL_PROC);
	/* Every directory above a file is made once, before it. */
	char vms[160];
	snprintf(vms, sizeof(vms), "%s/vms/1-0-a", base);
	const struct jail_step *vd = find(&m, vms), *tmp = find(&m, "/tmp");
	CHECK(vd != NULL && vd->kind == JAIL_MKDIR && index_of(&m, vd) < index_of(&m, s));
	CHECK(tmp != NULL && tmp->kind == JAIL_MKDIR && index_of(&m, tmp) == 0);
	size_t tmps = 0;
	for (size_t i = 0; i < m.n; i++)
		tmps += strcmp(m.steps[i].path, "/tmp") == 0;
	CHECK_INT(tmps, 1);
	const struct jail_step *devdir = find(&m, "/dev"), *kvm = find(&m, "/dev/kvm"), *null = find(&m, "/dev/null");
	CHECK(devdir != NULL && devdir->kind == JAIL_MKDIR);
	CHECK(null != NULL && null->kind == JAIL_MKNOD && null->major == 1 && null->minor == 3 && !null->owned);
	CHECK(kvm != NULL && kvm->kind == JAIL_MKNOD && kvm->mode == 0600 && kvm->owned);
	CHECK_INT(m.uid, 900001);
	jail_mounts_free(&m);
	remove_tree();
}

TEST(mount_list_refuses)
{
	make_tree();
	struct jail_mounts m;
	sbx_error_t err = NULL;
	const char *dotdot[] = { "/usr/../etc/shadow" };
	struct jail_mount_request r = { .ro_files = dotdot, .n_ro_files = 1 };
	CHECK_INT(jail_mounts_build(&m, "/jr", &r, &err), -1);
	CHECK_INT(err->errnum, EINVAL);
	sbx_error_free(&err);
	/* A file the jail writes may not sit in a read-only directory. */
	const char *dirs[] = { p_usr };
	const char *rw[] = { p_qemu };
	struct jail_mount_request r2 = { .ro_dirs = dirs, .n_ro_dirs = 1, .rw_files = rw, .n_rw_files = 1 };
	CHECK_INT(jail_mounts_build(&m, "/jr", &r2, &err), -1);
	sbx_error_free(&err);
	const char *gone[] = { "/nonexistent/disk" };
	struct jail_mount_request r3 = { .ro_files = gone, .n_ro_files = 1 };
	CHECK_INT(jail_mounts_build(&m, "/jr", &r3, &err), -1);
	CHECK_INT(err->errnum, ENOENT);
	sbx_error_free(&err);
	remove_tree();
}
