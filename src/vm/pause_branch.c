/* A paused state branched into a second one (pause_dir.h
 * pause_dir_branch): what a snapshot of a live sandbox keeps, and what
 * each sandbox created from a snapshot resumes (adapter/snapshot).  The
 * state file and the images are only read by the QEMUs that load them,
 * the sandbox's record is replaced whole (a new file renamed over the
 * name), so a second name shares them; the scratch disk is written by the
 * next VM, so it gets blocks of its own; the VM's description is written
 * anew for the sandbox the branch becomes. */
#include <errno.h>
#include <stdbool.h>
#include <unistd.h>

#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/path.h"
#include "vm/disk.h"
#include "vm/pause_desc.h"
#include "vm/pause_dir.h"

/* Shared by both states; those marked optional a VM may lack. */
static const struct {
	const char *name;
	bool optional;
} shared[] = {
	{ PAUSE_STATE, false },	     { PAUSE_IMAGE, true },   { PAUSE_STORE_IMAGE, true },
	{ PAUSE_CONSOLE, true }, { PAUSE_SANDBOX, true },
};

static void desc_freep(struct pause_desc *d)
{
	pause_desc_free(d);
}

/* The branch's description: the VM's, its network helper told the
 * sandbox it serves now (its log lines and denials name it). */
static int describe(const char *from, const char *to, const char *label, sbx_error_t *err)
{
	cleanup_free char *text = pause_dir_read_text(from, PAUSE_VM, PAUSE_DESC_MAX_BYTES + 1);
	if (text == NULL)
		return sbx_error_set(err, ENOENT, "no description of a paused VM (%s) in %s", PAUSE_VM, from);
	__attribute__((cleanup(desc_freep))) struct pause_desc d = { 0 };
	if (pause_desc_parse(text, strlen(text), &d, err) < 0)
		return -1;
	for (size_t i = 0; label != NULL && d.net_args != NULL && d.net_args[i] != NULL && d.net_args[i + 1] != NULL;
	     i++) {
		if (strcmp(d.net_args[i], "--sandbox") != 0)
			continue;
		char *v = strdup(label);
		if (v == NULL)
			return sbx_error_set(err, ENOMEM, "pause description");
		free(d.net_args[i + 1]);
		d.net_args[i + 1] = v;
	}
	cleanup_free char *out = pause_desc_format(&d, err);
	if (out == NULL)
		return -1;
	return pause_dir_write_text(to, PAUSE_VM, out, err);
}

static int branch(const char *from, const char *to, const char *label, sbx_error_t *err)
{
	if (describe(from, to, label, err) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(shared) / sizeof(shared[0]); i++) {
		cleanup_free char *path = sbx_path_join(from, shared[i].name);
		if (path == NULL)
			return sbx_error_errno(err, ENOMEM, "pause path");
		if (shared[i].optional && access(path, F_OK) < 0 && errno == ENOENT)
			continue;
		/* Same file system (both under the state directory): a link
		 * and never a copy, which would double a guest's RAM on disk. */
		if (pause_dir_link(to, shared[i].name, path, err) < 0)
			return -1;
	}
	cleanup_free char *scratch = sbx_path_join(from, PAUSE_SCRATCH);
	cleanup_free char *copy = sbx_path_join(to, PAUSE_SCRATCH);
	if (scratch == NULL || copy == NULL)
		return sbx_error_errno(err, ENOMEM, "pause path");
	return disk_clone(scratch, copy, err);
}

int pause_dir_branch(const char *from, const char *to, const char *label, sbx_error_t *err)
{
	if (pause_dir_create(to, err) < 0)
		return -1;
	if (branch(from, to, label, err) < 0) {
		pause_dir_remove(to);
		return sbx_error_prefix(err, "branch of %s", from);
	}
	return 0;
}
