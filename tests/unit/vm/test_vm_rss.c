#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "vm/vm_rss.h"

static char root[] = "/tmp/sbx-test-vm-rss-XXXXXX";

/* A fake /proc entry: stat (with `comm`) and, for a process with rss_kib,
 * status. */
static int add(int pid, const char *comm, int ppid, long rss_kib)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%d", root, pid);
	if (mkdir(path, 0755) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/%d/stat", root, pid);
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return -1;
	fprintf(f, "%d (%s) S %d 1 1 0 -1 4194560 0 0\n", pid, comm, ppid);
	fclose(f);
	if (rss_kib < 0)
		return 0;
	snprintf(path, sizeof(path), "%s/%d/status", root, pid);
	if ((f = fopen(path, "w")) == NULL)
		return -1;
	fprintf(f, "Name:\t%s\nState:\tS (sleeping)\nVmPeak:\t  999999 kB\nVmRSS:\t %8ld kB\nThreads:\t4\n", comm, rss_kib);
	fclose(f);
	return 0;
}

TEST(vm_rss_sums_the_daemons_qemu_descendants)
{
	CHECK(mkdtemp(root) != NULL);
	CHECK_INT(add(100, "sandbox-libkrun", 1, 50000), 0);  /* the daemon: not a VM */
	CHECK_INT(add(101, "sbx-keeper", 100, 1000), 0);
	CHECK_INT(add(102, "qemu-system-x86", 101, 200000), 0); /* under its keeper */
	CHECK_INT(add(103, "qemu-system-x86", 100, 3000), 0);   /* a direct child */
	CHECK_INT(add(104, "qemu-system-x86", 1, 777777), 0);   /* another daemon's */
	CHECK_INT(add(105, "odd (name) x", 103, 5), 0);         /* parentheses in comm */
	CHECK_INT(add(106, "qemu-system-x86", 105, 10), 0);
	CHECK_INT(add(107, "qemu-system-x86", 100, -1), 0);     /* exited before its status was read */
	char self[300];
	snprintf(self, sizeof(self), "%s/self", root);
	CHECK(mkdir(self, 0755) == 0); /* not a pid */
	uint64_t bytes = 1;
	unsigned vms = 0;
	sbx_error_t err = NULL;
	CHECK_INT(sbx_vm_rss_total(root, 100, &bytes, &vms, &err), 0);
	CHECK_INT(vms, 4);
	CHECK_INT(bytes, (200000 + 3000 + 10) * 1024ull);
	CHECK_INT(sbx_vm_rss_total(root, 999, &bytes, &vms, &err), 0);
	CHECK_INT(vms, 0);
	CHECK_INT(bytes, 0);
	CHECK_INT(sbx_vm_rss_total("/nonexistent-proc", 100, &bytes, &vms, &err), -1);
	sbx_error_free(&err);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	CHECK_INT(system(cmd), 0);
}
