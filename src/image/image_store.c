#include "image/image_store.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/state_dir.h"
#include "common/tool_path.h"
#include "image/digest.h"
#include "image/image_index.h"
#include "image/layer_apply.h"
#include "image/store_space.h"

extern char **environ;

/* snprintf into a path buffer, refusing to truncate. */
static int __attribute__((format(printf, 4, 5))) path_fmt(char *buf, size_t cap, sbx_error_t *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap)
		return sbx_error_set(err, ENAMETOOLONG, "path too long under the image store");
	return 0;
}

char *sbx_image_root(sbx_error_t *err)
{
	char *root = sbx_state_subdir("images", err);
	if (root == NULL)
		return NULL;
	static const char *const subdirs[] = { "/erofs", "/locks", "/tmp" };
	for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
		char *d = NULL;
		if (asprintf(&d, "%s%s", root, subdirs[i]) < 0) {
			free(root);
			sbx_error_errno(err, ENOMEM, "state directory");
			return NULL;
		}
		int rc = sbx_mkdir_p(d, 0700, err);
		free(d);
		if (rc < 0) {
			free(root);
			return NULL;
		}
	}
	return root;
}

char *sbx_image_path(const char *root, const char *digest, sbx_error_t *err)
{
	char *p = NULL;
	if (!sbx_digest_valid(digest)) {
		sbx_error_set(err, 0, "'%s' is not a sha256 digest", digest);
		return NULL;
	}
	if (asprintf(&p, "%s/erofs/%s.erofs", root, sbx_digest_hex(digest)) < 0) {
		sbx_error_errno(err, ENOMEM, "image path");
		return NULL;
	}
	return p;
}

static int rm_rf(const char *path, sbx_error_t *err)
{
	/* Our own staging tree: hand it to rm rather than re-walk it here. */
	cleanup_free char *bin = sbx_tool_find("rm", err);
	if (bin == NULL)
		return -1;
	pid_t pid;
	char *argv[] = { "rm", "-rf", "--one-file-system", "--", (char *)path, NULL };
	int rc = posix_spawn(&pid, bin, NULL, NULL, argv, environ);
	if (rc != 0)
		return sbx_error_errno(err, rc, "spawn rm");
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return sbx_error_errno(err, errno, "wait for rm");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return sbx_error_set(err, 0, "cannot remove '%s'", path);
	return 0;
}

static int run_mkfs(const char *work, const char *out, const char *tree, sbx_error_t *err)
{
	char log[4096];
	if (path_fmt(log, sizeof(log), err, "%s/mkfs.log", work) < 0)
		return -1;
	cleanup_free char *bin = sbx_tool_find("mkfs.erofs", err);
	if (bin == NULL)
		return -1;
	posix_spawn_file_actions_t fa;
	int rc = posix_spawn_file_actions_init(&fa);
	if (rc != 0)
		return sbx_error_errno(err, rc, "spawn mkfs.erofs");
	if ((rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)) == 0 &&
	    (rc = posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600)) == 0)
		rc = posix_spawn_file_actions_adddup2(&fa, 1, 2);
	/* Defaults keep the files' owners, modes, mtimes and xattrs. */
	char *argv[] = { "mkfs.erofs", (char *)out, (char *)tree, NULL };
	pid_t pid;
	if (rc == 0)
		rc = posix_spawn(&pid, bin, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		return sbx_error_errno(err, rc, "cannot run %s (install erofs-utils)", bin);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return sbx_error_errno(err, errno, "wait for mkfs.erofs");
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	char tail[512] = "";
	cleanup_close int fd = open(log, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		off_t end = lseek(fd, 0, SEEK_END);
		off_t from = end > (off_t)sizeof(tail) - 1 ? end - (off_t)sizeof(tail) + 1 : 0;
		ssize_t n = pread(fd, tail, sizeof(tail) - 1, from);
		tail[n > 0 ? n : 0] = '\0';
	}
	return sbx_error_set(err, 0, "mkfs.erofs failed: %s", tail);
}

static int write_file(const char *path, const char *data, size_t len, sbx_error_t *err)
{
	cleanup_close int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return sbx_error_errno(err, errno, "create '%s'", path);
	size_t off = 0;
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return sbx_error_errno(err, n < 0 ? errno : EIO, "write '%s'", path);
		off += (size_t)n;
	}
	if (fsync(fd) < 0)
		return sbx_error_errno(err, errno, "fsync '%s'", path);
	return 0;
}

