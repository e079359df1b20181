#include "vm/share_arg.h"

#include <errno.h>
#include <string.h>

int share_arg_parse(char *s, struct sbx_vm_share *out, sbx_error_t *err)
{
	size_t n = strlen(s);
	out->read_only = false;
	out->host_fd = -1;
	if (n > 3 && (strcmp(s + n - 3, ":ro") == 0 || strcmp(s + n - 3, ":rw") == 0)) {
		out->read_only = s[n - 2] == 'r' && s[n - 1] == 'o';
		s[n - 3] = '\0';
	}
	char *colon = strchr(s, ':');
	if (colon == NULL)
		return sbx_error_set(err, EINVAL, "--share wants HOST:GUEST[:ro|:rw]");
	*colon = '\0';
	out->host_dir = s;
	out->guest_path = colon + 1;
	if (s[0] != '/' || colon[1] != '/')
		return sbx_error_set(err, EINVAL, "--share: HOST and GUEST must be absolute paths");
	return 0;
}
