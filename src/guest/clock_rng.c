/* The guest's clock and RNG from the host's (clock_rng.h). */
#include "guest/clock_rng.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"

int guest_set_clock(uint64_t realtime_ns, sbx_error_t *err)
{
	if (realtime_ns == 0)
		return 0;
	/* The VM has no RTC worth trusting: the host's clock wins. */
	struct timespec ts = { (time_t)(realtime_ns / 1000000000u), (long)(realtime_ns % 1000000000u) };
	if (clock_settime(CLOCK_REALTIME, &ts) < 0)
		return sbx_error_errno(err, errno, "set clock");
	return 0;
}

int guest_seed_rng(const uint8_t *p, size_t n, sbx_error_t *err)
{
	if (n == 0)
		return 0;
	cleanup_free struct rand_pool_info *info = malloc(sizeof(*info) + n);
	if (info == NULL)
		return sbx_error_errno(err, ENOMEM, "entropy");
	info->entropy_count = (int)(n * 8);
	info->buf_size = (int)n;
	memcpy(info->buf, p, n);
	cleanup_close int fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return sbx_error_errno(err, errno, "open /dev/urandom");
	if (ioctl(fd, RNDADDENTROPY, info) < 0)
		return sbx_error_errno(err, errno, "RNDADDENTROPY");
	/* A VM restored from a snapshot (or a pause) shares the CRNG state
	 * of its saved memory: reseed now, so nothing handed out from here
	 * on derives from it. */
	if (ioctl(fd, RNDRESEEDCRNG) < 0)
		return sbx_error_errno(err, errno, "RNDRESEEDCRNG");
	return 0;
}
