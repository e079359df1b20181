/* The log rate limit (see log_limit.h): a token bucket per call site. */
#include "common/log_limit.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"

#define LINE_MAX_BYTES 4096

bool sbx_log_limit_pass(struct sbx_log_limit *l, int64_t now_ms, uint64_t *suppressed)
{
	pthread_mutex_lock(&l->lock);
	if (!l->started) {
		l->started = true;
		l->tokens = SBX_LOG_LIMIT_BURST;
		l->refill_at_ms = now_ms + SBX_LOG_LIMIT_EVERY_MS;
	}
	while (now_ms >= l->refill_at_ms && l->tokens < SBX_LOG_LIMIT_BURST) {
		l->tokens++;
		l->refill_at_ms += SBX_LOG_LIMIT_EVERY_MS;
	}
	/* a full bucket stops the clock: an idle site earns no extra burst */
	if (l->tokens == SBX_LOG_LIMIT_BURST && now_ms >= l->refill_at_ms)
		l->refill_at_ms = now_ms + SBX_LOG_LIMIT_EVERY_MS;
	bool pass = l->tokens > 0;
	if (pass) {
		l->tokens--;
		*suppressed = l->suppressed;
		l->suppressed = 0;
	} else {
		l->suppressed++;
	}
	pthread_mutex_unlock(&l->lock);
	return pass;
}

void sbx_log_limited_at(struct sbx_log_limit *l, enum sbx_log_level level, const char *fmt, ...)
{
	/* a line the level hides costs no token */
	if (level < sbx_log_get_level())
		return;
	uint64_t suppressed;
	if (!sbx_log_limit_pass(l, sbx_now_ms(), &suppressed))
		return;
	char msg[LINE_MAX_BYTES];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(msg))
		memcpy(msg + sizeof(msg) - 4, "...", 4); /* say so when a line was cut */
	if (suppressed > 0)
		sbx_log(level, "%s (%llu similar lines suppressed)", msg, (unsigned long long)suppressed);
	else
		sbx_log(level, "%s", msg);
}
