/* Glob rules of fs::grep / fs::sed (fs_glob.h), and that hostile patterns
 * stay fast. */
#include <string.h>
#include <time.h>

#include "guest/fs_glob.h"
#include "guest/fs_util.h"
#include "harness.h"

TEST(basename_and_anchored_patterns)
{
	CHECK(fs_glob_match("*.py", "a.py"));
	CHECK(fs_glob_match("*.py", "src/deep/a.py"));
	CHECK(!fs_glob_match("*.py", "a.pyc"));
	CHECK(!fs_glob_match("src/*.py", "src/deep/a.py")); /* '*' never crosses '/' */
	CHECK(fs_glob_match("src/*.py", "src/a.py"));
	CHECK(fs_glob_match("/a.py", "a.py"));
	CHECK(!fs_glob_match("/a.py", "sub/a.py")); /* a leading '/' anchors */
	CHECK(fs_glob_match("f?.txt", "f1.txt"));
	CHECK(!fs_glob_match("f?.txt", "f/.txt"));
	CHECK(fs_glob_match("f?.txt", "f\xc3\xa9.txt")); /* '?' is one character */
}

TEST(double_star_classes_and_escapes)
{
	CHECK(fs_glob_match("**/a.py", "a.py")); /* any depth, the root too */
	CHECK(fs_glob_match("**/a.py", "x/y/a.py"));
	CHECK(fs_glob_match("**", "x/y/z"));
	CHECK(fs_glob_match("src/**", "src/x/y"));
	CHECK(!fs_glob_match("src/**", "lib/x"));
	CHECK(fs_glob_match("a/**/b.c", "a/b.c"));
	CHECK(fs_glob_match("a/**/b.c", "a/x/y/b.c"));
	CHECK(!fs_glob_match("a/**/b.c", "a/x/y/c.c"));
	CHECK(fs_glob_match("[abc].txt", "b.txt"));
	CHECK(!fs_glob_match("[abc].txt", "d.txt"));
	CHECK(fs_glob_match("[!abc].txt", "d.txt"));
	CHECK(fs_glob_match("[a-c]x", "bx"));
	CHECK(fs_glob_match("[]x", "[]x")); /* an unclosed class is literal */
	CHECK(fs_glob_match("\\*.c", "*.c"));
	CHECK(!fs_glob_match("\\*.c", "a.c"));
}

TEST(directories_and_keep_rules)
{
	/* a pattern matching a directory matches what is below it */
	CHECK(fs_glob_match("node_modules", "node_modules/x/y.js"));
	CHECK(fs_glob_match("node_modules/", "a/node_modules/y.js"));
	CHECK(!fs_glob_match("node_modules/", "node_modules")); /* a file of that name */
	CHECK(fs_glob_match_dir("build/", "build"));
	char *inc[] = { "*.py", NULL }, *exc[] = { "tests/", NULL }, *none[] = { NULL };
	CHECK(fs_glob_keep(inc, exc, "src/a.py"));
	CHECK(!fs_glob_keep(inc, exc, "tests/a.py"));
	CHECK(!fs_glob_keep(inc, exc, "src/a.txt"));
	CHECK(fs_glob_keep(none, none, "anything"));
	CHECK(fs_glob_keep(NULL, NULL, "anything"));
	CHECK(fs_glob_prune(exc, "tests"));
	CHECK(!fs_glob_prune(exc, "src"));
}

TEST(hostile_patterns_stay_linear)
{
	static char pat[4097], path[4097];
	for (size_t i = 0; i < 4000; i += 2)
		memcpy(pat + i, "*a", 2);
	memset(path, 'a', 4000);
	path[3999] = 'b';
	clock_t t0 = clock();
	CHECK(!fs_glob_match(pat, path));
	for (size_t i = 0; i < 4000; i += 3)
		memcpy(pat + i, "**/", 3);
	pat[3999] = 'x';
	for (size_t i = 0; i < 4000; i += 2)
		memcpy(path + i, "a/", 2);
	CHECK(!fs_glob_match(pat, path));
	CHECK((clock() - t0) / CLOCKS_PER_SEC < 5);
}

TEST(utf8_helpers)
{
	CHECK(fs_utf8_valid("h\xc3\xa9", 3));
	CHECK(!fs_utf8_valid("\xff", 1));
	CHECK(!fs_utf8_valid("\xed\xa0\x80", 3)); /* a surrogate */
	CHECK(!fs_utf8_valid("\xc0\xaf", 2));      /* an overlong '/' */
	CHECK_INT(fs_utf8_boundary("h\xc3\xa9", 2), 1);
	CHECK_INT(fs_utf8_boundary("h\xc3\xa9", 3), 3);
	CHECK_INT(fs_utf8_boundary("\xe2\x80\xa6", 2), 0);
	char buf[64];
	CHECK_STR(fs_last_component("/a/b/", buf, sizeof(buf)), "b");
	CHECK_STR(fs_last_component("/a/b/.", buf, sizeof(buf)), "b");
	CHECK_STR(fs_last_component("/", buf, sizeof(buf)), "/");
	CHECK_STR(fs_last_component("/a/..", buf, sizeof(buf)), "/a/..");
}
