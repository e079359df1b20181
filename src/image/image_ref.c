#include "image/image_ref.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "image/digest.h"

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* path-component: [a-z0-9]+ (([._]|__|[-]+)[a-z0-9]+)* */
static bool valid_path_component(const char *s, size_t n)
{
	size_t i = 0;
	if (n == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
		return false;
	while (i < n) {
		if (is_lower_alnum(s[i])) {
			i++;
			continue;
		}
		size_t j = i;
		if (s[i] == '.') {
			j++;
		} else if (s[i] == '_') {
			j++;
			if (j < n && s[j] == '_')
				j++;
		} else if (s[i] == '-') {
			while (j < n && s[j] == '-')
				j++;
		} else {
			return false;
		}
		if (j >= n || !is_lower_alnum(s[j]))
			return false;
		i = j;
	}
	return true;
}

static bool valid_path(const char *s, size_t n)
{
	size_t start = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || s[i] == '/') {
			if (!valid_path_component(s + start, i - start))
				return false;
			start = i + 1;
		}
	}
	return true;
}

static bool valid_host_label(const char *s, size_t n)
{
	if (n == 0 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-')
			return false;
	return true;
}

/* host[:port], host being dotted labels or a bracketed IPv6 address. */
static bool valid_domain(const char *s, size_t n)
{
	size_t host_end = n;
	if (n > 0 && s[0] == '[') {
		const char *close = memchr(s, ']', n);
		if (close == NULL || close == s + 1)
			return false;
		for (const char *p = s + 1; p < close; p++)
			if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.')
				return false;
		host_end = (size_t)(close - s) + 1;
		if (host_end != n && s[host_end] != ':')
			return false;
	} else {
		const char *colon = memchr(s, ':', n);
		if (colon != NULL)
			host_end = (size_t)(colon - s);
		size_t start = 0;
		for (size_t i = 0; i <= host_end; i++) {
			if (i == host_end || s[i] == '.') {
				if (!valid_host_label(s + start, i - start))
					return false;
				start = i + 1;
			}
		}
	}
	if (host_end == n)
		return true;
	size_t port_len = n - host_end - 1;
	if (port_len == 0 || port_len > 5)
		return false;
	for (size_t i = host_end + 1; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* tag: [\w][\w.-]{0,127} */
static bool valid_tag(const char *s, size_t n)
{
	if (n == 0 || n > SBX_REF_TAG_MAX || !(isalnum((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-')
			return false;
	return true;
}

static void copy_n(char *dst, const char *src, size_t n)
{
	memcpy(dst, src, n);
	dst[n] = '\0';
}

int sbx_image_ref_parse(const char *s, struct sbx_image_ref *out, sbx_error_t *err)
{
	memset(out, 0, sizeof(*out));
	size_t len = strlen(s);
	if (len == 0)
		return sbx_error_set(err, 0, "invalid reference format: empty reference");
	if (len > 2 * SBX_REF_NAME_MAX)
		return sbx_error_set(err, 0, "invalid reference format: reference too long");

	size_t name_end = len;
	const char *at = strchr(s, '@');
	if (at != NULL) {
		name_end = (size_t)(at - s);
		if (strncmp(at + 1, "sha256:", 7) != 0 && strchr(at + 1, ':') != NULL)
			return sbx_error_set(err, 0, "unsupported digest algorithm in '%s': only sha256", s);
		if (!sbx_digest_valid(at + 1))
			return sbx_error_set(err, 0, "invalid reference format: bad digest in '%s'", s);
		snprintf(out->digest, sizeof(out->digest), "%s", at + 1);
	}
	/* A tag is the part after the last ':' that follows the last '/'. */
	const char *last_slash = memrchr(s, '/', name_end);
	const char *colon = memrchr(last_slash ? last_slash : s, ':', name_end - (size_t)((last_slash ? last_slash : s) - s));
	if (colon != NULL) {
		size_t tag_len = name_end - (size_t)(colon - s) - 1;
		if (!valid_tag(colon + 1, tag_len))
			return sbx_error_set(err, 0, "invalid reference format: bad tag in '%s'", s);
		copy_n(out->tag, colon + 1, tag_len);
		name_end = (size_t)(colon - s);
	}
	if (name_end == 0)
		return sbx_error_set(err, 0, "invalid reference format: empty name in '%s'", s);

	const char *first_slash = memchr(s, '/', name_end);
	const char *path = s;
	size_t path_len = name_end;
	if (first_slash != NULL) {
		size_t dlen = (size_t)(first_slash - s);
		bool has_upper = false;
		for (size_t i = 0; i < dlen; i++)
			has_upper |= isupper((unsigned char)s[i]) != 0;
		if (memchr(s, '.', dlen) || memchr(s, ':', dlen) || (dlen == 9 && memcmp(s, "localhost", 9) == 0) ||
		    has_upper) {
			if (!valid_domain(s, dlen))
				return sbx_error_set(err, 0, "invalid reference format: bad registry host in '%s'", s);
			copy_n(out->domain, s, dlen);
			path = first_slash + 1;
			path_len = name_end - dlen - 1;
		}
	}
	if (out->domain[0] == '\0' || strcmp(out->domain, "index.docker.io") == 0)
		strcpy(out->domain, "docker.io");

	for (size_t i = 0; i < path_len; i++)
		if (isupper((unsigned char)path[i]))
			return sbx_error_set(err, 0, "invalid reference format: repository name must be lowercase: '%s'", s);
	if (!valid_path(path, path_len))
		return sbx_error_set(err, 0, "invalid reference format: bad repository name in '%s'", s);

	bool add_library = strcmp(out->domain, "docker.io") == 0 && memchr(path, '/', path_len) == NULL;
	size_t full = strlen(out->domain) + 1 + path_len + (add_library ? 8 : 0);
	if (full > SBX_REF_NAME_MAX)
		return sbx_error_set(err, 0, "invalid reference format: repository name must not be more than %d characters",
				     SBX_REF_NAME_MAX);
	snprintf(out->path, sizeof(out->path), "%s%.*s", add_library ? "library/" : "", (int)path_len, path);
	if (out->tag[0] == '\0' && out->digest[0] == '\0')
		strcpy(out->tag, "latest");
	return 0;
}

int sbx_image_ref_format(const struct sbx_image_ref *ref, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s%s%s%s%s", ref->domain, ref->path, ref->tag[0] ? ":" : "", ref->tag,
			 ref->digest[0] ? "@" : "", ref->digest);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

const char *sbx_image_ref_api_host(const struct sbx_image_ref *ref)
{
	return strcmp(ref->domain, "docker.io") == 0 ? "registry-1.docker.io" : ref->domain;
}

const char *sbx_image_ref_manifest_key(const struct sbx_image_ref *ref)
{
	return ref->digest[0] ? ref->digest : ref->tag;
}
