/* A rate limit for log lines someone outside the daemon can trigger (a
 * guest's packets, queries, protocol errors): per call site, a burst of
 * SBX_LOG_LIMIT_BURST lines, then one more every SBX_LOG_LIMIT_EVERY_MS;
 * the first line let through after a drop ends with
 * "(N similar lines suppressed)".  Thread-safe. */
#ifndef SBX_COMMON_LOG_LIMIT_H
#define SBX_COMMON_LOG_LIMIT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/log.h"

#define SBX_LOG_LIMIT_BURST 10
#define SBX_LOG_LIMIT_EVERY_MS 5000

struct sbx_log_limit {
	pthread_mutex_t lock;
	bool started;
	int64_t refill_at_ms; /* when the next token comes */
	unsigned tokens;
	uint64_t suppressed;
};

#define SBX_LOG_LIMIT_INIT { .lock = PTHREAD_MUTEX_INITIALIZER }

/* The decision alone, for a clock the caller reads: true when a line may
 * go out now; *suppressed then holds how many were dropped since the last
 * one that went (and is reset). */
bool sbx_log_limit_pass(struct sbx_log_limit *l, int64_t now_ms, uint64_t *suppressed);

void sbx_log_limited_at(struct sbx_log_limit *l, enum sbx_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* One limit per call site. */
#define sbx_log_limited(level, ...)                                                  \
	do {                                                                         \
		static struct sbx_log_limit sbx_log_limit_site_ = SBX_LOG_LIMIT_INIT; \
		sbx_log_limited_at(&sbx_log_limit_site_, level, __VA_ARGS__);        \
	} while (0)
#define sbx_debug_limited(...) sbx_log_limited(SBX_LOG_DEBUG, __VA_ARGS__)
#define sbx_warn_limited(...) sbx_log_limited(SBX_LOG_WARN, __VA_ARGS__)
#define sbx_err_limited(...) sbx_log_limited(SBX_LOG_ERROR, __VA_ARGS__)

#endif
