/* Templates keyed by content (vm/snapshot.h, vm/file_hash.h): the same
 * bytes anywhere give the same key, changed bytes a new one, and the sweep
 * (vm/template_cache.h) removes a template whose image left the store; one
 * of another QEMU, kernel or boot disk stays until the bound needs room. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "vm/accel.h"
#include "vm/file_hash.h"
#include "vm/kvm_cpu.h"
#include "vm/snapshot.h"
#include "vm/template_cache.h"

#define DIGEST "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define CPU_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define CPU_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static char state[] = "/tmp/sbx-snapkey-test-XXXXXX";

static int put(const char *dir, const char *name, const char *text)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "we");
	if (f == NULL)
		return -1;
	int ok = fputs(text, f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

static void at(char *buf, size_t cap, const char *name)
{
	snprintf(buf, cap, "%s/%s", state, name);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

static int setup(void)
{
	/* Made once: a flag, not the name's last letter, which mkdtemp may
	 * itself make an 'X' (1 run in 62 failed three tests that way). */
	static bool made;
	if (!made && mkdtemp(state) == NULL)
		return -1;
	made = true;
	setenv("III_SANDBOX_STATE_DIR", state, 1);
	char images[512], store[512];
	at(images, sizeof(images), "images");
	at(store, sizeof(store), "images/erofs");
	/* Each test sets up again: the directories may exist already. */
	if ((mkdir(images, 0700) < 0 && errno != EEXIST) || (mkdir(store, 0700) < 0 && errno != EEXIST))
		return -1;
	return put(state, "qemu", "qemu bytes") | put(state, "kernel", "kernel bytes") |
	       put(state, "boot", "boot bytes") | put(store, DIGEST ".erofs", "erofs bytes");
}

static struct snapshot_id id_of(const char *qemu, const char *kernel, const char *boot, const char *image)
{
	struct snapshot_id id = { .qemu = qemu, .kernel = kernel, .boot_disk = boot, .image = image, .cpus = 1,
				  .memory_mib = 512, .tsc_khz = 2400, .accel = SBX_ACCEL_TCG, .scratch_size = 1 << 20 };
	return id;
}

TEST(file_hash_is_of_the_bytes_and_cached)
{
	CHECK_INT(setup(), 0);
	char a[512], b[512], hex1[FILE_HASH_HEX + 1], hex2[FILE_HASH_HEX + 1];
	at(a, sizeof(a), "qemu");
	at(b, sizeof(b), "qemu-copy");
	CHECK_INT(put(state, "qemu-copy", "qemu bytes"), 0);
	sbx_error_t err = NULL;
	CHECK_INT(file_hash(a, hex1, &err), 0);
	CHECK_INT(file_hash(b, hex2, &err), 0);
	CHECK_STR(hex1, hex2);
	CHECK_STR(hex1, "69b172c0c4177e700616b5076e06eedd9663aa98a567d44ada198d8b454a39a7"); /* sha256sum of "qemu bytes" */
	/* Entries of the wrong shape are not believed. */
	char hashes[512], cmd[1200];
	at(hashes, sizeof(hashes), "hashes");
	snprintf(cmd, sizeof(cmd), "for f in %s/*; do printf 'garbage\\n' > $f; done", hashes);
	CHECK_INT(system(cmd), 0);
	CHECK_INT(file_hash(a, hex2, &err), 0);
	CHECK_STR(hex1, hex2);
	/* An entry of the right path and identity whose hash is not 64 hex
	 * digits, or that is cut short, is not believed either. */
	snprintf(cmd, sizeof(cmd), "for f in %s/*; do sed -i '3s/^./z/' $f; done", hashes);
	CHECK_INT(system(cmd), 0);
	CHECK_INT(file_hash(a, hex2, &err), 0);
	CHECK_STR(hex1, hex2);
	snprintf(cmd, sizeof(cmd), "for f in %s/*; do truncate -s -2 $f; done", hashes);
	CHECK_INT(system(cmd), 0);
	CHECK_INT(file_hash(a, hex2, &err), 0);
	CHECK_STR(hex1, hex2);
	/* Changed bytes (a new identity) are hashed again. */
	CHECK_INT(put(state, "qemu-copy", "other bytes"), 0);
	CHECK_INT(file_hash(b, hex2, &err), 0);
	CHECK(strcmp(hex1, hex2) != 0);
	CHECK(file_hash(state, hex2, &err) < 0); /* a directory */
	sbx_error_free(&err);
}