/* Fetches and applies layer i through the file at path. */
static int apply_one(struct sbx_rootfs *r, const struct sbx_layer_source *src, size_t i, const char *path, int space,
		     const char *root, sbx_error_t *err)
{
	int64_t declared = src->declared(src->ud, i);
	if (sbx_store_space_check(space, root, declared > 0 ? (uint64_t)declared : 0, err) < 0)
		return -1;
	cleanup_close int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return sbx_error_errno(err, errno, "create '%s'", path);
	int rc = src->fetch(src->ud, i, fd, err);
	if (rc == 0 && lseek(fd, 0, SEEK_SET) < 0)
		rc = sbx_error_errno(err, errno, "seek");
	if (rc == 0 && (rc = sbx_rootfs_apply_layer(r, fd, err)) < 0)
		sbx_error_prefix(err, "layer %zu", i + 1);
	unlink(path);
	return rc;
}

/* The erofs build's start (start_ms < 0) and end, for a log that no
 * terminal shows progress on: mkfs.erofs takes seconds for a big tree. */
static void log_erofs(const struct sbx_layer_source *src, const char *hex, int64_t start_ms)
{
	if (!src->log_steps || isatty(STDERR_FILENO))
		return;
	char digest[13];
	snprintf(digest, sizeof(digest), "%.12s", hex);
	struct sbx_log_field f[] = { SBX_LF_STR("event", "erofs_build"), SBX_LF_STR("digest", digest),
				     SBX_LF_STR("done", start_ms < 0 ? "false" : "true"),
				     SBX_LF_INT("duration_ms", start_ms < 0 ? 0 : sbx_now_ms() - start_ms) };
	if (start_ms < 0)
		sbx_log_fields(SBX_LOG_INFO, f, 3, "image %s: building its erofs image", digest);
	else
		sbx_log_kv(SBX_LOG_INFO, f, "image %s: erofs image built", digest);
}

/* A layer fetched and unpacked into the tree (seconds for a big one), for
 * a log that no terminal shows progress on. */
static void log_applied(const struct sbx_layer_source *src, const char *hex, size_t i, int64_t start_ms)
{
	if (!src->log_steps || isatty(STDERR_FILENO))
		return;
	size_t n = src->n_layers;
	char digest[13];
	snprintf(digest, sizeof(digest), "%.12s", hex);
	int64_t ms = sbx_now_ms() - start_ms;
	struct sbx_log_field f[] = { SBX_LF_STR("event", "layer_apply"), SBX_LF_STR("digest", digest),
				     SBX_LF_INT("layer", i + 1), SBX_LF_INT("layers", n), SBX_LF_INT("duration_ms", ms) };
	sbx_log_kv(SBX_LOG_INFO, f, "image %s: layer %zu/%zu fetched and unpacked in %lld ms", digest, i + 1, n,
		   (long long)ms);
}

static int build(const char *root, const char *hex, const char *work, const char *config, size_t config_len,
		 const struct sbx_layer_source *src, const struct sbx_image_limits *limits, sbx_error_t *err)
{
	char tree[4096], layer[4096], tmp_img[4096], img[4096], cfg_path[4096];
	if (path_fmt(tree, sizeof(tree), err, "%s/rootfs", work) < 0 ||
	    path_fmt(layer, sizeof(layer), err, "%s/layer", work) < 0 ||
	    path_fmt(tmp_img, sizeof(tmp_img), err, "%s/image.erofs", work) < 0 ||
	    path_fmt(img, sizeof(img), err, "%s/erofs/%s.erofs", root, hex) < 0 ||
	    path_fmt(cfg_path, sizeof(cfg_path), err, "%s/erofs/%s.config.json", root, hex) < 0)
		return -1;
	if (mkdir(work, 0700) < 0 || mkdir(tree, 0755) < 0)
		return sbx_error_errno(err, errno, "mkdir '%s'", work);
	cleanup_close int space = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (space < 0)
		return sbx_error_errno(err, errno, "open '%s'", root);
	struct sbx_rootfs *r = sbx_rootfs_open(tree, limits, 0, err);
	if (r == NULL)
		return -1;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < src->n_layers; i++) {
		int64_t t0 = sbx_now_ms();
		if ((rc = apply_one(r, src, i, layer, space, root, err)) == 0)
			log_applied(src, hex, i, t0);
	}
	if (rc == 0)
		rc = sbx_rootfs_finish(r, err);
	/* The erofs image takes at most about what the tree was charged. */
	if (rc == 0)
		rc = sbx_store_space_check(space, root, sbx_rootfs_charged(r), err);
	sbx_rootfs_free(r);
	int64_t mkfs_ms = sbx_now_ms();
	if (rc == 0) {
		log_erofs(src, hex, -1);
		if ((rc = run_mkfs(work, tmp_img, tree, err)) == 0)
			log_erofs(src, hex, mkfs_ms);
	}
	if (rc == 0)
		rc = write_file(cfg_path, config, config_len, err);
	if (rc == 0) {
		cleanup_close int fd = open(tmp_img, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fsync(fd) < 0)
			rc = sbx_error_errno(err, errno, "fsync '%s'", tmp_img);
	}
	/* The rename is the commit point: readers see a whole image or none. */
	if (rc == 0 && rename(tmp_img, img) < 0)
		rc = sbx_error_errno(err, errno, "rename '%s'", tmp_img);
	if (rc == 0) {
		char dir[4096];
		cleanup_close int dfd = -1;
		if (path_fmt(dir, sizeof(dir), err, "%s/erofs", root) < 0)
			rc = -1;
		else if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || fsync(dfd) < 0)
			rc = sbx_error_errno(err, errno, "fsync '%s'", dir);
	}
	return rc;
}

