/* The contract's S-codes (contract.md §2, §3) by name, for sbx_error_scode
 * and friends: a misspelt name does not compile, a misspelt "S3OO" would.
 * Their types, prefixes and notes are in adapter/scode.c. */
#ifndef SBX_COMMON_SCODES_H
#define SBX_COMMON_SCODES_H

#define SBX_S_INVALID_REQUEST "S001"   /* validation: the request is wrong */
#define SBX_S_NOT_FOUND "S002"         /* no such sandbox */
#define SBX_S_EXEC_CAP "S003"          /* the sandbox's exec slots are all taken */
#define SBX_S_STOPPED "S004"           /* the sandbox was stopped */
#define SBX_S_IMAGE_UNKNOWN "S100"     /* the image is not in the catalog */
#define SBX_S_IMAGE_MISSING "S101"     /* the operator must add the image */
#define SBX_S_TRANSIENT "S102"         /* retry after a short delay */
#define SBX_S_EXEC_TIMEOUT "S200"      /* exec ran past timeout_ms */
#define SBX_S_FS "S210"                /* other fs failures */
#define SBX_S_FS_NOT_FOUND "S211"
#define SBX_S_FS_WRONG_TYPE "S212"
#define SBX_S_FS_EXISTS "S213"
#define SBX_S_FS_NOT_EMPTY "S214"
#define SBX_S_FS_PERMISSION "S215"
#define SBX_S_FS_IO "S216"
#define SBX_S_FS_BAD_REGEX "S217"
#define SBX_S_FS_CHANNEL "S218"        /* an engine channel broke mid-transfer */
#define SBX_S_FS_UNSUPPORTED "S219"    /* the guest lacks the fs operation */
#define SBX_S_VM_BOOT "S300"           /* the VM did not boot or cannot run */
#define SBX_S_LIMIT "S400"             /* a resource limit was reached */
#define SBX_S_HOST_PATH "S501"         /* worker::*: host_path outside the allowed roots */
#define SBX_S_NOT_PREPARED "S502"      /* worker::*: the worker was never prepared */
#define SBX_S_MANIFEST "S503"          /* worker::*: iii.worker.yaml is refused */
#define SBX_S_BUNDLES_DISABLED "S504"  /* worker::*: III_BUNDLE_WORKERS_DISABLED=1 */
#define SBX_S_AUTH "S505"              /* worker::*: the auth token does not match */
#define SBX_S_WORKER_BOOT "S506"       /* worker::*: the worker VM did not boot */

/* S004 for a paused sandbox (issue 40): adapter/scode.c's envelope drops S004's "already
 * stopped" prefix for details holding SBX_PAUSED_MARK. */
#define SBX_PAUSED_MARK "paused"
#define SBX_PAUSED_FMT "sandbox %s is paused; call sandbox-libkrun::resume"

#endif
