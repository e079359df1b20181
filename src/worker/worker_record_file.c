#include "worker/worker_record_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/cleanup_json.h"
#include "common/scodes.h"
#include "common/state_dir.h"
#include "common/strv.h"
#include "worker/worker_record.h"
#include "worker/worker_record_json.h"

#define RECORD_MAX (1 << 20) /* worker.json holds a manifest's worth of env and scripts */

static int record_path(const char *worker, char *dir, char *path, sbx_error_t *err)
{
	if (worker_dir(worker, dir, PATH_MAX, err) < 0)
		return -1;
	int n = snprintf(path, PATH_MAX, "%s/" WORKER_RECORD_FILE, dir);
	if (n < 0 || n >= PATH_MAX)
		return sbx_error_set(err, ENAMETOOLONG, "worker record of %s: path too long", worker);
	return 0;
}

int worker_record_load(const char *worker, struct worker_record *out, sbx_error_t *err)
{
	memset(out, 0, sizeof(*out));
	char dir[PATH_MAX], path[PATH_MAX];
	if (record_path(worker, dir, path, err) < 0)
		return -1;
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return sbx_error_errno(err, errno, "worker %s", worker);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return sbx_error_errno(err, errno, "stat %s", path);
	if (!S_ISREG(st.st_mode) || st.st_size > RECORD_MAX)
		return sbx_error_set(err, EINVAL, "%s: not a regular file of at most %d bytes", path, RECORD_MAX);
	json_error_t jerr;
	cleanup_json json_t *j = json_loadfd(fd, JSON_REJECT_DUPLICATES, &jerr);
	if (j == NULL)
		return sbx_error_set(err, EINVAL, "%s: %s", path, jerr.text);
	if (worker_record_from_json(j, out, err) < 0)
		return sbx_error_prefix(err, "%s", path);
	if (strcmp(out->worker, worker) != 0) {
		worker_record_free(out);
		return sbx_error_set(err, EINVAL, "%s names another worker", path);
	}
	return 0;
}

/* Writes all of `text` to a new temp file in `dir`, then renames it over
 * `path`: a reader sees the old record or the new one, never a mix. */
static int write_atomic(const char *dir, const char *path, const char *text, sbx_error_t *err)
{
	char tmp[PATH_MAX];
	int n = snprintf(tmp, sizeof(tmp), "%s/.worker.json.XXXXXX", dir);
	if (n < 0 || n >= (int)sizeof(tmp))
		return sbx_error_set(err, ENAMETOOLONG, "%s: path too long", dir);
	cleanup_close int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return sbx_error_errno(err, errno, "create a temp file in %s", dir);
	size_t len = strlen(text), off = 0;
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			sbx_error_errno(err, w < 0 ? errno : EIO, "write %s", tmp);
			goto fail;
		}
		off += (size_t)w;
	}
	if (fsync(fd) < 0) {
		sbx_error_errno(err, errno, "fsync %s", tmp);
		goto fail;
	}
	if (rename(tmp, path) < 0) {
		sbx_error_errno(err, errno, "rename %s to %s", tmp, path);
		goto fail;
	}
	return 0;
fail:
	unlink(tmp);
	return -1;
}

int worker_record_save(const struct worker_record *r, sbx_error_t *err)
{
	char dir[PATH_MAX], path[PATH_MAX];
	if (record_path(r->worker, dir, path, err) < 0)
		return -1;
	if (sbx_mkdir_p(dir, 0700, err) < 0)
		return -1;
	cleanup_json json_t *j = worker_record_to_json(r, err);
	if (j == NULL)
		return -1;
	cleanup_free char *text = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
	if (text == NULL)
		return sbx_error_set(err, ENOMEM, "worker record of %s", r->worker);
	return write_atomic(dir, path, text, err);
}
