/* Pause and resume (vm.h sbx_vm_pause, sbx_vm_resume) of a VM whose guest
 * holds TOUCH_MIB of written memory, against one cold boot in the same
 * run: start -> first exec (`true` exited) of a cold-booted VM, then on
 * that VM, RUNS times: the pause (duration_ms, the vCPUs' stop, the
 * state's size on disk), the save that lets a later daemon resume it
 * (sbx_vm_pause_save: the state fsync'ed, its description written; the
 * adapter's pause does both) and resume -> first exec.  Prints "key value"
 * lines: medians and their ratios to the cold boot (targets: resume ->
 * first exec <= 0.15, pause with its save <= 0.5).
 * Usage: pause_bench IMAGE [RUNS] [TOUCH_MIB]   (IMAGE with python3) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "vm/vm.h"

#define OP_MS 120000

static int cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int64_t median(int64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return v[n / 2];
}

/* Runs `true` to its exit: the first exec's round trip. */
static int run_true(struct sbx_vm *vm, sbx_error_t *err)
{
	char *argv[] = { "true", NULL };
	struct sbx_vm_proc *p = sbx_vm_spawn(vm, argv, NULL, NULL, false, err);
	int status = -1;
	int rc = p != NULL && sbx_vm_proc_wait(p, sbx_now_ms() + OP_MS, &status, err) == 0 && status == 0 ? 0 : -1;
	sbx_vm_proc_free(p);
	return rc;
}

/* A guest process that wrote mib MiB (no zero pages: a migration sends
 * them whole) and keeps them; returns once it said so. */
static struct sbx_vm_proc *touch(struct sbx_vm *vm, unsigned mib, sbx_error_t *err)
{
	char code[200];
	snprintf(code, sizeof(code),
		 "import time\nb = bytearray(b'\\x5a') * (%u << 20)\nprint('touched', flush=True)\ntime.sleep(1e9)\n", mib);
	char *argv[] = { "python3", "-c", code, NULL };
	struct sbx_vm_proc *p = sbx_vm_spawn(vm, argv, NULL, NULL, false, err);
	char out[64] = "";
	int fd;
	if (p != NULL && sbx_vm_proc_read(p, &fd, out, sizeof(out) - 1, sbx_now_ms() + OP_MS, err) > 0 &&
	    strncmp(out, "touched", 7) == 0)
		return p;
	if (p != NULL && *err == NULL)
		sbx_error_set(err, 0, "the toucher said \"%s\"", out);
	sbx_vm_proc_free(p);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: pause_bench IMAGE [RUNS] [TOUCH_MIB]\n");
		return 2;
	}
	int runs = argc > 2 ? atoi(argv[2]) : 3;
	unsigned mib = argc > 3 ? (unsigned)atoi(argv[3]) : 256;
	if (runs < 1 || runs > 100)
		runs = 3;
	if (sbx_log_init_from_env() < 0)
		fprintf(stderr, "pause_bench: SANDBOX_LOG not understood\n");
	char dir_base[] = "/tmp/sbx-pause-bench-XXXXXX";
	if (mkdtemp(dir_base) == NULL)
		return 2;
	sbx_error_t err = NULL;
	struct sbx_vm_options opt = { .cpus = 1, .memory_mib = mib + 256, .image = argv[1], .cold_boot = true };
	int64_t t0 = sbx_now_ms();
	struct sbx_vm *vm = sbx_vm_start(&opt, &err);
	if (vm == NULL || sbx_vm_wait_ready(vm, t0 + OP_MS, &err) < 0 || run_true(vm, &err) < 0) {
		fprintf(stderr, "pause_bench: cold boot: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
		sbx_vm_stop(vm, 0);
		rmdir(dir_base);
		return 1;
	}
	int64_t cold = sbx_now_ms() - t0;
	struct sbx_vm_proc *toucher = touch(vm, mib, &err);
	int64_t *pause = calloc((size_t)runs, sizeof(int64_t)), *stopped = calloc((size_t)runs, sizeof(int64_t));
	int64_t *first = calloc((size_t)runs, sizeof(int64_t)), *size = calloc((size_t)runs, sizeof(int64_t));
	int64_t *saved = calloc((size_t)runs, sizeof(int64_t));
	int rc = toucher != NULL && pause != NULL && stopped != NULL && first != NULL && size != NULL && saved != NULL
			 ? 0
			 : 1;
	if (toucher == NULL)
		fprintf(stderr, "pause_bench: touch %u MiB: %s\n", mib, sbx_error_msg(err));
	for (int i = 0; rc == 0 && i < runs; i++) {
		char dir[300];
		snprintf(dir, sizeof(dir), "%s/%d", dir_base, i);
		struct sbx_vm_pause_info info;
		if (sbx_vm_pause(vm, dir, &info, sbx_now_ms() + OP_MS, &err) < 0) {
			fprintf(stderr, "pause_bench: pause %d: %s\n", i, sbx_error_msg(err));
			rc = 1;
			break;
		}
		int64_t s0 = sbx_now_ms();
		if (sbx_vm_pause_save(vm, true, s0 + OP_MS, &err) < 0) {
			fprintf(stderr, "pause_bench: save %d: %s\n", i, sbx_error_msg(err));
			rc = 1;
			break;
		}
		saved[i] = sbx_now_ms() - s0;
		pause[i] = info.duration_ms + saved[i];
		stopped[i] = info.stopped_ms;
		size[i] = (int64_t)info.size_bytes;
		usleep(200000);
		int64_t r0 = sbx_now_ms();
		if (sbx_vm_resume(vm, r0 + OP_MS, &err) < 0 || run_true(vm, &err) < 0) {
			fprintf(stderr, "pause_bench: resume %d: %s\n", i, sbx_error_msg(err));
			rc = 1;
			break;
		}
		first[i] = sbx_now_ms() - r0;
		fprintf(stderr, "run %d: pause %lld ms (stopped %lld, save %lld), %lld bytes; resume -> first exec %lld ms\n",
			i, (long long)pause[i], (long long)stopped[i], (long long)saved[i], (long long)size[i],
			(long long)first[i]);
	}
	if (rc == 0) {
		int64_t p = median(pause, runs), f = median(first, runs);
		printf("touched_mib %u\n", mib);
		printf("cold_boot_first_exec_ms %lld\n", (long long)cold);
		printf("pause_ms %lld\n", (long long)p);
		printf("pause_stopped_ms %lld\n", (long long)median(stopped, runs));
		printf("pause_save_ms %lld\n", (long long)median(saved, runs));
		printf("pause_size_bytes %lld\n", (long long)median(size, runs));
		printf("resume_first_exec_ms %lld\n", (long long)f);
		printf("pause_over_cold_boot %.3f (target <= 0.5)\n", (double)p / (double)cold);
		printf("resume_first_exec_over_cold_boot %.3f (target <= 0.15)\n", (double)f / (double)cold);
	}
	sbx_error_free(&err);
	sbx_vm_proc_free(toucher);
	free(pause);
	free(stopped);
	free(first);
	free(size);
	free(saved);
	sbx_vm_stop(vm, sbx_now_ms() + 5000);
	rmdir(dir_base);
	return rc;
}
