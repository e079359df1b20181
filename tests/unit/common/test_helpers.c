/* The small shared helpers: string vectors, path_join, the clock. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/path.h"
#include "common/strv.h"
#include "harness.h"

TEST(strv_len_counts_entries_and_null_is_empty)
{
	char *v[] = { "a", "b", "c", NULL };
	CHECK_INT(sbx_strv_len(v), 3);
	CHECK_INT(sbx_strv_len(NULL), 0);
	char *empty[] = { NULL };
	CHECK_INT(sbx_strv_len(empty), 0);
}

TEST(strv_dup_is_a_deep_copy)
{
	char a[] = "K=V", b[] = "X=";
	char *v[] = { a, b, NULL };
	char **d = sbx_strv_dup(v);
	CHECK(d != NULL);
	CHECK_INT(sbx_strv_len(d), 2);
	CHECK_STR(d[0], "K=V");
	CHECK_STR(d[1], "X=");
	CHECK(d[0] != a && d[1] != b);
	a[0] = 'Z'; /* the copy does not follow the original */
	CHECK_STR(d[0], "K=V");
	CHECK(d[2] == NULL);
	sbx_strv_free(d);
}

TEST(strv_dup_of_null_is_an_empty_vector)
{
	char **d = sbx_strv_dup(NULL);
	CHECK(d != NULL);
	CHECK(d[0] == NULL);
	sbx_strv_free(d);
	sbx_strv_free(NULL);
}

TEST(path_join_puts_one_slash_between)
{
	cleanup_free char *p = sbx_path_join("/var/lib", "x.ext4");
	CHECK_STR(p, "/var/lib/x.ext4");
	cleanup_free char *q = sbx_path_join("/", "src/guest/boot.erofs");
	CHECK_STR(q, "//src/guest/boot.erofs");
	cleanup_free char *r = sbx_path_join("dir", "");
	CHECK_STR(r, "dir/");
}

TEST(path_last_is_the_last_component_without_trailing_slashes)
{
	static const char *const cases[][2] = { { "/a/b", "b" }, { "/a/b/", "b" }, { "/a/b//", "b" }, { "b", "b" },
						{ "a/b/", "b" },  { "/", "" },	  { "", "" },	    { "//", "" },
						{ "/a/..", ".." } };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cleanup_free char *got = sbx_path_last(cases[i][0]);
		CHECK_STR(got, cases[i][1]);
	}
}

TEST(now_ms_is_monotonic_and_in_milliseconds)
{
	int64_t a = sbx_now_ms();
	usleep(20000);
	int64_t b = sbx_now_ms();
	CHECK(b - a >= 20);
	CHECK(b - a < 5000);
}

TEST(ms_left_clamps_at_zero)
{
	CHECK_INT(sbx_ms_left(sbx_now_ms() - 1000), 0);
	int left = sbx_ms_left(sbx_now_ms() + 60000);
	CHECK(left > 59000 && left <= 60000);
}

TEST(ms_timespec_splits_seconds_and_nanoseconds)
{
	struct timespec ts = sbx_ms_timespec(12345);
	CHECK_INT(ts.tv_sec, 12);
	CHECK_INT(ts.tv_nsec, 345000000);
}

TEST(monotonic_condition_times_out_at_the_deadline)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t c;
	sbx_cond_init_monotonic(&c);
	int64_t t0 = sbx_now_ms();
	struct timespec until = sbx_ms_timespec(t0 + 50);
	pthread_mutex_lock(&m);
	int rc;
	while ((rc = pthread_cond_timedwait(&c, &m, &until)) == 0)
		;
	pthread_mutex_unlock(&m);
	pthread_cond_destroy(&c);
	CHECK_INT(rc, ETIMEDOUT);
	int64_t waited = sbx_now_ms() - t0;
	CHECK(waited >= 49 && waited < 5000);
}

static int pair_in_scope[2];

static void pair_scope(bool keep_one)
{
	cleanup_fd_pair int p[2] = { -1, -1 };
	if (pipe(p) < 0)
		return;
	pair_in_scope[0] = p[0];
	pair_in_scope[1] = keep_one ? sbx_steal_fd(p[1]) : p[1];
}

TEST(cleanup_fd_pair_closes_both_ends_unless_stolen)
{
	pair_scope(false);
	CHECK(fcntl(pair_in_scope[0], F_GETFD) < 0 && errno == EBADF);
	CHECK(fcntl(pair_in_scope[1], F_GETFD) < 0 && errno == EBADF);
	pair_scope(true);
	CHECK(fcntl(pair_in_scope[0], F_GETFD) < 0 && errno == EBADF);
	CHECK(fcntl(pair_in_scope[1], F_GETFD) >= 0); /* stolen: still ours */
	close(pair_in_scope[1]);
}
