/* A VM's control channel, for the files of src/vm that drive it beside
 * vm.c (vm_fs.c). */
#ifndef SBX_VM_VM_CHAN_H
#define SBX_VM_VM_CHAN_H

#include "vm/channel.h"
#include "vm/vm.h"

struct chan *sbx_vm_chan(struct sbx_vm *vm);

#endif
