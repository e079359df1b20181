/* VMs started from a snapshot (vm/snapshot.h): the first boot of an image
 * saves a copy-on-write template (RAM in a memfd, x-ignore-shared, sealed
 * once saved and kept on disk as a sparse file) and starts again from it,
 * the next ones restore it and still get their own identity, randomness
 * and memory, and cannot write the template's RAM; a broken template
 * (state or RAM file) falls back to a cold boot, and so does a
 * restore that stalls, within the create's deadline, dropping its
 * template; cold_boot bypasses snapshots.  Prints TAP.
 * Usage: vm_snapshot_test IMAGE.erofs   (uses a private state directory) */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vm/template_cache.h"
#include "vm/vm.h"
#include "vm_tap.h"

#define READY_MS 120000

/* A template directory under <state>/snapshots other than `not`, or "". */
static void other_template(const char *state, const char *not, char *out, size_t cap)
{
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/snapshots", state);
	out[0] = '\0';
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		char p[800];
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (strlen(e->d_name) == 64 && strcmp(p, not) != 0)
			snprintf(out, cap, "%.599s", p);
	}
	if (d != NULL)
		closedir(d);
}

static struct sbx_vm *boot(const char *image, const char *hostname, char *const *env, bool cold)
{
	struct sbx_vm_options opt = { .cpus = 1, .memory_mib = 256, .image = image, .hostname = hostname,
				      .env = env, .cold_boot = cold };
	sbx_error_t err = NULL;
	struct sbx_vm *vm = sbx_vm_start(&opt, &err);
	if (vm != NULL && sbx_vm_wait_ready(vm, sbx_now_ms() + READY_MS, &err) < 0) {
		sbx_vm_stop(vm, 0);
		vm = NULL;
	}
	if (vm == NULL)
		fprintf(stderr, "boot %s: %s\n", hostname, sbx_error_msg(err));
	sbx_error_free(&err);
	return vm;
}

/* The one template directory under <state>/snapshots, or "" if none. */
static void template_dir(const char *state, char *out, size_t cap)
{
	other_template(state, "", out, cap);
}

static bool exists(const char *p)
{
	return p[0] != '\0' && access(p, F_OK) == 0;
}

/* Boots, reads the hostname back and stops: one more template user. */
static bool boot_and_stop(const char *image, const char *hostname)
{
	struct sbx_vm *vm = boot(image, hostname, NULL, false);
	char *h = vm != NULL ? vm_sh(vm, "hostname", 30000) : NULL;
	bool ok = h != NULL && strncmp(h, hostname, strlen(hostname)) == 0;
	free(h);
	if (vm != NULL)
		sbx_vm_stop(vm, sbx_now_ms() + 5000);
	return ok;
}
/* A format 3 RAM directory on /dev/shm whose owner file names `owner`,
 * with a RAM file in it: its path (out). */
static bool legacy_ram_dir(const char *name, const char *owner, char *out, size_t cap)
{
	char p[800];
	snprintf(out, cap, "/dev/shm/sandbox-libkrun-%s-%ld", name, (long)getpid());
	if (mkdir(out, 0700) < 0)
		return false;
	snprintf(p, sizeof(p), "%s/owner", out);
	FILE *f = fopen(p, "w");
	bool ok = f != NULL && fputs(owner, f) >= 0;
	if (f != NULL && fclose(f) != 0)
		ok = false;
	snprintf(p, sizeof(p), "%s/k-1.mem", out);
	int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return false;
	close(fd);
	return ok;
}

/* What a copy-on-write template records of its RAM file (its "ram.id"). */
static bool ram_id(const char *tpl, char *out, size_t cap)
{
	char p[700];
	snprintf(p, sizeof(p), "%s/ram.id", tpl);
	FILE *fp = fopen(p, "r");
	if (fp == NULL)
		return false;
	bool ok = fgets(out, (int)cap, fp) != NULL;
	fclose(fp);
	return ok;
}

/* The clone QEMUs of this test's state directory (their command line
 * names it) that map a template memfd privately: for each, whether its
 * memfd refuses a write through a read-write reopen (EPERM) and carries
 * F_SEAL_WRITE.  Returns how many were checked, -1 when one was not
 * sealed. */
