/* An adopted paused VM whose store image was removed meanwhile runs the
 * pause directory's second name of it (PAUSE_STORE_IMAGE), which the
 * resume links into the VM's own directory (vm_resume.c): the keeper
 * must remove that link too when QEMU ends, or neither it nor the
 * directory goes (left to the next daemon's leftovers sweep).  No VM: a
 * pause directory described by hand, and a QEMU (a script) that notes
 * its arguments and never answers its monitor, which fails the resume
 * by its deadline; the daemon's side then stops the keeper, which kills
 * that QEMU and cleans up as at any VM's stop.  (A QEMU that exited at
 * once could beat the console log's creation, which follows the
 * keeper's start.) */
#include <dirent.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "harness.h"
#include "proto/proto.h"
#include "vm/pause_desc.h"
#include "vm/pause_dir.h"
#include "vm/vm.h"

/* What the resume waits for the monitor's greeting: the script is long
 * started by then. */
#define RESUME_MS 2000

static int put_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "we");
	if (f == NULL)
		return -1;
	int rc = fputs(text, f) < 0 ? -1 : 0;
	if (fclose(f) != 0 || chmod(path, mode) < 0)
		rc = -1;
	return rc;
}

/* The entries of dir, "." and ".." left out; -1 when it cannot be read. */
static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	}
	closedir(d);
	return n;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

/* A description as a save writes it for a VM that ran the store image
 * `image` (then removed from the store) and the QEMU `qemu`. */
static char *describe(const char *qemu, const char *kernel, const struct pause_file *image)
{
	static char *no_env[] = { NULL };
	struct pause_desc d = {
		.format = PAUSE_DESC_FORMAT, .proto = PROTO_VERSION,
		.image_linked = true, .image_store = true, .image = *image,
		.accel = SBX_ACCEL_TCG, .threads_per_core = 1, .cpus = 1, .memory_mib = 256, .tcg_cache_mib = 32,
		.scratch_bytes = 1u << 20, .memory_bytes = 256ull << 20, .jail_memory_mib = 600, .nofile = 1024,
		.pids_max = 100, .hostname = "adopted", .user = "0:0", .env = no_env, .snap_key = "",
		.chan = { .next_id = 1 },
	};
	sbx_error_t err = NULL;
	char *text = NULL;
	if (pause_file_stat(qemu, &d.qemu, &err) == 0 && pause_file_stat(kernel, &d.kernel, &err) == 0 &&
	    pause_file_stat(kernel, &d.boot, &err) == 0)
		text = pause_desc_format(&d, &err);
	free(d.qemu.path);
	free(d.kernel.path);
	free(d.boot.path);
	sbx_error_free(&err);
	return text;
}

TEST(a_resumed_vm_on_the_store_images_second_name_leaves_no_directory_behind)
{
	char state[] = "/tmp/sbx-adopt-resume-XXXXXX";
	CHECK(mkdtemp(state) != NULL);
	setenv("III_SANDBOX_STATE_DIR", state, 1);
	char qemu[200], args[200], kernel[200], store[200], image[300], paused[200], vms[200];
	snprintf(qemu, sizeof(qemu), "%s/qemu", state);
	snprintf(args, sizeof(args), "%s/qemu.args", state);
	snprintf(kernel, sizeof(kernel), "%s/kernel", state);
	snprintf(store, sizeof(store), "%s/store", state);
	snprintf(image, sizeof(image), "%s/img.erofs", store);
	snprintf(paused, sizeof(paused), "%s/paused", state);
	snprintf(vms, sizeof(vms), "%s/vms", state);
	char script[400];
	snprintf(script, sizeof(script), "#!/bin/sh\necho \"$@\" > '%s'\nexec sleep 60\n", args);
	CHECK_INT(put_file(qemu, script, 0755), 0);
	CHECK_INT(put_file(kernel, "kernel", 0644), 0);
	CHECK_INT(mkdir(store, 0755), 0);
	CHECK_INT(put_file(image, "the store's image", 0644), 0);

	/* The pause: its state, scratch disk and the image's second name. */
	sbx_error_t err = NULL;
	CHECK_INT(pause_dir_create(paused, &err), 0);
	CHECK_INT(pause_dir_write_text(paused, PAUSE_STATE, "", &err), 0);
	CHECK_INT(pause_dir_write_text(paused, PAUSE_SCRATCH, "", &err), 0);
	CHECK_INT(pause_dir_link(paused, PAUSE_STORE_IMAGE, image, &err), 0);
	struct pause_file ran = { 0 };
	CHECK_INT(pause_file_stat(image, &ran, &err), 0);
	char *text = describe(qemu, kernel, &ran);
	free(ran.path);
	CHECK(text != NULL);
	int wrote = pause_dir_write_text(paused, PAUSE_VM, text, &err);
	free(text);
	CHECK_INT(wrote, 0);
	/* The store removes its image while the VM is paused. */
	CHECK_INT(unlink(image), 0);

	struct sbx_vm *vm = sbx_vm_adopt(paused, NULL, &err);
	CHECK(vm != NULL);
	int resumed = sbx_vm_resume(vm, sbx_now_ms() + RESUME_MS, &err);
	sbx_error_free(&err);
	sbx_vm_stop(vm, 0);
	CHECK(resumed < 0); /* the QEMU script never answers */

	/* The VM ran the link in its own directory, and nothing of that
	 * directory is left. */
	FILE *f = fopen(args, "re");
	char line[8192] = "";
	bool read = f != NULL && fgets(line, sizeof(line), f) != NULL;
	if (f != NULL)
		fclose(f);
	char in_vms[300];
	snprintf(in_vms, sizeof(in_vms), "%s/", vms);
	const char *at = strstr(line, in_vms);
	bool ran_link = read && at != NULL && strstr(at, "/" PAUSE_STORE_IMAGE) != NULL;
	int left = entries(vms);
	bool pause_gone = access(paused, F_OK) < 0;
	CHECK_INT(nftw(state, rm_entry, 8, FTW_DEPTH | FTW_PHYS), 0);
	CHECK(ran_link);
	CHECK_INT(left, 0);
	CHECK(pause_gone);
}
