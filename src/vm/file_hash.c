#include "vm/file_hash.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/path.h"
#include "common/state_dir.h"

#define PATH_CAP 4096
#define READ_CHUNK (1u << 20)
/* "<path>\n<identity>\n<hex>\n" */
#define ENTRY_CAP (PATH_CAP + 256)

static void to_hex(const unsigned char *md, size_t n, char *hex)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 15];
	}
	hex[2 * n] = '\0';
}

static int identity(const struct stat *st, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, "%llu %llu %lld %lld.%09ld %lld.%09ld", (unsigned long long)st->st_dev,
			 (unsigned long long)st->st_ino, (long long)st->st_size, (long long)st->st_mtim.tv_sec,
			 st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec);
	return n > 0 && (size_t)n < cap ? 0 : -1;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

int file_hash_bytes(const void *buf, size_t len, char hex[FILE_HASH_HEX + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	if (EVP_Digest(buf, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen * 2 != FILE_HASH_HEX)
		return -1;
	to_hex(md, mdlen, hex);
	return 0;
}

/* The entry's name: the SHA-256 of the path. */
static int entry_name(const char *path, char name[FILE_HASH_HEX + 1])
{
	return file_hash_bytes(path, strlen(path), name);
}

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return true;
}

/* The cached hash when the entry is whole and names this path and
 * identity; anything else is a miss. */
static bool lookup(const char *dir, const char *name, const char *path, const char *id, char *hex)
{
	cleanup_free char *p = sbx_path_join(dir, name);
	cleanup_close int fd = p != NULL ? open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
	if (fd < 0)
		return false;
	char buf[ENTRY_CAP];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0 || (size_t)n == sizeof(buf) - 1)
		return false;
	buf[n] = '\0';
	size_t plen = strlen(path), ilen = strlen(id);
	if ((size_t)n != plen + 1 + ilen + 1 + FILE_HASH_HEX + 1 || memcmp(buf, path, plen) != 0 ||
	    buf[plen] != '\n' || memcmp(buf + plen + 1, id, ilen) != 0 || buf[plen + 1 + ilen] != '\n' ||
	    !is_hex(buf + plen + ilen + 2, FILE_HASH_HEX) || buf[n - 1] != '\n')
		return false;
	memcpy(hex, buf + plen + ilen + 2, FILE_HASH_HEX);
	hex[FILE_HASH_HEX] = '\0';
	return true;
}

static int hash_fd(int fd, const char *path, char *hex, sbx_error_t *err)
{
	cleanup_free uint8_t *buf = malloc(READ_CHUNK);
	EVP_MD_CTX *ctx = buf != NULL ? EVP_MD_CTX_new() : NULL;
	if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(ctx);
		return sbx_error_set(err, ENOMEM, "sha256 init");
	}
	ssize_t n;
	while ((n = read(fd, buf, READ_CHUNK)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || EVP_DigestUpdate(ctx, buf, (size_t)n) != 1) {
			int e = n < 0 ? errno : EIO;
			EVP_MD_CTX_free(ctx);
			return sbx_error_errno(err, e, "read %s", path);
		}
	}
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned len = 0;
	bool ok = EVP_DigestFinal_ex(ctx, md, &len) == 1 && len * 2 == FILE_HASH_HEX;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return sbx_error_set(err, EIO, "sha256 of %s", path);
	to_hex(md, len, hex);
	return 0;
}

/* Keeps the directory small: past FILE_HASH_MAX entries it starts over. */
static void bound(const char *dir)
{
	cleanup_dir DIR *d = opendir(dir);
	if (d == NULL)
		return;
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	if (n < FILE_HASH_MAX)
		return;
	rewinddir(d);
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] != '.')
			unlinkat(dirfd(d), e->d_name, 0);
	}
}

/* Best effort: a cache that cannot be written only costs time. */
static void store(const char *dir, const char *name, const char *path, const char *id, const char *hex)
{
	bound(dir);
	uint32_t rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
		rnd = (uint32_t)getpid();
	char tmp[PATH_CAP + 128], final[PATH_CAP + 128], text[ENTRY_CAP];
	int a = snprintf(tmp, sizeof(tmp), "%s/.%s.%ld-%08x.tmp", dir, name, (long)getpid(), rnd);
	int b = snprintf(final, sizeof(final), "%s/%s", dir, name);
	int c = snprintf(text, sizeof(text), "%s\n%s\n%s\n", path, id, hex);
	if (a < 0 || (size_t)a >= sizeof(tmp) || b < 0 || (size_t)b >= sizeof(final) || c < 0 ||
	    (size_t)c >= sizeof(text))
		return;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	bool ok = write(fd, text, (size_t)c) == c;
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp, final) < 0)
		unlink(tmp);
}

int file_hash(const char *path, char hex[FILE_HASH_HEX + 1], sbx_error_t *err)
{
	if (strlen(path) >= PATH_CAP || strchr(path, '\n') != NULL)
		return sbx_error_set(err, ENAMETOOLONG, "file hash: unusable path %s", path);
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat before, after;
	if (fd < 0 || fstat(fd, &before) < 0)
		return sbx_error_errno(err, errno, "open %s", path);
	if (!S_ISREG(before.st_mode))
		return sbx_error_set(err, EINVAL, "%s is not a regular file", path);
	char id[256], name[FILE_HASH_HEX + 1];
	if (identity(&before, id, sizeof(id)) < 0 || entry_name(path, name) < 0)
		return sbx_error_set(err, EIO, "file hash of %s", path);
	sbx_error_t derr = NULL;
	cleanup_free char *dir = sbx_state_subdir("hashes", &derr);
	sbx_error_free(&derr);
	if (dir != NULL && lookup(dir, name, path, id, hex))
		return 0;
	if (hash_fd(fd, path, hex, err) < 0)
		return -1;
	/* Only a file that did not change while it was read is remembered. */
	if (dir != NULL && fstat(fd, &after) == 0 && same_file(&before, &after))
		store(dir, name, path, id, hex);
	return 0;
}
