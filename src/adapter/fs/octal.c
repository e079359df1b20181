#include "adapter/fs/octal.h"

#include "common/scodes.h"

#include <stdbool.h>

int octal_mode_parse(const char *s, unsigned *mode, sbx_error_t *err)
{
	const char *p = s;
	while (*p == '0')
		p++;
	unsigned v = 0;
	/* All zeros ("0", "0000") is mode 0; an empty string is invalid. */
	bool ok = *s != '\0';
	for (; ok && *p != '\0'; p++) {
		if (*p < '0' || *p > '7' || v > 07777 >> 3)
			ok = false;
		else
			v = v << 3 | (unsigned)(*p - '0');
	}
	if (!ok)
		return sbx_error_scode(err, SBX_S_FS, "invalid octal mode: %s", s);
	*mode = v;
	return 0;
}
