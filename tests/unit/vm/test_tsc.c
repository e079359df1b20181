#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "vm/tsc.h"

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
	unsigned khz = sbx_host_tsc_khz();
	CHECK_INT(sbx_host_tsc_khz(), khz);
	struct cpuinfo ci = read_cpuinfo();
#if defined(__x86_64__)
	if (!ci.invariant) {
		CHECK_INT(khz, 0);
		return;
	}
	CHECK(khz >= 100000 && khz <= 20000000);
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
