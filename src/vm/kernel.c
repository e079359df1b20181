#include "vm/kernel.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/scodes.h"
#include "common/state_dir.h"
#include "vm/file_hash.h"
#include "vm/pvh_elf.h"

#define KRUNFW_FIX                                                                                      \
	"install libkrunfw5, or run fetch-libkrunfw as root (installed: " SBX_LIBEXECDIR "/sandbox-libkrun/ under " \
	"the prefix; source tree: scripts/), or set SANDBOX_KRUNFW / krunfw_path"
#define KERNEL_MAX_SIZE (256u << 20)

typedef char *(*krunfw_get_kernel_fn)(size_t *load, size_t *entry, size_t *size);

static const char *pick_library(const char *krunfw_path)
{
	if (krunfw_path != NULL && krunfw_path[0] != '\0')
		return krunfw_path;
	const char *env = getenv("SANDBOX_KRUNFW");
	if (env != NULL && env[0] != '\0')
		return env;
	if (access(SBX_KRUNFW_DEFAULT, R_OK) == 0)
		return SBX_KRUNFW_DEFAULT;
	return "/usr/lib/x86_64-linux-gnu/libkrunfw.so.5";
}

/* SHA-256 of the library file (vm/file_hash.h: read once per version of
 * the file on this machine, not once per process). */
static int hash_library(const char *path, char hex[FILE_HASH_HEX + 1], sbx_error_t *err)
{
	if (access(path, R_OK) < 0)
		return sbx_error_scode(err, SBX_S_VM_BOOT, "guest kernel library %s: %s; %s", path, strerror(errno),
				       KRUNFW_FIX);
	if (file_hash(path, hex, err) < 0) {
		sbx_error_default_scode(err, SBX_S_VM_BOOT);
		return -1;
	}
	return 0;
}

static int write_wrapper(const char *tmp, const uint8_t *image, size_t size, size_t load, sbx_error_t *err)
{
	cleanup_close int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return sbx_error_errno(err, errno, "create %s", tmp);
	if (pvh_elf_write(fd, image, size, load, err) < 0) {
		sbx_error_default_scode(err, SBX_S_VM_BOOT);
		return -1;
	}
	if (fsync(fd) < 0)
		return sbx_error_errno(err, errno, "fsync %s", tmp);
	return 0;
}

/* Loads the library and writes the wrapper to `tmp`. */
static int build_wrapper(const char *lib, const char *tmp, sbx_error_t *err)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL)
		return sbx_error_scode(err, SBX_S_VM_BOOT, "cannot load the guest kernel library %s: %s; %s", lib,
				       dlerror(), KRUNFW_FIX);
	krunfw_get_kernel_fn get = (krunfw_get_kernel_fn)dlsym(h, "krunfw_get_kernel");
	size_t load = 0, entry = 0, size = 0;
	const uint8_t *image = get != NULL ? (const uint8_t *)get(&load, &entry, &size) : NULL;
	int rc;
	if (image == NULL || size == 0 || size > KERNEL_MAX_SIZE || load == 0)
		rc = sbx_error_scode(err, SBX_S_VM_BOOT, "%s does not provide a usable kernel (krunfw_get_kernel); %s",
				     lib, KRUNFW_FIX);
	else
		rc = write_wrapper(tmp, image, size, load, err);
	dlclose(h);
	return rc;
}

static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;
static char *memo_lib, *memo_elf;

char *sbx_kernel_elf(const char *krunfw_path, sbx_error_t *err)
{
	const char *lib = pick_library(krunfw_path);
	pthread_mutex_lock(&memo_lock);
	char *res = NULL;
	if (memo_lib != NULL && strcmp(memo_lib, lib) == 0 && access(memo_elf, R_OK) == 0) {
		res = strdup(memo_elf);
		pthread_mutex_unlock(&memo_lock);
		if (res == NULL)
			sbx_error_errno(err, ENOMEM, "kernel path");
		return res;
	}
	char hex[FILE_HASH_HEX + 1];
	cleanup_free char *dir = NULL, *elf = NULL, *tmp = NULL;
	if (hash_library(lib, hex, err) < 0)
		goto out;
	if ((dir = sbx_state_subdir("kernel", err)) == NULL)
		goto out;
	if (asprintf(&elf, "%s/vmlinux-%.16s.pvh", dir, hex) < 0 ||
	    asprintf(&tmp, "%s/.vmlinux-%.16s.%ld.tmp", dir, hex, (long)getpid()) < 0) {
		elf = tmp = NULL;
		sbx_error_errno(err, ENOMEM, "kernel path");
		goto out;
	}
	if (access(elf, R_OK) != 0) {
		if (build_wrapper(lib, tmp, err) < 0 || rename(tmp, elf) < 0) {
			if (*err == NULL)
				sbx_error_errno(err, errno, "rename %s", tmp);
			unlink(tmp);
			goto out;
		}
	}
	char *l = strdup(lib), *e = strdup(elf);
	if (l == NULL || e == NULL) {
		free(l);
		free(e);
		sbx_error_errno(err, ENOMEM, "kernel path");
		goto out;
	}
	free(memo_lib);
	free(memo_elf);
	memo_lib = l;
	memo_elf = e;
	res = sbx_steal_ptr(elf);
out:
	pthread_mutex_unlock(&memo_lock);
	return res;
}
