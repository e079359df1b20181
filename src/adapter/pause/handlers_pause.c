/* sandbox-libkrun::pause and sandbox-libkrun::resume (issue 40), the
 * extensions over pause/sandbox_pause.c.  Both check their sandbox as the
 * 23 do: S001 for a bad UUID, S002 unknown, S004 stopped. */
#include "adapter/handlers.h"
#include "adapter/pause/sandbox_pause.h"
#include "adapter/request.h"

/* The request's one field, canonical. */
static int sandbox_of(json_t *req, char uuid[SBX_UUID_STRLEN + 1], sbx_error_t *err)
{
	const char *id;
	if (req_object(req, err) < 0 || req_string(req, "sandbox_id", true, &id, err) < 0)
		return -1;
	return req_sandbox_uuid(id, uuid, err);
}

int sbx_op_pause(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	char uuid[SBX_UUID_STRLEN + 1];
	uint64_t size_bytes = 0;
	int64_t duration_ms = 0;
	if (sandbox_of(req, uuid, &err) < 0 || sandbox_pause(a, uuid, &size_bytes, &duration_ms, &err) < 0)
		return sbx_op_fail(&err, out);
	*out = json_pack("{s:b, s:I, s:I}", "paused", 1, "size_bytes", (json_int_t)size_bytes, "duration_ms",
			 (json_int_t)duration_ms);
	return 0;
}

int sbx_op_resume(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	char uuid[SBX_UUID_STRLEN + 1];
	int64_t ready_ms = 0;
	if (sandbox_of(req, uuid, &err) < 0 || sandbox_resume(a, uuid, &ready_ms, &err) < 0)
		return sbx_op_fail(&err, out);
	*out = json_pack("{s:b, s:I}", "resumed", 1, "ready_ms", (json_int_t)ready_ms);
	return 0;
}