TEST(the_hash_cache_stays_small)
{
	CHECK_INT(setup(), 0);
	char dir[512], hashes[512], p[700], hex[FILE_HASH_HEX + 1];
	at(dir, sizeof(dir), "many");
	at(hashes, sizeof(hashes), "hashes");
	CHECK_INT(mkdir(dir, 0700), 0);
	sbx_error_t err = NULL;
	for (int i = 0; i < FILE_HASH_MAX + 10; i++) {
		snprintf(p, sizeof(p), "f%d", i);
		CHECK_INT(put(dir, p, p), 0);
		snprintf(p, sizeof(p), "%s/f%d", dir, i);
		CHECK_INT(file_hash(p, hex, &err), 0);
	}
	DIR *d = opendir(hashes);
	CHECK(d != NULL);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	CHECK(n > 0 && n <= FILE_HASH_MAX);
}

TEST(same_content_elsewhere_same_key)
{
	CHECK_INT(setup(), 0);
	char q[512], k[512], b[512], img[512], q2[512], k2[512];
	at(q, sizeof(q), "qemu");
	at(k, sizeof(k), "kernel");
	at(b, sizeof(b), "boot");
	at(img, sizeof(img), "images/erofs/" DIGEST ".erofs");
	at(q2, sizeof(q2), "qemu-moved");
	at(k2, sizeof(k2), "kernel-moved");
	CHECK_INT(put(state, "qemu-moved", "qemu bytes"), 0);
	CHECK_INT(link(k, k2) == 0 || access(k2, F_OK) == 0, 1);
	char key1[SNAPSHOT_KEY_LEN + 1], key2[SNAPSHOT_KEY_LEN + 1], text[SNAPSHOT_KEY_TEXT_MAX];
	sbx_error_t err = NULL;
	struct snapshot_id id = id_of(q, k, b, img), moved = id_of(q2, k2, b, img);
	CHECK_INT(snapshot_key(&id, key1, text, &err), 0);
	CHECK(strstr(text, "image=digest:" DIGEST "\n") != NULL);
	CHECK(snapshot_key_current(text));
	CHECK_INT(snapshot_key(&moved, key2, NULL, &err), 0);
	CHECK_STR(key1, key2);
	/* What the key does not cover is not a reason to differ; what it
	 * covers is. */
	id.cpus = 2;
	CHECK_INT(snapshot_key(&id, key2, NULL, &err), 0);
	CHECK(strcmp(key1, key2) != 0);
	id.cpus = 1;
	/* An image outside the store is keyed by its bytes. */
	char loose[512];
	at(loose, sizeof(loose), "loose.erofs");
	CHECK_INT(put(state, "loose.erofs", "erofs bytes"), 0);
	id.image = loose;
	CHECK_INT(snapshot_key(&id, key2, text, &err), 0);
	CHECK(strstr(text, "image=sha256:") != NULL);
	CHECK(strcmp(key1, key2) != 0);
	CHECK(snapshot_key_current(text));
	/* Forged or truncated texts are not current. */
	CHECK(!snapshot_key_current(""));
	CHECK(!snapshot_key_current("format=4 cpus=1\n"));
	/* A template of the format before (its guest's CPU had ERMS) is stale. */
	char older[SNAPSHOT_KEY_TEXT_MAX];
	CHECK(strncmp(text, "format=6 ", 9) == 0);
	snprintf(older, sizeof(older), "format=5%s", text + 8);
	CHECK(!snapshot_key_current(older));
	char cut[SNAPSHOT_KEY_TEXT_MAX];
	snprintf(cut, sizeof(cut), "%.*s", (int)(strlen(text) - 3), text);
	CHECK(!snapshot_key_current(cut));
	sbx_error_free(&err);
}

