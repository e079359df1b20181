#include "vm/template_memfd.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"

#define SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)
#define COPY_CHUNK (1u << 20)
#define PAGE 4096u
/* Templates a process keeps memfds of; past this, restores load their own. */
#define KEPT_MAX 64

static bool supported;

static void probe(void)
{
	int fd = memfd_create("sandbox-libkrun-probe", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	supported = fd >= 0 && fcntl(fd, F_ADD_SEALS, SEALS) == 0 && template_memfd_sealed(fd);
	if (fd >= 0)
		close(fd);
}

bool template_memfd_supported(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, probe);
	return supported;
}

int template_memfd_new(unsigned memory_mib, sbx_error_t *err)
{
	int fd = memfd_create("sandbox-libkrun-template", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (fd < 0)
		return sbx_error_errno(err, errno, "template RAM: memfd_create");
	if (ftruncate(fd, (off_t)memory_mib << 20) < 0) {
		int e = errno;
		close(fd);
		return sbx_error_errno(err, e, "template RAM: ftruncate");
	}
	return fd;
}

int template_memfd_seal(int fd, sbx_error_t *err)
{
	if (fcntl(fd, F_ADD_SEALS, SEALS) < 0)
		return sbx_error_errno(err, errno, "template RAM: seal");
	if (!template_memfd_sealed(fd))
		return sbx_error_set(err, EPERM, "template RAM: seals missing after sealing");
	return 0;
}

bool template_memfd_sealed(int fd)
{
	int s = fcntl(fd, F_GET_SEALS);
	return s >= 0 && (s & SEALS) == SEALS;
}

static bool zero_page(const unsigned char *p, size_t n)
{
	static const unsigned char zero[PAGE];
	return memcmp(p, zero, n) == 0;
}

/* Writes the pages of buf[0..n) that are not all zero at `off`. */
static int put_nonzero(int to, const unsigned char *buf, size_t n, off_t off, sbx_error_t *err)
{
	size_t i = 0;
	while (i < n) {
		size_t len = n - i < PAGE ? n - i : PAGE;
		if (zero_page(buf + i, len)) {
			i += len;
			continue;
		}
		size_t start = i;
		while (i < n) {
			len = n - i < PAGE ? n - i : PAGE;
			if (zero_page(buf + i, len))
				break;
			i += len;
		}
		ssize_t w = pwrite(to, buf + start, i - start, off + (off_t)start);
		if (w != (ssize_t)(i - start))
			return sbx_error_errno(err, w < 0 ? errno : EIO, "template RAM: write");
	}
	return 0;
}

/* Copies [off, end) of `from` to the same place in `to` in the kernel
 * (the saved file holds no zero pages to skip). */
static int send_range(int from, int to, off_t off, off_t end, sbx_error_t *err)
{
	if (lseek(to, off, SEEK_SET) != off)
		return sbx_error_errno(err, errno, "template RAM: seek");
	while (off < end) {
		size_t want = end - off < COPY_CHUNK ? (size_t)(end - off) : COPY_CHUNK;
		ssize_t n = sendfile(to, from, &off, want);
		if (n <= 0)
			return sbx_error_errno(err, n < 0 ? errno : EIO, "template RAM: copy (truncated?)");
	}
	return 0;
}

/* Copies the data of `from` (size bytes) into `to`, already that size:
 * its holes are skipped (SEEK_DATA/SEEK_HOLE), and, when `skip_zero`, so
 * are zero pages. */
static int sparse_copy(int from, int to, off_t size, bool skip_zero, sbx_error_t *err)
{
	cleanup_free unsigned char *buf = skip_zero ? malloc(COPY_CHUNK) : NULL;
	if (skip_zero && buf == NULL)
		return sbx_error_errno(err, ENOMEM, "template RAM");
	off_t pos = 0;
	while (pos < size) {
		off_t data = lseek(from, pos, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			break;
		off_t hole = data >= 0 ? lseek(from, data, SEEK_HOLE) : -1;
		if (hole < 0)
			return sbx_error_errno(err, errno, "template RAM: seek");
		if (hole > size)
			hole = size;
		if (!skip_zero && data < hole && send_range(from, to, data, hole, err) < 0)
			return -1;
		for (off_t off = data; skip_zero && off < hole;) {
			size_t want = hole - off < COPY_CHUNK ? (size_t)(hole - off) : COPY_CHUNK;
			ssize_t r = pread(from, buf, want, off);
			if (r <= 0)
				return sbx_error_errno(err, r < 0 ? errno : EIO, "template RAM: read (truncated?)");
			if (put_nonzero(to, buf, (size_t)r, off, err) < 0)
				return -1;
			off += r;
		}
		pos = hole;
	}
	return 0;
}

static int describe(int fd, char *desc, size_t cap, sbx_error_t *err)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return sbx_error_errno(err, errno, "template RAM: stat");
	int n = snprintf(desc, cap, "%lld %llu %llu %lld.%09ld\n", (long long)st.st_size,
			 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, (long long)st.st_mtim.tv_sec,
			 st.st_mtim.tv_nsec);
	if (n < 0 || (size_t)n >= cap)
		return sbx_error_set(err, EOVERFLOW, "template RAM: description");
	return 0;
}

int template_memfd_save(int fd, const char *path, char *desc, size_t cap, sbx_error_t *err)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return sbx_error_errno(err, errno, "template RAM: stat");
	cleanup_close int out = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (out < 0)
		return sbx_error_errno(err, errno, "create %s", path);
	/* fsync: a template must never name bytes that a crash lost. */
	if (ftruncate(out, st.st_size) < 0 || sparse_copy(fd, out, st.st_size, true, err) < 0 || fsync(out) < 0) {
		if (*err == NULL)
			sbx_error_errno(err, errno, "write %s", path);
		unlink(path);
		return -1;
	}
	return describe(out, desc, cap, err);
}

