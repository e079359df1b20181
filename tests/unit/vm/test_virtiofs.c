/* virtio-fs shares: virtiofsd's arguments, the checks on shares, the
 * `--share` argument. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* fd is the directory at path. */
static bool same_file(int fd, const char *path)
{
	struct stat a, b;
	return fd >= 0 && fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static int init_one(const char *host, const char *guest, struct virtiofs *fs, sbx_error_t *err)
{
	struct sbx_vm_share s = { host, guest, true, -1 };
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
	/* A symlink is resolved and the directory opened; tags follow the
	 * order; a ',' in the host path is no matter (virtiofsd never sees it). */
	struct sbx_vm_share two[] = { { link, "/run/iii/config", true, -1 }, { comma, "/mnt/x", false, -1 } };
	CHECK_INT(virtiofs_init(&fs, two, 2, &err), 0);
	CHECK(same_file(fs.v[0].dir_fd, dir));
	CHECK(same_file(fs.v[1].dir_fd, comma));
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
	const char *bad_host[] = { "relative", file, "/nonexistent-sbx-share" };
	for (size_t i = 0; i < sizeof(bad_host) / sizeof(bad_host[0]); i++) {
		CHECK_INT(init_one(bad_host[i], "/mnt/x", &fs, &err), -1);
		sbx_error_free(&err);
		virtiofs_free(&fs);
	}
	struct sbx_vm_share many[SBX_VM_MAX_SHARES + 1];
	for (size_t i = 0; i < SBX_VM_MAX_SHARES + 1; i++)
		many[i] = (struct sbx_vm_share){ dir, "/mnt/x", true, -1 };
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

/* In a child, as the keeper runs it: virtiofs_enter with the pinned
 * directory at KEEPER_SIDE_FD + 1, then what virtiofsd would find at its
 * source.  Exit 0 when `marker` is there, `write_probe` cannot be made
 * (read-only) and, for want_uid, the process is that uid's in a user
 * namespace; another code says which check failed. */
static int enter_and_look(struct virtiofs_share *s, const char *marker, uid_t want_uid)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (dup2(s->dir_fd, KEEPER_SIDE_FD + 1) < 0 || virtiofs_enter(s) < 0)
			_exit(10);
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", s->source, marker);
		if (access(path, R_OK) < 0)
			_exit(11);
		snprintf(path, sizeof(path), "%s/write_probe", s->source);
		if (open(path, O_WRONLY | O_CREAT, 0600) >= 0 || errno != EROFS)
			_exit(12);
		char map[64] = "";
		int fd = open("/proc/self/uid_map", O_RDONLY);
		ssize_t n = fd >= 0 ? read(fd, map, sizeof(map) - 1) : -1;
		unsigned inside = 1, outside = 1;
		if (n <= 0 || sscanf(map, "%u %u", &inside, &outside) != 2)
			_exit(13);
		if (want_uid != 0 && (inside != 0 || outside != want_uid || geteuid() != 0))
			_exit(14);
		_exit(0);
	}
	int status = 0;
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The worker's case: a directory checked and pinned, then replaced by
 * `ln -s / <dir>` before the VM starts.  virtiofsd is given only what was
 * pinned, never the path. */
TEST(pinned_share_survives_a_symlink_swap)
{
	if (geteuid() != 0) {
		sbx_test_skip("needs root (mounts)");
		return;
	}
	char tmpl[] = "/tmp/sbx-virtiofs-pin-XXXXXX";
	char *base = mkdtemp(tmpl);
	CHECK(base != NULL);
	CHECK_INT(chmod(base, 0755), 0);
	char share[128], moved[128], vmdir[128], marker[PATH_MAX];
	snprintf(share, sizeof(share), "%s/share", base);
	snprintf(moved, sizeof(moved), "%s/moved", base);
	snprintf(vmdir, sizeof(vmdir), "%s/vm", base);
	snprintf(marker, sizeof(marker), "%s/pinned-marker", share);
	CHECK_INT(mkdir(share, 0755), 0);
	CHECK_INT(mkdir(vmdir, 0700), 0);
	CHECK_INT(close(open(marker, O_WRONLY | O_CREAT, 0644)), 0);
	int pinned = open(share, O_PATH | O_DIRECTORY | O_CLOEXEC);
	CHECK(pinned >= 0);
	/* The swap: the checked directory moved away, a symlink to / in its place. */
	CHECK_INT(rename(share, moved), 0);
	CHECK_INT(symlink("/", share), 0);

	struct virtiofs fs;
	sbx_error_t err = NULL;
	struct sbx_vm_share in = { share, "/mnt/host-src", true, pinned };
	CHECK_INT(virtiofs_init(&fs, &in, 1, &err), 0);
	CHECK(same_file(fs.v[0].dir_fd, moved));
	if (access("/usr/lib/qemu/virtiofsd", X_OK) != 0 && getenv("SANDBOX_VIRTIOFSD") == NULL) {
		sbx_test_skip("no virtiofsd");
	} else {
		CHECK_INT(virtiofs_open(&fs, vmdir, &err), 0);
		char want[600];
		snprintf(want, sizeof(want), "/tmp%s/sbxfs0", vmdir);
		CHECK_STR(fs.v[0].source, want);
		CHECK(strstr(fs.v[0].argv[4], share) == NULL);
		/* Root-owned: virtiofsd keeps root; the marker is seen through the
		 * swapped path's replacement, and nothing of / is. */
		CHECK_INT(enter_and_look(&fs.v[0], "pinned-marker", 0), 0);
		CHECK_INT(enter_and_look(&fs.v[0], "etc", 0), 11);
	}
	virtiofs_free(&fs);

	/* Owned by a user: served as that user, root of its own user namespace
	 * (where the host allows it to a user). */
	CHECK_INT(chown(moved, 4242, 4243), 0);
	CHECK_INT(virtiofs_init(&fs, &in, 1, &err), 0);
	if (fs.v[0].uid == 0) {
		sbx_test_skip("no user namespaces for unprivileged uids here");
	} else if (virtiofs_open(&fs, vmdir, &err) == 0) {
		CHECK_INT((int)fs.v[0].uid, 4242);
		CHECK_INT((int)fs.v[0].gid, 4243);
		CHECK_INT(enter_and_look(&fs.v[0], "pinned-marker", 4242), 0);
	} else {
		sbx_error_free(&err);
	}
	virtiofs_free(&fs);
	close(pinned);
	unlink(share);
	unlink(marker);
	char m2[PATH_MAX];
	snprintf(m2, sizeof(m2), "%s/pinned-marker", moved);
	unlink(m2);
	rmdir(moved);
	rmdir(vmdir);
	rmdir(base);
}
