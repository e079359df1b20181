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
#include <sys/types.h>

#include "common/error.h"
#include "proto/proto_msg.h"

struct sbx_fs_write_req {
	const char *path;
	uint32_t mode;
	bool parents;
	const void *data; /* inline bytes, or NULL to read `channel` or `source` */
	size_t len;
	json_t *channel;  /* a StreamChannelRef to read the bytes from */
	/* Else the bytes come from source(): >0 bytes at *data (valid until
	 * the next call), 0 at the end, -1 with *err (the write is then
	 * cancelled: nothing replaced). */
	ssize_t (*source)(void *ud, const void **data, sbx_error_t *err);
	void *source_ud;
};

/* Takes the bytes of a file read with read_to(), in order; -1 with *err
 * stops the read. */
typedef int (*sbx_fs_sink_fn)(void *ud, const void *data, size_t len, sbx_error_t *err);

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
	/* Reads a whole file into sink() on the caller's thread (the operator's
	 * cp: no engine channel); *size is the size the guest gave at open. */
	int (*read_to)(void *ctx, void *vm, const char *path, sbx_fs_sink_fn sink, void *ud, uint64_t *size,
		       sbx_error_t *err);
};

struct sbx_fs_host {
	const struct sbx_fs_ops *ops;
	void *ctx;
};

#endif
