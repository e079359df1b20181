/* The first line of a sandbox's console log as `logs` prints it
 * (control/): how its VM booted and when, made where the boot mode is
 * chosen (vm_backend_boot.c). */
#ifndef SBX_ADAPTER_VM_BACKEND_BOOT_LINE_H
#define SBX_ADAPTER_VM_BACKEND_BOOT_LINE_H

#include <stdbool.h>
#include <stdint.h>

#define BOOT_LINE_MAX 128

/* "restore of template 1a2b3c4d5e6f at 2026-12-03T18:09:27.123Z" (mode
 * "restore"), "cold at ..." or "cold, saved as template ... at ..." (mode
 * "cold"), "pool (template ...) at ..." or "standby (cold) at ..." (any
 * other mode: its VM restored from that template or booted cold).
 * template_key: hex (its first 12 digits shown), or NULL; saved: the boot
 * made that template; unix_ms: CLOCK_REALTIME, shown in UTC. */
void boot_line_format(char out[BOOT_LINE_MAX], const char *mode, const char *template_key, bool saved,
		      int64_t unix_ms);

#endif
