/* Boots one VM and measures, through src/vm/vm.h: the exec round trip of
 * `true` on the running VM (median of N) and QEMU's resident memory.
 * Usage: vm_exec_bench IMAGE [RUNS]   Prints "key value" lines. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vm/vm.h"

/* Microseconds: a round trip is a few ms, and the engine's figure it is
 * compared with (bench/sandbox) is fractional too. */
static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* VmRSS (KiB) of the QEMU whose command line names this state directory. */
static long qemu_rss_kib(const char *state)
{
	DIR *d = opendir("/proc");
	long rss = -1;
	struct dirent *e;
	while (d != NULL && rss < 0 && (e = readdir(d)) != NULL) {
		char path[300], buf[8192];
		snprintf(path, sizeof(path), "/proc/%.20s/cmdline", e->d_name);
		FILE *f = fopen(path, "r");
		if (f == NULL)
			continue;
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		for (size_t i = 0; i < n; i++)
			buf[i] = buf[i] == '\0' ? ' ' : buf[i];
		buf[n] = '\0';
		if (strstr(buf, "qemu-system") == NULL || strstr(buf, state) == NULL)
			continue;
		snprintf(path, sizeof(path), "/proc/%.20s/status", e->d_name);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		while (fgets(buf, sizeof(buf), f) != NULL) {
			if (sscanf(buf, "VmRSS: %ld", &rss) == 1)
				break;
		}
		fclose(f);
	}
	if (d != NULL)
		closedir(d);
	return rss;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: vm_exec_bench IMAGE [RUNS]\n");
		return 2;
	}
	int runs = argc > 2 ? atoi(argv[2]) : 20;
	if (runs < 1 || runs > 1000)
		runs = 20;
	const char *state = getenv("III_SANDBOX_STATE_DIR");
	sbx_error_t err = NULL;
	struct sbx_vm_options opt = { .cpus = 1, .memory_mib = 512, .image = argv[1] };
	struct sbx_vm *vm = sbx_vm_start(&opt, &err);
	if (vm == NULL || sbx_vm_wait_ready(vm, sbx_now_ms() + 120000, &err) < 0) {
		fprintf(stderr, "vm_exec_bench: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
		if (vm != NULL)
			sbx_vm_stop(vm, 0);
		return 1;
	}
	int64_t *t = calloc((size_t)runs, sizeof(*t));
	int rc = t != NULL ? 0 : 1;
	char *cmd[] = { "true", NULL };
	for (int i = 0; rc == 0 && i < runs; i++) {
		int64_t t0 = now_us();
		struct sbx_vm_proc *p = sbx_vm_spawn(vm, cmd, NULL, NULL, false, &err);
		int status = -1;
		if (p == NULL || sbx_vm_proc_wait(p, sbx_now_ms() + 60000, &status, &err) < 0 || status != 0) {
			fprintf(stderr, "vm_exec_bench: true: %s (status %d)\n", sbx_error_msg(err), status);
			rc = 1;
		}
		sbx_vm_proc_free(p);
		t[i] = now_us() - t0;
	}
	if (rc == 0) {
		qsort(t, (size_t)runs, sizeof(*t), cmp);
		printf("exec_true_ms %.2f\n", (double)t[runs / 2] / 1000.0);
		printf("qemu_rss_kib %ld\n", state != NULL ? qemu_rss_kib(state) : -1L);
	}
	sbx_error_free(&err);
	free(t);
	sbx_vm_stop(vm, sbx_now_ms() + 5000);
	return rc;
}
