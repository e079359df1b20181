/* A paused VM resumed by a later process (vm.h sbx_vm_pause_save,
 * sbx_vm_forget, sbx_vm_adopt, sbx_vm_adopted_proc).  The first process
 * boots a VM, starts a counter (a line every 100 ms, no stdin) and a
 * sleeper, reads some lines, writes a file, finds that a running VM's
 * save fails (EINVAL), pauses, saves (the lines written since its last
 * read are in the description, nobody having read them), releases its
 * handles and forgets the VM; a second process (this program again,
 * exec'd) refuses a copy of the description naming a QEMU that does not
 * exist (S300, the copy left), adopts the directory, takes the counter's
 * stream, resumes, reads the counter on from the line after the last one
 * the first process read (unread output saved, none lost or doubled),
 * finds the sleeper killed (nobody took it), reads the file, runs
 * `true`, pauses and resumes the VM once more, and stops it, which
 * removes the directory and leaves no VM directory behind.  Done for a
 * VM restored from a template (guest RAM over a memfd) and a cold-booted
 * one; the cold one runs a copy of the image that is removed while the
 * VM is paused (as the image store may), so that the adopting process
 * runs the pause's second name of it (PAUSE_STORE_IMAGE) from the VM's
 * own directory, and the pause after links it anew.  Prints TAP.
 * Usage: vm_adopt_test IMAGE.erofs */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vm/vm.h"
#include "vm_tap.h"

#define READY_MS 180000
#define OP_MS 60000
#define LINES 10

/* Reads the counter until `want` more whole lines came: each must be
 * *next (then *next is the one after the last); the text after the last
 * newline is carried in tail (it completes later). */
static bool count_on(struct sbx_vm_proc *p, long *next, char *tail, size_t cap, int want, char *why, size_t wcap)
{
	sbx_error_t err = NULL;
	int got = 0;
	while (got < want) {
		size_t have = strlen(tail);
		int fd;
		ssize_t n = sbx_vm_proc_read(p, &fd, tail + have, cap - have - 1, sbx_now_ms() + OP_MS, &err);
		if (n <= 0) {
			snprintf(why, wcap, "read: %s", n == 0 ? "the counter ended" : sbx_error_msg(err));
			sbx_error_free(&err);
			return false;
		}
		tail[have + (size_t)n] = '\0';
		char *nl;
		while ((nl = strchr(tail, '\n')) != NULL) {
			char *e;
			long v = strtol(tail, &e, 10);
			if (e != nl || v != *next) {
				snprintf(why, wcap, "line %ld reads \"%.*s\"", *next, (int)(nl - tail), tail);
				return false;
			}
			(*next)++;
			got++;
			memmove(tail, nl + 1, strlen(nl + 1) + 1);
		}
	}
	return true;
}

static const char counter[] = "i=0; while :; do echo $i; i=$((i+1)); sleep 0.1; done";
static const char written[] = "written before the pause\n";

/* The first process: up to the forget.  Fills the counter's pid, the
 * next line expected and the partial tail for the second. */
