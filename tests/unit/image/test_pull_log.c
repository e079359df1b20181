/* The pull's log when stderr is no terminal: a line per layer downloaded,
 * at most one line per PULL_LOG_EVERY_MS while a layer downloads, the pull
 * itself with its registry stripped of credentials. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "harness.h"
#include "image/pull_log.h"

static struct pull_log pl;

/* Runs fn with stderr in a file (no terminal) in JSON; returns the lines. */
static char *capture(void (*fn)(void))
{
	sbx_log_set_format(SBX_LOG_JSON);
	FILE *f = tmpfile();
	int saved = dup(2);
	if (f == NULL || saved < 0 || dup2(fileno(f), 2) < 0)
		return NULL;
	fn();
	dup2(saved, 2);
	close(saved);
	sbx_log_set_format(SBX_LOG_TEXT);
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

static size_t count(const char *s, const char *needle)
{
	size_t n = 0;
	for (const char *p = s; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

static void pull_two_layers(void)
{
	pull_log_init(&pl, "docker.io/library/python:3", true);
	/* a flood of progress within the period: silent */
	for (uint64_t done = 0; done < 1000; done++)
		pull_log_layer(&pl, 0, 2, done, 1000);
	pull_log_layer(&pl, 0, 2, 1000, 1000);
	/* the period is over (as if 5 s went by): one line, then silence */
	pl.next_ms = 0;
	pull_log_layer(&pl, 1, 2, 10, 500);
	pull_log_layer(&pl, 1, 2, 20, 500);
	pull_log_layer(&pl, 1, 2, 500, 500);
	pull_log_done(&pl, "https://user:s3cret@mirror.example:5000", 4096);
}

TEST(pull_lines_are_bounded_and_say_the_pull)
{
	char *out = capture(pull_two_layers);
	CHECK(out != NULL);
	CHECK_INT(count(out, "\n"), 4);
	CHECK_INT(count(out, "\"event\":\"pull_progress\""), 3);
	CHECK_INT(count(out, "\"done\":\"true\""), 2);
	CHECK(strstr(out, "\"layer\":2,\"layers\":2,\"bytes\":10,\"size\":500,\"done\":\"false\"") != NULL);
	const char *last = strstr(out, "\"event\":\"pull\",");
	CHECK(last != NULL);
	json_t *v = json_loads(strrchr(out, '{'), JSON_DISABLE_EOF_CHECK, NULL);
	CHECK(v != NULL);
	CHECK_STR(json_string_value(json_object_get(v, "registry")), "https://mirror.example:5000");
	CHECK_STR(json_string_value(json_object_get(v, "ref")), "docker.io/library/python:3");
	CHECK_INT(json_integer_value(json_object_get(v, "bytes")), 1500);
	CHECK_INT(json_integer_value(json_object_get(v, "layers")), 2);
	CHECK_INT(json_integer_value(json_object_get(v, "image_bytes")), 4096);
	CHECK(strstr(out, "s3cret") == NULL && strstr(out, "user") == NULL);
	json_decref(v);
	free(out);
}

static void pull_unlogged(void)
{
	pull_log_init(&pl, "docker.io/library/python:3", false);
	pl.next_ms = 0;
	pull_log_layer(&pl, 0, 1, 10, 500);
	pull_log_layer(&pl, 0, 1, 500, 500);
	pull_log_done(&pl, "https://mirror.example", 4096);
}

/* The CLI's pulls keep stderr for the CLI's own output. */
TEST(pull_log_off_says_nothing)
{
	char *out = capture(pull_unlogged);
	CHECK(out != NULL);
	CHECK_STR(out, "");
	free(out);
}
