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

static size_t find(char **slots, size_t cap, const char *path)
{
	size_t i = hash(path) & (cap - 1);
	while (slots[i] != NULL && strcmp(slots[i], path) != 0)
		i = (i + 1) & (cap - 1);
	return i;
}

static int grow(struct sbx_path_set *s)
{
	size_t cap = s->cap ? s->cap * 2 : 256;
	char **slots = calloc(cap, sizeof(*slots));
	if (slots == NULL)
		return -1;
	for (size_t i = 0; i < s->cap; i++)
		if (s->slots[i] != NULL)
			slots[find(slots, cap, s->slots[i])] = s->slots[i];
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
	return 0;
}

int sbx_path_set_add(struct sbx_path_set *s, const char *path)
{
	if ((s->count + 1) * 2 > s->cap && grow(s) < 0)
		return -1;
	size_t i = find(s->slots, s->cap, path);
	if (s->slots[i] != NULL)
		return 0;
	s->slots[i] = strdup(path);
	if (s->slots[i] == NULL)
		return -1;
	s->count++;
	return 0;
}

bool sbx_path_set_has(const struct sbx_path_set *s, const char *path)
{
	return s->cap != 0 && s->slots[find(s->slots, s->cap, path)] != NULL;
}

void sbx_path_set_clear(struct sbx_path_set *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->slots[i]);
	free(s->slots);
	memset(s, 0, sizeof(*s));
}
