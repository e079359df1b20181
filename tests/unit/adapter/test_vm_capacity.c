/* The VM backend's capacity op: the allow-listed catalog images whose
 * image is stored, read from the image index again only when the index
 * file changed; no pool, no standby and TCG without them. */
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter/vm_backend/vm_backend.h"
#include "image/image_index.h"
#include "image/image_store.h"
#include "harness.h"

#define PY_DIGEST "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define PG_DIGEST "sha256:2222222222222222222222222222222222222222222222222222222222222222"
#define RD_DIGEST "sha256:3333333333333333333333333333333333333333333333333333333333333333"

static char state_dir[] = "/tmp/sbx-vm-capacity-XXXXXX";

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static void remove_state(void)
{
	nftw(state_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* An empty erofs file of a digest, as a pull leaves it. */
static int store_file(const char *root, const char *digest)
{
	sbx_error_t err = NULL;
	char *path = sbx_image_path(root, digest, &err);
	int fd = path != NULL ? open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600) : -1;
	free(path);
	sbx_error_free(&err);
	return fd >= 0 ? close(fd) : -1;
}

/* images_cached, compact; NULL when the op failed. */
static char *images(void *b, struct sbx_backend_capacity *c)
{
	sbx_error_t err = NULL;
	if (vm_backend_ops.capacity(b, c, &err) < 0) {
		sbx_error_free(&err);
		return NULL;
	}
	char *s = json_dumps(c->images_cached, JSON_COMPACT);
	json_decref(c->images_cached);
	return s;
}

#define CHECK_IMAGES(b, want)                                                                                \
	do {                                                                                                 \
		struct sbx_backend_capacity _c;                                                              \
		char *_s = images(b, &_c);                                                                   \
		CHECK_STR(_s, want);                                                                         \
		free(_s);                                                                                    \
	} while (0)

TEST(capacity_lists_the_stored_allow_listed_images_as_the_index_changes)
{
	CHECK(mkdtemp(state_dir) != NULL);
	atexit(remove_state);
	setenv("III_SANDBOX_STATE_DIR", state_dir, 1);
	json_t *v = json_loads("{\"image_allowlist\":[\"python\",\"pg\"],\"accel\":\"tcg\",\"custom_images\":"
			       "{\"pg\":\"docker.io/library/postgres:17\",\"rd\":\"docker.io/library/redis:7\"}}",
			       0, NULL);
	sbx_error_t err = NULL;
	struct sbx_config *cfg = sbx_config_parse(v, &err);
	json_decref(v);
	CHECK(cfg != NULL);
	void *b = vm_backend_new(cfg, NULL, &err);
	CHECK(b != NULL);
	/* No index yet: nothing stored, nothing waiting, TCG as configured. */
	struct sbx_backend_capacity c;
	char *s = images(b, &c);
	CHECK_STR(s, "[]");
	free(s);
	CHECK_INT(c.pool_ready, 0);
	CHECK(!c.standby_ready);
	CHECK(!c.kvm);
	char *root = sbx_image_root(&err);
	CHECK(root != NULL);
	/* python stored; pg indexed without its file; rd not allow-listed. */
	CHECK_INT(store_file(root, PY_DIGEST), 0);
	CHECK_INT(store_file(root, RD_DIGEST), 0);
	CHECK_INT(sbx_index_put(root, "docker.io/iiidev/python:latest", PY_DIGEST, 1, &err), 0);
	CHECK_INT(sbx_index_put(root, "docker.io/library/postgres:17", PG_DIGEST, 1, &err), 0);
	CHECK_INT(sbx_index_put(root, "docker.io/library/redis:7", RD_DIGEST, 1, &err), 0);
	CHECK_IMAGES(b, "[\"python\"]");
	/* pg's file alone changes no index: the answer is the one kept (for a
	 * few seconds)... */
	CHECK_INT(store_file(root, PG_DIGEST), 0);
	CHECK_IMAGES(b, "[\"python\"]");
	/* ...until the index file changes, as a pull recording pg does. */
	CHECK_INT(sbx_index_put(root, "docker.io/library/postgres:17", PG_DIGEST, 20000, &err), 0);
	CHECK_IMAGES(b, "[\"python\",\"pg\"]");
	size_t removed = 0;
	CHECK_INT(sbx_index_remove(root, "docker.io/iiidev/python:latest", &removed, &err), 0);
	CHECK_INT(removed, 1);
	CHECK_IMAGES(b, "[\"pg\"]");
	free(root);
	vm_backend_free(b);
	sbx_config_free(cfg);
}
