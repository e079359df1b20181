#include <string.h>

#include "common/uuid.h"
#include "harness.h"

#define CANON "67e55044-10b1-426f-9247-bb680e5fe0c8"

TEST(uuid_parses_every_form)
{
	static const char *const forms[] = {
		CANON,
		"67E55044-10B1-426F-9247-BB680E5FE0C8",
		"67e5504410b1426f9247bb680e5fe0c8",
		"67E5504410b1426F9247BB680e5fe0c8",
		"{67e55044-10b1-426f-9247-bb680e5fe0c8}",
		"{67E55044-10B1-426F-9247-BB680E5FE0C8}",
		"urn:uuid:67e55044-10b1-426f-9247-bb680e5fe0c8",
		"urn:uuid:67E55044-10b1-426f-9247-BB680E5FE0C8",
	};
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		char out[SBX_UUID_STRLEN + 1] = "";
		CHECK(sbx_uuid_parse(forms[i], out));
		CHECK_STR(out, CANON);
	}
}

TEST(uuid_rejects_bad_input)
{
	static const char *const bad[] = {
		"",
		"67e55044-10b1-426f-9247-bb680e5fe0c",     /* one digit short */
		"67e55044-10b1-426f-9247-bb680e5fe0c88",   /* one digit long */
		"67e55044-10b1-426f-9247-bb680e5fe0cg",    /* not hex */
		"67e5504410b1-426f-9247-bb680e5fe0c8-",    /* hyphens misplaced */
		"67e55044_10b1_426f_9247_bb680e5fe0c8",
		"67e5504410b1426f9247bb680e5fe0c",
		"{67e55044-10b1-426f-9247-bb680e5fe0c8",   /* unclosed brace */
		"67e55044-10b1-426f-9247-bb680e5fe0c8}",
		"{67e5504410b1426f9247bb680e5fe0c8}",      /* braces need hyphens */
		"urn:uuid:67e5504410b1426f9247bb680e5fe0c8",
		"URN:UUID:67e55044-10b1-426f-9247-bb680e5fe0c8",
		"uri:uuid:67e55044-10b1-426f-9247-bb680e5fe0c8",
		" 67e55044-10b1-426f-9247-bb680e5fe0c8",
		"67e55044-10b1-426f-9247-bb680e5fe0c8 ",
		"67e55044-10b1-426f-9247-bb680e5fe0c8\n",
		"+7e55044-10b1-426f-9247-bb680e5fe0c8",
		"not a uuid at all",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char out[SBX_UUID_STRLEN + 1];
		if (sbx_uuid_parse(bad[i], out)) {
			CHECK_STR(bad[i], "(rejected)");
		}
	}
	char out[SBX_UUID_STRLEN + 1];
	CHECK(!sbx_uuid_parse(NULL, out));
	/* A long input must not be read past a bounded prefix. */
	char big[4096];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK(!sbx_uuid_parse(big, out));
}

TEST(uuid_v4_is_canonical_and_random)
{
	char a[SBX_UUID_STRLEN + 1], b[SBX_UUID_STRLEN + 1], back[SBX_UUID_STRLEN + 1];
	CHECK_INT(sbx_uuid_v4(a), 0);
	CHECK_INT(sbx_uuid_v4(b), 0);
	CHECK_INT(strlen(a), SBX_UUID_STRLEN);
	CHECK(strcmp(a, b) != 0);
	CHECK(a[14] == '4');                                         /* version */
	CHECK(a[19] == '8' || a[19] == '9' || a[19] == 'a' || a[19] == 'b'); /* variant */
	for (int i = 0; i < SBX_UUID_STRLEN; i++)
		CHECK(a[i] == '-' ? (i == 8 || i == 13 || i == 18 || i == 23)
				  : ((a[i] >= '0' && a[i] <= '9') || (a[i] >= 'a' && a[i] <= 'f')));
	CHECK(sbx_uuid_parse(a, back));
	CHECK_STR(back, a);
}

/* What create refuses as a name: anything the operator's references
 * could take for an id or an id prefix. */
TEST(uuid_like_is_hex_and_dashes_or_an_id)
{
	static const char *const like[] = {
		"3f2a9c1e8b7d", "dead-beef", "0", "ABCDEF", "67e55044-10b1-426f-9247-bb680e5fe0c8",
		"{67e55044-10b1-426f-9247-bb680e5fe0c8}", "urn:uuid:67e55044-10b1-426f-9247-bb680e5fe0c8",
	};
	static const char *const unlike[] = { "", "web", "worker-1", "deadbeefg", "cafe babe", "3f2a_9c1e", "db\xc3\xa9" };
	for (size_t i = 0; i < sizeof(like) / sizeof(like[0]); i++)
		if (!sbx_uuid_like(like[i]))
			CHECK_STR(like[i], "(id-like)");
	for (size_t i = 0; i < sizeof(unlike) / sizeof(unlike[0]); i++)
		if (sbx_uuid_like(unlike[i]))
			CHECK_STR(unlike[i], "(not id-like)");
}
