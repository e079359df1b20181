/* Octal mode strings of the fs functions (contract §7.8): leading zeros are
 * stripped and the rest read as base 8, so "0", "755" and "0755" are valid;
 * the result must fit the 12 permission bits. */
#ifndef SBX_ADAPTER_OCTAL_H
#define SBX_ADAPTER_OCTAL_H

#include "common/error.h"

/* 0, or -1 with S210 "invalid octal mode: <s>". */
int octal_mode_parse(const char *s, unsigned *mode, sbx_error_t *err);

#endif
