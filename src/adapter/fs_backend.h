/* What fs::* need beyond the request logic, as a table of functions:
 * fs_vm.c implements it with the VM layer and the engine's byte channels;
 * an adapter without one (the fuzz targets, unit tests) answers S300.
 * Failures keep the guest's errno and message; handlers_fs.c gives them
 * their S-code (fs_errors.h). */
#ifndef SBX_ADAPTER_FS_BACKEND_H
#define SBX_ADAPTER_FS_BACKEND_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "proto/proto_msg.h"

struct sbx_fs_write_req {
	const char *path;
	uint32_t mode;
	bool parents;
	const void *data; /* inline bytes, or NULL to read `channel` */
	size_t len;
	json_t *channel;  /* a StreamChannelRef to read the bytes from */
};

struct sbx_fs_ops {
	/* One request/answer operation (FS_LS ... FS_SED); returns its reply
	 * in the contract's shape. */
	json_t *(*call)(void *ctx, void *vm, const struct proto_msg *req, sbx_error_t *err);
	/* fs::write; *written is the byte count. */
	int (*write)(void *ctx, void *vm, const struct sbx_fs_write_req *w, uint64_t *written, sbx_error_t *err);
	/* fs::read: returns the reply; a background pump then streams the file
	 * into the channel and calls done(done_ud) once it no longer uses vm.
	 * On failure done is not called. */
	json_t *(*read)(void *ctx, void *vm, const char *path, void (*done)(void *ud), void *done_ud,
			sbx_error_t *err);
};

struct sbx_fs_host {
	const struct sbx_fs_ops *ops;
	void *ctx;
};

#endif
