#ifndef SBX_VM_CLI_H
#define SBX_VM_CLI_H
/* `sandbox-libkrun vm run ...`: boot a VM and run one command in it. */
int sbx_cmd_vm(int argc, char **argv);
#endif