static int clones_sealed(const char *state)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int checked = 0;
	while (d != NULL && (e = readdir(d)) != NULL) {
		char p[600], cmd[8192];
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(p, sizeof(p), "/proc/%s/cmdline", e->d_name);
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, cmd, sizeof(cmd) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			continue;
		for (ssize_t i = 0; i < n; i++)
			cmd[i] = cmd[i] == '\0' ? ' ' : cmd[i];
		cmd[n] = '\0';
		char *mem = strstr(cmd, "mem-path=/proc/self/fd/");
		if (strstr(cmd, state) == NULL || mem == NULL || strstr(cmd, "share=off") == NULL)
			continue;
		snprintf(p, sizeof(p), "/proc/%s/fd/%d", e->d_name, atoi(mem + strlen("mem-path=/proc/self/fd/")));
		int rw = open(p, O_RDWR | O_CLOEXEC);
		errno = 0;
		bool refused = rw >= 0 && write(rw, "x", 1) < 0 && errno == EPERM;
		int seals = rw >= 0 ? fcntl(rw, F_GET_SEALS) : -1;
		if (rw >= 0)
			close(rw);
		if (!refused || seals < 0 || !(seals & F_SEAL_WRITE)) {
			closedir(d);
			return -1;
		}
		checked++;
	}
	if (d != NULL)
		closedir(d);
	return checked;
}

static uint64_t allocated(const char *dir, const char *name)
{
	char p[700];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return stat(p, &st) == 0 ? (uint64_t)st.st_blocks * 512u : 0;
}

static bool same(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* A restore that stalls (QEMU stopped before it loads the state: a
 * SANDBOX_QEMU wrapper that stops itself when it gets -incoming and a
 * marker file exists), under the create's own 30 s deadline (contract
 * §6.3): the template is dropped and the same call boots cold and is
 * ready.  The wrapper's bytes key its own template: the first boot makes
 * it (no marker yet), the second stalls on it.  Before, a restored VM
 * killed at once drops the template the first boot made.  Four boots. */
