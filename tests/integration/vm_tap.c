/* TAP lines and shell commands for the VM integration tests (vm_tap.h). */
#include "vm_tap.h"

#include <stdio.h>
#include <stdlib.h>

int test_no, failures;

void result(bool ok, const char *name, const char *why)
{
	printf("%s %d - %s\n", ok ? "ok" : "not ok", ++test_no, name);
	if (!ok) {
		printf("# %s\n", why != NULL ? why : "");
		failures++;
	}
	fflush(stdout);
}

char *vm_sh(struct sbx_vm *vm, const char *cmd, int64_t timeout_ms)
{
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	sbx_error_t err = NULL;
	struct sbx_vm_proc *p = sbx_vm_spawn(vm, argv, NULL, NULL, false, &err);
	char *out = calloc(1, 4096);
	size_t len = 0;
	int64_t deadline = sbx_now_ms() + timeout_ms;
	while (p != NULL && out != NULL && len < 4095) {
		int fd;
		ssize_t n = sbx_vm_proc_read(p, &fd, out + len, 4095 - len, deadline, &err);
		if (n <= 0)
			break;
		if (fd == 1)
			len += (size_t)n;
	}
	int status = -1;
	if (p == NULL || out == NULL || sbx_vm_proc_wait(p, deadline, &status, &err) < 0 || status != 0) {
		fprintf(stderr, "sh %s: %s (status %d)\n", cmd, sbx_error_msg(err), status);
		free(out);
		out = NULL;
	}
	sbx_vm_proc_free(p);
	sbx_error_free(&err);
	return out;
}
