/* Times sbx_image_ensure() on a cache hit: the call the sandbox code makes
 * on every create.  Usage: image_ensure_bench CONFIG.json NAME [RUNS]
 * (III_SANDBOX_STATE_DIR names the store, where NAME's image is pulled).
 * Prints the median, 99th percentile and maximum in microseconds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "adapter/config/config_file.h"
#include "image/image_pull.h"

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

static long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s CONFIG.json NAME [RUNS]\n", argv[0]);
		return 2;
	}
	long runs = argc > 3 ? strtol(argv[3], NULL, 10) : 1000;
	if (runs < 1 || runs > 1000000) {
		fprintf(stderr, "RUNS must be 1..1000000\n");
		return 2;
	}
	sbx_error_t err = NULL;
	struct sbx_config *config = sbx_config_load_file(argv[1], &err);
	if (config == NULL) {
		fprintf(stderr, "%s\n", sbx_error_msg(err));
		return 1;
	}
	struct sbx_image_config *cfg = &config->images;
	/* A miss would pull: refuse it, so only hits are timed. */
	cfg->auto_install = false;
	const char *ref = sbx_image_catalog_ref(cfg, argv[2]);
	long *us = calloc((size_t)runs, sizeof(*us));
	if (ref == NULL || us == NULL) {
		fprintf(stderr, "no catalog image '%s'\n", argv[2]);
		return 1;
	}
	for (long i = 0; i < runs; i++) {
		long t0 = now_us();
		char *path = sbx_image_ensure(argv[2], ref, cfg, &err);
		us[i] = now_us() - t0;
		if (path == NULL) {
			fprintf(stderr, "%s\n", sbx_error_msg(err));
			return 1;
		}
		free(path);
	}
	qsort(us, (size_t)runs, sizeof(*us), cmp_long);
	printf("ensure() cache hit over %ld runs: median %ld us, p99 %ld us, max %ld us\n", runs, us[runs / 2],
	       us[runs * 99 / 100], us[runs - 1]);
	free(us);
	sbx_config_free(config);
	return 0;
}
