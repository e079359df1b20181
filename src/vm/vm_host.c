/* Host files of a VM (vm_internal.h): QEMU and the boot disk found on
 * the host, the VM's own directory with its scratch disk, logs and built
 * image, and a caller's data disk. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/path.h"
#include "common/scodes.h"
#include "common/state_dir.h"
#include "common/tool_path.h"
#include "vm/disk.h"
#include "vm/exe_dir.h"
#include "vm/vm_internal.h"

#define BOOT_DISK_FIX "build the boot_disk target (ninja -C build) or set SANDBOX_BOOT_DISK"

char *vm_find_qemu(sbx_error_t *err)
{
	const char *env = getenv("SANDBOX_QEMU");
	if (env != NULL && env[0] != '\0') {
		if (env[0] == '/' && access(env, X_OK) == 0)
			return strdup(env);
		sbx_error_scode(err, SBX_S_VM_BOOT, "SANDBOX_QEMU=%s is not an executable absolute path", env);
		return NULL;
	}
	cleanup_error sbx_error_t why = NULL;
	char *p = sbx_tool_find("qemu-system-x86_64", &why);
	if (p == NULL)
		sbx_error_scode(err, SBX_S_VM_BOOT, "%s (scripts/setup), or set SANDBOX_QEMU", sbx_error_msg(why));
	return p;
}

/* The boot disk: where it was installed, or in the build tree
 * (vm/exe_dir.h). */
char *vm_find_boot_disk(const char *explicit_path, sbx_error_t *err)
{
	const char *p = explicit_path != NULL ? explicit_path : getenv("SANDBOX_BOOT_DISK");
	if (p != NULL && p[0] != '\0') {
		/* Absolute: a jailed QEMU finds it at the same path in its root. */
		char *abs = access(p, R_OK) == 0 ? realpath(p, NULL) : NULL;
		if (abs != NULL)
			return abs;
		sbx_error_scode(err, SBX_S_VM_BOOT, "boot disk %s: %s; %s", p, strerror(errno), BOOT_DISK_FIX);
		return NULL;
	}
	static const char *const names[] = { "src/guest/boot.erofs", NULL };
	char *found = vm_find_part("boot.erofs", names, R_OK);
	if (found != NULL)
		return found;
	sbx_error_scode(err, SBX_S_VM_BOOT, "boot disk boot.erofs not found (installed: %s/sandbox-libkrun/ under the prefix; build tree: src/guest/); %s",
			SBX_LIBEXECDIR, BOOT_DISK_FIX);
	return NULL;
}

static char *make_vm_dir(sbx_error_t *err)
{
	cleanup_free char *vms = sbx_state_subdir("vms", err);
	if (vms == NULL)
		return NULL;
	static atomic_uint counter;
	uint32_t rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (uint32_t)time(NULL);
	char *dir = NULL;
	if (asprintf(&dir, "%s/%ld-%u-%08x", vms, (long)getpid(), atomic_fetch_add(&counter, 1), rnd) < 0) {
		sbx_error_errno(err, ENOMEM, "vm directory");
		return NULL;
	}
	if (mkdir(dir, 0700) < 0) {
		sbx_error_errno(err, errno, "mkdir %s", dir);
		free(dir);
		return NULL;
	}
	return dir;
}

void vm_free_files(struct sbx_vm *vm)
{
	for (size_t i = 0; i < sizeof(vm->files) / sizeof(vm->files[0]); i++) {
		free(vm->files[i]);
		vm->files[i] = NULL;
	}
	free(vm->dir);
	vm->dir = NULL;
}

/* Before the keeper owns them: remove what start created so far. */
void vm_remove_files(struct sbx_vm *vm)
{
	for (size_t i = 0; i < sizeof(vm->files) / sizeof(vm->files[0]); i++) {
		if (vm->files[i] != NULL)
			unlink(vm->files[i]);
	}
	if (vm->dir != NULL)
		rmdir(vm->dir);
}

