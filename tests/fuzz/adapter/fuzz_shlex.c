/* Arbitrary text into the shlex splitter and the exec command shapes. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/sandbox/exec_shape.h"
#include "adapter/sandbox/shlex.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (s == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	sbx_error_t err = NULL;
	json_t *words = sbx_shlex_split(s, &err);
	sbx_error_free(&err);
	/* No word is longer than the input it came from. */
	size_t i;
	json_t *w;
	json_array_foreach(words, i, w) {
		if (strlen(json_string_value(w)) > size)
			abort();
	}
	json_decref(words);
	json_t *argv = exec_shape_resolve(s, NULL, NULL, &err);
	if (argv == NULL && (err == NULL || strcmp(err->scode, "S001") != 0) && (err == NULL || err->errnum != ENOMEM))
		abort();
	sbx_error_free(&err);
	json_decref(argv);
	free(s);
	return 0;
}
