#include "adapter/fs_errors.h"

#include <errno.h>
#include <string.h>

#include "proto/proto.h"

#define S219_MESSAGE                                                                                             \
	"fs operation unsupported by this sandbox supervisor; upgrade iii-worker to enable fs::* triggers (see " \
	"S219 docs)"

/* NULL for a code the contract does not know. */
static const char *code_of(int errnum, uint8_t op)
{
	switch (errnum) {
	case PROTO_FS_EINVALID:
		return "S210";
	case ENOENT:
		return "S211";
	case PROTO_FS_EWRONGTYPE:
	case ENOTDIR:
		return "S212";
	case EISDIR:
		return op == PROTO_FS_READ ? "S212" : "S216";
	case EEXIST:
		return "S213";
	case ENOTEMPTY:
		/* mv onto a non-empty directory is an I/O error in the contract. */
		return op == PROTO_FS_MV ? "S216" : "S214";
	case EACCES:
	case EPERM:
		return "S215";
	case EROFS:
		/* A read-only mount is not "permission denied": the
		 * predecessor's guest maps only PermissionDenied to S215, the
		 * rest to S216 "other I/O error". */
		return "S216";
	case PROTO_FS_EREGEX:
		return "S217";
	default:
		return errnum > 0 && errnum < PROTO_FS_EINVALID ? "S216" : NULL;
	}
}

void fs_error_classify(sbx_error_t *err, uint8_t op)
{
	if (*err == NULL)
		return;
	const char *preset = (*err)->scode;
	if (strcmp(preset, "S219") == 0) {
		sbx_error_scode(err, "S219", S219_MESSAGE);
	} else if (strcmp(preset, "S216") == 0) {
		/* Set by the VM layer: the guest never answered. */
		sbx_error_prefix(err, "shell client error");
	} else if (preset[0] == '\0') {
		const char *code = code_of((*err)->errnum, op);
		if (code == NULL) {
			sbx_error_prefix(err, "fs error %d", (*err)->errnum);
			code = "S216";
		}
		sbx_error_default_scode(err, code);
	}
}
