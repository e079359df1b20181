/* The warm pool (config warm_pool, warm_pool_max): per image, that many
 * VMs restored from the image's template and parked before their CONFIG
 * (vm.h: sbx_vm_options.park), for creates to take.  A background thread
 * keeps the pool filled: a replacement at once when none of that image is
 * left, else two seconds after the take, so that the sandbox just handed
 * out has the host's cores for its first commands.  A VM is taken under
 * the pool's lock, so never handed out twice.  Parked VMs are no
 * sandboxes yet: max_concurrent_sandboxes does not count them.  They are
 * stopped with the pool (the daemon's end). */
#ifndef SBX_ADAPTER_VM_BACKEND_WARM_POOL_H
#define SBX_ADAPTER_VM_BACKEND_WARM_POOL_H

#include "adapter/config/config.h"

/* Boots one parked VM of an image (NULL on failure, logged by it). */
typedef void *(*warm_pool_make_fn)(void *ctx, const char *image, const char *ref);
typedef void (*warm_pool_discard_fn)(void *ctx, void *vm);

struct warm_pool;

/* NULL when the configuration asks for no pool (or it could not start:
 * logged; creates then boot as without it). */
struct warm_pool *warm_pool_start(const struct sbx_config *cfg, warm_pool_make_fn make, warm_pool_discard_fn discard,
				  void *ctx);
/* A parked VM of the image, or NULL when none waits. */
void *warm_pool_take(struct warm_pool *p, const char *image);
/* The parked VMs of every image (0 for a NULL pool). */
uint32_t warm_pool_ready(struct warm_pool *p);
/* Sets the pool's gauges (parked VMs and the target, per image); nothing
 * for a NULL pool. */
void warm_pool_collect_metrics(struct warm_pool *p);
/* Lets a boot in progress finish, stops every parked VM, joins. */
void warm_pool_stop(struct warm_pool *p);

#endif