/* A complete template of `id` in the snapshots directory; its key. */
static int make_template(const struct snapshot_id *id, char key[SNAPSHOT_KEY_LEN + 1])
{
	char text[SNAPSHOT_KEY_TEXT_MAX], dir[700];
	sbx_error_t err = NULL;
	if (snapshot_key(id, key, text, &err) < 0) {
		sbx_error_free(&err);
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s/snapshots/%s", state, key);
	if (mkdir(dir, 0700) < 0 && access(dir, F_OK) < 0)
		return -1;
	return put(dir, "key", text) | put(dir, "state", "s") | put(dir, "scratch.ext4", "d");
}

/* A template's "ram" of 600 KiB of allocated bytes. */
static int put_ram(const char *key)
{
	char p[700];
	snprintf(p, sizeof(p), "%s/snapshots/%s/ram", state, key);
	FILE *f = fopen(p, "we");
	if (f == NULL)
		return -1;
	static char block[600 << 10];
	memset(block, 'r', sizeof(block));
	int ok = fwrite(block, 1, sizeof(block), f) == sizeof(block);
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* A template last used at `sec` (its directory's modification time). */
static int set_used(const char *key, time_t sec)
{
	char p[700];
	snprintf(p, sizeof(p), "%s/snapshots/%s", state, key);
	struct timespec t[2] = { { .tv_sec = sec }, { .tv_sec = sec } };
	return utimensat(AT_FDCWD, p, t, 0);
}

static int present(const char *key)
{
	sbx_error_t err = NULL;
	char *dir = snapshot_find(key, &err);
	sbx_error_free(&err);
	free(dir);
	return dir != NULL;
}

/* The fixture's files (setup's) at their paths in `f`; the id of them. */
struct files {
	char q[512], k[512], b[512], img[512];
};

static struct snapshot_id stored_id(struct files *f)
{
	at(f->q, sizeof(f->q), "qemu");
	at(f->k, sizeof(f->k), "kernel");
	at(f->b, sizeof(f->b), "boot");
	at(f->img, sizeof(f->img), "images/erofs/" DIGEST ".erofs");
	return id_of(f->q, f->k, f->b, f->img);
}

/* TCG templates made before KVM keys had a CPU fingerprint keep their key:
 * this is the key of the same id before that change (format 6). */
TEST(tcg_key_is_unchanged)
{
	CHECK_INT(setup(), 0);
	char key[SNAPSHOT_KEY_LEN + 1], text[SNAPSHOT_KEY_TEXT_MAX];
	struct files f;
	struct snapshot_id id = stored_id(&f);
	sbx_error_t err = NULL;
	CHECK_INT(snapshot_key(&id, key, text, &err), 0);
	CHECK_STR(key, "f90b7732ad252d4d78446e52d00ccb1e3d3e22642fe1beda49630dfb74389060");
	CHECK(strstr(text, "kvmcpu") == NULL);
}

/* Under KVM the CPU as KVM presents it is part of the key. */
TEST(kvm_key_holds_the_cpu)
{
	CHECK_INT(setup(), 0);
	char key1[SNAPSHOT_KEY_LEN + 1], key2[SNAPSHOT_KEY_LEN + 1];
	char text[SNAPSHOT_KEY_TEXT_MAX];
	struct files f;
	struct snapshot_id id = stored_id(&f);
	id.accel = SBX_ACCEL_KVM;
	id.tsc_khz = 0;
	sbx_error_t err = NULL;
	/* No fingerprint, or not one: no key. */
	CHECK_INT(snapshot_key(&id, key1, text, &err), -1);
	sbx_error_free(&err);
	id.kvm_cpu = "aaaa";
	CHECK_INT(snapshot_key(&id, key1, text, &err), -1);
	sbx_error_free(&err);
	id.kvm_cpu = CPU_A;
	CHECK_INT(snapshot_key(&id, key1, text, &err), 0);
	CHECK(strstr(text, " kvmcpu=" CPU_A "\n") != NULL);
	id.kvm_cpu = CPU_B;
	CHECK_INT(snapshot_key(&id, key2, NULL, &err), 0);
	CHECK(strcmp(key1, key2) != 0);
	/* Fingerprints of two CPUID sets, two kernels: two keys. */
	struct kvm_cpu_leaf leaf = { 0x7, 0, 1, 0, 1u << 16, 0, 0 };
	char fa[KVM_CPU_HEX + 1], fb[KVM_CPU_HEX + 1];
	CHECK_INT(kvm_cpu_fingerprint(&leaf, 1, 12, "6.1.0", fa, &err), 0);
	CHECK_INT(kvm_cpu_fingerprint(&leaf, 1, 12, "6.12.0", fb, &err), 0);
	id.kvm_cpu = fa;
	CHECK_INT(snapshot_key(&id, key1, NULL, &err), 0);
	id.kvm_cpu = fb;
	CHECK_INT(snapshot_key(&id, key2, NULL, &err), 0);
	CHECK(strcmp(key1, key2) != 0);
	leaf.ebx = 0;
	CHECK_INT(kvm_cpu_fingerprint(&leaf, 1, 12, "6.12.0", fa, &err), 0);
	id.kvm_cpu = fa;
	CHECK_INT(snapshot_key(&id, key1, NULL, &err), 0);
	CHECK(strcmp(key1, key2) != 0);
}

/* The sweep drops a KVM template saved without this host's CPU: one saved
 * before keys had it, or on another CPU (the host's own, where it has
 * /dev/kvm, stays). */
TEST(kvm_template_of_another_cpu_is_swept)
{
	CHECK_INT(setup(), 0);
	char key[SNAPSHOT_KEY_LEN + 1], text[SNAPSHOT_KEY_TEXT_MAX];
	char old[SNAPSHOT_KEY_TEXT_MAX];
	sbx_error_t err = NULL;
	char *snaps = snapshot_dir(&err);
	CHECK(snaps != NULL);
	free(snaps);
	struct files f;
	struct snapshot_id id = stored_id(&f);
	CHECK_INT(snapshot_key(&id, key, text, &err), 0);
	CHECK(snapshot_key_current(text));
	/* The same text as a KVM template's of before: no CPU in it. */
	const char *tcg = strstr(text, " accel=2 ");
	CHECK(tcg != NULL);
	snprintf(old, sizeof(old), "%.*s accel=1 %s", (int)(tcg - text), text, tcg + 9);
	CHECK(!snapshot_key_current(old));
	id.accel = SBX_ACCEL_KVM;
	id.kvm_cpu = CPU_A;
	CHECK_INT(make_template(&id, key), 0);
	CHECK(present(key));
	CHECK_INT(template_cache_sweep(), 1);
	CHECK(!present(key));
}

/* This host's own KVM template stays (where it has a usable /dev/kvm). */
TEST(kvm_template_of_this_cpu_stays)
{
	CHECK_INT(setup(), 0);
	char key[SNAPSHOT_KEY_LEN + 1], here[KVM_CPU_HEX + 1];
	sbx_error_t err = NULL;
	if (kvm_cpu_host(here, &err) < 0) {
		sbx_error_free(&err);
		sbx_test_skip("no usable /dev/kvm");
		return;
	}
	char *snaps = snapshot_dir(&err);
	CHECK(snaps != NULL);
	free(snaps);
	struct files f;
	struct snapshot_id id = stored_id(&f);
	id.accel = SBX_ACCEL_KVM;
	id.tsc_khz = 0;
	id.kvm_cpu = here;
	CHECK_INT(make_template(&id, key), 0);
	CHECK_INT(template_cache_sweep(), 0);
	CHECK(present(key));
	snapshot_invalidate(key);
}

TEST(removed_image_sweeps_the_template_another_build_s_waits_for_the_bound)
{
	CHECK_INT(setup(), 0);
	char q[512], k[512], b[512], img[512], other[512];
	at(q, sizeof(q), "qemu");
	at(k, sizeof(k), "kernel");
	at(b, sizeof(b), "boot");
	at(img, sizeof(img), "images/erofs/" DIGEST ".erofs");
	at(other, sizeof(other), "images/erofs/" "f123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.erofs");
	CHECK_INT(put(state, "images/erofs/f123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.erofs",
		      "another image"), 0);
	struct snapshot_id one = id_of(q, k, b, img), two = id_of(q, k, b, other);
	char key1[SNAPSHOT_KEY_LEN + 1], key2[SNAPSHOT_KEY_LEN + 1], key3[SNAPSHOT_KEY_LEN + 1];
	sbx_error_t err = NULL;
	char *snaps = snapshot_dir(&err);
	CHECK(snaps != NULL);
	free(snaps);
	CHECK_INT(make_template(&one, key1), 0);
	CHECK_INT(make_template(&two, key2), 0);
	CHECK_INT(template_cache_sweep(), 0);
	CHECK(present(key1) && present(key2));
	/* The image's digest leaves the store: its template goes, the other
	 * image's stays. */
	CHECK_INT(unlink(img), 0);
	CHECK_INT(template_cache_sweep(), 1);
	CHECK(!present(key1));
	CHECK(present(key2));
	/* New kernel bytes (another build's daemon on this state directory):
	 * a new key, and the old template stays for that build. */
	CHECK_INT(put(state, "kernel", "new kernel bytes"), 0);
	CHECK_INT(make_template(&two, key3), 0);
	CHECK(strcmp(key2, key3) != 0);
	CHECK_INT(template_cache_sweep(), 0);
	CHECK(present(key2) && present(key3));
	/* Until the bound needs its room: least recently used first, whichever
	 * build made it.  Each RAM file takes 600 KiB; the bound is 1 MiB. */
	CHECK_INT(put_ram(key2), 0);
	CHECK_INT(put_ram(key3), 0);
	CHECK_INT(set_used(key3, 1000), 0);
	CHECK_INT(set_used(key2, 2000), 0);
	CHECK_INT(template_cache_trim(1), 1);
	CHECK(present(key2));
	CHECK(!present(key3));
	CHECK_INT(template_cache_trim(1), 0);
	sbx_error_free(&err);
	nftw(state, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A restore's limit follows the accelerator and leaves a cold boot room in
 * the create's 30 s; any failed restore drops its template, whatever the
 * caller's deadline (issue 38: a stalled restore kept its template and
 * every create of the image waited 30 s and failed). */
TEST(restore_limit_and_failure)
{
	CHECK_INT(snapshot_restore_limit_ms(true), SNAPSHOT_RESTORE_KVM_MS);
	CHECK_INT(snapshot_restore_limit_ms(false), SNAPSHOT_RESTORE_TCG_MS);
	CHECK(SNAPSHOT_RESTORE_KVM_MS <= 5000);
	CHECK(SNAPSHOT_RESTORE_TCG_MS < 30000 / 2);
	CHECK_INT(snapshot_after_failed_restore(false, false), SNAPSHOT_DROP_AND_BOOT_COLD);
	CHECK_INT(snapshot_after_failed_restore(false, true), SNAPSHOT_DROP_AND_FAIL);
	/* The guest refused its identity (an unknown user): the template is not at fault. */
	CHECK_INT(snapshot_after_failed_restore(true, false), SNAPSHOT_KEEP_AND_FAIL);
	CHECK_INT(snapshot_after_failed_restore(true, true), SNAPSHOT_KEEP_AND_FAIL);
}
