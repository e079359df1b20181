/* A paused state branched into a second one (pause_dir.h
 * pause_dir_branch): what a snapshot of a live sandbox keeps, and what
 * each sandbox created from a snapshot resumes (adapter/snapshot).  The
 * state file and the images are only read by the QEMUs that load them,
 * the records are replaced whole (a new file renamed over the name), so
 * a second name shares them; the scratch disk is written by the next
 * VM, so it gets blocks of its own. */
#include <errno.h>
#include <stdbool.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/path.h"
#include "vm/disk.h"
#include "vm/pause_dir.h"

/* Shared by both states; those marked optional a VM may lack. */
static const struct {
	const char *name;
	bool optional;
} shared[] = {
	{ PAUSE_STATE, false },	  { PAUSE_VM, false },	   { PAUSE_IMAGE, true },
	{ PAUSE_STORE_IMAGE, true }, { PAUSE_CONSOLE, true }, { PAUSE_SANDBOX, true },
};

static int branch(const char *from, const char *to, sbx_error_t *err)
{
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

int pause_dir_branch(const char *from, const char *to, sbx_error_t *err)
{
	if (pause_dir_create(to, err) < 0)
		return -1;
	if (branch(from, to, err) < 0) {
		pause_dir_remove(to);
		return sbx_error_prefix(err, "branch of %s", from);
	}
	return 0;
}
