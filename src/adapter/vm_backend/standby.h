/* Standby VMs (config `standby`): for each of the last STANDBY_IMAGES
 * images a sandbox of the default shape was created from, one QEMU
 * launched ahead for the image's copy-on-write template, waiting before it
 * loads it.  The next create of that image loads the template into it and
 * sends CONFIG: QEMU's own start (most of a restore's time under TCG) is
 * off its path.  A standby holds no guest RAM of its own and runs no vCPU;
 * it is no sandbox (max_concurrent_sandboxes and the memory budget do not
 * count it), is taken under the lock (never handed out twice), is stopped
 * when its image is gone, and stops with the daemon. */
#ifndef SBX_ADAPTER_VM_BACKEND_STANDBY_H
#define SBX_ADAPTER_VM_BACKEND_STANDBY_H

#include <stdbool.h>

#define STANDBY_IMAGES 4

/* Launches one standby VM of an image (NULL when it cannot: logged). */
typedef void *(*standby_make_fn)(void *ctx, const char *image, const char *ref);
typedef void (*standby_discard_fn)(void *ctx, void *vm);
/* True when a waiting VM can no longer serve (its image was removed). */
typedef bool (*standby_stale_fn)(void *ctx, void *vm);

struct standby;

/* NULL when it could not start (logged: creates restore as without it). */
struct standby *standby_start(standby_make_fn make, standby_discard_fn discard, standby_stale_fn stale, void *ctx);
/* The waiting VM of the image, or NULL. */
void *standby_take(struct standby *sb, const char *image);
/* A create of the image was served: launch its next standby in the
 * background unless one waits (the least recently used image's is
 * stopped when STANDBY_IMAGES others have one). */
void standby_want(struct standby *sb, const char *image, const char *ref);
/* Whether a VM of some image waits (false for a NULL standby). */
bool standby_ready(struct standby *sb);
/* Sets the standby gauge: 1 per image whose QEMU waits, 0 for the others
 * seen before; nothing for a NULL standby. */
void standby_collect_metrics(struct standby *sb);
/* Lets a launch in progress finish, stops every waiting VM, joins. */
void standby_stop(struct standby *sb);

#endif