static void stalled_restore(const char *state, const char *image)
{
	char wrapper[600], marker[700];
	snprintf(wrapper, sizeof(wrapper), "%s/qemu-stall", state);
	snprintf(marker, sizeof(marker), "%s.stall", wrapper);
	FILE *w = fopen(wrapper, "w");
	bool made = w != NULL && fputs("#!/bin/sh\ncase \" $* \" in *\" -incoming \"*) [ -e \"$0.stall\" ] && kill -STOP $$;; esac\n"
				      "exec qemu-system-x86_64 \"$@\"\n", w) >= 0;
	if (w != NULL && fclose(w) != 0)
		made = false;
	made = made && chmod(wrapper, 0755) == 0 && setenv("SANDBOX_QEMU", wrapper, 1) == 0;
	char tpl[600];
	/* A restored guest that dies at once (its QEMU killed, as a guest that
	 * panics on a CPU feature gone would end) condemns its template. */
	bool early = made && boot_and_stop(image, "s0");
	struct sbx_vm *k = early ? boot(image, "k", NULL, false) : NULL;
	early = k != NULL && sbx_vm_timings(k)->restored && kill(sbx_vm_pid(k), SIGKILL) == 0;
	while (early && sbx_vm_alive(k))
		usleep(10000);
	if (k != NULL)
		sbx_vm_stop(k, sbx_now_ms() + 5000);
	template_dir(state, tpl, sizeof(tpl));
	result(early && tpl[0] == '\0', "a restored guest that dies within seconds of ready drops its template", tpl);
	struct sbx_vm *first = made ? boot(image, "s1", NULL, false) : NULL;
	template_dir(state, tpl, sizeof(tpl));
	bool saved = first != NULL && sbx_vm_timings(first)->restored && tpl[0] != '\0';
	if (first != NULL)
		sbx_vm_stop(first, sbx_now_ms() + 5000);
	int fd = saved ? open(marker, O_CREAT | O_WRONLY | O_CLOEXEC, 0600) : -1;
	if (fd >= 0)
		close(fd);
	struct sbx_vm_options opt = { .cpus = 1, .memory_mib = 256, .image = image, .hostname = "s2" };
	sbx_error_t err = NULL;
	struct sbx_vm *vm = fd >= 0 ? sbx_vm_start(&opt, &err) : NULL;
	bool ready = vm != NULL && sbx_vm_wait_ready(vm, sbx_now_ms() + 30000, &err) == 0;
	char *h = ready ? vm_sh(vm, "hostname", 30000) : NULL;
	char after[600];
	template_dir(state, after, sizeof(after));
	result(saved && ready && !sbx_vm_timings(vm)->restored && same(h, "s2\n") && after[0] == '\0',
	       "a stalled restore drops its template and the same call boots cold within the create's deadline",
	       err != NULL ? sbx_error_msg(err) : after);
	free(h);
	sbx_error_free(&err);
	if (vm != NULL)
		sbx_vm_stop(vm, sbx_now_ms() + 5000);
	unsetenv("SANDBOX_QEMU");
	unlink(marker);
	unlink(wrapper);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: vm_snapshot_test IMAGE.erofs\n");
		return 2;
	}
	char state[] = "/tmp/sbx-snapshot-test-XXXXXX";
	if (mkdtemp(state) == NULL)
		return 2;
	setenv("III_SANDBOX_STATE_DIR", state, 1);
	const char *image = argv[1];
	const char *rnd = "head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \\n'";
	char tpl[600];

	struct sbx_vm *a = boot(image, "a", NULL, false);
	template_dir(state, tpl, sizeof(tpl));
	/* Copy-on-write: the template VM boots cold, is saved and ends; the
	 * first VM is then its first clone. */
	result(a != NULL && sbx_vm_timings(a)->hello > 0 && sbx_vm_timings(a)->restored && tpl[0] != '\0',
	       "the first boot saves a template and starts again from it", tpl);
	char *ra = a != NULL ? vm_sh(a, rnd, 30000) : NULL;
	char ram_path[700], ram_desc[200] = "";
	struct stat st_state, st_ram;
	char spath[700];
	snprintf(spath, sizeof(spath), "%s/state", tpl);
	snprintf(ram_path, sizeof(ram_path), "%s/ram", tpl);
	bool ram_ok = ram_id(tpl, ram_desc, sizeof(ram_desc)) && stat(ram_path, &st_ram) == 0 &&
		      st_ram.st_size == 256ll << 20 && stat(spath, &st_state) == 0;
	/* x-ignore-shared: device state only (the streamed state is ~50 MB);
	 * the RAM file holds only the pages the guest wrote. */
	result(ram_ok && st_state.st_size < (1 << 20) && (st_ram.st_mode & 0777) == 0600 &&
		       (uint64_t)st_ram.st_blocks * 512u < 200ull << 20,
	       "the template's RAM is a sparse root-only file and its state file holds device state only", ram_desc);
	int sealed = clones_sealed(state);
	result(sealed >= 1, "a clone's RAM memfd is sealed: a write through /proc/<qemu>/fd fails with EPERM",
	       sealed < 0 ? "a clone's memfd took a write" : "no clone QEMU found");

	char *env_b[] = { "WHO=bee", NULL }, *env_c[] = { "WHO=sea", NULL };
	struct sbx_vm *b = boot(image, "b", env_b, false), *c = boot(image, "c", env_c, false);
	result(b != NULL && c != NULL && sbx_vm_timings(b)->restored && sbx_vm_timings(c)->restored &&
		       sbx_vm_timings(b)->hello == 0,
	       "the next boots restore the template (no HELLO)", NULL);
	char *rb = b != NULL ? vm_sh(b, rnd, 30000) : NULL, *rc = c != NULL ? vm_sh(c, rnd, 30000) : NULL;
	result(rb != NULL && rc != NULL && ra != NULL && strlen(rb) == 32 && !same(ra, rb) && !same(rb, rc) &&
		       !same(ra, rc),
	       "restored VMs read different /dev/urandom bytes (CRNG reseeded)", rb);
	char *hb = b != NULL ? vm_sh(b, "echo $(hostname) $WHO", 30000) : NULL;
	char *hc = c != NULL ? vm_sh(c, "echo $(hostname) $WHO", 30000) : NULL;
	result(same(hb, "b bee\n") && same(hc, "c sea\n"), "restored VMs get their own hostname and env", hb);
	char *idb = b != NULL ? vm_sh(b, "cat /proc/sys/kernel/random/boot_id", 30000) : NULL;
	char *idc = c != NULL ? vm_sh(c, "cat /proc/sys/kernel/random/boot_id", 30000) : NULL;
	result(idb != NULL && idc != NULL && !same(idb, idc), "restored VMs have different boot ids", idb);
	char *wb = b != NULL ? vm_sh(b, "echo only-b > /mark; cat /mark", 30000) : NULL;
	char *wc = c != NULL ? vm_sh(c, "test -e /mark && echo seen || echo absent", 30000) : NULL;
	result(same(wb, "only-b\n") && same(wc, "absent\n"), "restored VMs have their own scratch disks", wc);
	/* The clones map the template's RAM privately: a page one writes is
	 * its own. */
	char *mb = b != NULL ? vm_sh(b, "echo in-b-memory > /dev/shm/m; cat /dev/shm/m", 30000) : NULL;
	char *mc = c != NULL ? vm_sh(c, "cat /dev/shm/m 2>/dev/null || echo absent", 30000) : NULL;
	struct sbx_vm *e = boot(image, "e", NULL, false);
	char *me = e != NULL ? vm_sh(e, "cat /dev/shm/m 2>/dev/null || echo absent", 30000) : NULL;
	result(same(mb, "in-b-memory\n") && same(mc, "absent\n") && same(me, "absent\n"),
	       "a value written to tmpfs in one clone is absent in the others and in the next", me);
	char *clock = b != NULL ? vm_sh(b, "date +%s", 30000) : NULL;
	long skew = clock != NULL ? labs(atol(clock) - (long)time(NULL)) : 99;
	result(skew <= 2, "a restored VM's clock is the host's", clock);

	struct sbx_vm *cold = boot(image, "cold", NULL, true);
	result(cold != NULL && !sbx_vm_timings(cold)->restored, "cold_boot bypasses the snapshot", NULL);

	/* The RAM file truncated under the daemon: the next create boots
	 * cold, the template goes.  (Live clones map the sealed memfd: the
	 * file is not theirs.) */
	bool cut = ram_ok && truncate(ram_path, 4096) == 0;
	struct sbx_vm *f = boot(image, "f", NULL, false);
	char *hf = f != NULL ? vm_sh(f, "hostname", 30000) : NULL;
	char tpl_cut[600];
	template_dir(state, tpl_cut, sizeof(tpl_cut));
	char *still = b != NULL ? vm_sh(b, "cat /dev/shm/m; head -c 1000000 /dev/zero | md5sum", 30000) : NULL;
	result(cut && f != NULL && !sbx_vm_timings(f)->restored && same(hf, "f\n") && tpl_cut[0] == '\0' &&
		       access(ram_path, F_OK) < 0 && still != NULL && strncmp(still, "in-b-memory\n", 12) == 0,
	       "a truncated template RAM file falls back to a cold boot and is dropped; live clones go on", tpl_cut);
	free(still);
	if (f != NULL)
		sbx_vm_stop(f, sbx_now_ms() + 5000);
	/* The next create makes a new template generation, in a new file. */
	struct sbx_vm *g = boot(image, "g", NULL, false);
	template_dir(state, tpl, sizeof(tpl));
	char ram_g[200] = "";
	result(g != NULL && sbx_vm_timings(g)->restored && ram_id(tpl, ram_g, sizeof(ram_g)) &&
		       strcmp(ram_g, ram_desc) != 0,
	       "a new template generation gets a new RAM file", ram_g);
	if (g != NULL)
		sbx_vm_stop(g, sbx_now_ms() + 5000);

	/* A template QEMU cannot load: the create still succeeds, cold. */
	char path[700];
	snprintf(path, sizeof(path), "%s/state", tpl);
	bool broken = tpl[0] != '\0' && truncate(path, 4096) == 0;
	struct sbx_vm *d = boot(image, "d", NULL, false);
	char *hd = d != NULL ? vm_sh(d, "hostname", 30000) : NULL;
	char tpl_after[600];
	template_dir(state, tpl_after, sizeof(tpl_after));
	result(broken && d != NULL && !sbx_vm_timings(d)->restored && same(hd, "d\n") && tpl_after[0] == '\0',
	       "a broken template falls back to a cold boot and is dropped", tpl_after);

	stalled_restore(state, image);
	struct sbx_vm *vms[] = { a, b, c, cold, d, e };
	for (size_t i = 0; i < sizeof(vms) / sizeof(vms[0]); i++) {
		if (vms[i] != NULL)
			sbx_vm_stop(vms[i], sbx_now_ms() + 5000);
	}

	/* The cache (vm/template_cache.h).  A second image (a copy with a
	 * block more at its end: templates are keyed by content, so a plain
	 * copy would share the first one's) gets a template of its own; the
	 * first image's template is used after it and a clone of it stays
	 * live. */
	char copy[600], cpcmd[1400];
	snprintf(copy, sizeof(copy), "%s/copy.erofs", state);
	snprintf(cpcmd, sizeof(cpcmd), "cp '%s' '%s' && truncate -s +4096 '%s'", image, copy, copy);
	bool copied = system(cpcmd) == 0;
	char tpl_copy[600], tpl_orig[600];
	bool built = copied && boot_and_stop(copy, "h");
	template_dir(state, tpl_copy, sizeof(tpl_copy));
	struct sbx_vm *live = boot(image, "i", NULL, false);
	other_template(state, tpl_copy, tpl_orig, sizeof(tpl_orig));
	/* Over budget (room for one): the least recently used goes. */
	uint64_t one = allocated(tpl_orig, "ram") + allocated(tpl_orig, "state");
	unsigned dropped = template_cache_trim((one >> 20) + 1);
	result(built && live != NULL && exists(tpl_orig) && dropped == 1 && !exists(tpl_copy),
	       "an over-budget template cache drops the least recently used", tpl_copy);
	/* A template whose image went can no longer match: the sweep (at
	 * `image rm` and at the daemon's start) removes it and its RAM file. */
	bool rebuilt = copied && boot_and_stop(copy, "j");
	template_dir(state, tpl_copy, sizeof(tpl_copy));
	other_template(state, tpl_orig, tpl_copy, sizeof(tpl_copy));
	char ram_copy[700];
	snprintf(ram_copy, sizeof(ram_copy), "%s/ram", tpl_copy);
	bool has_ram = exists(ram_copy);
	unlink(copy);
	unsigned swept = template_cache_sweep();
	result(rebuilt && has_ram && swept == 1 && !exists(tpl_copy) && exists(tpl_orig),
	       "a template whose image is gone is removed with its RAM file, the others stay", tpl_copy);
	/* A live clone's template dropped: the clone keeps its own mapping. */
	unsigned all = template_cache_trim(1);
	char *alive = live != NULL ? vm_sh(live, "head -c 1000000 /dev/zero | md5sum; hostname", 30000) : NULL;
	result(all == 1 && !exists(tpl_orig) && alive != NULL && strstr(alive, "\ni\n") != NULL,
	       "a live clone goes on after its template is dropped", alive);
	free(alive);
	if (live != NULL)
		sbx_vm_stop(live, sbx_now_ms() + 5000);
	/* The /dev/shm RAM directories of format 3 templates: this state
	 * directory's and a gone one's are swept, a live one's stays. */
	char real[600], other[] = "/tmp/sbx-snapshot-other-XXXXXX", other_snaps[600];
	char mine_dir[200], gone_dir[200], live_dir[200];
	bool made = realpath(state, real) != NULL && mkdtemp(other) != NULL;
	snprintf(other_snaps, sizeof(other_snaps), "%s/snapshots", other);
	made = made && mkdir(other_snaps, 0700) == 0 && legacy_ram_dir("mine", real, mine_dir, sizeof(mine_dir)) &&
	       legacy_ram_dir("gone", "/nonexistent/sbx-state", gone_dir, sizeof(gone_dir)) &&
	       legacy_ram_dir("live", other, live_dir, sizeof(live_dir));
	template_cache_sweep();
	result(made && !exists(mine_dir) && !exists(gone_dir) && exists(live_dir),
	       "the sweep removes /dev/shm RAM directories of format 3 of this or a gone state directory", live_dir);
	char rm_legacy[1200];
	snprintf(rm_legacy, sizeof(rm_legacy), "rm -rf '%s' '%s' '%s' '%s'", mine_dir, gone_dir, live_dir, other);
	if (system(rm_legacy) != 0)
		fprintf(stderr, "could not remove %s\n", live_dir);
	char *bufs[] = { ra, rb, rc, hb, hc, idb, idc, wb, wc, clock, hd, mb, mc, me, hf };
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		free(bufs[i]);
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", state);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", state);
	printf("1..%d\n", test_no);
	return failures == 0 ? 0 : 1;
}
