/* ensure(): the S-codes the sandbox code relies on, without a registry. */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "image/image_config.h"
#include "image/image_index.h"
#include "image/image_pull.h"
#include "image/image_store.h"

static char state_dir[] = "/tmp/sbx-ensure-XXXXXX";

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static void remove_state(void)
{
	nftw(state_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* One fresh state directory per test, all removed at exit. */
static void use_temp_state(void)
{
	static int n;
	char sub[64];
	if (n == 0) {
		if (mkdtemp(state_dir) == NULL)
			abort();
		atexit(remove_state);
	}
	snprintf(sub, sizeof(sub), "%s/%d", state_dir, n++);
	setenv("III_SANDBOX_STATE_DIR", sub, 1);
}

/* The image keys of a JSON map, as the adapter's parser hands them over. */
static int from_json(struct sbx_image_config *c, const char *text, sbx_error_t *err)
{
	json_t *map = json_loads(text, 0, NULL);
	const char *k;
	json_t *v;
	int rc = json_is_object(map) ? 0 : sbx_error_set(err, EINVAL, "not a map");
	json_object_foreach(map, k, v) {
		if (rc == 0 && sbx_image_config_parse_key(c, k, v, err) < 0)
			rc = -1;
	}
	json_decref(map);
	return rc;
}

TEST(miss_without_auto_install_is_s101)
{
	use_temp_state();
	struct sbx_image_config cfg;
	sbx_image_config_init(&cfg);
	cfg.auto_install = false;
	sbx_error_t err = NULL;
	char *path = sbx_image_ensure("python", "docker.io/iiidev/python:latest", &cfg, &err);
	CHECK(path == NULL);
	CHECK_STR(err->scode, "S101");
	CHECK(strstr(sbx_error_msg(err), "image 'python'") != NULL);
	CHECK(strstr(sbx_error_msg(err), "sandbox-libkrun image pull docker.io/iiidev/python:latest") != NULL);
	CHECK(strstr(sbx_error_msg(err), "image import") != NULL);
	sbx_error_free(&err);
}

TEST(pull_failure_is_s102)
{
	use_temp_state();
	struct sbx_image_config cfg;
	sbx_image_config_init(&cfg);
	const char *json = "{\"auto_install\": true, \"registry_mirrors\": {\"docker.io\": \"http://127.0.0.1:1\"}}";
	sbx_error_t err = NULL;
	CHECK(from_json(&cfg, json, &err) == 0);
	char *path = sbx_image_ensure("node", "docker.io/iiidev/node:latest", &cfg, &err);
	CHECK(path == NULL);
	CHECK_STR(err->scode, "S102");
	CHECK(strncmp(sbx_error_msg(err), "auto-install failed for image 'node': ", 38) == 0);
	sbx_error_free(&err);
	sbx_image_config_free(&cfg);
}

TEST(bad_catalog_ref_is_s102)
{
	use_temp_state();
	struct sbx_image_config cfg;
	sbx_image_config_init(&cfg);
	sbx_error_t err = NULL;
	CHECK(sbx_image_ensure("x", "NOT A REF", &cfg, &err) == NULL);
	CHECK_STR(err->scode, "S102");
	sbx_error_free(&err);
}

/* A listening loopback socket standing in for the registry: any request
 * would leave a connection in its backlog. */
static int listener(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 8) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		abort();
	*port = ntohs(a.sin_port);
	return fd;
}

TEST(hit_returns_the_stored_image_without_network_io)
{
	use_temp_state();
	int port, ls = listener(&port);
	char json[256];
	snprintf(json, sizeof(json), "{\"auto_install\": true, \"registry_mirrors\": {\"docker.io\": \"http://127.0.0.1:%d\"}}",
		 port);
	struct sbx_image_config cfg;
	sbx_image_config_init(&cfg);
	sbx_error_t err = NULL;
	CHECK(from_json(&cfg, json, &err) == 0);
	const char *digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	char *root = sbx_image_root(&err);
	char *want = root ? sbx_image_path(root, digest, &err) : NULL;
	CHECK(want != NULL);
	int fd = want ? open(want, O_WRONLY | O_CREAT | O_CLOEXEC, 0600) : -1;
	CHECK(fd >= 0 && write(fd, "erofs", 5) == 5);
	close(fd);
	CHECK(sbx_index_put(root, "docker.io/iiidev/python:latest", digest, 5, &err) == 0);

	char *path = sbx_image_ensure("python", "docker.io/iiidev/python:latest", &cfg, &err);
	CHECK(path != NULL && want != NULL && strcmp(path, want) == 0);
	CHECK(err == NULL);
	CHECK(accept(ls, NULL, NULL) < 0 && errno == EAGAIN);

	/* With its image file gone the entry is a miss, never a stale hit. */
	unlink(want);
	cfg.auto_install = false;
	char *none = sbx_image_ensure("python", "docker.io/iiidev/python:latest", &cfg, &err);
	CHECK(none == NULL && err != NULL && strcmp(err->scode, "S101") == 0);
	sbx_error_free(&err);
	free(path);
	free(want);
	free(root);
	close(ls);
	sbx_image_config_free(&cfg);
}

TEST(oversized_index_is_refused_and_ensure_treats_it_as_a_miss)
{
	use_temp_state();
	sbx_error_t err = NULL;
	char *root = sbx_image_root(&err);
	CHECK(root != NULL);
	char path[512];
	snprintf(path, sizeof(path), "%s/index.json", root);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	CHECK(fd >= 0 && ftruncate(fd, 64 << 20) == 0); /* sparse: costs no disk */
	close(fd);
	struct sbx_index idx;
	CHECK(sbx_index_read(root, &idx, &err) < 0);
	CHECK(err != NULL && strstr(sbx_error_msg(err), "larger than") != NULL);
	sbx_error_free(&err);
	struct sbx_image_config cfg;
	sbx_image_config_init(&cfg);
	cfg.auto_install = false;
	CHECK(sbx_image_ensure("python", "docker.io/iiidev/python:latest", &cfg, &err) == NULL);
	CHECK(err != NULL && strcmp(err->scode, "S101") == 0);
	sbx_error_free(&err);
	free(root);
}
