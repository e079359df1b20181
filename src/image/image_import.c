#include "image/image_import.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/tool_path.h"
#include "image/digest.h"
#include "image/image_store.h"
#include "image/layer_apply.h"
#include "image/oci_manifest.h"

struct local_layers {
	const char *dir;
	char (*files)[4096];       /* layer file of each layer, relative to dir */
	char (*digests)[SBX_DIGEST_LEN + 1];
	int64_t *sizes;            /* -1 when unknown */
	size_t n;
	uint64_t max_blob_bytes;
};

/* Opens the regular file rel inside dir as if dir were "/": symlinks in an
 * unpacked archive (docker save links shared layers) cannot reach the
 * host's files.  It is looked at (O_PATH) before it is opened, and only a
 * regular file is: opening a device node can act on the device (a
 * watchdog's arms it), a FIFO's can stall the import. */
static int open_in(const char *dir, const char *rel, sbx_error_t *err)
{
	cleanup_close int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return sbx_error_errno(err, errno, "open '%s'", dir);
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	cleanup_close int pfd = (int)syscall(SYS_openat2, dfd, rel, &how, sizeof(how));
	if (pfd < 0)
		return sbx_error_errno(err, errno, "open '%s' in '%s'", rel, dir);
	struct stat st;
	if (fstat(pfd, &st) < 0)
		return sbx_error_errno(err, errno, "stat '%s' in '%s'", rel, dir);
	if (!S_ISREG(st.st_mode))
		return sbx_error_set(err, 0, "'%s' in '%s' is not a regular file: not opened", rel, dir);
	/* Reopening the descriptor reaches the very inode just checked. */
	char self[64];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	int fd = open(self, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return sbx_error_errno(err, errno, "open '%s' in '%s'", rel, dir);
	return fd;
}

/* Reads a small file of dir (index.json, manifest.json, a config) whole,
 * NUL-terminated, refusing more than a manifest's cap. */
static char *read_small(const char *dir, const char *rel, size_t *len, sbx_error_t *err)
{
	cleanup_close int fd = open_in(dir, rel, err);
	struct stat st;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0) {
		sbx_error_errno(err, errno, "stat '%s'", rel);
		return NULL;
	}
	if (st.st_size > (off_t)SBX_MANIFEST_MAX_BYTES) {
		sbx_error_set(err, 0, "'%s' is larger than %u bytes", rel, SBX_MANIFEST_MAX_BYTES);
		return NULL;
	}
	char *buf = malloc((size_t)st.st_size + 1);
	if (buf == NULL) {
		sbx_error_errno(err, ENOMEM, "read '%s'", rel);
		return NULL;
	}
	ssize_t n = pread(fd, buf, (size_t)st.st_size, 0);
	if (n != (ssize_t)st.st_size) {
		sbx_error_errno(err, n < 0 ? errno : EIO, "read '%s'", rel);
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

/* Copies a blob of dir into fd, hashing it; it must match digest (and size). */
static int copy_verified(const char *dir, const char *src, const char *digest, int64_t size, uint64_t max_blob,
			 int fd, sbx_error_t *err)
{
	if (size >= 0 && (uint64_t)size > max_blob)
		return sbx_error_set(err, 0, "blob %s declares %lld bytes, more than %llu MiB (config key `image_max_blob_mb`)",
				     digest, (long long)size, (unsigned long long)(max_blob >> 20));
	cleanup_close int in = open_in(dir, src, err);
	if (in < 0)
		return -1;
	struct sbx_sha256 *h = sbx_sha256_new(err);
	if (h == NULL)
		return -1;
	char buf[65536], got[SBX_DIGEST_LEN + 1];
	int64_t total = 0;
	int rc = 0;
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = sbx_error_errno(err, errno, "read '%s'", src);
			break;
		}
		if (n == 0)
			break;
		total += n;
		if ((uint64_t)total > max_blob) {
			rc = sbx_error_set(err, 0, "blob '%s' is larger than %llu MiB (config key `image_max_blob_mb`)", src,
					   (unsigned long long)(max_blob >> 20));
			break;
		}
		if ((rc = sbx_sha256_update(h, buf, (size_t)n, err)) < 0)
			break;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(fd, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				rc = sbx_error_errno(err, w < 0 ? errno : EIO, "copy '%s'", src);
				break;
			}
			off += w;
		}
		if (rc < 0)
			break;
	}
	if (rc == 0 && size >= 0 && total != size)
		rc = sbx_error_set(err, 0, "blob %s: %lld bytes, expected %lld", digest, (long long)total, (long long)size);
	if (rc == 0 && (rc = sbx_sha256_final(h, got, err)) == 0 && strcmp(got, digest) != 0)
		rc = sbx_error_set(err, 0, "blob '%s' has digest %s, expected %s", src, got, digest);
	sbx_sha256_free(h);
	return rc;
}

