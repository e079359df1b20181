#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "vm/template_memfd.h"

#define MIB 8u
#define SIZE ((off_t)MIB << 20)

static char dir[] = "/tmp/sbx-memfd-test-XXXXXX";

/* A template memfd with a few pages of data, some zero pages written, and
 * holes. */
static void fill(int *out)
{
	sbx_error_t err = NULL;
	int fd = template_memfd_new(MIB, &err);
	CHECK(fd >= 0);
	char page[4096];
	memset(page, 'a', sizeof(page));
	CHECK(pwrite(fd, page, sizeof(page), 0) == (ssize_t)sizeof(page));
	memset(page, 0, sizeof(page));
	CHECK(pwrite(fd, page, sizeof(page), 1 << 20) == (ssize_t)sizeof(page)); /* data, but zero */
	memset(page, 'z', sizeof(page));
	CHECK(pwrite(fd, page, 100, SIZE - 100) == 100);
	*out = fd;
}

static void same_bytes(int a, int b)
{
	static char x[1 << 20], y[1 << 20];
	for (off_t off = 0; off < SIZE; off += sizeof(x)) {
		CHECK(pread(a, x, sizeof(x), off) == (ssize_t)sizeof(x));
		CHECK(pread(b, y, sizeof(y), off) == (ssize_t)sizeof(y));
		CHECK(memcmp(x, y, sizeof(x)) == 0);
	}
}

TEST(sealed_memfd_refuses_every_write)
{
	CHECK(template_memfd_supported()); /* Linux >= 3.17 */
	sbx_error_t err = NULL;
	int fd = -1;
	fill(&fd);
	CHECK(fd >= 0);
	CHECK(!template_memfd_sealed(fd));
	/* A writable shared mapping (the template QEMU's) keeps it unsealed. */
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED);
	CHECK(template_memfd_seal(fd, &err) < 0);
	sbx_error_free(&err);
	CHECK(munmap(m, 4096) == 0);
	CHECK(template_memfd_seal(fd, &err) == 0);
	CHECK(template_memfd_sealed(fd));
	/* Reopened read-write, as QEMU does through /proc/self/fd. */
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int rw = open(path, O_RDWR);
	CHECK(rw >= 0);
	errno = 0;
	CHECK(pwrite(rw, "x", 1, 0) < 0 && errno == EPERM);
	CHECK(ftruncate(rw, SIZE / 2) < 0 && errno == EPERM);
	CHECK(fallocate(rw, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096) < 0 && errno == EPERM);
	CHECK(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0) == MAP_FAILED && errno == EPERM);
	CHECK(fcntl(rw, F_ADD_SEALS, 0) < 0 || fcntl(rw, F_GET_SEALS) & F_SEAL_SEAL);
	/* A private mapping (a clone's) may write its own copy only. */
	char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, rw, 0);
	CHECK(p != MAP_FAILED);
	CHECK(p[0] == 'a');
	p[0] = 'b';
	char c = 0;
	CHECK(pread(fd, &c, 1, 0) == 1 && c == 'a');
	munmap(p, 4096);
	close(rw);
	close(fd);
}

TEST(saved_file_is_sparse_and_loads_back_sealed)
{
	CHECK(mkdtemp(dir) != NULL);
	sbx_error_t err = NULL;
	int fd = -1;
	fill(&fd);
	CHECK(fd >= 0);
	CHECK(template_memfd_seal(fd, &err) == 0);
	char path[128], desc[TEMPLATE_RAM_DESC_MAX];
	snprintf(path, sizeof(path), "%s/ram", dir);
	CHECK(template_memfd_save(fd, path, desc, sizeof(desc), &err) == 0);
	struct stat st;
	CHECK(stat(path, &st) == 0);
	CHECK_INT(st.st_size, SIZE);
	CHECK_INT(st.st_mode & 0777, 0600);
	CHECK((long long)st.st_blocks * 512 <= 64 * 1024); /* two pages of data, the zero page skipped */
	int again = template_memfd_load(path, desc, MIB, &err);
	CHECK(again >= 0);
	CHECK(template_memfd_sealed(again));
	same_bytes(fd, again);
	/* The wrong guest size is refused. */
	CHECK(template_memfd_load(path, desc, MIB * 2, &err) < 0);
	sbx_error_free(&err);
	close(again);
	close(fd);
}

