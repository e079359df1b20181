/* OCI User resolution over passwd/group contents (no files, no NSS). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guest/user_resolve.h"
#include "harness.h"

static const char passwd[] =
	"root:x:0:0:root:/root:/bin/bash\n"
	"# a comment line\n"
	"daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
	"broken line without fields\n"
	"bad:x:notanumber:1::/bad:/bin/sh\n"
	"app:x:1000:1000:App,,,:/home/app:/bin/sh\r\n"
	"nohome:x:1001:1001:::/bin/sh\n"
	"relhome:x:1002:1002::home/rel:/bin/sh\n"
	"dup:x:1000:1:second uid 1000:/elsewhere:/bin/sh\n"
	"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin";

static const char group[] =
	"root:x:0:\n"
	"adm:x:4:app,daemon\n"
	"staff:x:50:other,app\n"
	"app:x:1000:\n"
	"again:x:4:app\n"
	"toomany:x:7:a:b\n"
	"docker:x:999:appx,xapp\n"
	"nogroup:x:65534:\n";

static int resolve(const char *spec, struct guest_user *u, char *why, size_t cap)
{
	sbx_error_t err = NULL;
	int rc = user_resolve(spec, passwd, strlen(passwd), group, strlen(group), u, &err);
	snprintf(why, cap, "%s", sbx_error_msg(err));
	sbx_error_free(&err);
	return rc;
}

TEST(empty_user_is_root_with_its_home)
{
	struct guest_user u;
	char why[256];
	CHECK_INT(resolve("", &u, why, sizeof(why)), 0);
	CHECK_INT(u.uid, 0);
	CHECK_INT(u.gid, 0);
	CHECK_INT(u.ngroups, 0);
	CHECK_STR(u.home, "/root");
	guest_user_free(&u);
}

TEST(name_gives_uid_gid_home_and_member_groups)
{
	struct guest_user u;
	char why[256];
	CHECK_INT(resolve("app", &u, why, sizeof(why)), 0);
	CHECK_INT(u.uid, 1000);
	CHECK_INT(u.gid, 1000);
	CHECK_STR(u.home, "/home/app"); /* the CRLF line end is not part of it */
	/* adm and staff list app; "again" repeats gid 4; docker lists only
	 * names that merely contain "app". */
	CHECK_INT(u.ngroups, 2);
	CHECK_INT(u.groups[0], 4);
	CHECK_INT(u.groups[1], 50);
	guest_user_free(&u);

	CHECK_INT(resolve("nobody", &u, why, sizeof(why)), 0);
	CHECK_INT(u.uid, 65534);
	CHECK_INT(u.gid, 65534);
	CHECK_INT(u.ngroups, 0);
	CHECK_STR(u.home, "/nonexistent"); /* last line, no newline */
	guest_user_free(&u);
}

TEST(numeric_uid_uses_the_first_entry_or_gid_0_and_root_home)
{
	struct guest_user u;
	char why[256];
	CHECK_INT(resolve("1000", &u, why, sizeof(why)), 0);
	CHECK_INT(u.uid, 1000);
	CHECK_INT(u.gid, 1000);
	CHECK_STR(u.home, "/home/app");
	CHECK_INT(u.ngroups, 2);
	guest_user_free(&u);

	CHECK_INT(resolve("1234", &u, why, sizeof(why)), 0);
	CHECK_INT(u.uid, 1234);
	CHECK_INT(u.gid, 0);
	CHECK_INT(u.ngroups, 0);
	CHECK_STR(u.home, "/");
	guest_user_free(&u);
}

TEST(group_part_by_number_or_name)
{
	struct guest_user u;
	char why[256];
	CHECK_INT(resolve("1234:5678", &u, why, sizeof(why)), 0);
	CHECK_INT(u.uid, 1234);
	CHECK_INT(u.gid, 5678);
	CHECK_STR(u.home, "/");
	guest_user_free(&u);

	CHECK_INT(resolve("app:staff", &u, why, sizeof(why)), 0);
	CHECK_INT(u.uid, 1000);
	CHECK_INT(u.gid, 50);
	CHECK_INT(u.ngroups, 2); /* membership still applies */
	guest_user_free(&u);

	CHECK_INT(resolve("daemon:77", &u, why, sizeof(why)), 0);
	CHECK_INT(u.uid, 1);
	CHECK_INT(u.gid, 77);
	CHECK_INT(u.ngroups, 1);
	CHECK_INT(u.groups[0], 4);
	guest_user_free(&u);

	CHECK_INT(resolve("1234:nogroup", &u, why, sizeof(why)), 0);
	CHECK_INT(u.uid, 1234);
	CHECK_INT(u.gid, 65534);
	guest_user_free(&u);
}

