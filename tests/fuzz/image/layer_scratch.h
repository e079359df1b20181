/* The scratch tree of fuzz_image_layer: a fresh directory (under /dev/shm
 * when writable) holding root/, where the layers go, and sentinel/keep
 * beside it, which no layer may touch.  A failed check aborts. */
#ifndef SBX_FUZZ_LAYER_SCRATCH_H
#define SBX_FUZZ_LAYER_SCRATCH_H

#include "image/image_config.h"

/* The fuzzed image's limits: small, so that an input that is all entries
 * or one huge sparse file is refused at once instead of running into the
 * fuzzer's timeout. */
extern const struct sbx_image_limits scratch_limits;

/* Creates the tree (removed at exit; a later run removes one left by a run
 * that ended on a finding) and returns the root's path. */
const char *scratch_create(void);
/* Empties the root. */
void scratch_reset(void);
/* Nothing beside the root changed, and the root's regular files stay
 * within scratch_limits' bytes. */
void scratch_check(void);
/* Aborts with what failed and errno. */
void scratch_die(const char *what) __attribute__((noreturn));

#endif
