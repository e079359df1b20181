/* The host's TSC rate remembered per boot of the host (vm/tsc.h): measuring
 * it costs every process 20 ms, and a boot's rate does not change.  The
 * file holds "<boot_id> <kHz>\n"; another boot's figure is never used. */
#ifndef SBX_VM_TSC_CACHE_H
#define SBX_VM_TSC_CACHE_H

#include <stdbool.h>

/* The kHz remembered in `path` for `boot_id`, or 0 (no file, another
 * boot, or anything but a plausible rate: the file is not trusted). */
unsigned tsc_cache_read(const char *path, const char *boot_id);
/* Replaces `path` atomically (best effort: 0 or -1, nothing reported). */
int tsc_cache_write(const char *path, const char *boot_id, unsigned khz);
/* The host's boot id (/proc/sys/kernel/random/boot_id) into buf[37];
 * false when unreadable. */
bool tsc_cache_boot_id(char buf[37]);

#endif
