#ifndef SBX_CMD_VM_H
#define SBX_CMD_VM_H
/* `sandbox-libkrun vm run ...`: boot a VM and run one command in it. */
int sbx_cmd_vm(int argc, char **argv);
#endif
