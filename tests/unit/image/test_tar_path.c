#include "harness.h"

#include <stdio.h>

#include "image/tar_path.h"

static const char *clean(const char *in, char *out, size_t cap)
{
	sbx_error_t err = NULL;
	if (sbx_tar_path_clean(in, out, cap, &err) < 0) {
		sbx_error_free(&err);
		return NULL;
	}
	return out;
}

TEST(normalises_names)
{
	char b[4096];
	CHECK_STR(clean("./usr/bin/python3", b, sizeof(b)), "usr/bin/python3");
	CHECK_STR(clean("/etc//passwd", b, sizeof(b)), "etc/passwd");
	CHECK_STR(clean("a/./b/", b, sizeof(b)), "a/b");
	CHECK_STR(clean("./", b, sizeof(b)), "");
	CHECK_STR(clean("/", b, sizeof(b)), "");
	CHECK_STR(clean("..a/b..", b, sizeof(b)), "..a/b..");
}

TEST(refuses_dot_dot)
{
	char b[4096];
	CHECK(clean("..", b, sizeof(b)) == NULL);
	CHECK(clean("../etc/passwd", b, sizeof(b)) == NULL);
	CHECK(clean("a/../../b", b, sizeof(b)) == NULL);
	CHECK(clean("/a/b/..", b, sizeof(b)) == NULL);
}

TEST(refuses_long_and_deep_names)
{
	static char in[8192], b[4096];
	memset(in, 'a', 300);
	in[300] = '\0';
	CHECK(clean(in, b, sizeof(b)) == NULL); /* component over 255 */
	size_t o = 0;
	for (int i = 0; i < 257; i++) {
		in[o++] = 'a';
		in[o++] = '/';
	}
	in[o] = '\0';
	CHECK(clean(in, b, sizeof(b)) == NULL);
	CHECK(clean("abcdef", b, 4) == NULL); /* no silent truncation */
}
