/* Monotonic milliseconds, for deadlines that survive wall-clock jumps. */
#ifndef SBX_COMMON_CLOCK_H
#define SBX_COMMON_CLOCK_H

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

#endif
