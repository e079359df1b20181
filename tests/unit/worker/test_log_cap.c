/* The capped log writer and the tail reader. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "worker/log_cap.h"
#include "worker/log_tail.h"

static char *tmp_path(const char *name)
{
	static char dir[64];
	if (dir[0] == '\0') {
		strcpy(dir, "/tmp/test_log_cap.XXXXXX");
		if (mkdtemp(dir) == NULL)
			abort();
	}
	char *p = NULL;
	if (asprintf(&p, "%s/%s", dir, name) < 0)
		abort();
	return p;
}

static off_t file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? st.st_size : -1;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return NULL;
	char *buf = malloc(1 << 20);
	*len = fread(buf, 1, (1 << 20) - 1, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

TEST(appends_below_the_cap)
{
	char *p = tmp_path("a.log");
	struct log_cap l;
	sbx_error_t err = NULL;
	CHECK(log_cap_open(&l, p, 100, &err) == 0);
	CHECK(log_cap_write(&l, "one\n", 4, &err) == 0);
	CHECK(log_cap_write(&l, "two\n", 4, &err) == 0);
	log_cap_close(&l);
	/* Reopening appends to what is there. */
	CHECK(log_cap_open(&l, p, 100, &err) == 0);
	CHECK_INT(l.size, 8);
	CHECK(log_cap_write(&l, "three\n", 6, &err) == 0);
	log_cap_close(&l);
	size_t len;
	char *s = slurp(p, &len);
	CHECK_STR(s, "one\ntwo\nthree\n");
	free(s);
	free(p);
}

TEST(drops_the_oldest_lines_at_the_cap)
{
	char *p = tmp_path("b.log");
	struct log_cap l;
	sbx_error_t err = NULL;
	CHECK(log_cap_open(&l, p, 1000, &err) == 0);
	char line[32];
	for (int i = 0; i < 500; i++) {
		int n = snprintf(line, sizeof(line), "line %03d\n", i);
		CHECK(log_cap_write(&l, line, (size_t)n, &err) == 0);
		CHECK(file_size(p) <= 1000);
		CHECK_INT(file_size(p), l.size);
	}
	log_cap_close(&l);
	size_t len;
	char *s = slurp(p, &len);
	/* The newest line is kept, the file starts at a line, the oldest went. */
	CHECK(len > 400);
	CHECK(strncmp(s, "line ", 5) == 0);
	CHECK(strstr(s, "line 499\n") != NULL);
	CHECK(strstr(s, "line 000\n") == NULL);
	free(s);
	free(p);
}

TEST(a_huge_chunk_keeps_its_tail)
{
	char *p = tmp_path("c.log");
	struct log_cap l;
	sbx_error_t err = NULL;
	CHECK(log_cap_open(&l, p, 100, &err) == 0);
	char big[300];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)('a' + i % 26);
	CHECK(log_cap_write(&l, big, sizeof(big), &err) == 0);
	CHECK_INT(file_size(p), 50);
	log_cap_close(&l);
	size_t len;
	char *s = slurp(p, &len);
	CHECK(memcmp(s, big + 250, 50) == 0);
	free(s);
	free(p);
}

TEST(tail_reads_the_last_lines)
{
	char *p = tmp_path("d.log");
	FILE *f = fopen(p, "w");
	CHECK(f != NULL);
	fputs("a\nb\nc\nd", f);
	fclose(f);
	char *out;
	size_t len;
	sbx_error_t err = NULL;
	CHECK(log_tail_read(p, 2, 1000, &out, &len, &err) == 0);
	CHECK_INT(len, 3);
	CHECK(memcmp(out, "c\nd", 3) == 0);
	free(out);
	CHECK(log_tail_read(p, 10, 1000, &out, &len, &err) == 0);
	CHECK_INT(len, 7);
	free(out);
	/* The byte bound cuts the oldest. */
	CHECK(log_tail_read(p, 10, 4, &out, &len, &err) == 0);
	CHECK_INT(len, 4);
	CHECK(memcmp(out, "\nc\nd", 4) == 0);
	free(out);
	f = fopen(p, "w");
	fputs("x\ny\n", f);
	fclose(f);
	CHECK(log_tail_read(p, 1, 1000, &out, &len, &err) == 0);
	CHECK_INT(len, 2);
	CHECK(memcmp(out, "y\n", 2) == 0);
	free(out);
	free(p);
}

TEST(tail_of_a_missing_file_is_empty)
{
	char *p = tmp_path("none.log");
	char *out;
	size_t len = 99;
	sbx_error_t err = NULL;
	CHECK(log_tail_read(p, 10, 1000, &out, &len, &err) == 0);
	CHECK_INT(len, 0);
	free(out);
	free(p);
}
