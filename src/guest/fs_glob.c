#include "guest/fs_glob.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* One UTF-8 character at s (s non-empty): its code point and length.  An
 * invalid byte stands for itself. */
static size_t next_char(const char *s, uint32_t *cp)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t k = p[0] < 0x80 ? 1 : p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc0 ? 2 : 1;
	for (size_t i = 1; i < k; i++)
		if ((p[i] & 0xc0) != 0x80)
			k = 1;
	*cp = k == 1 ? p[0] : p[0] & (0x7f >> k);
	for (size_t i = 1; i < k; i++)
		*cp = *cp << 6 | (p[i] & 0x3f);
	return k;
}

/* Matches one character c against the class at p ('[' ... ']').  Sets
 * *len to the class's length; 0 when the class is not closed (then '[' is
 * a literal). */
static bool class_match(const char *p, size_t plen, uint32_t c, size_t *len)
{
	size_t i = 1;
	bool neg = i < plen && (p[i] == '!' || p[i] == '^');
	if (neg)
		i++;
	bool hit = false, first = true;
	while (i < plen && (p[i] != ']' || first)) {
		first = false;
		uint32_t lo, hi;
		if (p[i] == '\\' && i + 1 < plen)
			i++;
		i += next_char(p + i, &lo);
		hi = lo;
		if (i + 1 < plen && p[i] == '-' && p[i + 1] != ']') {
			i++;
			if (p[i] == '\\' && i + 1 < plen)
				i++;
			i += next_char(p + i, &hi);
		}
		if (c >= lo && c <= hi)
			hit = true;
	}
	if (i >= plen) {
		*len = 0;
		return false;
	}
	*len = i + 1;
	return hit != neg;
}

/* One path component against one pattern component (no '/' in either):
 * the classic greedy matcher with a single backtrack point, linear-ish. */
static bool comp_match(const char *p, size_t plen, const char *s, size_t slen)
{
	size_t pi = 0, si = 0, star_p = SIZE_MAX, star_s = 0;
	while (si < slen) {
		if (pi < plen && p[pi] == '*') {
			while (pi < plen && p[pi] == '*')
				pi++;
			star_p = pi;
			star_s = si;
			continue;
		}
		if (pi < plen) {
			uint32_t c;
			size_t clen = next_char(s + si, &c);
			if (p[pi] == '?') {
				pi++;
				si += clen;
				continue;
			}
			if (p[pi] == '[') {
				size_t len;
				bool hit = class_match(p + pi, plen - pi, c, &len);
				if (len > 0 && hit) {
					pi += len;
					si += clen;
					continue;
				}
				if (len == 0 && s[si] == '[') {
					pi++;
					si++;
					continue;
				}
			} else {
				size_t lp = pi;
				if (p[lp] == '\\' && lp + 1 < plen)
					lp++;
				if (p[lp] == s[si]) {
					pi = lp + 1;
					si++;
					continue;
				}
			}
		}
		if (star_p == SIZE_MAX)
			return false;
		/* let the last '*' take one more character */
		uint32_t c;
		star_s += next_char(s + star_s, &c);
		si = star_s;
		pi = star_p;
	}
	while (pi < plen && p[pi] == '*')
		pi++;
	return pi == plen;
}

struct comps {
	const char *s[4096 / 2 + 2];
	size_t len[4096 / 2 + 2];
	size_t n;
};

static void split(const char *s, size_t n, struct comps *c)
{
	c->n = 0;
	size_t i = 0;
	while (i < n) {
		size_t j = i;
		while (j < n && s[j] != '/')
			j++;
		if (j > i && c->n < sizeof(c->s) / sizeof(c->s[0])) {
			c->s[c->n] = s + i;
			c->len[c->n++] = j - i;
		}
		i = j + 1;
	}
}

static bool is_dstar(const struct comps *p, size_t i)
{
	return p->len[i] == 2 && p->s[i][0] == '*' && p->s[i][1] == '*';
}

/* Component lists: the same greedy algorithm, '**' being the star. */
static bool path_match(const struct comps *p, const struct comps *s)
{
	size_t pi = 0, si = 0, star_p = SIZE_MAX, star_s = 0;
	while (si < s->n) {
		if (pi < p->n && is_dstar(p, pi)) {
			star_p = ++pi;
			star_s = si;
			continue;
		}
		if (pi < p->n && comp_match(p->s[pi], p->len[pi], s->s[si], s->len[si])) {
			pi++;
			si++;
			continue;
		}
		if (star_p == SIZE_MAX)
			return false;
		si = ++star_s;
		pi = star_p;
	}
	while (pi < p->n && is_dstar(p, pi))
		pi++;
	return pi == p->n;
}

/* Matches `pattern` against the path rel[0, n), which is a directory when
 * is_dir. */
static bool match_one(const char *pattern, const char *rel, size_t n, bool is_dir)
{
	size_t plen = strlen(pattern);
	bool dir_only = plen > 0 && pattern[plen - 1] == '/';
	while (plen > 0 && pattern[plen - 1] == '/')
		plen--;
	if (dir_only && !is_dir)
		return false;
	const char *p = pattern;
	bool anchored = plen > 0 && p[0] == '/';
	if (anchored) {
		p++;
		plen--;
	}
	if (memchr(p, '/', plen) != NULL)
		anchored = true;
	static struct comps pc, sc;
	if (anchored) {
		split(p, plen, &pc);
		split(rel, n, &sc);
		return path_match(&pc, &sc);
	}
	const char *base = rel + n;
	while (base > rel && base[-1] != '/')
		base--;
	if (plen == 2 && p[0] == '*' && p[1] == '*')
		return true;
	return comp_match(p, plen, base, (size_t)(rel + n - base));
}

bool fs_glob_match_dir(const char *pattern, const char *rel)
{
	return match_one(pattern, rel, strlen(rel), true);
}

bool fs_glob_match(const char *pattern, const char *rel)
{
	size_t n = strlen(rel);
	if (match_one(pattern, rel, n, false))
		return true;
	/* A pattern that matches a directory matches everything below it. */
	for (size_t i = 0; i < n; i++)
		if (rel[i] == '/' && i > 0 && match_one(pattern, rel, i, true))
			return true;
	return false;
}

bool fs_glob_keep(char *const *include, char *const *exclude, const char *rel)
{
	for (size_t i = 0; exclude != NULL && exclude[i] != NULL; i++)
		if (fs_glob_match(exclude[i], rel))
			return false;
	if (include == NULL || include[0] == NULL)
		return true;
	for (size_t i = 0; include[i] != NULL; i++)
		if (fs_glob_match(include[i], rel))
			return true;
	return false;
}

bool fs_glob_prune(char *const *exclude, const char *rel)
{
	for (size_t i = 0; exclude != NULL && exclude[i] != NULL; i++)
		if (fs_glob_match_dir(exclude[i], rel))
			return true;
	return false;
}
