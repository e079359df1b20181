/* virtio-fs shares: virtiofsd's arguments, the checks on shares, the
 * `--share` argument. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "vm/share_arg.h"
#include "vm/virtiofs.h"

TEST(virtiofsd_argv)
{
	sbx_error_t err = NULL;
	char **v = virtiofs_argv("/usr/lib/qemu/virtiofsd", "/srv/project", &err);
	CHECK(v != NULL);
	CHECK_STR(v[0], "/usr/lib/qemu/virtiofsd");
	CHECK_STR(v[1], "-f");
	CHECK_STR(v[2], "--fd=3");
	CHECK_STR(v[3], "-o");
	CHECK_STR(v[4], "source=/srv/project,sandbox=namespace,cache=auto,log_level=warn");
	CHECK(v[5] == NULL);
	sbx_strv_free(v);
	/* virtiofsd's -o splits on ',' and unescapes '\\'. */
	CHECK(virtiofs_argv("/usr/lib/qemu/virtiofsd", "/a,sandbox=none", &err) == NULL);
	sbx_error_free(&err);
	CHECK(virtiofs_argv("/usr/lib/qemu/virtiofsd", "/a\\b", &err) == NULL);
	sbx_error_free(&err);
	CHECK(virtiofs_argv("/usr/lib/qemu/virtiofsd", "relative", &err) == NULL);
	sbx_error_free(&err);
	CHECK(virtiofs_argv("virtiofsd", "/a", &err) == NULL);
	sbx_error_free(&err);
}

static int init_one(const char *host, const char *guest, struct virtiofs *fs, sbx_error_t *err)
{
	struct sbx_vm_share s = { host, guest, true };
	return virtiofs_init(fs, &s, 1, err);
}

TEST(share_checks)
{
	char tmpl[] = "/tmp/sbx-virtiofs-XXXXXX";
	char *dir = mkdtemp(tmpl);
	CHECK(dir != NULL);
	char file[256], comma[256], link[256];
	snprintf(file, sizeof(file), "%s/file", dir);
	snprintf(comma, sizeof(comma), "%s/a,b", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	FILE *f = fopen(file, "w");
	CHECK(f != NULL);
	fclose(f);
	CHECK(mkdir(comma, 0755) == 0);
	CHECK(symlink(dir, link) == 0);

	struct virtiofs fs;
	sbx_error_t err = NULL;
	/* A symlink is made canonical; tags follow the order. */
	struct sbx_vm_share two[] = { { link, "/run/iii/config", true }, { dir, "/mnt/x", false } };
	CHECK_INT(virtiofs_init(&fs, two, 2, &err), 0);
	CHECK_STR(fs.v[0].host_dir, dir);
	CHECK_STR(fs.v[0].guest_path, "/run/iii/config");
	CHECK(fs.v[0].read_only && !fs.v[1].read_only);
	CHECK_STR(fs.v[0].tag, "sbxfs0");
	CHECK_STR(fs.v[1].tag, "sbxfs1");
	struct proto_share ps[2];
	virtiofs_config(&fs, ps);
	CHECK_STR(ps[0].tag, "sbxfs0");
	CHECK_INT(ps[0].flags, PROTO_SHARE_RO);
	CHECK_INT(ps[1].flags, 0);
	virtiofs_free(&fs);

	static const char *const bad_guest[] = { "relative", "/", "//", "/a/../b", "/a/./b", "/a/.." };
	for (size_t i = 0; i < sizeof(bad_guest) / sizeof(bad_guest[0]); i++) {
		CHECK_INT(init_one(dir, bad_guest[i], &fs, &err), -1);
		sbx_error_free(&err);
		virtiofs_free(&fs);
	}
	const char *bad_host[] = { "relative", file, comma, "/nonexistent-sbx-share" };
	for (size_t i = 0; i < sizeof(bad_host) / sizeof(bad_host[0]); i++) {
		CHECK_INT(init_one(bad_host[i], "/mnt/x", &fs, &err), -1);
		sbx_error_free(&err);
		virtiofs_free(&fs);
	}
	struct sbx_vm_share many[SBX_VM_MAX_SHARES + 1];
	for (size_t i = 0; i < SBX_VM_MAX_SHARES + 1; i++)
		many[i] = (struct sbx_vm_share){ dir, "/mnt/x", true };
	CHECK_INT(virtiofs_init(&fs, many, SBX_VM_MAX_SHARES + 1, &err), -1);
	sbx_error_free(&err);
	virtiofs_free(&fs);

	unlink(link);
	unlink(file);
	rmdir(comma);
	rmdir(dir);
}

TEST(share_argument)
{
	struct sbx_vm_share s;
	sbx_error_t err = NULL;
	char a[] = "/host/dir:/guest/dir:ro";
	CHECK_INT(share_arg_parse(a, &s, &err), 0);
	CHECK_STR(s.host_dir, "/host/dir");
	CHECK_STR(s.guest_path, "/guest/dir");
	CHECK(s.read_only);
	char b[] = "/h:/g";
	CHECK_INT(share_arg_parse(b, &s, &err), 0);
	CHECK(!s.read_only);
	CHECK_STR(s.guest_path, "/g");
	char c[] = "/h:/g:rw";
	CHECK_INT(share_arg_parse(c, &s, &err), 0);
	CHECK(!s.read_only);
	CHECK_STR(s.guest_path, "/g");
	/* The guest path may hold a ':'; only a final :ro or :rw is the mode. */
	char d[] = "/h:/g:x";
	CHECK_INT(share_arg_parse(d, &s, &err), 0);
	CHECK_STR(s.guest_path, "/g:x");
	static const char *const bad[] = { "/h", "h:/g", "/h:g", ":/g", "/h::ro" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char buf[32];
		snprintf(buf, sizeof(buf), "%s", bad[i]);
		CHECK_INT(share_arg_parse(buf, &s, &err), -1);
		sbx_error_free(&err);
	}
}
