#include "vm/tsc.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/state_dir.h"
#include "vm/tsc_cache.h"

#if defined(__x86_64__)
#include <x86intrin.h>

#define MEASURE_NS 20000000LL
#define CPUINFO_LINE 8192

static unsigned tsc_khz;
static pthread_once_t tsc_once = PTHREAD_ONCE_INIT;

/* A TSC that changes rate with the CPU's clock or stops in deep idle
 * would give the guest a wrong clock: only an invariant one is used.
 * *mhz is the first CPU's "cpu MHz" (0 if absent). */
static bool tsc_invariant(double *mhz)
{
	cleanup_file FILE *f = fopen("/proc/cpuinfo", "re");
	if (f == NULL)
		return false;
	char line[CPUINFO_LINE];
	*mhz = 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (*mhz == 0 && sscanf(line, "cpu MHz : %lf", mhz) == 1)
			continue;
		if (strncmp(line, "flags", 5) != 0)
			continue;
		return strstr(line, " constant_tsc") != NULL && strstr(line, " nonstop_tsc") != NULL;
	}
	return false;
}

static int64_t raw_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* One (time, TSC) pair read close together: a preemption between the two
 * reads would skew the rate, so pairs taken more than 10 us apart are
 * retried. */
static bool sample(int64_t *ns, uint64_t *tsc)
{
	for (int i = 0; i < 10; i++) {
		int64_t a = raw_ns();
		*tsc = __rdtsc();
		int64_t b = raw_ns();
		if (b - a <= 10000) {
			*ns = a + (b - a) / 2;
			return true;
		}
	}
	return false;
}

static unsigned measure(double mhz)
{
	int64_t t0, t1;
	uint64_t c0, c1;
	if (!sample(&t0, &c0))
		return 0;
	struct timespec pause = { 0, MEASURE_NS };
	while (nanosleep(&pause, &pause) < 0 && errno == EINTR)
		;
	if (!sample(&t1, &c1) || t1 - t0 < MEASURE_NS / 2 || c1 <= c0)
		return 0;
	double khz = (double)(c1 - c0) * 1e6 / (double)(t1 - t0);
	/* Where cpuinfo's figure is the TSC's rate (hosts with an invariant
	 * TSC usually report it there), it is exact and the same in every
	 * process, which keeps snapshot keys stable. */
	if (mhz > 0 && khz > mhz * 1000.0 * 0.999 && khz < mhz * 1000.0 * 1.001)
		khz = mhz * 1000.0;
	/* Anything outside 100 MHz..20 GHz is a broken measurement. */
	return khz >= 100000.0 && khz <= 20000000.0 ? (unsigned)(khz + 0.5) : 0;
}

/* The rate this boot of the host already measured (state dir's host-tsc),
 * else measured now and remembered. */
static void find_rate(void)
{
	double mhz;
	if (!tsc_invariant(&mhz))
		return;
	char boot_id[37];
	sbx_error_t err = NULL;
	cleanup_free char *dir = tsc_cache_boot_id(boot_id) ? sbx_state_dir(&err) : NULL;
	sbx_error_free(&err);
	cleanup_free char *path = NULL;
	if (dir != NULL && asprintf(&path, "%s/host-tsc", dir) < 0)
		path = NULL;
	if (path != NULL && (tsc_khz = tsc_cache_read(path, boot_id)) != 0)
		return;
	tsc_khz = measure(mhz);
	if (path != NULL && tsc_khz != 0 && tsc_cache_write(path, boot_id, tsc_khz) < 0)
		sbx_debug("vm: cannot remember the TSC rate in %s", path);
}

unsigned sbx_host_tsc_khz(void)
{
	pthread_once(&tsc_once, find_rate);
	return tsc_khz;
}
#else
unsigned sbx_host_tsc_khz(void)
{
	return 0;
}
#endif
