/* The first line of a sandbox's log: how its VM booted and when. */
#include <stdio.h>
#include <string.h>

#include "adapter/vm_backend/boot_line.h"
#include "harness.h"

#define KEY "1a2b3c4d5e6f7a8b9c0d"
/* 2026-12-03T18:09:27.123Z */
#define WHEN 1796321367123LL

static char out[BOOT_LINE_MAX];

TEST(each_mode)
{
	static const struct {
		const char *mode, *key;
		bool saved;
		const char *line;
	} cases[] = {
		{ "restore", KEY, false, "restore of template 1a2b3c4d5e6f" },
		{ "cold", NULL, false, "cold" },
		{ "cold", KEY, true, "cold, saved as template 1a2b3c4d5e6f" },
		{ "pool", KEY, false, "pool (template 1a2b3c4d5e6f)" },
		{ "standby", KEY, false, "standby (template 1a2b3c4d5e6f)" },
		{ "pool", NULL, false, "pool (cold)" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char want[BOOT_LINE_MAX];
		snprintf(want, sizeof(want), "%s at 2026-12-03T18:09:27.123Z", cases[i].line);
		boot_line_format(out, cases[i].mode, cases[i].key, cases[i].saved, WHEN);
		CHECK_STR(out, want);
	}
}

TEST(time_in_utc_with_milliseconds)
{
	boot_line_format(out, "cold", NULL, false, 7);
	CHECK_STR(out, "cold at 1970-01-01T00:00:00.007Z");
	boot_line_format(out, "cold", NULL, false, -1);
	CHECK_STR(out, "cold at an unknown time");
}
