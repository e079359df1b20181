#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "vm/tsc.h"
#include "vm/tsc_cache.h"

struct cpuinfo {
	bool invariant, known_freq;
	double mhz;
};

static struct cpuinfo read_cpuinfo(void)
{
	struct cpuinfo ci = { false, false, 0 };
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[8192];
	bool flags = false;
	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		if (ci.mhz == 0)
			sscanf(line, "cpu MHz : %lf", &ci.mhz);
		if (!flags && strncmp(line, "flags", 5) == 0) {
			flags = true;
			ci.invariant = strstr(line, " constant_tsc") != NULL && strstr(line, " nonstop_tsc") != NULL;
			ci.known_freq = strstr(line, " tsc_known_freq") != NULL;
		}
	}
	if (f != NULL)
		fclose(f);
	return ci;
}

TEST(measured_once_and_plausible)
{
	char dir[] = "/tmp/sbx-tsc-state-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	setenv("III_SANDBOX_STATE_DIR", dir, 1);
	unsigned khz = sbx_host_tsc_khz();
	CHECK_INT(sbx_host_tsc_khz(), khz);
	char path[64], id[37];
	snprintf(path, sizeof(path), "%s/host-tsc", dir);
	unsigned remembered = tsc_cache_boot_id(id) ? tsc_cache_read(path, id) : 0;
	unlink(path);
	rmdir(dir);
	struct cpuinfo ci = read_cpuinfo();
#if defined(__x86_64__)
	if (!ci.invariant) {
		CHECK_INT(khz, 0);
		return;
	}
	CHECK(khz >= 100000 && khz <= 20000000);
	/* The next process of this host boot takes it from the state dir. */
	CHECK_INT(remembered, khz);
	/* With a TSC of known frequency, cpuinfo's "cpu MHz" is that
	 * frequency: the measurement must agree within 0.5%. */
	if (ci.known_freq && ci.mhz > 0) {
		double ratio = khz / (ci.mhz * 1000.0);
		CHECK(ratio > 0.995 && ratio < 1.005);
	}
#else
	CHECK_INT(khz, 0);
#endif
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
}

TEST(rate_remembered_per_host_boot)
{
	char dir[] = "/tmp/sbx-tsc-test-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char path[64];
	snprintf(path, sizeof(path), "%s/host-tsc", dir);
	const char *boot = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
	const char *other = "11111111-2222-3333-4444-555555555555";
	CHECK_INT(tsc_cache_read(path, boot), 0);
	CHECK_INT(tsc_cache_write(path, boot, 2995213), 0);
	CHECK_INT(tsc_cache_read(path, boot), 2995213);
	/* Another boot of the host measures again. */
	CHECK_INT(tsc_cache_read(path, other), 0);
	/* The file is not trusted: implausible rates, junk and truncation. */
	put(path, "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 99\n");
	CHECK_INT(tsc_cache_read(path, boot), 0);
	put(path, "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 99999999999\n");
	CHECK_INT(tsc_cache_read(path, boot), 0);
	put(path, "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 2995213x\n");
	CHECK_INT(tsc_cache_read(path, boot), 0);
	put(path, "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 29952");
	CHECK_INT(tsc_cache_read(path, boot), 0);
	put(path, "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 2995213\n0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 2995213\n");
	CHECK_INT(tsc_cache_read(path, boot), 0);
	CHECK_INT(tsc_cache_write(path, other, 1000000), 0);
	CHECK_INT(tsc_cache_read(path, other), 1000000);
	char id[37];
	CHECK(tsc_cache_boot_id(id));
	CHECK_INT((int)strlen(id), 36);
	unlink(path);
	CHECK_INT(rmdir(dir), 0);
}