static bool first(const char *image, bool cold, const char *dir, uint32_t *pids, long *next, char *tail, size_t cap)
{
	sbx_error_t err = NULL;
	char why[512] = "";
	struct sbx_vm_options opt = { .cpus = 1, .memory_mib = 256, .image = image, .hostname = "adopted",
				      .cold_boot = cold };
	struct sbx_vm *vm = sbx_vm_start(&opt, &err);
	if (vm != NULL && sbx_vm_wait_ready(vm, sbx_now_ms() + READY_MS, &err) < 0) {
		sbx_vm_stop(vm, 0);
		vm = NULL;
	}
	result(vm != NULL, cold ? "cold: the VM boots" : "template: the VM boots", sbx_error_msg(err));
	sbx_error_free(&err);
	if (vm == NULL)
		return false;
	char *c_argv[] = { "sh", "-c", (char *)counter, NULL }, *s_argv[] = { "sleep", "1000", NULL };
	struct sbx_vm_proc *cp = sbx_vm_spawn(vm, c_argv, NULL, NULL, false, &err);
	struct sbx_vm_proc *sp = cp != NULL ? sbx_vm_spawn(vm, s_argv, NULL, NULL, false, &err) : NULL;
	bool ok = sp != NULL && sbx_vm_proc_pid(cp, sbx_now_ms() + OP_MS, &pids[0], &err) == 0 &&
		  sbx_vm_proc_pid(sp, sbx_now_ms() + OP_MS, &pids[1], &err) == 0 &&
		  sbx_vm_write_file(vm, "/root/before.txt", 0644, false, written, sizeof(written) - 1,
				    sbx_now_ms() + OP_MS, &err) == 0;
	if (!ok)
		snprintf(why, sizeof(why), "%s", sbx_error_msg(err));
	ok = ok && count_on(cp, next, tail, cap, LINES, why, sizeof(why));
	/* A running VM has nothing to save. */
	sbx_error_t serr = NULL;
	int saved = ok ? sbx_vm_pause_save(vm, true, sbx_now_ms() + 1000, &serr) : -1;
	result(saved < 0 && serr != NULL && serr->errnum == EINVAL, "a running VM's save fails with EINVAL",
	       sbx_error_msg(serr));
	sbx_error_free(&serr);
	/* Lines nobody reads before the pause: the save keeps them. */
	usleep(500000);
	struct sbx_vm_pause_info info;
	if (ok && (sbx_vm_pause(vm, dir, &info, sbx_now_ms() + OP_MS, &err) < 0 ||
		   sbx_vm_pause_save(vm, true, sbx_now_ms() + 1500, &err) < 0)) {
		snprintf(why, sizeof(why), "%s", sbx_error_msg(err));
		ok = false;
	}
	char vm_json[700];
	snprintf(vm_json, sizeof(vm_json), "%s/vm.json", dir);
	struct stat st;
	ok = ok && stat(vm_json, &st) == 0 && (st.st_mode & 0777) == 0600;
	result(ok, "the counter runs; the VM pauses and its description is saved (0600)", why);
	/* The lines written after the last read are in it, to be read on. */
	FILE *f = ok ? fopen(vm_json, "r") : NULL;
	static char text[1 << 20];
	size_t len = f != NULL ? fread(text, 1, sizeof(text) - 1, f) : 0;
	if (f != NULL)
		fclose(f);
	text[len] = '\0';
	result(strstr(text, "\"output\":[{\"fd\":1") != NULL, "the output nobody read is saved with its stream",
	       NULL);
	sbx_error_free(&err);
	/* Released while paused: their KILLs wait for a resume that this
	 * process will not do; forgotten with the VM. */
	sbx_vm_proc_free(cp);
	sbx_vm_proc_free(sp);
	if (ok)
		sbx_vm_forget(vm);
	else
		sbx_vm_stop(vm, 0);
	return ok;
}

/* A copy of the description naming a QEMU that is not there. */
static bool bad_qemu(const char *dir, const char *state)
{
	char path[800], bad_dir[700];
	snprintf(path, sizeof(path), "%s/vm.json", dir);
	snprintf(bad_dir, sizeof(bad_dir), "%s/bad-qemu", state);
	FILE *f = fopen(path, "r");
	static char text[1 << 20];
	size_t len = f != NULL ? fread(text, 1, sizeof(text) - 1, f) : 0;
	if (f != NULL)
		fclose(f);
	text[len] = '\0';
	char *q = strstr(text, "\"qemu\":{\"path\":\"");
	if (q == NULL || mkdir(bad_dir, 0700) < 0)
		return false;
	q += strlen("\"qemu\":{\"path\":\"");
	char *end = strchr(q, '"');
	char out[sizeof(text) + 64];
	snprintf(out, sizeof(out), "%.*s/nonexistent/qemu%s", (int)(q - text), text, end);
	snprintf(path, sizeof(path), "%s/vm.json", bad_dir);
	f = fopen(path, "w");
	bool wrote = f != NULL && fputs(out, f) >= 0;
	if (f != NULL)
		fclose(f);
	sbx_error_t err = NULL;
	struct sbx_vm *vm = wrote ? sbx_vm_adopt(bad_dir, NULL, &err) : NULL;
	bool ok = wrote && vm == NULL && err != NULL && strcmp(err->scode, "S300") == 0 && access(path, F_OK) == 0;
	result(ok, "an adoption whose QEMU is gone fails with S300 and leaves the directory", sbx_error_msg(err));
	if (vm != NULL)
		sbx_vm_forget(vm);
	sbx_error_free(&err);
	unlink(path);
	rmdir(bad_dir);
	return ok;
}

