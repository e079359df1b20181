/* Runs a host tool (mkfs.erofs, mkfs.ext4) and reports its failure with the
 * tail of its output. */
#ifndef SBX_VM_RUN_TOOL_H
#define SBX_VM_RUN_TOOL_H

#include "common/error.h"

/* argv[0] is looked up with sbx_tool_find (PATH, then the sbin
 * directories; common/tool_path.h).  Output is discarded unless it fails. */
int run_tool(char *const argv[], sbx_error_t *err);

#endif
