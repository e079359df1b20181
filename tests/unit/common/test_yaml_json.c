/* yaml_to_json: typing of scalars, text keys, and refusal of hostile YAML. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "common/yaml_json.h"

static char *conv(const char *text, const char *const *text_keys)
{
	sbx_error_t err = NULL;
	json_t *j = yaml_to_json(text, strlen(text), text_keys, &err);
	if (j == NULL) {
		char *m = strdup(sbx_error_msg(err));
		sbx_error_free(&err);
		return m; /* an error's text, to compare */
	}
	char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(j);
	return s;
}

#define CONV(text, keys, want)                 \
	do {                                   \
		char *_s = conv(text, keys);   \
		CHECK_STR(_s, want);           \
		free(_s);                      \
	} while (0)

#define REFUSED(text, want_part)                                                                   \
	do {                                                                                       \
		sbx_error_t _e = NULL;                                                             \
		json_t *_j = yaml_to_json(text, strlen(text), NULL, &_e);                          \
		CHECK(_j == NULL);                                                                 \
		if (strstr(sbx_error_msg(_e), want_part) == NULL)                                  \
			sbx_test_fail(__FILE__, __LINE__, "\"%s\" lacks \"%s\"", sbx_error_msg(_e), want_part); \
		sbx_error_free(&_e);                                                               \
	} while (0)

TEST(plain_scalars_are_typed)
{
	CONV("a: 1\nb: -2\nc: 1.5\nd: true\ne: False\nf: ~\ng:\nh: hello world\ni: 1.10.2\nj: 0x10\n", NULL,
	     "{\"a\":1,\"b\":-2,\"c\":1.5,\"d\":true,\"e\":false,\"f\":null,\"g\":null,\"h\":\"hello world\","
	     "\"i\":\"1.10.2\",\"j\":\"0x10\"}");
	CONV("a: 99999999999999999999\nb: 1e999\n", NULL, "{\"a\":\"99999999999999999999\",\"b\":\"1e999\"}");
}

TEST(quoted_and_block_scalars_are_strings)
{
	CONV("a: '1'\nb: \"true\"\nc: !!str 5\nd: |\n  x\n  y\n", NULL, "{\"a\":\"1\",\"b\":\"true\",\"c\":\"5\",\"d\":\"x\\ny\\n\"}");
}

TEST(sequences_and_nesting)
{
	CONV("- [1, a]\n- {k: v}\n", NULL, "[[1,\"a\"],{\"k\":\"v\"}]");
}

TEST(text_keys_keep_scalars_as_written)
{
	static const char *const keys[] = { "env", NULL };
	CONV("env: {V: 1.10, B: true, N: 007}\nother: 1.50\n", keys, "{\"env\":{\"V\":\"1.10\",\"B\":\"true\",\"N\":\"007\"},\"other\":1.5}");
}

TEST(empty_document_is_null)
{
	CONV("", NULL, "null");
	CONV("# only a comment\n", NULL, "null");
	CONV("---\n", NULL, "null");
}

TEST(hostile_yaml_is_refused)
{
	REFUSED("a: &x [1]\nb: *x\n", "aliases (*name) are not supported at `b`");
	REFUSED("a: 1\na: 2\n", "duplicate key at `a` (line 2)");
	REFUSED("env:\n  A: 1\n  A: 2\n", "duplicate key at `env.A`");
	REFUSED("? [a]\n: 1\n", "a key that is not a scalar");
	REFUSED("a: 1\n---\nb: 2\n", "more than one YAML document");
	REFUSED("a: \"x\\0y\"\n", "NUL byte");
	REFUSED("a: [1\n", "YAML syntax");
	REFUSED("list:\n  - x\n  - *nope\n", "list[1]");
}

TEST(deep_nesting_is_refused)
{
	char text[400];
	memset(text, '[', 200);
	memset(text + 200, ']', 200);
	text[399] = '\0';
	text[398] = ']';
	REFUSED(text, "nesting too deep");
}

TEST(billion_laughs_is_refused_at_the_first_alias)
{
	const char *lol = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
			  "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
			  "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n";
	REFUSED(lol, "aliases (*name) are not supported at `b[0]`");
}