static int fetch_local(void *ud, size_t i, int fd, sbx_error_t *err)
{
	struct local_layers *l = ud;
	return copy_verified(l->dir, l->files[i], l->digests[i], l->sizes[i], l->max_blob_bytes, fd, err);
}

static int64_t declared_local(void *ud, size_t i)
{
	const struct local_layers *l = ud;
	return l->sizes[i];
}

/* Reads a small verified blob of an OCI layout into memory. */
static char *read_blob(const char *dir, const char *digest, int64_t size, size_t *len, sbx_error_t *err)
{
	if (size < 0 || size > (int64_t)SBX_MANIFEST_MAX_BYTES) {
		sbx_error_set(err, 0, "blob %s: bad or too large size", digest);
		return NULL;
	}
	char path[128], got[SBX_DIGEST_LEN + 1];
	snprintf(path, sizeof(path), "blobs/sha256/%s", sbx_digest_hex(digest));
	char *buf = read_small(dir, path, len, err);
	if (buf == NULL)
		return NULL;
	if (*len != (size_t)size)
		sbx_error_set(err, 0, "blob %s: %zu bytes, expected %lld", digest, *len, (long long)size);
	else if (sbx_sha256_buf(buf, *len, got, err) == 0 && strcmp(got, digest) != 0)
		sbx_error_set(err, 0, "blob %s has digest %s", digest, got);
	if (*err != NULL) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int import_oci(const char *dir, const char *ref, const struct sbx_image_limits *limits,
		      struct sbx_image_info *out, sbx_error_t *err)
{
	/* index.json is not content-addressed: read it with a size cap. */
	size_t len;
	char *buf = read_small(dir, "index.json", &len, err);
	if (buf == NULL)
		return -1;
	struct sbx_manifest m = { 0 };
	int rc = sbx_manifest_decode(buf, len, SBX_MT_OCI_INDEX, &m, err);
	free(buf);
	if (rc < 0)
		return sbx_error_prefix(err, "%s/index.json", dir);
	char digest[SBX_DIGEST_LEN + 1] = "";
	/* Narrow indexes down to one image manifest for linux/<host arch>. */
	for (int depth = 0; rc == 0 && m.kind == SBX_MANIFEST_INDEX; depth++) {
		int i = m.n_entries == 1 ? 0 : sbx_manifest_pick_platform(&m, sbx_host_arch(), err);
		if (i < 0 || depth > 4) {
			rc = i < 0 ? -1 : sbx_error_set(err, 0, "indexes nested too deep");
			break;
		}
		struct sbx_descriptor d = m.entries[i];
		sbx_manifest_free(&m);
		size_t blen;
		char *doc = read_blob(dir, d.digest, d.size, &blen, err);
		if (doc == NULL) {
			rc = -1;
			break;
		}
		rc = sbx_manifest_decode(doc, blen, d.media_type, &m, err);
		free(doc);
		snprintf(digest, sizeof(digest), "%s", d.digest);
	}
	if (rc < 0)
		return -1;
	struct local_layers l = { .dir = dir, .n = m.n_entries, .max_blob_bytes = limits->max_blob_bytes };
	l.files = calloc(m.n_entries + 1, sizeof(*l.files));
	l.digests = calloc(m.n_entries + 1, sizeof(*l.digests));
	l.sizes = calloc(m.n_entries + 1, sizeof(*l.sizes));
	char *config = NULL, *root = NULL;
	size_t config_len = 0;
	if (l.files == NULL || l.digests == NULL || l.sizes == NULL) {
		rc = sbx_error_errno(err, ENOMEM, "import");
		goto out;
	}
	for (size_t i = 0; i < m.n_entries; i++) {
		if (!sbx_layer_media_type_ok(m.entries[i].media_type)) {
			rc = sbx_error_set(err, 0, "layer %zu has unsupported media type '%s'", i + 1, m.entries[i].media_type);
			goto out;
		}
		snprintf(l.files[i], sizeof(l.files[i]), "blobs/sha256/%s", sbx_digest_hex(m.entries[i].digest));
		strcpy(l.digests[i], m.entries[i].digest);
		l.sizes[i] = m.entries[i].size;
	}
	if ((config = read_blob(dir, m.config.digest, m.config.size, &config_len, err)) == NULL ||
	    (root = sbx_image_root(err)) == NULL) {
		rc = -1;
		goto out;
	}
	struct sbx_layer_source src = { .n_layers = l.n, .fetch = fetch_local, .declared = declared_local, .ud = &l };
	rc = sbx_image_store(root, ref, digest, config, config_len, &src, limits, out, err);
out:
	free(l.files);
	free(l.digests);
	free(l.sizes);
	free(config);
	free(root);
	sbx_manifest_free(&m);
	return rc;
}

/* The older `docker save` form: manifest.json names the config file and the
 * uncompressed layer tars, whose sha256 are the config's rootfs.diff_ids. */
static int import_docker(const char *dir, const char *ref, const struct sbx_image_limits *limits,
			 struct sbx_image_info *out, sbx_error_t *err)
{
	const char *path = "manifest.json";
	size_t len;
	cleanup_free char *text = read_small(dir, path, &len, err);
	if (text == NULL)
		return -1;
	json_error_t jerr;
	json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	json_t *img = json_array_get(doc, 0);
	const char *cfg_name = json_string_value(json_object_get(img, "Config"));
	json_t *layers = json_object_get(img, "Layers");
	int rc = -1;
	char *config = NULL, *root = NULL;
	json_t *cfg = NULL;
	struct local_layers l = { .dir = dir, .max_blob_bytes = limits->max_blob_bytes };
	size_t config_len;
	if (doc == NULL || json_array_size(doc) != 1 || cfg_name == NULL || !json_is_array(layers) ||
	    json_array_size(layers) > SBX_MANIFEST_MAX_ENTRIES) {
		sbx_error_set(err, 0, "%s: not a one-image docker save manifest", path);
		goto out;
	}
	if (ref == NULL)
		ref = json_string_value(json_array_get(json_object_get(img, "RepoTags"), 0));
	if (ref == NULL) {
		sbx_error_set(err, 0, "the archive has no tag: name it with --ref");
		goto out;
	}
	char digest[SBX_DIGEST_LEN + 1];
	if ((config = read_small(dir, cfg_name, &config_len, err)) == NULL ||
	    sbx_sha256_buf(config, config_len, digest, err) < 0)
		goto out;
	cfg = json_loadb(config, config_len, 0, &jerr);
	json_t *diff_ids = json_object_get(json_object_get(cfg, "rootfs"), "diff_ids");
	l.n = json_array_size(layers);
	if (json_array_size(diff_ids) != l.n) {
		sbx_error_set(err, 0, "%s: rootfs.diff_ids does not match the layers", cfg_name);
		goto out;
	}
	l.files = calloc(l.n + 1, sizeof(*l.files));
	l.digests = calloc(l.n + 1, sizeof(*l.digests));
	l.sizes = calloc(l.n + 1, sizeof(*l.sizes));
	if (l.files == NULL || l.digests == NULL || l.sizes == NULL) {
		sbx_error_errno(err, ENOMEM, "import");
		goto out;
	}
	for (size_t i = 0; i < l.n; i++) {
		const char *file = json_string_value(json_array_get(layers, i));
		const char *id = json_string_value(json_array_get(diff_ids, i));
		if (file == NULL || id == NULL || !sbx_digest_valid(id) ||
		    snprintf(l.files[i], sizeof(l.files[i]), "%s", file) >= (int)sizeof(l.files[i])) {
			sbx_error_set(err, 0, "%s: bad layer %zu", path, i + 1);
			goto out;
		}
		strcpy(l.digests[i], id);
		l.sizes[i] = -1;
	}
	if ((root = sbx_image_root(err)) == NULL)
		goto out;
	struct sbx_layer_source src = { .n_layers = l.n, .fetch = fetch_local, .declared = declared_local, .ud = &l };
	struct sbx_image_ref r;
	char canonical[sizeof(out->ref)];
	if (sbx_image_ref_parse(ref, &r, err) < 0 || sbx_image_ref_format(&r, canonical, sizeof(canonical)) < 0) {
		if (*err == NULL)
			sbx_error_set(err, 0, "reference too long");
	} else if (sbx_image_store(root, canonical, digest, config, config_len, &src, limits, out, err) == 0)
		rc = 0;
out:
	json_decref(doc);
	json_decref(cfg);
	free(config);
	free(root);
	free(l.files);
	free(l.digests);
	free(l.sizes);
	return rc;
}

static int unpack_archive(const char *archive, const char *dir, const struct sbx_image_limits *limits,
			  sbx_error_t *err)
{
	cleanup_close int fd = open(archive, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sbx_error_errno(err, errno, "open '%s'", archive);
	/* The same in-root extraction and charges as image layers (the archive
	 * is untrusted), and no device node or FIFO: its files are only read. */
	struct sbx_rootfs *r = sbx_rootfs_open(dir, limits, SBX_ROOTFS_NO_SPECIAL, err);
	if (r == NULL)
		return -1;
	int rc = sbx_rootfs_apply_layer(r, fd, err);
	sbx_rootfs_free(r);
	return rc;
}

static void remove_tree_quiet(const char *dir)
{
	sbx_error_t err = NULL;
	cleanup_free char *bin = sbx_tool_find("rm", &err);
	sbx_error_free(&err);
	if (bin == NULL)
		return;
	char *argv[] = { "rm", "-rf", "--one-file-system", "--", (char *)dir, NULL };
	pid_t pid = fork();
	if (pid == 0) {
		execv(bin, argv);
		_exit(127);
	}
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
}

int sbx_image_import(const char *path, const char *ref, const struct sbx_image_limits *limits,
		     struct sbx_image_info *out, sbx_error_t *err)
{
	memset(out, 0, sizeof(*out));
	struct stat st;
	if (stat(path, &st) < 0)
		return sbx_error_errno(err, errno, "'%s'", path);
	char canonical[sizeof(out->ref)] = "";
	if (ref != NULL) {
		struct sbx_image_ref r;
		if (sbx_image_ref_parse(ref, &r, err) < 0 || sbx_image_ref_format(&r, canonical, sizeof(canonical)) < 0)
			return *err ? -1 : sbx_error_set(err, 0, "reference too long");
	}
	if (S_ISDIR(st.st_mode)) {
		if (ref == NULL)
			return sbx_error_set(err, 0, "importing an OCI layout needs --ref NAME");
		return import_oci(path, canonical, limits, out, err);
	}
	char *root = sbx_image_root(err);
	if (root == NULL)
		return -1;
	char tmp[4096];
	int n = snprintf(tmp, sizeof(tmp), "%s/tmp/import-%d", root, (int)getpid());
	free(root);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return sbx_error_set(err, ENAMETOOLONG, "path too long");
	remove_tree_quiet(tmp);
	if (mkdir(tmp, 0700) < 0)
		return sbx_error_errno(err, errno, "mkdir '%s'", tmp);
	int rc = unpack_archive(path, tmp, limits, err);
	if (rc == 0) {
		char marker[4200];
		snprintf(marker, sizeof(marker), "%s/oci-layout", tmp);
		if (access(marker, F_OK) == 0 && ref != NULL)
			rc = import_oci(tmp, canonical, limits, out, err);
		else
			rc = import_docker(tmp, ref ? canonical : NULL, limits, out, err);
	}
	remove_tree_quiet(tmp);
	return rc < 0 ? sbx_error_prefix(err, "import '%s'", path) : 0;
}
