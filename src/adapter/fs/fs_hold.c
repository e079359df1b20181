/* The checks and the hold around every fs operation's guest call
 * (fs_hold.h). */
#include "adapter/fs/fs_hold.h"

#include <string.h>

#include "adapter/fs/fs_errors.h"
#include "adapter/fs/octal.h"
#include "adapter/request.h"
#include "adapter/sandbox/sandbox.h"
#include "adapter/scode.h"
#include "common/cleanup.h"
#include "common/scodes.h"

/* A path the wire can carry; names longer than PATH_MAX fail as the guest
 * would (ENAMETOOLONG), naming the start of the path. */
int fs_check_path(const char *path, sbx_error_t *err)
{
	size_t n = strlen(path);
	if (n == 0)
		return sbx_error_scode(err, SBX_S_FS_NOT_FOUND, "path not found: (empty path)");
	if (n > PROTO_MAX_PATH)
		return sbx_error_scode(err, SBX_S_FS_IO, "path too long (%zu bytes, at most %u): %.64s...", n,
				       PROTO_MAX_PATH, path);
	return 0;
}

/* Parses the mode the guest would check first (S210). */
int fs_parse_mode(const char *mode, uint32_t *out, sbx_error_t *err)
{
	unsigned m;
	if (octal_mode_parse(mode, &m, err) < 0)
		return -1;
	*out = m;
	return 0;
}

/* A sandbox whose VM went during the call leaves at once, as after an
 * exec: later calls get S002 rather than wait for the reaper. */
void fs_hold_release(struct fs_hold *h)
{
	if (h->sb == NULL)
		return;
	/* Asked while the hold keeps the VM from being detached. */
	bool dead = sandbox_vm_dead(h->a, h->sb);
	sbx_registry_fs_end(h->a->reg, sbx_steal_ptr(h->sb));
	if (dead)
		sandbox_remove_dead(h->a, h->id);
}

struct fs_hold fs_hold_take(struct sbx_adapter *a, const char *id, sbx_error_t *err)
{
	struct fs_hold h = { .a = a };
	/* Not woken here: a paused sandbox is its caller's (fs_wake.h). */
	if (req_sandbox_uuid(id, h.id, err) == 0)
		h.sb = sbx_registry_fs_begin(a->reg, h.id, err);
	return h;
}

/* After the request checks: a VM to talk to (S300 without one). */
int fs_need_vm(const struct fs_hold *h, sbx_error_t *err)
{
	if (h->a->fs.ops == NULL || h->sb->vm == NULL)
		return sbx_error_scode(err, SBX_S_VM_BOOT, SBX_NO_VM_DETAIL);
	return 0;
}

void fs_hold_blame_stop(const struct fs_hold *h, sbx_error_t *err)
{
	if (*err == NULL || h->sb == NULL || !sbx_registry_stopped_paused(h->a->reg, h->sb))
		return;
	sbx_error_free(err);
	sbx_error_scode(err, SBX_S_STOPPED, "sandbox %s was stopped while the call waited for its resume", h->sb->id);
}

/* Fails an fs operation with the S-code of what went wrong. */
int fs_fail(sbx_error_t *err, uint8_t type, json_t **out)
{
	fs_error_classify(err, type);
	return sbx_op_fail(err, out);
}

