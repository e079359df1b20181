/* PLACEHOLDER(h-terminal): the terminal::* handlers are being built. */
#include "adapter/handlers.h"
#include "common/scodes.h"

int sbx_op_terminal_open(struct sbx_adapter *a, json_t *req, json_t **out)
{
	(void)a, (void)req;
	sbx_error_t err = NULL;
	sbx_error_scode(&err, SBX_S_VM_BOOT, "not built yet");
	return sbx_op_fail(&err, out);
}

int sbx_op_terminal_resize(struct sbx_adapter *a, json_t *req, json_t **out)
{
	(void)a, (void)req;
	sbx_error_t err = NULL;
	sbx_error_scode(&err, SBX_S_VM_BOOT, "not built yet");
	return sbx_op_fail(&err, out);
}

int sbx_op_terminal_close(struct sbx_adapter *a, json_t *req, json_t **out)
{
	(void)a, (void)req;
	sbx_error_t err = NULL;
	sbx_error_scode(&err, SBX_S_VM_BOOT, "not built yet");
	return sbx_op_fail(&err, out);
}
