/* OCI User resolution over passwd/group text (see user_resolve.h). */
#include "guest/user_resolve.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"

#define PASSWD_FIELDS 7 /* name:pw:uid:gid:gecos:home:shell */
#define GROUP_FIELDS 4  /* name:pw:gid:member,member */

struct records {
	const char *p, *end;
	char line[USER_MAX_LINE + 1];
};

static void records_init(struct records *r, const char *text, size_t len)
{
	r->p = text;
	r->end = text != NULL ? text + len : NULL;
}

/* Splits the next well-formed line into exactly `nf` fields (pointers into
 * r->line).  Over-long lines, lines holding a NUL, comments and lines with
 * another field count are skipped.  Returns false at the end. */
static bool records_next(struct records *r, char **f, int nf)
{
	while (r->p != NULL && r->p < r->end) {
		const char *nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
		size_t len = (size_t)((nl != NULL ? nl : r->end) - r->p);
		const char *start = r->p;
		r->p = nl != NULL ? nl + 1 : r->end;
		if (len > 0 && start[len - 1] == '\r')
			len--;
		if (len == 0 || len > USER_MAX_LINE || start[0] == '#' || memchr(start, '\0', len) != NULL)
			continue;
		memcpy(r->line, start, len);
		r->line[len] = '\0';
		char *s = r->line;
		int i = 0;
		for (; i < nf && s != NULL; i++)
			f[i] = strsep(&s, ":");
		if (i == nf && s == NULL)
			return true;
	}
	return false;
}

/* A decimal id: 1-10 digits, below (uint32_t)-1 (which means "no change"
 * to setuid/setgid). */
static bool parse_id(const char *s, uint32_t *v)
{
	size_t n = strlen(s);
	if (n == 0 || n > 10 || strspn(s, "0123456789") != n)
		return false;
	unsigned long long x = strtoull(s, NULL, 10);
	if (x >= UINT32_MAX)
		return false;
	*v = (uint32_t)x;
	return true;
}

struct pw_entry {
	char *name, *home;
	uint32_t uid, gid;
};

/* Finds the first entry named `name`, or with uid `uid` when name is NULL.
 * Returns 1 found, 0 not found, -1 out of memory. */
static int passwd_find(const char *txt, size_t len, const char *name, uint32_t uid, struct pw_entry *e,
		       sbx_error_t *err)
{
	struct records r;
	char *f[PASSWD_FIELDS];
	records_init(&r, txt, len);
	while (records_next(&r, f, PASSWD_FIELDS)) {
		uint32_t fuid, fgid;
		if (!parse_id(f[2], &fuid) || !parse_id(f[3], &fgid))
			continue;
		if (name != NULL ? strcmp(f[0], name) != 0 : fuid != uid)
			continue;
		e->uid = fuid;
		e->gid = fgid;
		e->name = strdup(f[0]);
		e->home = strdup(f[5][0] == '/' ? f[5] : "/");
		if (e->name == NULL || e->home == NULL)
			return sbx_error_errno(err, ENOMEM, "user");
		return 1;
	}
	return 0;
}

static bool group_find(const char *txt, size_t len, const char *name, uint32_t *gid)
{
	struct records r;
	char *f[GROUP_FIELDS];
	records_init(&r, txt, len);
	while (records_next(&r, f, GROUP_FIELDS))
		if (strcmp(f[0], name) == 0 && parse_id(f[2], gid))
			return true;
	return false;
}

static bool lists_member(char *members, const char *name)
{
	for (char *m; (m = strsep(&members, ",")) != NULL;)
		if (strcmp(m, name) == 0)
			return true;
	return false;
}

static int add_group(struct guest_user *u, gid_t gid, const char *name, sbx_error_t *err)
{
	for (size_t i = 0; i < u->ngroups; i++)
		if (u->groups[i] == gid)
			return 0;
	if (u->ngroups >= USER_MAX_GROUPS)
		return sbx_error_set(err, E2BIG, "user \"%s\" is a member of more than %u groups", name,
				     USER_MAX_GROUPS);
	if (u->groups == NULL && (u->groups = calloc(USER_MAX_GROUPS, sizeof(gid_t))) == NULL)
		return sbx_error_errno(err, ENOMEM, "user groups");
	u->groups[u->ngroups++] = gid;
	return 0;
}

static int member_groups(const char *txt, size_t len, const char *name, struct guest_user *u, sbx_error_t *err)
{
	struct records r;
	char *f[GROUP_FIELDS];
	records_init(&r, txt, len);
	while (records_next(&r, f, GROUP_FIELDS)) {
		uint32_t gid;
		if (parse_id(f[2], &gid) && lists_member(f[3], name) && add_group(u, gid, name, err) < 0)
			return -1;
	}
	return 0;
}

/* Printable ASCII without spaces: anything else cannot name a user, and the
 * spec is quoted in error messages. */
static bool spec_clean(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

int user_resolve(const char *spec, const char *passwd, size_t passwd_len, const char *group, size_t group_len,
		 struct guest_user *u, sbx_error_t *err)
{
	*u = (struct guest_user){ 0 };
	if (!spec_clean(spec))
		return sbx_error_set(err, EINVAL, "invalid user: it holds a space or a control character");
	cleanup_free char *copy = strdup(spec[0] != '\0' ? spec : "0");
	if (copy == NULL)
		return sbx_error_errno(err, ENOMEM, "user");
	char *colon = strchr(copy, ':');
	const char *grp = NULL;
	if (colon != NULL) {
		*colon = '\0';
		grp = colon + 1;
	}
	if (copy[0] == '\0' || (grp != NULL && grp[0] == '\0'))
		return sbx_error_set(err, EINVAL, "invalid user \"%s\": expected name, uid, name:group or uid:gid", spec);
	struct pw_entry e = { 0 };
	uint32_t uid = 0, gid;
	bool numeric = parse_id(copy, &uid);
	int found = passwd_find(passwd, passwd_len, numeric ? NULL : copy, uid, &e, err);
	if (found < 0)
		goto fail;
	if (found == 0 && !numeric) {
		sbx_error_set(err, ENOENT, "user \"%s\" not found in /etc/passwd", copy);
		goto fail;
	}
	u->uid = found ? e.uid : uid;
	u->gid = found ? e.gid : 0;
	if (grp != NULL) {
		if (!parse_id(grp, &gid) && !group_find(group, group_len, grp, &gid)) {
			sbx_error_set(err, ENOENT, "group \"%s\" of user \"%s\" not found in /etc/group", grp, spec);
			goto fail;
		}
		u->gid = gid;
	}
	if (found && member_groups(group, group_len, e.name, u, err) < 0)
		goto fail;
	u->home = found ? sbx_steal_ptr(e.home) : strdup("/");
	if (u->home == NULL) {
		sbx_error_errno(err, ENOMEM, "user");
		goto fail;
	}
	free(e.name);
	return 0;
fail:
	free(e.name);
	free(e.home);
	guest_user_free(u);
	return -1;
}

void guest_user_free(struct guest_user *u)
{
	free(u->groups);
	free(u->home);
	*u = (struct guest_user){ 0 };
}