/* The file is still the one described, of the guest's size. */
static int check(int fd, const char *path, const char *desc, unsigned memory_mib, sbx_error_t *err)
{
	char now[TEMPLATE_RAM_DESC_MAX];
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != (uint64_t)memory_mib << 20)
		return sbx_error_set(err, EINVAL, "template RAM %s: not a file of %u MiB", path, memory_mib);
	if (describe(fd, now, sizeof(now), err) < 0)
		return -1;
	if (strcmp(now, desc) != 0)
		return sbx_error_set(err, ESTALE, "template RAM %s changed since the template was saved", path);
	return 0;
}

int template_memfd_load(const char *path, const char *desc, unsigned memory_mib, sbx_error_t *err)
{
	cleanup_close int in = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0)
		return sbx_error_errno(err, errno, "template RAM %s", path);
	if (check(in, path, desc, memory_mib, err) < 0)
		return -1;
	cleanup_close int fd = template_memfd_new(memory_mib, err);
	/* Checked again: a file changed during the copy is refused too. */
	if (fd < 0 || sparse_copy(in, fd, (off_t)memory_mib << 20, false, err) < 0 ||
	    check(in, path, desc, memory_mib, err) < 0 || template_memfd_seal(fd, err) < 0)
		return -1;
	return sbx_steal_fd(fd);
}

struct kept {
	char key[72];
	char desc[TEMPLATE_RAM_DESC_MAX];
	char *path; /* the template's ram file */
	int fd;     /* -1 = free slot */
};

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kept kept[KEPT_MAX];
static bool kept_ready;

/* With kept_lock held. */
static struct kept *slot(const char *key, bool take_free)
{
	if (!kept_ready) {
		for (size_t i = 0; i < KEPT_MAX; i++)
			kept[i].fd = -1;
		kept_ready = true;
	}
	struct kept *free_slot = NULL;
	for (size_t i = 0; i < KEPT_MAX; i++) {
		if (kept[i].fd >= 0 && strcmp(kept[i].key, key) == 0)
			return &kept[i];
		if (kept[i].fd < 0 && free_slot == NULL)
			free_slot = &kept[i];
	}
	return take_free ? free_slot : NULL;
}

