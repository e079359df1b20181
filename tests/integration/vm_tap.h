/* What the VM integration tests share: TAP result lines and a shell
 * command's output from a VM.  Each test is its own executable; this file
 * and vm_tap.c are linked into each. */
#ifndef SBX_TESTS_VM_TAP_H
#define SBX_TESTS_VM_TAP_H

#include <stdbool.h>
#include <stdint.h>

#include "vm/vm.h"

/* The number of the last result printed and how many failed. */
extern int test_no, failures;

/* Prints "ok N - name" or "not ok N - name" and "# why". */
void result(bool ok, const char *name, const char *why);

/* Runs `sh -c cmd` in vm; returns its stdout (malloc'd, at most 4095
 * bytes) or NULL when it could not run, failed or passed timeout_ms (the
 * cause on stderr). */
char *vm_sh(struct sbx_vm *vm, const char *cmd, int64_t timeout_ms);

#endif
