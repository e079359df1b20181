/* A flat table: a cluster holds a few hundred sandboxes, and a scan of
 * them costs less than the call it routes. */
#include "front/front_owners.h"

#include <stdlib.h>
#include <string.h>

static struct front_owner *find(const struct front_owners *o, const char *key)
{
	for (size_t i = 0; i < o->n; i++)
		if (strcmp(o->v[i].key, key) == 0)
			return &o->v[i];
	return NULL;
}

int front_owners_set(struct front_owners *o, const char *key, size_t member)
{
	if (strnlen(key, FRONT_KEY_MAX + 1) > FRONT_KEY_MAX || key[0] == '\0')
		return -1;
	struct front_owner *hit = find(o, key);
	if (hit != NULL) {
		hit->member = member;
		return 0;
	}
	if (o->n == FRONT_OWNERS_MAX)
		return -1;
	if (o->n == o->cap) {
		size_t cap = o->cap == 0 ? 64 : o->cap * 2;
		struct front_owner *v = realloc(o->v, cap * sizeof(*v));
		if (v == NULL)
			return -1;
		o->v = v;
		o->cap = cap;
	}
	char *copy = strdup(key);
	if (copy == NULL)
		return -1;
	o->v[o->n++] = (struct front_owner){ copy, member };
	return 0;
}

bool front_owners_get(const struct front_owners *o, const char *key, size_t *member)
{
	const struct front_owner *hit = find(o, key);
	if (hit == NULL)
		return false;
	*member = hit->member;
	return true;
}

static void remove_at(struct front_owners *o, size_t i)
{
	free(o->v[i].key);
	o->v[i] = o->v[--o->n];
}

void front_owners_remove(struct front_owners *o, const char *key)
{
	struct front_owner *hit = find(o, key);
	if (hit != NULL)
		remove_at(o, (size_t)(hit - o->v));
}

void front_owners_drop_member(struct front_owners *o, size_t member)
{
	for (size_t i = o->n; i > 0; i--)
		if (o->v[i - 1].member == member)
			remove_at(o, i - 1);
}

size_t front_owners_replace(struct front_owners *o, size_t member, json_t *sandboxes)
{
	front_owners_drop_member(o, member);
	size_t lost = 0, i;
	json_t *row;
	json_array_foreach(sandboxes, i, row) {
		const char *id = json_string_value(json_object_get(row, "sandbox_id"));
		const char *name = json_string_value(json_object_get(row, "name"));
		if (id == NULL || front_owners_set(o, id, member) < 0 ||
		    (name != NULL && name[0] != '\0' && front_owners_set(o, name, member) < 0))
			lost++;
	}
	return lost;
}

void front_owners_free(struct front_owners *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->v[i].key);
	free(o->v);
	*o = (struct front_owners){ 0 };
}
