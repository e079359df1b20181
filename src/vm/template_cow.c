#include "vm/template_cow.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/state_dir.h"

#define SHM_ROOT "/dev/shm"

static int write_owner(const char *dir, const char *state, sbx_error_t *err)
{
	cleanup_free char *p = NULL;
	if (asprintf(&p, "%s/" TEMPLATE_RAM_OWNER, dir) < 0) {
		p = NULL;
		return sbx_error_errno(err, ENOMEM, "template RAM");
	}
	if (access(p, F_OK) == 0)
		return 0;
	cleanup_close int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	size_t len = strlen(state);
	if (fd < 0 || write(fd, state, len) != (ssize_t)len)
		return sbx_error_errno(err, fd < 0 ? errno : EIO, "write %s", p);
	return 0;
}

/* /dev/shm/sandbox-libkrun-<first 8 bytes of sha256(state dir)>: daemons
 * with different state directories never share or evict each other's. */
static char *ram_dir(bool create, sbx_error_t *err)
{
	struct statfs fs;
	if (statfs(SHM_ROOT, &fs) < 0 || fs.f_type != TMPFS_MAGIC) {
		sbx_error_set(err, ENOENT, "%s is not a tmpfs: no copy-on-write templates", SHM_ROOT);
		return NULL;
	}
	cleanup_free char *given = sbx_state_dir(err);
	if (given == NULL)
		return NULL;
	/* One name per directory, however it was spelled. */
	cleanup_free char *state = realpath(given, NULL);
	if (state == NULL) {
		sbx_error_errno(err, errno, "state directory %s", given);
		return NULL;
	}
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	if (EVP_Digest(state, strlen(state), md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen < 8) {
		sbx_error_set(err, EIO, "template RAM: sha256 failed");
		return NULL;
	}
	char *dir = NULL;
	if (asprintf(&dir, SHM_ROOT "/sandbox-libkrun-%02x%02x%02x%02x%02x%02x%02x%02x", md[0], md[1], md[2], md[3],
		     md[4], md[5], md[6], md[7]) < 0) {
		sbx_error_errno(err, ENOMEM, "template RAM");
		return NULL;
	}
	if ((create ? mkdir(dir, 0700) : access(dir, F_OK)) < 0 && (!create || errno != EEXIST)) {
		sbx_error_errno(err, errno, "%s", dir);
		free(dir);
		return NULL;
	}
	struct stat st;
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 0077) != 0) {
		sbx_error_set(err, EPERM, "%s is not a private directory of ours", dir);
		free(dir);
		return NULL;
	}
	if (create && write_owner(dir, state, err) < 0) {
		free(dir);
		return NULL;
	}
	return dir;
}

char *template_ram_dir(sbx_error_t *err)
{
	return ram_dir(true, err);
}

char *template_ram_dir_existing(sbx_error_t *err)
{
	return ram_dir(false, err);
}

int template_ram_hold(const char *path, sbx_error_t *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return sbx_error_errno(err, errno, "template RAM %s", path);
	struct stat a, b;
	if (flock(fd, LOCK_SH | LOCK_NB) < 0 || fstat(fd, &a) < 0 || stat(path, &b) < 0 || a.st_ino != b.st_ino ||
	    a.st_dev != b.st_dev) {
		close(fd);
		return sbx_error_set(err, ESTALE, "template RAM %s is being removed", path);
	}
	return fd;
}

char *template_ram_create(const char *key, unsigned memory_mib, sbx_error_t *err)
{
	cleanup_free char *dir = template_ram_dir(err);
	if (dir == NULL)
		return NULL;
	uint64_t gen = 0;
	if (getrandom(&gen, sizeof(gen), 0) != sizeof(gen)) {
		sbx_error_errno(err, EIO, "template RAM: getrandom");
		return NULL;
	}
	char *path = NULL;
	if (asprintf(&path, "%s/%.64s-%016" PRIx64 ".mem", dir, key, gen) < 0) {
		sbx_error_errno(err, ENOMEM, "template RAM");
		return NULL;
	}
	cleanup_close int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	/* fchmod: the umask must not take the VMs' access away. */
	if (fd < 0 || fchmod(fd, 0666) < 0 || ftruncate(fd, (off_t)memory_mib << 20) < 0) {
		sbx_error_errno(err, errno, "template RAM %s", path);
		if (fd >= 0)
			unlink(path);
		free(path);
		return NULL;
	}
	return path;
}

int template_ram_describe(const char *path, char *buf, size_t cap, sbx_error_t *err)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return sbx_error_errno(err, errno, "template RAM %s", path);
	int n = snprintf(buf, cap, "%s %lld %llu %lld.%09ld\n", path, (long long)st.st_size,
			 (unsigned long long)st.st_ino, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	if (n < 0 || (size_t)n >= cap)
		return sbx_error_set(err, ENAMETOOLONG, "template RAM path too long");
	return 0;
}

/* Splits a description: the path (into `path`, cap bytes) and the rest. */
static const char *desc_path(const char *desc, char *path, size_t cap)
{
	const char *sp = strchr(desc, ' ');
	if (sp == NULL || (size_t)(sp - desc) >= cap || sp == desc)
		return NULL;
	memcpy(path, desc, (size_t)(sp - desc));
	path[sp - desc] = '\0';
	return sp + 1;
}

char *template_ram_verify(const char *desc, unsigned memory_mib, sbx_error_t *err)
{
	char path[4096];
	const char *rest = desc_path(desc, path, sizeof(path));
	char now[4200];
	if (rest == NULL) {
		sbx_error_set(err, EINVAL, "template RAM: bad description");
		return NULL;
	}
	if (template_ram_describe(path, now, sizeof(now), err) < 0)
		return NULL;
	struct stat st;
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != (uint64_t)memory_mib << 20) {
		sbx_error_set(err, EINVAL, "template RAM %s: not a file of %u MiB", path, memory_mib);
		return NULL;
	}
	size_t dlen = strcspn(desc, "\n");
	if (strncmp(now, desc, dlen) != 0 || now[dlen] != '\n') {
		sbx_error_set(err, ESTALE, "template RAM %s changed since the template was saved", path);
		return NULL;
	}
	char *p = strdup(path);
	if (p == NULL)
		sbx_error_errno(err, ENOMEM, "template RAM");
	return p;
}

void template_ram_remove(const char *desc)
{
	char path[4096];
	sbx_error_t err = NULL;
	cleanup_free char *dir = template_ram_dir_existing(&err);
	sbx_error_free(&err);
	if (dir == NULL || desc_path(desc, path, sizeof(path)) == NULL)
		return;
	size_t n = strlen(dir);
	if (strncmp(path, dir, n) == 0 && path[n] == '/' && strchr(path + n + 1, '/') == NULL)
		unlink(path);
}

uint64_t template_ram_usage(void)
{
	sbx_error_t err = NULL;
	cleanup_free char *dir = template_ram_dir_existing(&err);
	sbx_error_free(&err);
	if (dir == NULL)
		return 0;
	DIR *d = opendir(dir);
	if (d == NULL)
		return 0;
	uint64_t total = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		struct stat st;
		size_t len = strlen(e->d_name);
		if (len > 4 && strcmp(e->d_name + len - 4, ".mem") == 0 &&
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			total += (uint64_t)st.st_blocks * 512u;
	}
	closedir(d);
	return total;
}
