/* Test helper: writes layer archives with libarchive's writer. */
#ifndef SBX_TEST_LAYER_BUILDER_H
#define SBX_TEST_LAYER_BUILDER_H

#include <stdint.h>
#include <sys/types.h>

enum tl_kind { TL_FILE, TL_DIR, TL_SYMLINK, TL_HARDLINK, TL_FIFO, TL_CHR };

struct tl_entry {
	enum tl_kind kind;
	const char *path;
	const char *data;   /* file content, or link target */
	unsigned mode;      /* permission bits; 0 means 0644/0755 */
	unsigned uid, gid;
	int64_t mtime;
	const char *xattr;  /* "user.name=value", optional */
};

enum tl_compression { TL_NONE, TL_GZIP, TL_ZSTD };

/* Writes the entries to a temporary file and returns an fd open at its
 * start (the file is already unlinked), or -1. */
int tl_build(const struct tl_entry *entries, size_t n, enum tl_compression c);

#endif