int vm_make_files(struct sbx_vm *vm, sbx_error_t *err)
{
	if ((vm->dir = make_vm_dir(err)) == NULL)
		return -1;
	/* A data disk and a console log of the caller's are never in the list
	 * the keeper removes. */
	if (vm->data_disk == NULL && (vm->files[F_SCRATCH] = sbx_path_join(vm->dir, "scratch.ext4")) == NULL)
		return sbx_error_errno(err, ENOMEM, "vm paths");
	if (vm->console_log == NULL && (vm->files[F_CONSOLE] = sbx_path_join(vm->dir, "console.log")) == NULL)
		return sbx_error_errno(err, ENOMEM, "vm paths");
	vm->files[F_QEMU_LOG] = sbx_path_join(vm->dir, "qemu.log");
	if (vm->files[F_QEMU_LOG] == NULL)
		return sbx_error_errno(err, ENOMEM, "vm paths");
	return 0;
}

const char *vm_upper_disk(const struct sbx_vm *vm)
{
	return vm->data_disk != NULL ? vm->data_disk : vm->files[F_SCRATCH];
}

int vm_open_data_disk(struct sbx_vm *vm, const char *path, sbx_error_t *err)
{
	/* Absolute: a jailed QEMU finds it at the same path in its root. */
	if ((vm->data_disk = realpath(path, NULL)) == NULL)
		return sbx_error_scode(err, SBX_S_VM_BOOT, "data disk %s: %s", path, strerror(errno));
	vm->data_lock = open(vm->data_disk, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (vm->data_lock < 0 || fstat(vm->data_lock, &st) < 0)
		return sbx_error_scode(err, SBX_S_VM_BOOT, "data disk %s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode) || st.st_size <= 0)
		return sbx_error_scode(err, SBX_S_VM_BOOT, "data disk %s is not a non-empty regular file", path);
	/* Two VMs on one ext4 file would corrupt it. */
	if (flock(vm->data_lock, LOCK_EX | LOCK_NB) < 0)
		return sbx_error_scode(err, SBX_S_VM_BOOT, "data disk %s: %s", path,
				       errno == EWOULDBLOCK ? "in use by another VM" : strerror(errno));
	vm->scratch_bytes = (uint64_t)st.st_size;
	return 0;
}

int vm_prepare(struct sbx_vm *vm, const struct sbx_vm_options *opt, char **image, sbx_error_t *err)
{
	if (vm_make_files(vm, err) < 0)
		return -1;
	struct stat st;
	if (opt->image == NULL || stat(opt->image, &st) < 0)
		return sbx_error_scode(err, SBX_S_VM_BOOT, "image %s: %s", opt->image ? opt->image : "(none)",
				       opt->image ? strerror(errno) : "no image given");
	if (S_ISDIR(st.st_mode)) {
		if ((vm->files[F_IMAGE] = sbx_path_join(vm->dir, "image.erofs")) == NULL)
			return sbx_error_errno(err, ENOMEM, "vm paths");
		if (disk_erofs_from_dir(opt->image, vm->files[F_IMAGE], err) < 0)
			return -1;
		*image = strdup(vm->files[F_IMAGE]);
	} else if (S_ISREG(st.st_mode)) {
		/* Absolute: a jailed QEMU finds it at the same path in its root. */
		if ((*image = realpath(opt->image, NULL)) == NULL)
			return sbx_error_scode(err, SBX_S_VM_BOOT, "image %s: %s", opt->image, strerror(errno));
	} else {
		return sbx_error_scode(err, SBX_S_VM_BOOT, "image %s is neither a file nor a directory", opt->image);
	}
	if (*image == NULL)
		return sbx_error_errno(err, ENOMEM, "vm paths");
	return 0;
}

pid_t sbx_vm_pid(struct sbx_vm *vm)
{
	return vm->keeper.qemu_pid;
}

const char *sbx_vm_console_log(struct sbx_vm *vm)
{
	return vm->console_log != NULL ? vm->console_log : vm->files[F_CONSOLE];
}

const char *sbx_vm_template(struct sbx_vm *vm)
{
	return vm->restored || vm->t.saved ? vm->snap_key : NULL;
}
