/* The guest's CONFIG (vm_internal.h vm_send_config): hostname, boot env,
 * user, limits, the host's clock, fresh entropy, the shares and the
 * network.  Below the front (vm.c), the parked VM (vm_park.c) and the
 * template file (vm_template.c), which all send it. */
#include <stdint.h>
#include <sys/random.h>
#include <time.h>

#include "common/scodes.h"
#include "proto/proto_net_addr.h"
#include "vm/channel.h"
#include "vm/virtiofs.h"
#include "vm/vm_internal.h"

int vm_send_config(struct sbx_vm *vm, sbx_error_t *err)
{
	uint8_t entropy[64];
	if (getrandom(entropy, sizeof(entropy), 0) != sizeof(entropy))
		return sbx_error_scode(err, SBX_S_VM_BOOT, "getrandom failed");
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct proto_config cfg = {
		.hostname = vm->hostname,
		.env = vm->env,
		.memory_bytes = vm->memory_bytes,
		.nofile = vm->nofile,
		.realtime_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec,
		.entropy = entropy,
		.entropy_len = sizeof(entropy),
		.user = vm->user,
		.pids_max = vm->pids_max,
	};
	struct proto_share shares[SBX_VM_MAX_SHARES];
	virtiofs_config(&vm->fs, shares);
	cfg.shares = shares;
	cfg.n_shares = (uint32_t)vm->fs.n;
	if (vm->net_args != NULL) {
		cfg.net_addr = NET_ADDR_GUEST;
		cfg.net_prefix = NET_ADDR_PREFIX;
		cfg.net_gateway = NET_ADDR_GATEWAY;
		cfg.net_dns = NET_ADDR_DNS;
	}
	return chan_send_config(vm->chan, &cfg, err);
}
