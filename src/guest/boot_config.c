/* Applies CONFIG inside the VM (see boot_config.h). */
#include "guest/boot_config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"

static int seed_rng(const uint8_t *p, size_t n, sbx_error_t *err)
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
	return 0;
}

int boot_apply_config(const struct proto_config *c, sbx_error_t *err)
{
	if (c->hostname[0] != '\0' && sethostname(c->hostname, strlen(c->hostname)) < 0)
		return sbx_error_errno(err, errno, "sethostname");
	if (c->nofile != 0) {
		struct rlimit rl = { (rlim_t)c->nofile, (rlim_t)c->nofile };
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			return sbx_error_errno(err, errno, "setrlimit NOFILE %llu", (unsigned long long)c->nofile);
	}
	if (c->realtime_ns != 0) {
		/* The VM has no RTC worth trusting: the host's clock wins. */
		struct timespec ts = { (time_t)(c->realtime_ns / 1000000000u), (long)(c->realtime_ns % 1000000000u) };
		if (clock_settime(CLOCK_REALTIME, &ts) < 0)
			return sbx_error_errno(err, errno, "set clock");
	}
	return seed_rng(c->entropy, c->entropy_len, err);
}