/* With kept_lock held. */
static void forget(struct kept *k)
{
	close(k->fd);
	k->fd = -1;
	free(k->path);
	k->path = NULL;
}

/* With kept_lock held: the key's slot now holds a copy of fd. */
static void keep_locked(const char *key, const char *path, const char *desc, int fd)
{
	struct kept *k = slot(key, true);
	if (k == NULL || strlen(key) >= sizeof(k->key) || strlen(desc) >= sizeof(k->desc))
		return;
	char *p = strdup(path);
	int copy = p != NULL ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : -1;
	if (copy < 0) {
		free(p);
		return;
	}
	if (k->fd >= 0)
		forget(k);
	k->fd = copy;
	k->path = p;
	snprintf(k->key, sizeof(k->key), "%s", key);
	snprintf(k->desc, sizeof(k->desc), "%s", desc);
}

int template_memfd_get(const char *key, const char *path, const char *desc, unsigned memory_mib, sbx_error_t *err)
{
	/* The file stays the template's truth: one changed since the save
	 * condemns the template here as in a process that must load it. */
	cleanup_close int in = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0)
		return sbx_error_errno(err, errno, "template RAM %s", path);
	if (check(in, path, desc, memory_mib, err) < 0)
		return -1;
	pthread_mutex_lock(&kept_lock);
	struct kept *k = slot(key, false);
	if (k != NULL && strcmp(k->desc, desc) == 0) {
		int fd = fcntl(k->fd, F_DUPFD_CLOEXEC, 3);
		pthread_mutex_unlock(&kept_lock);
		return fd >= 0 ? fd : sbx_error_errno(err, errno, "template RAM: dup");
	}
	/* Loaded under the lock: racing restores of a key load it once. */
	int64_t t = sbx_now_ms();
	int fd = template_memfd_load(path, desc, memory_mib, err);
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) == 0)
		sbx_info("vm: template %.12s RAM loaded into a sealed memfd in %lld ms (%llu MiB of data)", key,
			 (long long)(sbx_now_ms() - t), (unsigned long long)st.st_blocks >> 11);
	if (fd >= 0)
		keep_locked(key, path, desc, fd);
	pthread_mutex_unlock(&kept_lock);
	return fd;
}

void template_memfd_keep(const char *key, const char *path, const char *desc, int fd)
{
	pthread_mutex_lock(&kept_lock);
	keep_locked(key, path, desc, fd);
	pthread_mutex_unlock(&kept_lock);
}

void template_memfd_drop(const char *key)
{
	pthread_mutex_lock(&kept_lock);
	struct kept *k = slot(key, false);
	if (k != NULL)
		forget(k);
	pthread_mutex_unlock(&kept_lock);
}

/* With kept_lock held: whether the kept file is still the template's (the
 * template may have been removed by another process: `image rm`, the trim
 * of a `vm run`). */
static bool still_there(const struct kept *k)
{
	unsigned long long dev, ino, now_dev, now_ino;
	struct stat st;
	if (sscanf(k->desc, "%*s %llu %llu", &dev, &ino) != 2 || stat(k->path, &st) < 0)
		return false;
	now_dev = (unsigned long long)st.st_dev;
	now_ino = (unsigned long long)st.st_ino;
	return dev == now_dev && ino == now_ino;
}

uint64_t template_memfd_usage(void)
{
	uint64_t total = 0;
	pthread_mutex_lock(&kept_lock);
	for (size_t i = 0; kept_ready && i < KEPT_MAX; i++) {
		struct stat st;
		if (kept[i].fd >= 0 && !still_there(&kept[i]))
			forget(&kept[i]);
		else if (kept[i].fd >= 0 && fstat(kept[i].fd, &st) == 0)
			total += (uint64_t)st.st_blocks * 512u;
	}
	pthread_mutex_unlock(&kept_lock);
	return total;
}
