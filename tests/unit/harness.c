#include "harness.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_TESTS 1024

static struct {
	const char *name;
	void (*fn)(void);
} tests[MAX_TESTS];
static int ntests;
static int current_failed;
static const char *current_skip;

void sbx_test_register(const char *name, void (*fn)(void))
{
	if (ntests == MAX_TESTS) {
		fprintf(stderr, "harness: more than %d tests in one binary\n", MAX_TESTS);
		abort();
	}
	tests[ntests].name = name;
	tests[ntests].fn = fn;
	ntests++;
}

void sbx_test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	printf("# %s:%d: ", file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	current_failed = 1;
}

void sbx_test_skip(const char *reason)
{
	current_skip = reason;
}

int main(void)
{
	int failed = 0;
	setvbuf(stdout, NULL, _IONBF, 0);
	printf("1..%d\n", ntests);
	for (int i = 0; i < ntests; i++) {
		current_failed = 0;
		current_skip = NULL;
		tests[i].fn();
		if (current_failed) {
			failed++;
			printf("not ok %d - %s\n", i + 1, tests[i].name);
		} else if (current_skip != NULL) {
			printf("ok %d - %s # SKIP %s\n", i + 1, tests[i].name, current_skip);
		} else {
			printf("ok %d - %s\n", i + 1, tests[i].name);
		}
	}
	return failed ? 1 : 0;
}
