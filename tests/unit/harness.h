/* Minimal TAP test harness for the C unit tests.
 *
 *   TEST(parses_uuid) { CHECK(x == 1); CHECK_STR(a, "b"); }
 *
 * Tests register themselves; harness.c's main() runs them in file order and
 * prints TAP ("ok N - name" / "not ok N - name"), which meson (protocol
 * 'tap') and scripts/test count.  A failed CHECK ends that test only. */
#ifndef SBX_TEST_HARNESS_H
#define SBX_TEST_HARNESS_H

#include <stdint.h>
#include <string.h>

void sbx_test_register(const char *name, void (*fn)(void));
void sbx_test_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Marks the running test as skipped, with a reason printed after "# SKIP". */
void sbx_test_skip(const char *reason);

#define TEST(name)                                                                  \
	static void name(void);                                                     \
	__attribute__((constructor)) static void sbx_register_##name(void)          \
	{                                                                           \
		sbx_test_register(#name, name);                                     \
	}                                                                           \
	static void name(void)

#define CHECK(cond)                                                                 \
	do {                                                                        \
		if (!(cond)) {                                                      \
			sbx_test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);      \
			return;                                                     \
		}                                                                   \
	} while (0)

#define CHECK_INT(a, b)                                                             \
	do {                                                                        \
		long long _a = (long long)(a), _b = (long long)(b);                 \
		if (_a != _b) {                                                     \
			sbx_test_fail(__FILE__, __LINE__, "%s == %lld, expected %s == %lld", #a, _a, #b, _b); \
			return;                                                     \
		}                                                                   \
	} while (0)

#define CHECK_STR(a, b)                                                             \
	do {                                                                        \
		const char *_a = (a), *_b = (b);                                    \
		if (_a == NULL || _b == NULL || strcmp(_a, _b) != 0) {              \
			sbx_test_fail(__FILE__, __LINE__, "%s == \"%s\", expected \"%s\"", #a, _a ? _a : "(null)", \
				      _b ? _b : "(null)");                          \
			return;                                                     \
		}                                                                   \
	} while (0)

#endif