/* The second process. */
static int second(const char *dir, const char *state, uint32_t pid, uint32_t sleeper, long next, const char *tail0)
{
	char why[512] = "";
	char tail[4096];
	snprintf(tail, sizeof(tail), "%s", tail0);
	bad_qemu(dir, state);
	sbx_error_t err = NULL;
	struct sbx_vm_adopt_options opt = { 0 };
	struct sbx_vm *vm = sbx_vm_adopt(dir, &opt, &err);
	struct sbx_vm_proc *p = vm != NULL ? sbx_vm_adopted_proc(vm, pid) : NULL;
	bool once = p != NULL && sbx_vm_adopted_proc(vm, pid) == NULL && sbx_vm_paused(vm);
	bool ok = once && sbx_vm_resume(vm, sbx_now_ms() + OP_MS, &err) == 0;
	snprintf(why, sizeof(why), "%s", sbx_error_msg(err));
	result(ok, "another process adopts the paused VM, takes the counter once and resumes it", why);
	sbx_error_free(&err);
	long from = next;
	bool counted = ok && count_on(p, &next, tail, sizeof(tail), LINES, why, sizeof(why));
	printf("# the counter went on from line %ld to %ld\n", from, next - 1);
	result(counted, "the counter's lines go on after the adoption: none lost, none doubled", why);
	char cmd[200];
	snprintf(cmd, sizeof(cmd),
		 "i=0; while kill -0 %u 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done; "
		 "kill -0 %u 2>/dev/null && echo alive || echo gone",
		 sleeper, sleeper);
	char *killed = ok ? vm_sh(vm, cmd, OP_MS) : NULL;
	result(killed != NULL && strcmp(killed, "gone\n") == 0, "a process nobody took is killed at the resume",
	       killed);
	free(killed);
	char *kept = ok ? vm_sh(vm, "cat /root/before.txt", OP_MS) : NULL;
	result(kept != NULL && strcmp(kept, written) == 0, "a file written before the pause is there", kept);
	free(kept);
	char *t = ok ? vm_sh(vm, "true && hostname", OP_MS) : NULL;
	result(t != NULL && strcmp(t, "adopted\n") == 0, "an exec runs in the adopted VM", t);
	free(t);
	int status = -1;
	bool ended = p != NULL && sbx_vm_proc_kill(p, 9, &err) == 0 &&
		     sbx_vm_proc_wait(p, sbx_now_ms() + OP_MS, &status, &err) == 0 && status == 128 + 9;
	result(ended, "the adopted counter is killed by its handle", sbx_error_msg(err));
	sbx_error_free(&err);
	sbx_vm_proc_free(p);
	/* Paused again: a second name of the image that the VM ran went
	 * with its directory when QEMU ended; the resume links it anew from
	 * this pause's. */
	char again[700];
	snprintf(again, sizeof(again), "%s-again", dir);
	struct sbx_vm_pause_info info;
	bool cycled = ok && sbx_vm_pause(vm, again, &info, sbx_now_ms() + OP_MS, &err) == 0 &&
		      sbx_vm_resume(vm, sbx_now_ms() + OP_MS, &err) == 0;
	snprintf(why, sizeof(why), "%s", sbx_error_msg(err));
	sbx_error_free(&err);
	char *e = cycled ? vm_sh(vm, "echo again", OP_MS) : NULL;
	result(e != NULL && strcmp(e, "again\n") == 0, "paused and resumed again in this process, it runs an exec",
	       e != NULL ? e : why);
	free(e);
	if (vm != NULL)
		sbx_vm_stop(vm, sbx_now_ms() + 10000);
	result(access(dir, F_OK) < 0 && access(again, F_OK) < 0, "the adopted VM's stop removes its directory", dir);
	/* Nor a VM directory (with a second name of the image in it) left
	 * for the next daemon's leftovers sweep. */
	char vms[700];
	snprintf(vms, sizeof(vms), "%s/vms", state);
	int left = 0;
	DIR *d = opendir(vms);
	bool listed = d != NULL;
	for (struct dirent *de; d != NULL && (de = readdir(d)) != NULL;)
		left += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	if (d != NULL)
		closedir(d);
	snprintf(why, sizeof(why), "%d entries in %.400s", left, vms);
	result(listed && left == 0, "no VM directory is left after the stop", why);
	return failures ? 1 : 0;
}

