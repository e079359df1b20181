/* The log rate limit: a burst, then one line per period, and the count of
 * what was dropped on the next line that goes out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log_limit.h"
#include "harness.h"

TEST(log_limit_burst_then_one_per_period)
{
	struct sbx_log_limit l = SBX_LOG_LIMIT_INIT;
	uint64_t sup = 99;
	int passed = 0;
	for (int i = 0; i < 20000; i++)
		passed += sbx_log_limit_pass(&l, 1000, &sup);
	CHECK_INT(passed, SBX_LOG_LIMIT_BURST);
	CHECK_INT(sup, 0);
	/* one period later: one line, carrying the count */
	CHECK(sbx_log_limit_pass(&l, 1000 + SBX_LOG_LIMIT_EVERY_MS, &sup));
	CHECK_INT(sup, 20000 - SBX_LOG_LIMIT_BURST);
	CHECK(!sbx_log_limit_pass(&l, 1000 + SBX_LOG_LIMIT_EVERY_MS, &sup));
	/* a long silence refills the burst, no more */
	passed = 0;
	for (int i = 0; i < 100; i++)
		passed += sbx_log_limit_pass(&l, 10000000, &sup);
	CHECK_INT(passed, SBX_LOG_LIMIT_BURST);
}

/* Runs fn with stderr in a file; returns what it wrote (malloc'd). */
static char *capture_stderr(void (*fn)(void))
{
	FILE *f = tmpfile();
	int saved = dup(2);
	if (f == NULL || saved < 0 || dup2(fileno(f), 2) < 0)
		return NULL;
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	long n = ftell(f);
	char *s = n >= 0 ? calloc(1, (size_t)n + 1) : NULL;
	if (s != NULL) {
		rewind(f);
		if (fread(s, 1, (size_t)n, f) != (size_t)n)
			s[0] = '\0';
	}
	fclose(f);
	return s;
}

static struct sbx_log_limit site = SBX_LOG_LIMIT_INIT;

static void flood(void)
{
	for (int i = 0; i < 20000; i++)
		sbx_log_limited_at(&site, SBX_LOG_WARN, "net: sandbox x: q%d.example: no resolver free", i);
	/* the period is over (as if 5 s went by): the next line goes, with the count */
	site.refill_at_ms = 0;
	sbx_log_limited_at(&site, SBX_LOG_WARN, "net: sandbox x: last: no resolver free");
}

static size_t count(const char *s, const char *needle)
{
	size_t n = 0;
	for (const char *p = s; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

TEST(log_limit_lines_say_what_they_dropped)
{
	char *out = capture_stderr(flood);
	CHECK(out != NULL);
	if (out == NULL)
		return;
	CHECK_INT(count(out, "\n"), SBX_LOG_LIMIT_BURST + 1);
	CHECK(strstr(out, "q0.example: no resolver free\n") != NULL);
	char want[128];
	snprintf(want, sizeof(want), "last: no resolver free (%d similar lines suppressed)\n",
		 20000 - SBX_LOG_LIMIT_BURST);
	CHECK(strstr(out, want) != NULL);
	free(out);
}

static void hidden(void)
{
	struct sbx_log_limit l = SBX_LOG_LIMIT_INIT;
	sbx_log_set_level(SBX_LOG_WARN);
	for (int i = 0; i < 100; i++)
		sbx_log_limited_at(&l, SBX_LOG_DEBUG, "hidden %d", i);
	sbx_log_set_level(SBX_LOG_DEBUG);
	sbx_log_limited_at(&l, SBX_LOG_DEBUG, "shown");
	sbx_log_set_level(SBX_LOG_INFO);
}

TEST(log_limit_hidden_levels_cost_nothing)
{
	char *out = capture_stderr(hidden);
	CHECK(out != NULL && strstr(out, "shown\n") != NULL && strstr(out, "suppressed") == NULL);
	free(out);
}