TEST(changed_or_truncated_file_is_refused)
{
	sbx_error_t err = NULL;
	char path[128], desc[TEMPLATE_RAM_DESC_MAX];
	snprintf(path, sizeof(path), "%s/ram2", dir);
	int fd = -1;
	fill(&fd);
	CHECK(fd >= 0);
	CHECK(template_memfd_seal(fd, &err) == 0);
	CHECK(template_memfd_save(fd, path, desc, sizeof(desc), &err) == 0);
	int w = open(path, O_WRONLY);
	CHECK(w >= 0);
	CHECK(pwrite(w, "q", 1, 0) == 1);
	close(w);
	CHECK(template_memfd_load(path, desc, MIB, &err) < 0);
	CHECK_INT(err->errnum, ESTALE);
	sbx_error_free(&err);
	CHECK(truncate(path, SIZE / 2) == 0);
	CHECK(template_memfd_load(path, desc, MIB, &err) < 0);
	sbx_error_free(&err);
	unlink(path);
	CHECK(template_memfd_load(path, desc, MIB, &err) < 0);
	sbx_error_free(&err);
	close(fd);
}

TEST(process_keeps_one_memfd_per_key)
{
	sbx_error_t err = NULL;
	char path[128], desc[TEMPLATE_RAM_DESC_MAX];
	snprintf(path, sizeof(path), "%s/ram3", dir);
	int fd = -1;
	fill(&fd);
	CHECK(fd >= 0);
	CHECK(template_memfd_seal(fd, &err) == 0);
	CHECK(template_memfd_save(fd, path, desc, sizeof(desc), &err) == 0);
	const char *key = "k1";
	CHECK(template_memfd_usage() == 0);
	int a = template_memfd_get(key, path, desc, MIB, &err);
	CHECK(a >= 0);
	uint64_t used = template_memfd_usage();
	CHECK(used > 0 && used <= 64 * 1024);
	/* Kept: the same memfd again. */
	int b = template_memfd_get(key, path, desc, MIB, &err);
	CHECK(b >= 0);
	struct stat sa, sb;
	CHECK(fstat(a, &sa) == 0 && fstat(b, &sb) == 0);
	CHECK(sa.st_ino == sb.st_ino);
	CHECK(template_memfd_usage() == used);
	/* Another description (another generation of the key's file) is not
	 * this file. */
	CHECK(template_memfd_get(key, path, "1 2 3 4.5\n", MIB, &err) < 0);
	sbx_error_free(&err);
	/* The file gone or changed condemns the template even when kept. */
	CHECK(unlink(path) == 0);
	CHECK(template_memfd_get(key, path, desc, MIB, &err) < 0);
	sbx_error_free(&err);
	template_memfd_drop(key);
	CHECK(template_memfd_usage() == 0);
	/* The one just built is kept as given. */
	CHECK(template_memfd_save(fd, path, desc, sizeof(desc), &err) == 0);
	template_memfd_keep("k2", path, desc, fd);
	int c = template_memfd_get("k2", path, desc, MIB, &err);
	CHECK(c >= 0);
	struct stat sc, sf;
	CHECK(fstat(c, &sc) == 0 && fstat(fd, &sf) == 0 && sc.st_ino == sf.st_ino);
	/* A template removed by another process: its memfd goes at the next
	 * count, not only at the key's next restore. */
	CHECK(template_memfd_usage() > 0);
	unlink(path);
	CHECK(template_memfd_usage() == 0);
	close(a);
	close(b);
	close(c);
	close(fd);
	rmdir(dir);
}
