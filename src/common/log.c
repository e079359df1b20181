#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static enum sbx_log_level current = SBX_LOG_INFO;
static const char *const names[] = { "debug", "info", "warn", "error" };

int sbx_log_init_from_env(void)
{
	const char *v = getenv("SANDBOX_LOG");
	if (v == NULL || *v == '\0')
		return 0;
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcasecmp(v, names[i]) == 0) {
			current = (enum sbx_log_level)i;
			return 0;
		}
	}
	return -1;
}

void sbx_log_set_level(enum sbx_log_level level)
{
	current = level;
}

enum sbx_log_level sbx_log_get_level(void)
{
	return current;
}

void sbx_log(enum sbx_log_level level, const char *fmt, ...)
{
	if (level < current)
		return;
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	/* One buffer, one write: lines from concurrent threads never interleave. */
	char line[4096];
	int n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s ", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
			 names[level]);
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len > sizeof(line) - 2) {
		len = sizeof(line) - 5;
		memcpy(line + len, "...", 3); /* say so when a line was cut */
		len += 3;
	}
	line[len++] = '\n';
	fwrite(line, 1, len, stderr);
}
