/* The guest's wall clock and kernel RNG set from the host's: at CONFIG
 * (boot_config.c) and again at RESUMED (dispatch.c), when the VM's memory
 * came back from a paused state, its clock behind by the pause and its
 * CRNG state read back from the host's disk. */
#ifndef SBX_GUEST_CLOCK_RNG_H
#define SBX_GUEST_CLOCK_RNG_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Sets CLOCK_REALTIME to realtime_ns (0 = keep). */
int guest_set_clock(uint64_t realtime_ns, sbx_error_t *err);
/* Mixes n host bytes into the kernel's pool (credited) and reseeds the
 * CRNG from it; n == 0 does nothing. */
int guest_seed_rng(const uint8_t *p, size_t n, sbx_error_t *err);

#endif
