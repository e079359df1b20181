/* fs::* over the VM layer and the engine's byte channels (fs_backend.h);
 * the context is the engine client. */
#ifndef SBX_ADAPTER_VM_BACKEND_FS_H
#define SBX_ADAPTER_VM_BACKEND_FS_H

#include "adapter/fs_backend.h"

#define FS_OP_TIMEOUT_MS (10 * 60 * 1000) /* one grep or sed over a large tree */
#define FS_CHUNK_TIMEOUT_MS 60000         /* the guest taking or giving one chunk */

extern const struct sbx_fs_ops vm_backend_fs_ops;

/* vm_backend_fs_read.c */
json_t *vm_backend_fs_read(void *ctx, void *vm, const char *path, void (*done)(void *ud), void *done_ud, sbx_error_t *err);
int vm_backend_fs_read_to(void *vm, const char *path, sbx_fs_sink_fn sink, void *ud, uint64_t *size, sbx_error_t *err);

#endif
