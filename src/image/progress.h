/* How long work reports how far it got: `done` of `total` units (total 0
 * when unknown).  Its own header so the registry's client and its HTTP
 * insides share it without including each other. */
#ifndef SBX_IMAGE_PROGRESS_H
#define SBX_IMAGE_PROGRESS_H

#include <stdint.h>

typedef void (*sbx_progress_fn)(void *ud, uint64_t done, uint64_t total);

#endif
