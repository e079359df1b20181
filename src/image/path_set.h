/* A set of strings (open addressing), each numbered in the order it was
 * added: the paths one layer has written, so that its own whiteouts and
 * opaque markers spare them; the directories whose mtimes are set last. */
#ifndef SBX_IMAGE_PATH_SET_H
#define SBX_IMAGE_PATH_SET_H

#include <stdbool.h>
#include <stddef.h>

struct sbx_path_slot {
	char *path; /* NULL: a free slot */
	size_t id;
};

struct sbx_path_set {
	struct sbx_path_slot *slots;
	size_t cap, count;
};

/* 0, or -1 when out of memory. */
int sbx_path_set_add(struct sbx_path_set *s, const char *path);
/* Adds path unless it is there; *id gets its number (0, 1, ... in the order
 * paths were first added) and *added whether this call added it.  0, or -1
 * when out of memory. */
int sbx_path_set_intern(struct sbx_path_set *s, const char *path, size_t *id, bool *added);
bool sbx_path_set_has(const struct sbx_path_set *s, const char *path);
void sbx_path_set_clear(struct sbx_path_set *s);

#endif
