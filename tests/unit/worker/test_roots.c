/* worker_roots_check: the project directory and the package cache, after
 * symlinks and `..`; S501 naming both roots otherwise. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/scodes.h"
#include "harness.h"
#include "worker/worker_roots.h"

static char base[64];

static const char *at(const char *rel)
{
	static char buf[4][PATH_MAX];
	static int i;
	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", base, rel);
	return buf[i];
}

/* base/{proj/w, project2/w, state/packages/b-1, outside}, proj/out -> ../outside */
__attribute__((constructor)) static void tree(void)
{
	snprintf(base, sizeof(base), "/tmp/sbx-roots.XXXXXX");
	if (mkdtemp(base) == NULL)
		abort();
	const char *dirs[] = { "proj", "proj/w", "project2", "project2/w", "state", "state/packages",
			       "state/packages/b-1", "outside", "home" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (mkdir(at(dirs[i]), 0755) < 0)
			abort();
	}
	if (symlink("../outside", at("proj/out")) < 0 || symlink(at("proj"), at("projlink")) < 0)
		abort();
	setenv("III_COMPOSE_PROJECT_DIR", at("proj"), 1);
	setenv("III_COMPOSE_STATE_DIR", at("state"), 1);
}

__attribute__((destructor)) static void remove_tree(void)
{
	char cmd[PATH_MAX];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", base);
}

static int check(const char *path, char **canon, bool *pkg, sbx_error_t *err)
{
	*canon = NULL;
	return worker_roots_check(path, canon, pkg, err);
}

TEST(within_is_a_path_prefix_not_a_string_prefix)
{
	CHECK(worker_path_within("/proj", "/proj"));
	CHECK(worker_path_within("/proj/a", "/proj"));
	CHECK(!worker_path_within("/project2", "/proj"));
	CHECK(!worker_path_within("/pro", "/proj"));
	CHECK(worker_path_within("/anything", "/"));
}

TEST(project_and_cache_are_accepted)
{
	sbx_error_t err = NULL;
	char *canon;
	bool pkg = true;
	CHECK_INT(check(at("proj/w"), &canon, &pkg, &err), 0);
	CHECK_STR(canon, at("proj/w"));
	CHECK(!pkg);
	free(canon);
	CHECK_INT(check(at("proj/w/../w/."), &canon, &pkg, &err), 0);
	CHECK_STR(canon, at("proj/w"));
	free(canon);
	CHECK_INT(check(at("state/packages/b-1"), &canon, &pkg, &err), 0);
	CHECK(pkg);
	free(canon);
	/* The project reached through a symlink is still the project. */
	CHECK_INT(check(at("projlink/w"), &canon, &pkg, &err), 0);
	CHECK_STR(canon, at("proj/w"));
	free(canon);
}

static void expect_s501(const char *path, const char *want)
{
	sbx_error_t err = NULL;
	char *canon;
	bool pkg;
	if (check(path, &canon, &pkg, &err) != -1 || canon != NULL) {
		sbx_test_fail(__FILE__, __LINE__, "%s accepted", path);
		free(canon);
		return;
	}
	const char *m = sbx_error_msg(err);
	if (strcmp(err->scode, SBX_S_HOST_PATH) != 0 || strstr(m, want) == NULL ||
	    strstr(m, "package cache") == NULL || strstr(m, "project directory") == NULL)
		sbx_test_fail(__FILE__, __LINE__, "%s: %s %s (want \"%s\")", path, err->scode, m, want);
	sbx_error_free(&err);
}

TEST(outside_paths_are_s501_naming_both_roots)
{
	char want[PATH_MAX * 2];
	snprintf(want, sizeof(want), "is outside the Compose project directory '%s' and the package cache '%s'",
		 at("proj"), at("state/packages"));
	expect_s501("/etc", want);
	expect_s501(at("project2/w"), want);                /* a string prefix of the project */
	expect_s501(at("proj/out"), "(resolved: '");        /* a symlink out of the project */
	expect_s501(at("proj/w/../../outside"), "outside"); /* `..` out of it */
	expect_s501(at("proj/missing"), "(No such file or directory)");
	expect_s501("proj/w", "(not an absolute path)");
	expect_s501(at("state"), want); /* the cache's parent */
}

TEST(unset_project_is_named_as_unset)
{
	unsetenv("III_COMPOSE_PROJECT_DIR");
	expect_s501(at("proj/w"), "project directory (unset: III_COMPOSE_PROJECT_DIR) and the package cache");
	setenv("III_COMPOSE_PROJECT_DIR", "", 1);
	expect_s501(at("proj/w"), "(unset: III_COMPOSE_PROJECT_DIR)");
	setenv("III_COMPOSE_PROJECT_DIR", at("proj"), 1);
}

TEST(cache_defaults_to_home)
{
	unsetenv("III_COMPOSE_STATE_DIR");
	setenv("HOME", at("home"), 1);
	sbx_error_t err = NULL;
	char *cache = worker_package_cache(&err);
	char want[PATH_MAX];
	snprintf(want, sizeof(want), "%s/.iii/compose/packages", at("home"));
	CHECK_STR(cache, want);
	free(cache);
	expect_s501(at("state/packages/b-1"), ".iii/compose/packages'");
	setenv("III_COMPOSE_STATE_DIR", at("state"), 1);
}

/* worker_roots_open pins what it checked: the descriptor is the directory
 * at the canonical path, and it stays that directory after the path is
 * swapped for `ln -s / <dir>`; a later open of the swapped path is S501. */
TEST(open_pins_the_checked_directory)
{
	sbx_error_t err = NULL;
	char *canon = NULL;
	bool pkg;
	int fd;
	CHECK_INT(mkdir(at("proj/pin"), 0755), 0);
	CHECK_INT(close(open(at("proj/pin/marker"), O_WRONLY | O_CREAT, 0644)), 0);
	CHECK_INT(worker_roots_open(at("projlink/pin"), &canon, &pkg, &fd, &err), 0);
	CHECK_STR(canon, at("proj/pin"));
	CHECK(fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC));
	CHECK_INT(rename(at("proj/pin"), at("proj/pinned")), 0);
	CHECK_INT(symlink("/", at("proj/pin")), 0);
	CHECK_INT(faccessat(fd, "marker", F_OK, 0), 0);
	CHECK(faccessat(fd, "etc", F_OK, 0) < 0);
	close(fd);
	free(canon);
	canon = NULL;
	CHECK_INT(worker_roots_open(at("proj/pin"), &canon, &pkg, &fd, &err), -1);
	CHECK(canon == NULL && fd == -1);
	CHECK_STR(err->scode, SBX_S_HOST_PATH);
	CHECK(strstr(sbx_error_msg(err), "(resolved: '/')") != NULL);
	sbx_error_free(&err);
	/* A file is a request error, as the manifest read said before. */
	CHECK_INT(worker_roots_open(at("proj/pinned/marker"), &canon, &pkg, &fd, &err), -1);
	CHECK_STR(err->scode, SBX_S_INVALID_REQUEST);
	CHECK(strstr(sbx_error_msg(err), "pinned/marker: Not a directory") != NULL);
	sbx_error_free(&err);
}
