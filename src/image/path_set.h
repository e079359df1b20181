/* A set of strings (open addressing): the paths one layer has written, so
 * that its own whiteouts and opaque markers spare them. */
#ifndef SBX_IMAGE_PATH_SET_H
#define SBX_IMAGE_PATH_SET_H

#include <stdbool.h>
#include <stddef.h>

struct sbx_path_set {
	char **slots;
	size_t cap, count;
};

/* 0, or -1 when out of memory. */
int sbx_path_set_add(struct sbx_path_set *s, const char *path);
bool sbx_path_set_has(const struct sbx_path_set *s, const char *path);
void sbx_path_set_clear(struct sbx_path_set *s);

#endif
