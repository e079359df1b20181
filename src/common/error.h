/* One error convention for the whole code base.
 *
 * A function that can fail returns int (0 on success, -1 on failure) or a
 * pointer (NULL on failure) and takes `sbx_error_t *err` as its last
 * argument.  On failure it fills *err with sbx_error_set() and friends, which
 * always return -1 so that `return sbx_error_set(err, ...)` reads naturally.
 * The caller either handles the error and calls sbx_error_free(), or adds
 * context with sbx_error_prefix() and returns -1 itself.
 *
 * `scode` lets a lower layer state the contract S-code a failure maps to
 * (SBX_S_VM_BOOT, common/scodes.h, for a VM that did not boot); the adapter
 * decides when it is empty.
 */
#ifndef SBX_COMMON_ERROR_H
#define SBX_COMMON_ERROR_H

struct sbx_error {
	int errnum;    /* errno value, 0 when the failure is not a syscall's */
	char scode[8]; /* "S300", or "" when the caller decides */
	char *msg;
};
typedef struct sbx_error *sbx_error_t;

int sbx_error_set(sbx_error_t *err, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Like sbx_error_set(), with ": strerror(errnum)" appended. */
int sbx_error_errno(sbx_error_t *err, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int sbx_error_scode(sbx_error_t *err, const char *scode, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Prepends "<context>: " to the message; keeps errnum and scode. */
int sbx_error_prefix(sbx_error_t *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Sets the S-code of an existing error unless one is already set. */
void sbx_error_default_scode(sbx_error_t *err, const char *scode);
const char *sbx_error_msg(sbx_error_t err);
void sbx_error_free(sbx_error_t *err);

/* An error freed at scope end (sbx_error_free takes the address). */
#define cleanup_error __attribute__((cleanup(sbx_error_free)))

#endif
