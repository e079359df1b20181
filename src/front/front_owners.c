/* A dense array with a chained hash index: a refresh replaces every
 * member's keys each second, and members' lists may be long. */
#include "front/front_owners.h"

#include <stdlib.h>
#include <string.h>

#include "common/uuid.h"

/* FNV-1a: keys are short ids and names; the bucket count is a power of two. */
static uint32_t hash_of(const char *key)
{
	uint32_t h = 2166136261u;
	for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; p++)
		h = (h ^ *p) * 16777619u;
	return h;
}

static int32_t *bucket(const struct front_owners *o, uint32_t hash)
{
	return &o->heads[hash & (o->cap - 1)];
}

static struct front_owner *find(const struct front_owners *o, const char *key, uint32_t hash)
{
	if (o->cap == 0)
		return NULL;
	for (int32_t i = *bucket(o, hash); i >= 0; i = o->v[i].next)
		if (o->v[i].hash == hash && strcmp(o->v[i].key, key) == 0)
			return &o->v[i];
	return NULL;
}

/* Doubles the array and rebuilds the index over it. */
static int grow(struct front_owners *o)
{
	size_t cap = o->cap == 0 ? 64 : o->cap * 2;
	struct front_owner *v = realloc(o->v, cap * sizeof(*v));
	if (v == NULL)
		return -1;
	o->v = v;
	int32_t *heads = malloc(cap * sizeof(*heads));
	if (heads == NULL)
		return -1;
	free(o->heads);
	o->heads = heads;
	o->cap = cap;
	for (size_t b = 0; b < cap; b++)
		heads[b] = -1;
	for (size_t i = 0; i < o->n; i++) {
		int32_t *head = bucket(o, o->v[i].hash);
		o->v[i].next = *head;
		*head = (int32_t)i;
	}
	return 0;
}

int front_owners_set(struct front_owners *o, const char *key, size_t member)
{
	if (strnlen(key, FRONT_KEY_MAX + 1) > FRONT_KEY_MAX || key[0] == '\0')
		return -1;
	uint32_t hash = hash_of(key);
	struct front_owner *hit = find(o, key, hash);
	if (hit != NULL) {
		hit->member = member;
		return 0;
	}
	if (o->n == FRONT_OWNERS_MAX)
		return -1;
	if (o->n == o->cap && grow(o) < 0)
		return -1;
	char *copy = strdup(key);
	if (copy == NULL)
		return -1;
	int32_t *head = bucket(o, hash);
	o->v[o->n] = (struct front_owner){ .key = copy, .member = member, .hash = hash, .next = *head, .rival = -1 };
	*head = (int32_t)o->n++;
	return 0;
}

int front_owners_claim(struct front_owners *o, const char *id, size_t member, int64_t now_ms)
{
	struct front_owner *hit = find(o, id, hash_of(id));
	if (hit != NULL && hit->member != member)
		return 1;
	if (hit == NULL && front_owners_set(o, id, member) < 0)
		return -1;
	hit = find(o, id, hash_of(id));
	hit->placed_ms = now_ms > 0 ? now_ms : 1;
	hit->rival = -1;
	return 0;
}

bool front_owners_find(const struct front_owners *o, const char *key, size_t *member, long *rival)
{
	const struct front_owner *hit = find(o, key, hash_of(key));
	*rival = -1;
	if (hit == NULL)
		return false;
	*member = hit->member;
	*rival = hit->rival;
	return hit->rival < 0;
}

bool front_owners_get(const struct front_owners *o, const char *key, size_t *member)
{
	long rival;
	return front_owners_find(o, key, member, &rival);
}

/* The link that holds index i: its bucket's head or its predecessor's next. */
static int32_t *link_to(struct front_owners *o, size_t i)
{
	int32_t *link = bucket(o, o->v[i].hash);
	while (*link != (int32_t)i)
		link = &o->v[*link].next;
	return link;
}

/* Unlinks and frees entry i; the last entry moves into its place. */
static void remove_at(struct front_owners *o, size_t i)
{
	*link_to(o, i) = o->v[i].next;
	free(o->v[i].key);
	size_t last = o->n - 1;
	if (i != last) {
		*link_to(o, last) = (int32_t)i;
		o->v[i] = o->v[last];
	}
	o->n--;
}

void front_owners_remove(struct front_owners *o, const char *key)
{
	struct front_owner *hit = find(o, key, hash_of(key));
	if (hit != NULL)
		remove_at(o, (size_t)(hit - o->v));
}

void front_owners_drop_member(struct front_owners *o, size_t member)
{
	/* From the end: what remove_at moves in was checked already. */
	for (size_t i = o->n; i > 0; i--)
		if (o->v[i - 1].member == member)
			remove_at(o, i - 1);
}

void front_owners_drop_learnt(struct front_owners *o, size_t member)
{
	for (size_t i = o->n; i > 0; i--)
		if (o->v[i - 1].member == member && o->v[i - 1].placed_ms == 0)
			remove_at(o, i - 1);
}

/* One listed id: kept, added, or refused when another member holds it. */
static void listed(struct front_owners *o, size_t member, const char *id, struct front_replace_stats *st)
{
	char canon[SBX_UUID_STRLEN + 1];
	/* Members list ids as they made them: anything else is not an id. */
	if (id == NULL || !sbx_uuid_parse(id, canon) || strcmp(canon, id) != 0) {
		st->lost++;
		return;
	}
	struct front_owner *hit = find(o, id, hash_of(id));
	if (hit == NULL) {
		if (front_owners_set(o, id, member) < 0)
			st->lost++;
		else
			find(o, id, hash_of(id))->seen = true;
		return;
	}
	if (hit->member == member) {
		hit->seen = true;
		return;
	}
	st->refused++;
	/* Learnt from lists only: nobody can tell whose it is. */
	if (hit->placed_ms == 0)
		hit->rival = (long)member;
}

void front_owners_replace(struct front_owners *o, size_t member, json_t *sandboxes, int64_t began_ms,
			  struct front_replace_stats *st)
{
	*st = (struct front_replace_stats){ 0, 0 };
	for (size_t i = 0; i < o->n; i++) {
		o->v[i].seen = false;
		if (o->v[i].rival == (long)member)
			o->v[i].rival = -1; /* listed again below if it still is */
	}
	size_t i;
	json_t *row;
	json_array_foreach(sandboxes, i, row)
		listed(o, member, json_string_value(json_object_get(row, "sandbox_id")), st);
	/* From the end: what remove_at moves in was checked already. */
	for (size_t k = o->n; k > 0; k--) {
		const struct front_owner *e = &o->v[k - 1];
		if (e->member == member && !e->seen && e->placed_ms <= began_ms)
			remove_at(o, k - 1);
	}
}

void front_owners_free(struct front_owners *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->v[i].key);
	free(o->v);
	free(o->heads);
	*o = (struct front_owners){ 0 };
}
