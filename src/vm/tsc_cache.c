#include "vm/tsc_cache.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"

#define BOOT_ID_LEN 36
/* As tsc.c accepts a measurement: 100 MHz..20 GHz. */
#define KHZ_MIN 100000UL
#define KHZ_MAX 20000000UL

bool tsc_cache_boot_id(char buf[37])
{
	cleanup_close int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, BOOT_ID_LEN);
	if (n != BOOT_ID_LEN)
		return false;
	buf[BOOT_ID_LEN] = '\0';
	return strspn(buf, "0123456789abcdef-") == BOOT_ID_LEN;
}

unsigned tsc_cache_read(const char *path, const char *boot_id)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	char text[BOOT_ID_LEN + 32];
	ssize_t n = read(fd, text, sizeof(text) - 1);
	if (n <= BOOT_ID_LEN + 1 || (size_t)n == sizeof(text) - 1)
		return 0;
	text[n] = '\0';
	if (strncmp(text, boot_id, BOOT_ID_LEN) != 0 || strlen(boot_id) != BOOT_ID_LEN || text[BOOT_ID_LEN] != ' ')
		return 0;
	const char *digits = text + BOOT_ID_LEN + 1;
	char *end;
	unsigned long khz = strtoul(digits, &end, 10);
	if (end == digits || strcmp(end, "\n") != 0 || khz < KHZ_MIN || khz > KHZ_MAX)
		return 0;
	return (unsigned)khz;
}

int tsc_cache_write(const char *path, const char *boot_id, unsigned khz)
{
	char tmp[4096];
	int len = snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
	if (len < 0 || (size_t)len >= sizeof(tmp))
		return -1;
	char text[BOOT_ID_LEN + 32];
	int n = snprintf(text, sizeof(text), "%s %u\n", boot_id, khz);
	if (n < 0 || (size_t)n >= sizeof(text))
		return -1;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -1;
	bool ok = write(fd, text, (size_t)n) == n;
	if (close(fd) < 0)
		ok = false;
	if (!ok || rename(tmp, path) < 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}
