/* An fs call's hold, after waking a paused sandbox (fs_wake.h). */
#include "adapter/fs/fs_wake.h"

#include "adapter/pause/sandbox_pause.h"
#include "adapter/request.h"

struct fs_hold fs_hold_wake(struct sbx_adapter *a, const char *id, sbx_error_t *err)
{
	char uuid[SBX_UUID_STRLEN + 1];
	if (req_sandbox_uuid(id, uuid, err) < 0 || sandbox_wake(a, uuid, err) < 0)
		return (struct fs_hold){ .a = a };
	return fs_hold_take(a, uuid, err);
}