TEST(homes_that_are_empty_or_relative_become_root_dir)
{
	struct guest_user u;
	char why[256];
	CHECK_INT(resolve("nohome", &u, why, sizeof(why)), 0);
	CHECK_STR(u.home, "/");
	guest_user_free(&u);
	CHECK_INT(resolve("relhome", &u, why, sizeof(why)), 0);
	CHECK_STR(u.home, "/");
	guest_user_free(&u);
}

TEST(unknown_names_and_bad_specs_fail_naming_them)
{
	struct guest_user u;
	char why[256];
	CHECK_INT(resolve("nosuchuser", &u, why, sizeof(why)), -1);
	CHECK(strstr(why, "\"nosuchuser\" not found in /etc/passwd") != NULL);
	CHECK(u.home == NULL && u.groups == NULL);
	CHECK_INT(resolve("app:nosuchgroup", &u, why, sizeof(why)), -1);
	CHECK(strstr(why, "\"nosuchgroup\"") != NULL);
	CHECK(strstr(why, "/etc/group") != NULL);
	/* "bad" has a malformed uid: the line is skipped, not trusted. */
	CHECK_INT(resolve("bad", &u, why, sizeof(why)), -1);
	CHECK_INT(resolve("broken", &u, why, sizeof(why)), -1);
	const char *bad[] = { ":", "app:", ":50", "a b", "tab\tuser", "4294967295", "99999999999", "-1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (resolve(bad[i], &u, why, sizeof(why)) != -1) {
			guest_user_free(&u);
			CHECK(!"accepted a bad spec");
		}
	}
	/* "-1" is a name, and there is none such. */
	CHECK(strstr(why, "\"-1\" not found") != NULL);
}

TEST(absent_files_still_resolve_numeric_ids_only)
{
	struct guest_user u;
	sbx_error_t err = NULL;
	CHECK_INT(user_resolve("", NULL, 0, NULL, 0, &u, &err), 0);
	CHECK_INT(u.uid, 0);
	CHECK_STR(u.home, "/");
	guest_user_free(&u);
	CHECK_INT(user_resolve("42:43", NULL, 0, NULL, 0, &u, &err), 0);
	CHECK_INT(u.uid, 42);
	CHECK_INT(u.gid, 43);
	guest_user_free(&u);
	CHECK_INT(user_resolve("root", NULL, 0, NULL, 0, &u, &err), -1);
	sbx_error_free(&err);
	CHECK_INT(user_resolve("0:wheel", NULL, 0, NULL, 0, &u, &err), -1);
	sbx_error_free(&err);
}

TEST(long_lines_and_nuls_are_skipped)
{
	size_t n = USER_MAX_LINE + 64;
	char *text = malloc(n * 2 + 128);
	CHECK(text != NULL);
	/* An over-long entry for "long" and one hiding a NUL come before the
	 * real entries: neither may be trusted, the later ones are found. */
	size_t off = (size_t)sprintf(text, "long:x:5:5::/");
	memset(text + off, 'h', n);
	off += n;
	off += (size_t)sprintf(text + off, ":/bin/sh\nnul:x:6:6::/a");
	text[off++] = '\0';
	off += (size_t)sprintf(text + off, ":/bin/sh\nnul:x:7:7::/b:/bin/sh\nlong:x:8:8::/c:/bin/sh\n");
	struct guest_user u;
	sbx_error_t err = NULL;
	int rc = user_resolve("long", text, off, NULL, 0, &u, &err);
	if (rc == 0) {
		CHECK_INT(u.uid, 8);
		guest_user_free(&u);
	}
	CHECK_INT(rc, 0);
	rc = user_resolve("nul", text, off, NULL, 0, &u, &err);
	free(text);
	CHECK_INT(rc, 0);
	CHECK_INT(u.uid, 7);
	CHECK_STR(u.home, "/b");
	guest_user_free(&u);
}

TEST(more_groups_than_the_cap_fail)
{
	size_t cap = (USER_MAX_GROUPS + 2) * 32 + 64;
	char *g = malloc(cap);
	CHECK(g != NULL);
	size_t off = 0;
	for (unsigned i = 0; i <= USER_MAX_GROUPS; i++)
		off += (size_t)snprintf(g + off, cap - off, "g%u:x:%u:app\n", i, 2000 + i);
	const char pw[] = "app:x:1000:1000::/home/app:/bin/sh\n";
	struct guest_user u;
	sbx_error_t err = NULL;
	int rc = user_resolve("app", pw, strlen(pw), g, off, &u, &err);
	free(g);
	CHECK_INT(rc, -1);
	CHECK(strstr(sbx_error_msg(err), "more than") != NULL);
	sbx_error_free(&err);
}
