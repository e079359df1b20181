#include <stdlib.h>
#include <string.h>

#include "common/nearest.h"
#include "harness.h"

static const char *const keys[] = { "image_allowlist", "auto_install", "default_cpus", "default_memory_mb",
				    "jail", "accel", "standby" };
#define N (sizeof(keys) / sizeof(keys[0]))

TEST(nearest_finds_typos)
{
	CHECK_STR(sbx_nearest("image_alowlist", keys, N), "image_allowlist");   /* a letter left out */
	CHECK_STR(sbx_nearest("image_allowlists", keys, N), "image_allowlist"); /* one too many */
	CHECK_STR(sbx_nearest("defualt_cpus", keys, N), "default_cpus");        /* two swapped */
	CHECK_STR(sbx_nearest("default_memory_mib", keys, N), "default_memory_mb");
	CHECK_STR(sbx_nearest("jial", keys, N), "jail");
	CHECK_STR(sbx_nearest("acel", keys, N), "accel");
}

TEST(nearest_stays_quiet_when_nothing_is_close)
{
	CHECK(sbx_nearest("colour", keys, N) == NULL);
	CHECK(sbx_nearest("x", keys, N) == NULL);
	CHECK(sbx_nearest("", keys, N) == NULL);
	CHECK(sbx_nearest("sandbox_everything", keys, N) == NULL);
	/* Short words get one edit only: "ja" is two from "jail". */
	CHECK(sbx_nearest("ja", keys, N) == NULL);
	char long_key[200];
	memset(long_key, 'a', sizeof(long_key) - 1);
	long_key[sizeof(long_key) - 1] = '\0';
	CHECK(sbx_nearest(long_key, keys, N) == NULL);
}

TEST(unknown_key_text_names_key_and_suggestion)
{
	char *t = sbx_unknown_key_text("", "image_alowlist", keys, N);
	CHECK_STR(t, "config: unknown key `image_alowlist` (did you mean `image_allowlist`?)");
	free(t);
	t = sbx_unknown_key_text("network_policy.", "colour", keys, N);
	CHECK_STR(t, "config: unknown key `network_policy.colour` (ignored)");
	free(t);
	t = sbx_unknown_key_text("per_image_caps.python.", "acel", keys, N);
	CHECK_STR(t, "config: unknown key `per_image_caps.python.acel` (did you mean `per_image_caps.python.accel`?)");
	free(t);
}

TEST(unknown_key_text_is_bounded_and_printable)
{
	char big[300];
	memset(big, 'k', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	big[3] = '\n';
	char *t = sbx_unknown_key_text("", big, keys, N);
	CHECK(t != NULL);
	CHECK(strchr(t, '\n') == NULL);
	CHECK(strstr(t, "kkk?kkk") != NULL);
	CHECK(strstr(t, "...` (ignored)") != NULL);
	CHECK(strlen(t) < 150);
	free(t);
}
