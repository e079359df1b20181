#include "common/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/log_line.h"

static enum sbx_log_level current = SBX_LOG_INFO;
static enum sbx_log_format format = SBX_LOG_TEXT;
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

int sbx_log_format_from_env(sbx_error_t *err)
{
	const char *v = getenv("SANDBOX_LOG_FORMAT");
	if (v == NULL || *v == '\0' || strcasecmp(v, "text") == 0)
		format = SBX_LOG_TEXT;
	else if (strcasecmp(v, "json") == 0)
		format = SBX_LOG_JSON;
	else
		return sbx_error_set(err, EINVAL,
				     "SANDBOX_LOG_FORMAT=%.64s%s is not a log format (expected text or json)", v,
				     strlen(v) > 64 ? "..." : "");
	return 0;
}

void sbx_log_set_level(enum sbx_log_level level)
{
	current = level;
}

enum sbx_log_level sbx_log_get_level(void)
{
	return current;
}

void sbx_log_set_format(enum sbx_log_format f)
{
	format = f;
}

static void __attribute__((format(printf, 4, 0)))
vlog(enum sbx_log_level level, const struct sbx_log_field *fields, size_t n, const char *fmt, va_list ap)
{
	char msg[SBX_LOG_LINE_MAX];
	if (vsnprintf(msg, sizeof(msg), fmt, ap) < 0)
		snprintf(msg, sizeof(msg), "(unformattable log line: %s)", fmt);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	/* One buffer, one write: lines from concurrent threads never interleave. */
	char line[SBX_LOG_LINE_MAX];
	size_t len = sbx_log_line(line, sizeof(line), format, &ts, level, fields, n, msg);
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(STDERR_FILENO, line + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* stderr is gone: nowhere left to say so */
		off += (size_t)w;
	}
}

void sbx_log(enum sbx_log_level level, const char *fmt, ...)
{
	if (level < current)
		return;
	va_list ap;
	va_start(ap, fmt);
	vlog(level, NULL, 0, fmt, ap);
	va_end(ap);
}

void sbx_log_fields(enum sbx_log_level level, const struct sbx_log_field *fields, size_t n, const char *fmt, ...)
{
	if (level < current)
		return;
	va_list ap;
	va_start(ap, fmt);
	vlog(level, fields, n, fmt, ap);
	va_end(ap);
}
