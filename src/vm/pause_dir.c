/* A paused VM's directory (pause_dir.h). */
#include "vm/pause_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/path.h"
#include "vm/disk.h"

static const char *const names[] = { PAUSE_STATE, PAUSE_SCRATCH, PAUSE_IMAGE,   PAUSE_CONSOLE,
				     PAUSE_STORE_IMAGE, PAUSE_VM, PAUSE_VM_TMP, PAUSE_SANDBOX, PAUSE_SANDBOX_NEW,
				     PAUSE_SNAPSHOT, PAUSE_SNAPSHOT_NEW };

int pause_dir_create(const char *dir, sbx_error_t *err)
{
	if (mkdir(dir, 0700) < 0)
		return sbx_error_errno(err, errno, "pause directory %s", dir);
	/* The umask may have taken bits off, never added: 0700 exactly, on
	 * the directory made here (not on a link put in its place). */
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchmod(fd, 0700) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		rmdir(dir);
		return sbx_error_errno(err, e, "pause directory %s", dir);
	}
	close(fd);
	return 0;
}

int pause_dir_new_file(const char *dir, const char *name, sbx_error_t *err)
{
	cleanup_free char *path = sbx_path_join(dir, name);
	if (path == NULL)
		return sbx_error_errno(err, ENOMEM, "pause path");
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return sbx_error_errno(err, errno, "create %s", path);
	return fd;
}

int pause_dir_open(const char *dir, const char *name, sbx_error_t *err)
{
	cleanup_free char *path = sbx_path_join(dir, name);
	if (path == NULL)
		return sbx_error_errno(err, ENOMEM, "pause path");
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return sbx_error_errno(err, errno, "open %s", path);
	return fd;
}

/* A second name for the file, else (another file system) a copy.  A
 * regular file only: a link in its place is refused, never followed. */
static int link_or_copy(const char *from, const char *to, sbx_error_t *err)
{
	struct stat st;
	if (lstat(from, &st) < 0)
		return sbx_error_errno(err, errno, "%s", from);
	if (!S_ISREG(st.st_mode))
		return sbx_error_set(err, EINVAL, "%s is not a regular file", from);
	if (link(from, to) == 0)
		return 0;
	if (errno != EXDEV && errno != EPERM)
		return sbx_error_errno(err, errno, "link %s to %s", from, to);
	return disk_clone(from, to, err);
}

int pause_dir_keep(const char *dir, const char *name, const char *from, sbx_error_t *err)
{
	cleanup_free char *path = sbx_path_join(dir, name);
	if (path == NULL)
		return sbx_error_errno(err, ENOMEM, "pause path");
	if (link_or_copy(from, path, err) < 0)
		return -1;
	/* It holds what the guest wrote: the caller's alone.  Through the
	 * name made here, not a link that took the file's place meanwhile. */
	cleanup_close int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchmod(fd, 0600) < 0) {
		int e = errno;
		unlink(path);
		return sbx_error_errno(err, e, "chmod %s", path);
	}
	return 0;
}

int pause_dir_link(const char *dir, const char *name, const char *from, sbx_error_t *err)
{
	cleanup_free char *path = sbx_path_join(dir, name);
	if (path == NULL)
		return sbx_error_errno(err, ENOMEM, "pause path");
	if (link(from, path) < 0)
		return sbx_error_errno(err, errno, "link %s to %s", from, path);
	return 0;
}

int pause_dir_restore(const char *dir, const char *name, const char *to, sbx_error_t *err)
{
	cleanup_free char *path = sbx_path_join(dir, name);
	if (path == NULL)
		return sbx_error_errno(err, ENOMEM, "pause path");
	return link_or_copy(path, to, err);
}

int pause_dir_write_text(const char *dir, const char *name, const char *text, sbx_error_t *err)
{
	cleanup_close int fd = pause_dir_new_file(dir, name, err);
	if (fd < 0)
		return -1;
	for (size_t off = 0, len = strlen(text); off < len;) {
		ssize_t n = write(fd, text + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return sbx_error_errno(err, n < 0 ? errno : EIO, "write %s", name);
		off += (size_t)n;
	}
	return 0;
}

char *pause_dir_read_text(const char *dir, const char *name, size_t max)
{
	sbx_error_t err = NULL;
	cleanup_close int fd = pause_dir_open(dir, name, &err);
	sbx_error_free(&err);
	if (fd < 0)
		return NULL;
	char *text = malloc(max + 1);
	if (text == NULL)
		return NULL;
	size_t len = 0;
	while (len < max) {
		ssize_t n = read(fd, text + len, max - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	text[len] = '\0';
	return text;
}

uint64_t pause_dir_size(const char *dir)
{
	uint64_t total = 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		/* The image store's file under a second name: its bytes are
		 * the store's, not the pause's. */
		if (strcmp(names[i], PAUSE_STORE_IMAGE) == 0)
			continue;
		cleanup_free char *path = sbx_path_join(dir, names[i]);
		struct stat st;
		if (path != NULL && lstat(path, &st) == 0)
			total += (uint64_t)st.st_blocks * 512;
	}
	return total;
}

void pause_dir_remove(const char *dir)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		cleanup_free char *path = sbx_path_join(dir, names[i]);
		if (path != NULL)
			unlink(path);
	}
	rmdir(dir);
}