/* The second process, with where the first stopped. */
static bool run_second(const char *self, const char *dir, const char *state, uint32_t *pids, long next,
		       const char *tail)
{
	char a_pid[16], a_sleeper[16], a_next[32], a_no[16];
	snprintf(a_pid, sizeof(a_pid), "%u", pids[0]);
	snprintf(a_sleeper, sizeof(a_sleeper), "%u", pids[1]);
	snprintf(a_next, sizeof(a_next), "%ld", next);
	snprintf(a_no, sizeof(a_no), "%d", test_no);
	fflush(stdout);
	pid_t child = fork();
	if (child == 0) {
		execl(self, self, "--second", dir, state, a_pid, a_sleeper, a_next, tail, a_no, (char *)NULL);
		_exit(127);
	}
	int status = -1;
	if (child < 0 || waitpid(child, &status, 0) < 0)
		return false;
	/* Its results counted here too. */
	test_no += 10;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(int argc, char **argv)
{
	if (argc == 9 && strcmp(argv[1], "--second") == 0) {
		test_no = atoi(argv[8]);
		return second(argv[2], argv[3], (uint32_t)strtoul(argv[4], NULL, 10),
			      (uint32_t)strtoul(argv[5], NULL, 10), strtol(argv[6], NULL, 10), argv[7]);
	}
	if (argc < 2) {
		fprintf(stderr, "usage: vm_adopt_test IMAGE.erofs\n");
		return 2;
	}
	char state[] = "/tmp/sbx-adopt-test-XXXXXX";
	if (mkdtemp(state) == NULL)
		return 2;
	setenv("III_SANDBOX_STATE_DIR", state, 1);
	/* The cold VM's image, a copy the "store" removes while it is paused. */
	char store[600], cmd[1400];
	snprintf(store, sizeof(store), "%s/store-image.erofs", state);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", argv[1], store);
	bool copied = system(cmd) == 0;
	for (int cold = 0; cold < 2; cold++) {
		char dir[600], tail[4096] = "";
		snprintf(dir, sizeof(dir), "%s/paused-%d", state, cold);
		uint32_t pids[2] = { 0, 0 };
		long next = 0;
		if (cold && !copied) {
			result(false, "cold: the image is copied", store);
			continue;
		}
		if (!first(cold ? store : argv[1], cold, dir, pids, &next, tail, sizeof(tail)))
			continue;
		if (cold && unlink(store) < 0)
			failures++;
		if (!run_second("/proc/self/exe", dir, state, pids, next, tail))
			failures++;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", state);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", state);
	printf("1..%d\n", test_no);
	return failures ? 1 : 0;
}
