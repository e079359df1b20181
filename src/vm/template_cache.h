/* The snapshot templates under <state>/snapshots as a cache: bounded in
 * size (least recently used dropped first; live clones keep their own
 * mapping of a dropped template's RAM), and swept of what can no longer be
 * used: templates whose image was removed, of an older format or (under
 * KVM) of another CPU, and the /dev/shm RAM directories of older versions.
 * A template of another QEMU, kernel or boot disk (another build's daemon
 * on this state directory) stays until the bound needs its room. */
#ifndef SBX_VM_TEMPLATE_CACHE_H
#define SBX_VM_TEMPLATE_CACHE_H

#include <stdint.h>

/* Marks a template used now (its directory's modification time). */
void template_cache_touch(const char *dir);
/* Drops the least recently used templates until they take at most
 * `limit_mib` on disk ("ram" and state files; each process also holds a
 * memfd of the RAM of each template it restored from, vm/template_memfd.h,
 * gone with the template); 0 = no bound.  Returns how
 * many went. */
unsigned template_cache_trim(uint64_t limit_mib);
/* Removes what can no longer be used (above).  Returns how many
 * templates went. */
unsigned template_cache_sweep(void);

#endif
