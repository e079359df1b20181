/* A sandbox reference on the control socket (control_resolve): the full id
 * wins, then a unique id prefix, then a unique name; a name equal to
 * another sandbox's short id (what `ps` shows) or full id never takes the
 * reference; an ambiguous one is refused naming the candidates. */
#include <string.h>

#include "adapter/adapter_state.h"
#include "adapter/sandbox_registry.h"
#include "control/control_ops.h"
#include "harness.h"

#define VICTIM "3f2a9c1e-8b7d-4e5f-8a9b-0c1d2e3f4a5b"
#define ATTACKER "77777777-1111-4111-8111-111111111111"
#define WEB1 "3f2a0000-0000-4000-8000-000000000001"
#define WEB2 "aaaa0000-0000-4000-8000-000000000002"

static struct sbx_registry *reg;

/* A registry holding the four sandboxes, the attacker named `attacker_name`. */
static int setup(struct sbx_adapter *a, const char *attacker_name)
{
	sbx_error_t err = NULL;
	reg = sbx_registry_new(&err);
	*a = (struct sbx_adapter){ .reg = reg };
	int rc = reg == NULL ? -1 : 0;
	if (rc == 0)
		rc = sbx_registry_creating_begin(reg, VICTIM, NULL, "python", 1, 256, false, &err);
	if (rc == 0)
		rc = sbx_registry_creating_begin(reg, ATTACKER, attacker_name, "python", 1, 256, false, &err);
	if (rc == 0)
		rc = sbx_registry_creating_begin(reg, WEB1, "web", "python", 1, 256, false, &err);
	if (rc == 0)
		rc = sbx_registry_creating_begin(reg, WEB2, "web", "python", 1, 256, false, &err);
	sbx_error_free(&err);
	return rc;
}

/* The id `ref` resolves to, or the error's message after "!". */
static const char *resolve(struct sbx_adapter *a, const char *ref)
{
	static char out[512];
	struct control_ctx c = { .a = a };
	char id[SBX_UUID_STRLEN + 1];
	sbx_error_t err = NULL;
	if (control_resolve(&c, ref, id, &err) == 0) {
		snprintf(out, sizeof(out), "%s", id);
		return out;
	}
	snprintf(out, sizeof(out), "!%s %s", err->scode, sbx_error_msg(err));
	sbx_error_free(&err);
	return out;
}

TEST(a_name_equal_to_a_short_id_does_not_take_it)
{
	struct sbx_adapter a;
	CHECK_INT(setup(&a, "3f2a9c1e-8b7"), 0);
	/* `ps` shows the victim as 3f2a9c1e-8b7: the operator's reference is
	 * the victim's, although the attacker is named so. */
	CHECK_STR(resolve(&a, "3f2a9c1e-8b7"), VICTIM);
	sbx_registry_free(reg);
}

TEST(a_name_equal_to_a_full_id_does_not_take_it)
{
	struct sbx_adapter a;
	CHECK_INT(setup(&a, VICTIM), 0);
	CHECK_STR(resolve(&a, VICTIM), VICTIM);
	/* Any form of the id a call accepts. */
	CHECK_STR(resolve(&a, "{3F2A9C1E-8B7D-4E5F-8A9B-0C1D2E3F4A5B}"), VICTIM);
	CHECK_STR(resolve(&a, "3F2A9C1E-8B7D"), VICTIM);
	sbx_registry_free(reg);
}

TEST(names_resolve_when_no_id_matches)
{
	struct sbx_adapter a;
	CHECK_INT(setup(&a, "db"), 0);
	CHECK_STR(resolve(&a, "db"), ATTACKER);
	CHECK_STR(resolve(&a, "7777"), ATTACKER);
	const char *r = resolve(&a, "nobody");
	CHECK(strncmp(r, "!S002 ", 6) == 0);
	CHECK(strstr(r, "`nobody`") != NULL);
	r = resolve(&a, "");
	CHECK(strncmp(r, "!S002 ", 6) == 0);
	sbx_registry_free(reg);
}

TEST(ambiguous_references_are_refused_naming_the_candidates)
{
	struct sbx_adapter a;
	CHECK_INT(setup(&a, "db"), 0);
	/* A prefix of two ids. */
	const char *r = resolve(&a, "3f2a");
	CHECK(strncmp(r, "!S002 ", 6) == 0);
	CHECK(strstr(r, VICTIM) != NULL && strstr(r, WEB1) != NULL);
	CHECK(strstr(r, "2 sandboxes") != NULL);
	/* A name two sandboxes bear. */
	r = resolve(&a, "web");
	CHECK(strncmp(r, "!S002 ", 6) == 0);
	CHECK(strstr(r, WEB1) != NULL && strstr(r, WEB2) != NULL);
	CHECK(strstr(r, VICTIM) == NULL);
	sbx_registry_free(reg);
}