int sbx_store_lock(const char *root, const char *digest, sbx_error_t *err)
{
	if (!sbx_digest_valid(digest))
		return sbx_error_set(err, 0, "'%s' is not a sha256 digest", digest);
	char lock[4096];
	if (path_fmt(lock, sizeof(lock), err, "%s/locks/%s.lock", root, sbx_digest_hex(digest)) < 0)
		return -1;
	cleanup_close int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lfd < 0)
		return sbx_error_errno(err, errno, "open '%s'", lock);
	/* The kernel drops the lock when its holder dies, even by SIGKILL. */
	while (flock(lfd, LOCK_EX) < 0)
		if (errno != EINTR)
			return sbx_error_errno(err, errno, "lock '%s'", lock);
	return sbx_steal_fd(lfd);
}

int sbx_store_build(const char *root, const char *digest, const char *config, size_t config_len,
		    const struct sbx_layer_source *src, const struct sbx_image_limits *limits, int *built,
		    sbx_error_t *err)
{
	*built = 0;
	if (!sbx_digest_valid(digest))
		return sbx_error_set(err, 0, "'%s' is not a sha256 digest", digest);
	const char *hex = sbx_digest_hex(digest);
	char img[4096], work[4096];
	if (path_fmt(img, sizeof(img), err, "%s/erofs/%s.erofs", root, hex) < 0 ||
	    path_fmt(work, sizeof(work), err, "%s/tmp/%s", root, hex) < 0)
		return -1;
	if (access(img, F_OK) == 0)
		return 0;
	struct stat st;
	if (lstat(work, &st) == 0) {
		sbx_info("image: removing the leftover of an interrupted build of %s", digest);
		if (rm_rf(work, err) < 0)
			return -1;
	}
	int rc = build(root, hex, work, config, config_len, src, limits, err);
	sbx_error_t cleanup_err = NULL;
	if (rm_rf(work, &cleanup_err) < 0) {
		sbx_warn("image: %s", sbx_error_msg(cleanup_err));
		sbx_error_free(&cleanup_err);
	}
	if (rc == 0)
		*built = 1;
	return rc;
}

int sbx_store_delete_unused(const char *root, const char *digest, sbx_error_t *err)
{
	cleanup_close int lock = sbx_store_lock(root, digest, err);
	if (lock < 0)
		return -1;
	struct sbx_index idx;
	if (sbx_index_read(root, &idx, err) < 0)
		return -1;
	int used = sbx_index_uses_digest(&idx, digest);
	sbx_index_free(&idx);
	if (used)
		return 0;
	const char *hex = sbx_digest_hex(digest);
	char img[4096], cfg[4096];
	if (path_fmt(img, sizeof(img), err, "%s/erofs/%s.erofs", root, hex) < 0 ||
	    path_fmt(cfg, sizeof(cfg), err, "%s/erofs/%s.config.json", root, hex) < 0)
		return -1;
	if (unlink(img) < 0 && errno != ENOENT)
		return sbx_error_errno(err, errno, "delete '%s'", img);
	if (unlink(cfg) < 0 && errno != ENOENT)
		return sbx_error_errno(err, errno, "delete '%s'", cfg);
	return 0;
}
