/* The front's reading of its members' answers, which come through the
 * engine: a JSON array [request, member...], each member an object with
 * its adapter::info `capacity`, its list's `sandboxes` and what was
 * `reserved` on it since ([MiB, sandboxes]).  Checks what placement and
 * the owner map promise: each member placed once, members with room before
 * those without, every kept key a canonical id found again on its member
 * (an id two members list contested, never moved), the map bounded; the
 * sanitizers check the arithmetic. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/uuid.h"

#include "front/front_owners.h"
#include "front/front_place.h"

#define MEMBERS 8

static int64_t reserved(json_t *member, size_t i)
{
	int64_t v = front_figure(json_array_get(json_object_get(member, "reserved"), i));
	return v < 0 ? 0 : v;
}

static void check_owners(const struct front_owners *o, json_t *members)
{
	if (o->n > FRONT_OWNERS_MAX)
		abort();
	for (size_t i = 0; i < o->n; i++) {
		size_t m;
		long rival;
		char canon[SBX_UUID_STRLEN + 1];
		/* Found again on its member, a contest naming another member, and
		 * every key a canonical id (names never become keys). */
		front_owners_find(o, o->v[i].key, &m, &rival);
		if (m != o->v[i].member || m >= json_array_size(members) || rival == (long)m ||
		    rival >= (long)json_array_size(members) || !sbx_uuid_parse(o->v[i].key, canon) ||
		    strcmp(canon, o->v[i].key) != 0)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *v = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	json_t *req = json_array_get(v, 0);
	int64_t need = front_need_mib(req);
	if (need < 0)
		need = 0;
	const char *image = json_string_value(json_object_get(req, "image"));
	struct front_slot slots[MEMBERS];
	struct front_owners owners = { 0 };
	size_t n = 0;
	for (size_t i = 1; i < json_array_size(v) && n < MEMBERS; i++, n++) {
		json_t *m = json_array_get(v, i);
		front_slot_from(&slots[n], n, json_object_get(m, "capacity"), image, reserved(m, 0), reserved(m, 1));
		struct front_replace_stats st;
		front_owners_replace(&owners, n, json_object_get(m, "sandboxes"), (int64_t)n, &st);
		if (st.lost + st.refused > json_array_size(json_object_get(m, "sandboxes")))
			abort();
	}
	check_owners(&owners, v);
	/* A member that leaves takes exactly its keys. */
	if (n > 0) {
		front_owners_drop_member(&owners, 0);
		for (size_t i = 0; i < owners.n; i++)
			if (owners.v[i].member == 0)
				abort();
		check_owners(&owners, v);
	}
	front_place_order(slots, n, need);
	bool seen[MEMBERS] = { false }, room_ended = false;
	for (size_t k = 0; k < n; k++) {
		const struct front_slot *s = &slots[k];
		if (s->member >= n || seen[s->member])
			abort();
		seen[s->member] = true;
		bool room = s->known && s->free_mib >= need && s->live < s->max_live;
		if (room && room_ended)
			abort();
		room_ended |= !room;
	}
	front_owners_free(&owners);
	json_decref(v);
	return 0;
}
