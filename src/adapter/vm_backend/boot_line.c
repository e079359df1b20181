#include "adapter/vm_backend/boot_line.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* ISO 8601, UTC, with milliseconds; "an unknown time" when out of range. */
static void iso_time(int64_t unix_ms, char *out, size_t len)
{
	time_t t = (time_t)(unix_ms / 1000);
	struct tm tm;
	char day[32];
	if (unix_ms < 0 || gmtime_r(&t, &tm) == NULL || strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		snprintf(out, len, "an unknown time");
	else
		snprintf(out, len, "%s.%03dZ", day, (int)(unix_ms % 1000));
}

void boot_line_format(char out[BOOT_LINE_MAX], const char *mode, const char *template_key, bool saved,
		      int64_t unix_ms)
{
	char when[48];
	iso_time(unix_ms, when, sizeof(when));
	const char *key = template_key != NULL ? template_key : "";
	if (strcmp(mode, "restore") == 0)
		snprintf(out, BOOT_LINE_MAX, "restore of template %.12s at %s", key, when);
	else if (strcmp(mode, "cold") == 0 && saved && template_key != NULL)
		snprintf(out, BOOT_LINE_MAX, "cold, saved as template %.12s at %s", key, when);
	else if (strcmp(mode, "cold") == 0)
		snprintf(out, BOOT_LINE_MAX, "cold at %s", when);
	else if (template_key != NULL)
		snprintf(out, BOOT_LINE_MAX, "%.16s (template %.12s) at %s", mode, key, when);
	else
		snprintf(out, BOOT_LINE_MAX, "%.16s (cold) at %s", mode, when);
}
