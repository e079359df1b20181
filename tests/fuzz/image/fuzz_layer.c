/* A whole image layer from a hostile registry: the bytes go through
 * libarchive (tar, gzip, zstd) and the real layer-apply code into a fresh
 * root (layer_scratch.h).  An input holding LAYER_SEP is two layers applied
 * in turn.  After each step nothing outside the root may have changed (no
 * entry, link or symlink reached out), and the files inside stay within
 * the limits (scratch_limits).  A last layer of whiteouts, then an opaque marker, must
 * empty the root.  The mutator keeps plain tar headers' checksums right,
 * so mutations reach the layer code instead of libarchive's checksum test. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/log.h"
#include "image/layer_apply.h"
#include "layer_scratch.h"

#define LAYER_SEP "SBXLAYER"

static const char *root;

static int memfd_with(const void *data, size_t len)
{
	int fd = memfd_create("layer", MFD_CLOEXEC);
	if (fd < 0)
		scratch_die("memfd_create");
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, (const char *)data + off, len - off);
		if (n <= 0)
			scratch_die("write memfd");
		off += (size_t)n;
	}
	if (lseek(fd, 0, SEEK_SET) < 0)
		scratch_die("lseek");
	return fd;
}

static int apply(struct sbx_rootfs *r, int fd, sbx_error_t *err)
{
	int rc = sbx_rootfs_apply_layer(r, fd, err);
	close(fd);
	scratch_check();
	return rc;
}

/* A tar of empty files with these names, as Docker writes whiteouts. */
static int whiteout_layer(char names[][256], size_t n)
{
	int fd = memfd_create("whiteouts", MFD_CLOEXEC);
	struct archive *a = archive_write_new();
	/* Names are bytes (the fuzzed layer's need not be UTF-8). */
	if (fd < 0 || a == NULL || archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_set_options(a, "hdrcharset=BINARY") != ARCHIVE_OK || archive_write_open_fd(a, fd) != ARCHIVE_OK)
		scratch_die("whiteout layer");
	struct archive_entry *e = archive_entry_new();
	for (size_t i = 0; i < n; i++) {
		archive_entry_clear(e);
		archive_entry_set_pathname(e, names[i]);
		archive_entry_set_filetype(e, AE_IFREG);
		archive_entry_set_perm(e, 0644);
		archive_entry_set_size(e, 0);
		if (archive_write_header(a, e) != ARCHIVE_OK)
			scratch_die("whiteout entry");
	}
	archive_entry_free(e);
	if (archive_write_close(a) != ARCHIVE_OK)
		scratch_die("whiteout layer close");
	archive_write_free(a);
	if (lseek(fd, 0, SEEK_SET) < 0)
		scratch_die("lseek");
	return fd;
}

/* The root's entries; names[] gets a whiteout for at most cap of them.  A
 * name that fits none stays: too long, or itself whiteout-shaped (".wh.x"
 * comes from an entry's parent; ".wh..wh.x" is AUFS metadata, not a
 * whiteout, in every runtime). */
static size_t list_root(char names[][256], size_t cap, size_t *total)
{
	DIR *d = opendir(root);
	if (d == NULL)
		scratch_die("opendir root");
	size_t n = 0;
	*total = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		(*total)++;
		if (n < cap && strlen(de->d_name) <= 255 - 4 && strncmp(de->d_name, ".wh.", 4) != 0)
			snprintf(names[n++], 256, ".wh.%s", de->d_name);
	}
	closedir(d);
	return n;
}

/* A later layer removes what this one wrote.  Removal may refuse a tree
 * deeper than the layer code walks (symlinked parents can build one); that
 * is its only excuse for leaving anything behind. */
static void whiteout_everything(struct sbx_rootfs *r)
{
	static char names[512][256];
	size_t total;
	size_t n = list_root(names, 512, &total);
	sbx_error_t err = NULL;
	if (apply(r, whiteout_layer(names, n), &err) < 0) {
		if (strstr(sbx_error_msg(err), "too deep") == NULL) {
			fprintf(stderr, "fuzz_layer: whiteouts failed: %s\n", sbx_error_msg(err));
			abort();
		}
		sbx_error_free(&err);
		return;
	}
	size_t left;
	list_root(names, 512, &left);
	if (left != total - n) {
		fprintf(stderr, "fuzz_layer: %zu of %zu whited-out entries survived\n", left - (total - n), n);
		abort();
	}
	snprintf(names[0], 256, ".wh..wh..opq");
	if (apply(r, whiteout_layer(names, 1), &err) < 0) {
		if (strstr(sbx_error_msg(err), "too deep") == NULL) {
			fprintf(stderr, "fuzz_layer: opaque marker failed: %s\n", sbx_error_msg(err));
			abort();
		}
		sbx_error_free(&err);
		return;
	}
	list_root(names, 512, &left);
	if (left != 0) {
		fprintf(stderr, "fuzz_layer: %zu entries survived an opaque root\n", left);
		abort();
	}
}

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

/* Rewrites the checksum of every ustar header at a 512-byte boundary of
 * one layer (compressed layers have none). */
static void fix_checksums(uint8_t *p, size_t len)
{
	for (size_t off = 0; off + 512 <= len; off += 512) {
		uint8_t *h = p + off;
		if (memcmp(h + 257, "ustar", 5) != 0)
			continue;
		memset(h + 148, ' ', 8);
		unsigned sum = 0;
		for (size_t i = 0; i < 512; i++)
			sum += h[i];
		char field[8];
		snprintf(field, sizeof(field), "%06o", sum & 0777777);
		memcpy(h + 148, field, 7); /* six digits, NUL, and the space stays */
	}
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	(void)seed;
	size = LLVMFuzzerMutate(data, size, max_size);
	uint8_t *sep = memmem(data, size, LAYER_SEP, strlen(LAYER_SEP));
	size_t first = sep != NULL ? (size_t)(sep - data) : size;
	fix_checksums(data, first);
	if (sep != NULL)
		fix_checksums(sep + strlen(LAYER_SEP), size - first - strlen(LAYER_SEP));
	return size;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	sbx_log_set_level(SBX_LOG_ERROR);
	root = scratch_create();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	scratch_reset();
	sbx_error_t err = NULL;
	struct sbx_rootfs *r = sbx_rootfs_open(root, &scratch_limits, 0, &err);
	if (r == NULL)
		scratch_die("sbx_rootfs_open");
	const uint8_t *sep = memmem(data, size, LAYER_SEP, strlen(LAYER_SEP));
	size_t first = sep != NULL ? (size_t)(sep - data) : size;
	int rc = apply(r, memfd_with(data, first), &err);
	sbx_error_free(&err);
	if (rc == 0 && sep != NULL) {
		size_t off = first + strlen(LAYER_SEP);
		rc = apply(r, memfd_with(data + off, size - off), &err);
		sbx_error_free(&err);
	}
	if (sbx_rootfs_finish(r, &err) < 0)
		sbx_error_free(&err);
	scratch_check();
	whiteout_everything(r);
	sbx_rootfs_free(r);
	return 0;
}
