/* The `vm run --share HOST:GUEST[:ro|:rw]` argument. */
#ifndef SBX_VM_SHARE_ARG_H
#define SBX_VM_SHARE_ARG_H

#include "common/error.h"
#include "vm/vm.h"

/* Splits s in place (HOST ends at the first ':'; a final ":ro" or ":rw"
 * is the mode, rw by default); out borrows from s.  Both paths must be
 * absolute. */
int share_arg_parse(char *s, struct sbx_vm_share *out, sbx_error_t *err);

#endif
