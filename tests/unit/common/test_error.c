#include <errno.h>
#include <string.h>

#include "common/error.h"
#include "harness.h"

static int fails_with_errno(sbx_error_t *err)
{
	return sbx_error_errno(err, ENOENT, "open %s", "/nope");
}

TEST(error_errno_appends_strerror)
{
	sbx_error_t err = NULL;
	CHECK_INT(fails_with_errno(&err), -1);
	CHECK_STR(sbx_error_msg(err), "open /nope: No such file or directory");
	CHECK_INT(err->errnum, ENOENT);
	CHECK_STR(err->scode, "");
	sbx_error_free(&err);
	CHECK(err == NULL);
}

TEST(error_prefix_keeps_code_and_scode)
{
	sbx_error_t err = NULL;
	sbx_error_scode(&err, "S300", "qemu exited");
	sbx_error_prefix(&err, "boot %d", 7);
	CHECK_STR(sbx_error_msg(err), "boot 7: qemu exited");
	CHECK_STR(err->scode, "S300");
	sbx_error_default_scode(&err, "S216");
	CHECK_STR(err->scode, "S300");
	sbx_error_free(&err);
}

TEST(error_set_replaces_previous)
{
	sbx_error_t err = NULL;
	sbx_error_set(&err, 0, "first");
	sbx_error_set(&err, EINVAL, "second");
	CHECK_STR(sbx_error_msg(err), "second");
	CHECK_INT(err->errnum, EINVAL);
	sbx_error_default_scode(&err, "S001");
	CHECK_STR(err->scode, "S001");
	sbx_error_free(&err);
}
