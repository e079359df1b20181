#include "layer_builder.h"

#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

int tl_build(const struct tl_entry *entries, size_t n, enum tl_compression c)
{
	char tmpl[] = "/tmp/sbx-layer-XXXXXX";
	int fd = mkstemp(tmpl);
	if (fd < 0)
		return -1;
	unlink(tmpl);
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	if (c == TL_GZIP)
		archive_write_add_filter_gzip(a);
	else if (c == TL_ZSTD)
		archive_write_add_filter_zstd(a);
	if (archive_write_open_fd(a, fd) != ARCHIVE_OK)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		const struct tl_entry *t = &entries[i];
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, t->path);
		archive_entry_set_uid(e, t->uid);
		archive_entry_set_gid(e, t->gid);
		archive_entry_set_mtime(e, t->mtime ? t->mtime : 1000000000, 0);
		switch (t->kind) {
		case TL_FILE:
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_perm(e, t->mode ? t->mode : 0644);
			archive_entry_set_size(e, t->data ? (la_int64_t)strlen(t->data) : 0);
			break;
		case TL_DIR:
			archive_entry_set_filetype(e, AE_IFDIR);
			archive_entry_set_perm(e, t->mode ? t->mode : 0755);
			break;
		case TL_SYMLINK:
			archive_entry_set_filetype(e, AE_IFLNK);
			archive_entry_set_perm(e, 0777);
			archive_entry_set_symlink(e, t->data);
			break;
		case TL_HARDLINK:
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_perm(e, 0644);
			archive_entry_set_hardlink(e, t->data);
			break;
		case TL_FIFO:
			archive_entry_set_filetype(e, AE_IFIFO);
			archive_entry_set_perm(e, t->mode ? t->mode : 0600);
			break;
		case TL_CHR:
			archive_entry_set_filetype(e, AE_IFCHR);
			archive_entry_set_perm(e, t->mode ? t->mode : 0666);
			archive_entry_set_rdev(e, makedev(1, 3));
			break;
		}
		if (t->xattr != NULL) {
			const char *eq = strchr(t->xattr, '=');
			char key[128];
			snprintf(key, sizeof(key), "%.*s", (int)(eq - t->xattr), t->xattr);
			archive_entry_xattr_add_entry(e, key, eq + 1, strlen(eq + 1));
		}
		int rc = archive_write_header(a, e);
		if (rc == ARCHIVE_OK && t->kind == TL_FILE && t->data != NULL)
			rc = archive_write_data(a, t->data, strlen(t->data)) == (la_ssize_t)strlen(t->data) ? ARCHIVE_OK
													 : ARCHIVE_FATAL;
		archive_entry_free(e);
		if (rc != ARCHIVE_OK)
			goto fail;
	}
	if (archive_write_close(a) != ARCHIVE_OK)
		goto fail;
	archive_write_free(a);
	lseek(fd, 0, SEEK_SET);
	return fd;
fail:
	fprintf(stderr, "# layer builder: %s\n", archive_error_string(a));
	archive_write_free(a);
	close(fd);
	return -1;
}
