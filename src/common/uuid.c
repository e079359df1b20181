#include "common/uuid.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

static const char hexdigits[] = "0123456789abcdef";

/* Writes 16 bytes as the canonical 8-4-4-4-12 lowercase form. */
static void format_canonical(const uint8_t b[16], char out[SBX_UUID_STRLEN + 1])
{
	char *p = out;
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hexdigits[b[i] >> 4];
		*p++ = hexdigits[b[i] & 0xf];
	}
	*p = '\0';
}

int sbx_uuid_v4(char out[SBX_UUID_STRLEN + 1])
{
	uint8_t b[16];
	size_t got = 0;
	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)n;
	}
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40); /* version 4 */
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	format_canonical(b, out);
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Parses exactly 32 hex digits, with hyphens required at the canonical
 * positions when `hyphenated`. */
static bool parse_body(const char *s, size_t len, bool hyphenated, uint8_t b[16])
{
	if (len != (hyphenated ? 36u : 32u))
		return false;
	int nibble = 0;
	for (size_t i = 0; i < len; i++) {
		if (hyphenated && (i == 8 || i == 13 || i == 18 || i == 23)) {
			if (s[i] != '-')
				return false;
			continue;
		}
		int v = hexval(s[i]);
		if (v < 0)
			return false;
		if (nibble % 2 == 0)
			b[nibble / 2] = (uint8_t)(v << 4);
		else
			b[nibble / 2] |= (uint8_t)v;
		nibble++;
	}
	return nibble == 32;
}

bool sbx_uuid_parse(const char *in, char out[SBX_UUID_STRLEN + 1])
{
	static const char urn[] = "urn:uuid:";
	uint8_t b[16];
	bool ok;

	if (in == NULL)
		return false;
	size_t len = strnlen(in, 64); /* longer than any accepted form */
	if (len == 32)
		ok = parse_body(in, len, false, b);
	else if (len == 36)
		ok = parse_body(in, len, true, b);
	else if (len == 38 && in[0] == '{' && in[37] == '}')
		ok = parse_body(in + 1, 36, true, b);
	else if (len == 45 && memcmp(in, urn, sizeof(urn) - 1) == 0)
		ok = parse_body(in + 9, 36, true, b);
	else
		ok = false;
	if (!ok)
		return false;
	format_canonical(b, out);
	return true;
}

bool sbx_uuid_like(const char *s)
{
	char canon[SBX_UUID_STRLEN + 1];
	if (s[0] == '\0')
		return false;
	if (sbx_uuid_parse(s, canon))
		return true;
	for (const char *p = s; *p != '\0'; p++)
		if (*p != '-' && hexval(*p) < 0)
			return false;
	return true;
}
