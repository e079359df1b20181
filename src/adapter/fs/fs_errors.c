#include "adapter/fs/fs_errors.h"

#include <errno.h>
#include <string.h>

#include "common/scodes.h"
#include "proto/proto.h"

#define S219_MESSAGE                                                                                             \
	"fs operation unsupported by this sandbox supervisor; upgrade iii-worker to enable fs::* triggers (see " \
	"S219 docs)"

/* NULL for a code the contract does not know. */
static const char *code_of(int errnum, uint8_t op)
{
	switch (errnum) {
	case PROTO_FS_EINVALID:
		return SBX_S_FS;
	case ENOENT:
		return SBX_S_FS_NOT_FOUND;
	case PROTO_FS_EWRONGTYPE:
	case ENOTDIR:
		return SBX_S_FS_WRONG_TYPE;
	case EISDIR:
		return op == PROTO_FS_READ ? SBX_S_FS_WRONG_TYPE : SBX_S_FS_IO;
	case EEXIST:
		return SBX_S_FS_EXISTS;
	case ENOTEMPTY:
		/* mv onto a non-empty directory is an I/O error in the contract. */
		return op == PROTO_FS_MV ? SBX_S_FS_IO : SBX_S_FS_NOT_EMPTY;
	case EACCES:
	case EPERM:
		return SBX_S_FS_PERMISSION;
	case EROFS:
		/* A read-only mount is not "permission denied": the
		 * predecessor's guest maps only PermissionDenied to S215, the
		 * rest to S216 "other I/O error". */
		return SBX_S_FS_IO;
	case PROTO_FS_EREGEX:
		return SBX_S_FS_BAD_REGEX;
	default:
		return errnum > 0 && errnum < PROTO_FS_EINVALID ? SBX_S_FS_IO : NULL;
	}
}

void fs_error_classify(sbx_error_t *err, uint8_t op)
{
	if (*err == NULL)
		return;
	const char *preset = (*err)->scode;
	if (strcmp(preset, SBX_S_FS_UNSUPPORTED) == 0) {
		sbx_error_scode(err, SBX_S_FS_UNSUPPORTED, S219_MESSAGE);
	} else if (strcmp(preset, SBX_S_FS_IO) == 0) {
		/* Set by the VM layer: the guest never answered. */
		sbx_error_prefix(err, "shell client error");
	} else if (preset[0] == '\0') {
		const char *code = code_of((*err)->errnum, op);
		if (code == NULL) {
			sbx_error_prefix(err, "fs error %d", (*err)->errnum);
			code = SBX_S_FS_IO;
		}
		sbx_error_default_scode(err, code);
	}
}
