#include "image/path_set.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static size_t find(const struct sbx_path_slot *slots, size_t cap, const char *path)
{
	size_t i = hash(path) & (cap - 1);
	while (slots[i].path != NULL && strcmp(slots[i].path, path) != 0)
		i = (i + 1) & (cap - 1);
	return i;
}

static int grow(struct sbx_path_set *s)
{
	size_t cap = s->cap ? s->cap * 2 : 256;
	struct sbx_path_slot *slots = calloc(cap, sizeof(*slots));
	if (slots == NULL)
		return -1;
	for (size_t i = 0; i < s->cap; i++)
		if (s->slots[i].path != NULL)
			slots[find(slots, cap, s->slots[i].path)] = s->slots[i];
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
	return 0;
}

int sbx_path_set_intern(struct sbx_path_set *s, const char *path, size_t *id, bool *added)
{
	if ((s->count + 1) * 2 > s->cap && grow(s) < 0)
		return -1;
	struct sbx_path_slot *slot = &s->slots[find(s->slots, s->cap, path)];
	*added = slot->path == NULL;
	if (*added) {
		slot->path = strdup(path);
		if (slot->path == NULL)
			return -1;
		slot->id = s->count++;
	}
	*id = slot->id;
	return 0;
}

int sbx_path_set_add(struct sbx_path_set *s, const char *path)
{
	size_t id;
	bool added;
	return sbx_path_set_intern(s, path, &id, &added);
}

bool sbx_path_set_has(const struct sbx_path_set *s, const char *path)
{
	return s->cap != 0 && s->slots[find(s->slots, s->cap, path)].path != NULL;
}

void sbx_path_set_clear(struct sbx_path_set *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->slots[i].path);
	free(s->slots);
	memset(s, 0, sizeof(*s));
}
