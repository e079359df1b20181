/* Monotonic milliseconds, for deadlines that survive wall-clock jumps. */
#ifndef SBX_COMMON_CLOCK_H
#define SBX_COMMON_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

static inline int64_t sbx_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left until `deadline`, clamped to [0, INT32_MAX]. */
static inline int sbx_ms_left(int64_t deadline)
{
	int64_t left = deadline - sbx_now_ms();
	if (left < 0)
		return 0;
	return left > INT32_MAX ? INT32_MAX : (int)left;
}

/* `ms` on the monotonic clock as a timespec, for pthread_cond_timedwait on
 * a condition made by sbx_cond_init_monotonic. */
static inline struct timespec sbx_ms_timespec(int64_t ms)
{
	return (struct timespec){ .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };
}

/* A condition variable whose timed waits use the monotonic clock. */
static inline void sbx_cond_init_monotonic(pthread_cond_t *cond)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &ca);
	pthread_condattr_destroy(&ca);
}

#endif
