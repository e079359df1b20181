/* The ten fs operations through the guest dispatcher over a socketpair:
 * real files in a temp directory, every error errno, hostile paths, flow
 * control of a large read, grep over 10 000 files. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "guest_client.h"
#include "harness.h"

#define T 60000 /* ms: a 10 000-file grep under ASan on a busy machine */

/* Everything one fs stream produced. */
struct res {
	int errnum; /* FS_ERROR's, 0 when none */
	char msg[1024];
	char *error; /* an ERROR frame (request refused by the decoder) */
	int done;    /* FS_DONE seen */
	uint64_t count;
	uint32_t flags;
	struct proto_fs_entry ents[64];
	size_t nents;
	struct proto_fs_match *matches;
	size_t nmatches;
	struct proto_fs_sed_file files[16];
	size_t nfiles;
	int meta;
	struct proto_fs_meta m;
	uint8_t *data;
	size_t len;
	int exit_code;
};

static void res_free(struct res *r)
{
	for (size_t i = 0; i < r->nents; i++)
		free(r->ents[i].name);
	for (size_t i = 0; i < r->nmatches; i++) {
		free(r->matches[i].path);
		free(r->matches[i].content);
	}
	for (size_t i = 0; i < r->nfiles; i++) {
		free(r->files[i].path);
		free(r->files[i].error);
	}
	free(r->matches);
	free(r->data);
	free(r->error);
	memset(r, 0, sizeof(*r));
}

/* Takes the items of a batch (their strings move into r). */
static void take_batch(struct res *r, struct proto_msg *m)
{
	struct proto_fs_batch *b = &m->u.fs_batch;
	for (uint32_t i = 0; i < b->n; i++) {
		if (m->type == PROTO_FS_ENTRIES && r->nents < 64) {
			r->ents[r->nents++] = b->v.entries[i];
			b->v.entries[i].name = NULL;
		} else if (m->type == PROTO_FS_MATCHES) {
			r->matches = realloc(r->matches, (r->nmatches + 1) * sizeof(*r->matches));
			r->matches[r->nmatches++] = b->v.matches[i];
			b->v.matches[i].path = b->v.matches[i].content = NULL;
		} else if (m->type == PROTO_FS_SED_FILES && r->nfiles < 16) {
			r->files[r->nfiles++] = b->v.files[i];
			b->v.files[i].path = b->v.files[i].error = NULL;
		}
	}
}

/* Feeds one message of stream `stream` into r; returns 1 once it ended. */
static int collect(struct client *c, uint32_t stream, struct res *r, struct proto_msg *m, int credit)
{
	if (m->stream != stream)
		return 0;
	switch (m->type) {
	case PROTO_FS_ENTRIES:
	case PROTO_FS_MATCHES:
	case PROTO_FS_SED_FILES:
		take_batch(r, m);
		return 0;
	case PROTO_FS_META:
		r->meta = 1;
		r->m = m->u.fs_meta;
		return 0;
	case PROTO_STDOUT:
		r->data = realloc(r->data, r->len + m->u.data.len + 1);
		memcpy(r->data + r->len, m->u.data.data, m->u.data.len);
		r->len += m->u.data.len;
		if (credit && m->u.data.len > 0) {
			struct proto_msg cr = { .stream = stream, .type = PROTO_CREDIT, .u.credit = (uint32_t)m->u.data.len };
			client_send(c, &cr);
		}
		return 0;
	case PROTO_FS_DONE:
		r->done = 1;
		r->count = m->u.fs_done.count;
		r->flags = m->u.fs_done.flags;
		return 1;
	case PROTO_FS_ERROR:
		r->errnum = m->u.fs_error.errnum;
		snprintf(r->msg, sizeof(r->msg), "%s", m->u.fs_error.message);
		return 1;
	case PROTO_EXIT:
		r->exit_code = m->u.code;
		return 1;
	case PROTO_ERROR:
		r->error = strdup(m->u.message);
		return 1;
	}
	return 0;
}

static int call(struct client *c, struct proto_msg *req, struct res *r)
{
	memset(r, 0, sizeof(*r));
	r->exit_code = -1;
	if (client_send(c, req) < 0)
		return -1;
	struct proto_msg m;
	while (client_next(c, &m, T) == 1) {
		int end = collect(c, req->stream, r, &m, 1);
		proto_msg_free(&m);
		if (end)
			return 0;
	}
	return -1;
}

static uint32_t next_stream = 100;

static int path_op(struct client *c, uint8_t type, const char *path, struct res *r)
{
	struct proto_msg m = { .stream = next_stream++, .type = type, .u.fs_path.path = (char *)path };
	return call(c, &m, r);
}

static char *none[] = { NULL };

static int grep(struct client *c, const char *path, const char *pattern, uint32_t flags, char **inc, char **exc,
		uint64_t max_matches, uint64_t max_line, struct res *r)
{
	struct proto_msg m = { .stream = next_stream++, .type = PROTO_FS_GREP };
	m.u.fs_grep = (struct proto_fs_grep){ (char *)path, (char *)pattern, flags, inc ? inc : none,
					      exc ? exc : none, max_matches, max_line };
	return call(c, &m, r);
}

static int sed(struct client *c, char **files, const char *path, const char *pattern, const char *rep,
	       uint32_t flags, char **inc, struct res *r)
{
	struct proto_msg m = { .stream = next_stream++, .type = PROTO_FS_SED };
	m.u.fs_sed = (struct proto_fs_sed){ files ? files : none, (char *)(path ? path : ""), (char *)pattern,
					    (char *)rep, flags, inc ? inc : none, none };
	return call(c, &m, r);
}

static void put(const char *path, const char *content)
{
	FILE *f = fopen(path, "w");
	if (f != NULL) {
		fputs(content, f);
		fclose(f);
	}
}

static char *slurp(const char *path)
{
	static char buf[65536];
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return NULL;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* A fresh temp dir per test; removed with rm -rf at the end. */
static char root[64];
static const char *tmpdir(void)
{
	snprintf(root, sizeof(root), "/tmp/sbx-fsops-XXXXXX");
	return mkdtemp(root);
}

static void cleanup(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd) != 0)
		fprintf(stderr, "# cleanup of %s failed\n", root);
}

static char *at(const char *rel)
{
	static char bufs[8][4200];
	static int i;
	char *b = bufs[i++ % 8];
	snprintf(b, sizeof(bufs[0]), "%s/%s", root, rel);
	return b;
}

static const struct proto_fs_entry *entry(const struct res *r, const char *name)
{
	for (size_t i = 0; i < r->nents; i++)
		if (strcmp(r->ents[i].name, name) == 0)
			return &r->ents[i];
	return NULL;
}

TEST(ls_and_stat_use_lstat)
{
	CHECK(tmpdir() != NULL);
	put(at("f.txt"), "hello");
	chmod(at("f.txt"), 0640);
	mkdir(at("d"), 0755);
	CHECK_INT(symlink(at("d"), at("link")), 0);
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	struct res r;
	CHECK_INT(path_op(&c, PROTO_FS_LS, root, &r), 0);
	CHECK(r.done);
	CHECK_INT(r.count, 3);
	CHECK_INT(r.nents, 3);
	const struct proto_fs_entry *e = entry(&r, "f.txt");
	CHECK(e != NULL && e->size == 5 && e->mode == 0640 && e->flags == 0 && e->mtime > 1600000000);
	CHECK(entry(&r, "d") != NULL && entry(&r, "d")->flags == PROTO_FS_ENTRY_DIR);
	CHECK(entry(&r, "link") != NULL && entry(&r, "link")->flags == PROTO_FS_ENTRY_SYMLINK);
	res_free(&r);
	/* a file, a symlink to a directory, a missing path */
	CHECK_INT(path_op(&c, PROTO_FS_LS, at("f.txt"), &r), 0);
	CHECK_INT(r.errnum, ENOTDIR);
	CHECK(strstr(r.msg, at("f.txt")) != NULL);
	CHECK_INT(path_op(&c, PROTO_FS_LS, at("link"), &r), 0);
	CHECK_INT(r.errnum, ENOTDIR);
	CHECK_INT(path_op(&c, PROTO_FS_LS, at("nope"), &r), 0);
	CHECK_INT(r.errnum, ENOENT);
	CHECK(strstr(r.msg, "path not found: ") != NULL);
	/* stat: lstat, the name is the last component */
	CHECK_INT(path_op(&c, PROTO_FS_STAT, at("link"), &r), 0);
	CHECK_INT(r.nents, 1);
	CHECK_STR(r.ents[0].name, "link");
	CHECK_INT(r.ents[0].flags, PROTO_FS_ENTRY_SYMLINK);
	res_free(&r);
	CHECK_INT(path_op(&c, PROTO_FS_STAT, at("d/"), &r), 0);
	CHECK_STR(r.ents[0].name, "d");
	CHECK_INT(r.ents[0].flags, PROTO_FS_ENTRY_DIR);
	res_free(&r);
	CHECK_INT(path_op(&c, PROTO_FS_STAT, "/", &r), 0);
	CHECK_STR(r.ents[0].name, "/");
	res_free(&r);
	CHECK_INT(path_op(&c, PROTO_FS_STAT, at("nope"), &r), 0);
	CHECK_INT(r.errnum, ENOENT);
	client_stop(&c);
	cleanup();
}

TEST(mkdir_modes_parents_and_errors)
{
	CHECK(tmpdir() != NULL);
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	struct res r;
	struct proto_msg m = { .stream = next_stream++, .type = PROTO_FS_MKDIR };
	m.u.fs_mkdir = (struct proto_fs_mkdir){ at("x"), 0777, 0 };
	CHECK_INT(call(&c, &m, &r), 0);
	CHECK(r.done && r.count == 1);
	struct stat st;
	CHECK_INT(stat(at("x"), &st), 0);
	CHECK_INT(st.st_mode & 07777, 0777); /* exact: no umask */
	/* exists: EEXIST without parents, "not created" with them */
	m.stream = next_stream++;
	CHECK_INT(call(&c, &m, &r), 0);
	CHECK_INT(r.errnum, EEXIST);
	CHECK(strstr(r.msg, "already exists") != NULL);
	m.stream = next_stream++;
	m.u.fs_mkdir.flags = PROTO_FS_PARENTS;
	CHECK_INT(call(&c, &m, &r), 0);
	CHECK(r.done && r.count == 0);
	/* missing parent: ENOENT "path not found" (no parent hint) */
	m = (struct proto_msg){ .stream = next_stream++, .type = PROTO_FS_MKDIR };
	m.u.fs_mkdir = (struct proto_fs_mkdir){ at("p/q/r"), 0700, 0 };
	CHECK_INT(call(&c, &m, &r), 0);
	CHECK_INT(r.errnum, ENOENT);
	CHECK(strstr(r.msg, "path not found") != NULL && strstr(r.msg, "parent not found") == NULL);
	m.stream = next_stream++;
	m.u.fs_mkdir.flags = PROTO_FS_PARENTS;
	CHECK_INT(call(&c, &m, &r), 0);
	CHECK(r.done && r.count == 1);
	CHECK_INT(stat(at("p/q/r"), &st), 0);
	CHECK_INT(st.st_mode & 07777, 0700);
	CHECK_INT(stat(at("p/q"), &st), 0);
	CHECK_INT(st.st_mode & 07777, 0755);
	/* a file in the way of the parents */
	put(at("file"), "");
	m = (struct proto_msg){ .stream = next_stream++, .type = PROTO_FS_MKDIR };
	m.u.fs_mkdir = (struct proto_fs_mkdir){ at("file/sub"), 0755, PROTO_FS_PARENTS };
	CHECK_INT(call(&c, &m, &r), 0);
	CHECK_INT(r.errnum, ENOTDIR);
	client_stop(&c);
	cleanup();
}

TEST(rm_never_follows_links_out_of_the_tree)
{
	CHECK(tmpdir() != NULL);
	mkdir(at("outside"), 0755);
	put(at("outside/keep"), "precious");
	mkdir(at("tree"), 0755);
	mkdir(at("tree/sub"), 0755);
	put(at("tree/sub/f"), "x");
	CHECK_INT(symlink(at("outside"), at("tree/sub/link")), 0);
	CHECK_INT(symlink(at("outside"), at("dirlink")), 0);
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	struct res r;
	struct proto_msg m = { .stream = next_stream++, .type = PROTO_FS_RM };
	m.u.fs_rm = (struct proto_fs_rm){ at("tree"), 0 };
	CHECK_INT(call(&c, &m, &r), 0);
	CHECK_INT(r.errnum, ENOTEMPTY);
	CHECK(strstr(r.msg, "directory not empty") != NULL);
	CHECK(access(at("tree/sub/f"), F_OK) == 0); /* nothing removed */
	m.stream = next_stream++;
	m.u.fs_rm.flags = PROTO_FS_RECURSIVE;
	CHECK_INT(call(&c, &m, &r), 0);
	CHECK(r.done && r.count == 1);
	CHECK(access(at("tree"), F_OK) < 0);
	CHECK_STR(slurp(at("outside/keep")), "precious");
	/* a symlink to a directory is unlinked, its target untouched */
	m = (struct proto_msg){ .stream = next_stream++, .type = PROTO_FS_RM };
	m.u.fs_rm = (struct proto_fs_rm){ at("dirlink"), PROTO_FS_RECURSIVE };
	CHECK_INT(call(&c, &m, &r), 0);
	CHECK(r.done);
	CHECK(access(at("outside/keep"), F_OK) == 0);
	/* an empty directory, a file, a missing path */
	mkdir(at("empty"), 0755);
	m.stream = next_stream++;
	m.u.fs_rm = (struct proto_fs_rm){ at("empty"), 0 };
	CHECK_INT(call(&c, &m, &r), 0);
	CHECK(r.done);
	m.stream = next_stream++;
	m.u.fs_rm = (struct proto_fs_rm){ at("outside/keep"), 0 };
	CHECK_INT(call(&c, &m, &r), 0);
	CHECK(r.done && access(at("outside/keep"), F_OK) < 0);
	m.stream = next_stream++;
	CHECK_INT(call(&c, &m, &r), 0);
	CHECK_INT(r.errnum, ENOENT);
	client_stop(&c);
	cleanup();
}

TEST(chmod_counts_and_skips_links_inside_the_tree)
{
	CHECK(tmpdir() != NULL);
	mkdir(at("t"), 0755);
	mkdir(at("t/a"), 0755);
	put(at("t/a/f"), "");
	put(at("t/g"), "");
	put(at("victim"), "");
	chmod(at("victim"), 0600);
	CHECK_INT(symlink(at("victim"), at("t/a/link")), 0);
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	struct res r;
	struct proto_msg m = { .stream = next_stream++, .type = PROTO_FS_CHMOD };
	m.u.fs_chmod = (struct proto_fs_chmod){ at("t"), 0750, PROTO_FS_RECURSIVE | PROTO_FS_SET_GID, 0, 4321 };
	CHECK_INT(call(&c, &m, &r), 0);
	CHECK(r.done);
	CHECK_INT(r.count, 4); /* t, t/a, t/a/f, t/g; not the link */
	struct stat st;
	CHECK_INT(stat(at("t/a/f"), &st), 0);
	CHECK_INT(st.st_mode & 07777, 0750);
	CHECK_INT(st.st_gid, 4321);
	CHECK_INT(stat(at("victim"), &st), 0);
	CHECK_INT(st.st_mode & 07777, 0600); /* the link's target is outside */
	CHECK(st.st_gid != 4321);
	/* the path itself follows a symlink and counts 1 */
	m.stream = next_stream++;
	m.u.fs_chmod = (struct proto_fs_chmod){ at("t/a/link"), 0604, 0, 0, 0 };
	CHECK_INT(call(&c, &m, &r), 0);
	CHECK(r.done && r.count == 1);
	CHECK_INT(stat(at("victim"), &st), 0);
	CHECK_INT(st.st_mode & 07777, 0604);
	m.stream = next_stream++;
	m.u.fs_chmod.path = at("missing");
	CHECK_INT(call(&c, &m, &r), 0);
	CHECK_INT(r.errnum, ENOENT);
	client_stop(&c);
	cleanup();
}

TEST(mv_overwrite_rules_and_cross_filesystem_copy)
{
	CHECK(tmpdir() != NULL);
	put(at("a"), "A");
	put(at("b"), "B");
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	struct res r;
	struct proto_msg m = { .stream = next_stream++, .type = PROTO_FS_MV };
	m.u.fs_mv = (struct proto_fs_mv){ at("a"), at("b"), 0 };
	CHECK_INT(call(&c, &m, &r), 0);
	CHECK_INT(r.errnum, EEXIST);
	CHECK(strstr(r.msg, "dst already exists: ") != NULL);
	CHECK_STR(slurp(at("b")), "B");
	m.stream = next_stream++;
	m.u.fs_mv.flags = PROTO_FS_OVERWRITE;
	CHECK_INT(call(&c, &m, &r), 0);
	CHECK(r.done);
	CHECK_STR(slurp(at("b")), "A");
	CHECK(access(at("a"), F_OK) < 0);
	m.stream = next_stream++;
	CHECK_INT(call(&c, &m, &r), 0);
	CHECK_INT(r.errnum, ENOENT);
	CHECK(strstr(r.msg, "src not found: ") != NULL);
	/* across filesystems when /dev/shm is one: copied, mode kept */
	struct stat s1, s2;
	if (stat("/dev/shm", &s1) == 0 && stat(root, &s2) == 0 && s1.st_dev != s2.st_dev) {
		char dst[128];
		snprintf(dst, sizeof(dst), "/dev/shm/sbx-mv-%d", (int)getpid());
		chmod(at("b"), 0751);
		m.stream = next_stream++;
		m.u.fs_mv = (struct proto_fs_mv){ at("b"), dst, 0 };
		CHECK_INT(call(&c, &m, &r), 0);
		CHECK(r.done);
		CHECK(access(at("b"), F_OK) < 0);
		CHECK_STR(slurp(dst), "A");
		CHECK_INT(stat(dst, &s1), 0);
		CHECK_INT(s1.st_mode & 07777, 0751);
		unlink(dst);
	}
	client_stop(&c);
	cleanup();
}

TEST(grep_options_binary_and_utf8)
{
	CHECK(tmpdir() != NULL);
	mkdir(at("src"), 0755);
	mkdir(at("node_modules"), 0755);
	put(at("src/a.py"), "import os\nprint('Hello')\r\nx = 'hello world'\n");
	put(at("src/b.txt"), "hello from txt\n");
	put(at("node_modules/m.py"), "hello module\n");
	put(at("bad.py"), "\xff\xfe hello\nhello after bad\n");
	FILE *f = fopen(at("bin.py"), "w");
	CHECK(f != NULL);
	fwrite("hello\0binary\n", 1, 13, f);
	fclose(f);
	CHECK_INT(symlink(at("src"), at("srclink")), 0);
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	struct res r;
	char *py[] = { "*.py", NULL }, *nm[] = { "node_modules/", NULL };
	CHECK_INT(grep(&c, root, "hello", PROTO_FS_RECURSIVE, py, nm, 0, 0, &r), 0);
	CHECK(r.done);
	/* src/a.py:3 and bad.py:2 (line 1 is not UTF-8, still counted);
	 * not node_modules, not bin.py, nothing through srclink */
	CHECK_INT(r.nmatches, 2);
	CHECK_INT(r.count, 2);
	for (size_t i = 0; i < r.nmatches; i++) {
		if (strstr(r.matches[i].path, "a.py") != NULL) {
			CHECK_STR(r.matches[i].path, at("src/a.py"));
			CHECK_INT(r.matches[i].line, 3);
			CHECK_STR(r.matches[i].content, "x = 'hello world'");
		} else {
			CHECK_STR(r.matches[i].path, at("bad.py"));
			CHECK_INT(r.matches[i].line, 2);
		}
	}
	res_free(&r);
	/* ignore_case, \r\n stripped, max_matches reached -> truncated */
	CHECK_INT(grep(&c, at("src/a.py"), "HELLO'\\)$", PROTO_FS_IGNORE_CASE, NULL, NULL, 0, 0, &r), 0);
	CHECK_INT(r.nmatches, 1);
	CHECK_STR(r.matches[0].content, "print('Hello')");
	res_free(&r);
	CHECK_INT(grep(&c, root, "hello", PROTO_FS_RECURSIVE | PROTO_FS_IGNORE_CASE, NULL, NULL, 1, 0, &r), 0);
	CHECK_INT(r.nmatches, 1);
	CHECK(r.flags & PROTO_FS_TRUNCATED);
	res_free(&r);
	/* max_line_bytes: cut at a UTF-8 boundary, ellipsis appended */
	put(at("long.txt"), "h\xc3\xa9llo long line\n");
	CHECK_INT(grep(&c, at("long.txt"), "long", 0, NULL, NULL, 0, 2, &r), 0);
	CHECK_INT(r.nmatches, 1);
	CHECK_STR(r.matches[0].content, "h\xe2\x80\xa6");
	res_free(&r);
	/* the errors, in the contract's order */
	CHECK_INT(grep(&c, at("nope"), "(", PROTO_FS_RECURSIVE, NULL, NULL, 0, 0, &r), 0);
	CHECK_INT(r.errnum, ENOENT);
	CHECK_INT(grep(&c, root, "(", 0, NULL, NULL, 0, 0, &r), 0);
	CHECK_INT(r.errnum, PROTO_FS_EREGEX);
	CHECK(strstr(r.msg, "bad regex") != NULL);
	CHECK_INT(grep(&c, root, "x", 0, NULL, NULL, 0, 0, &r), 0);
	CHECK_INT(r.errnum, PROTO_FS_EINVALID);
	CHECK(strstr(r.msg, "recursive=false on a directory") != NULL);
	/* a pathological pattern fails instead of hanging */
	put(at("redos.txt"), "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\n");
	CHECK_INT(grep(&c, at("redos.txt"), "^(a|a)*(a|a)*(a|a)*$", 0, NULL, NULL, 0, 0, &r), 0);
	CHECK_INT(r.errnum, PROTO_FS_EREGEX);
	client_stop(&c);
	cleanup();
}

TEST(grep_over_ten_thousand_files)
{
	CHECK(tmpdir() != NULL);
	for (int d = 0; d < 100; d++) {
		char dir[32];
		snprintf(dir, sizeof(dir), "d%02d", d);
		CHECK_INT(mkdir(at(dir), 0755), 0);
		for (int i = 0; i < 100; i++) {
			char rel[64], body[64];
			snprintf(rel, sizeof(rel), "d%02d/f%03d.txt", d, i);
			snprintf(body, sizeof(body), "line one\nneedle %d %d\nline three\n", d, i);
			put(at(rel), body);
		}
	}
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	struct res r;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_INT(grep(&c, root, "needle \\d+", PROTO_FS_RECURSIVE, NULL, NULL, 0, 0, &r), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(r.done);
	CHECK_INT(r.nmatches, 10000);
	CHECK_INT(r.count, 10000);
	CHECK(!(r.flags & PROTO_FS_TRUNCATED));
	CHECK_INT(r.matches[9999].line, 2);
	printf("# grep over 10000 files: %.0f ms\n",
	       (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	res_free(&r);
	/* the default cap: 10 000 reached is truncated */
	CHECK_INT(grep(&c, root, "needle", PROTO_FS_RECURSIVE, NULL, NULL, 10000, 4096, &r), 0);
	CHECK_INT(r.nmatches, 10000);
	CHECK(r.flags & PROTO_FS_TRUNCATED);
	res_free(&r);
	char *only[] = { "d07/f01?.txt", NULL };
	CHECK_INT(grep(&c, root, "needle", PROTO_FS_RECURSIVE, only, NULL, 0, 0, &r), 0);
	CHECK_INT(r.nmatches, 10);
	res_free(&r);
	client_stop(&c);
	cleanup();
}

TEST(sed_regex_literal_and_atomic_rewrite)
{
	CHECK(tmpdir() != NULL);
	put(at("a.txt"), "foo=1 foo=2\nbar=3\nno newline foo=4");
	chmod(at("a.txt"), 0640);
	CHECK_INT(chown(at("a.txt"), 1234, 5678), 0);
	struct stat before, after;
	CHECK_INT(stat(at("a.txt"), &before), 0);
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	struct res r;
	char *files[] = { at("a.txt"), at("missing.txt"), NULL };
	CHECK_INT(sed(&c, files, NULL, "(?<k>\\w+)=(\\d)$", "${2}=$k$$", PROTO_FS_REGEX, NULL, &r), 0);
	CHECK(r.done);
	CHECK_INT(r.count, 3); /* `$` anchors at each line's end */
	CHECK_INT(r.nfiles, 2);
	CHECK_STR(r.files[0].path, at("a.txt"));
	CHECK_INT(r.files[0].replacements, 3);
	CHECK_INT(r.files[0].errnum, 0);
	CHECK_INT(r.files[1].errnum, ENOENT);
	CHECK(strstr(r.files[1].error, "missing.txt") != NULL);
	res_free(&r);
	CHECK_STR(slurp(at("a.txt")), "foo=1 2=foo$\n3=bar$\nno newline 4=foo$");
	CHECK_INT(stat(at("a.txt"), &after), 0);
	CHECK_INT(after.st_mode & 07777, 0640);
	CHECK_INT(after.st_uid, 1234);
	CHECK_INT(after.st_gid, 5678);
	CHECK(after.st_ino != before.st_ino); /* replaced by rename */
	/* first_only per line; literal keeps '$' verbatim */
	put(at("b.txt"), "a.a.a\na.a\n");
	char *b[] = { at("b.txt"), NULL };
	CHECK_INT(sed(&c, b, NULL, ".", "$1", PROTO_FS_FIRST_ONLY, NULL, &r), 0);
	CHECK_INT(r.count, 2);
	res_free(&r);
	CHECK_STR(slurp(at("b.txt")), "a$1a.a\na$1a\n");
	/* literal, ignore case: Unicode folding */
	put(at("c.txt"), "\xc3\x89t\xc3\xa9 \xc3\xa9T\xc3\x89\n");
	char *cf[] = { at("c.txt"), NULL };
	CHECK_INT(sed(&c, cf, NULL, "\xc3\xa9t\xc3\xa9", "x", PROTO_FS_IGNORE_CASE, NULL, &r), 0);
	CHECK_INT(r.count, 2);
	res_free(&r);
	CHECK_STR(slurp(at("c.txt")), "x x\n");
	/* an empty regex matches everywhere, an empty literal is refused */
	put(at("d.txt"), "ab\n");
	char *df[] = { at("d.txt"), NULL };
	CHECK_INT(sed(&c, df, NULL, "", "-", PROTO_FS_REGEX, NULL, &r), 0);
	CHECK_INT(r.count, 3);
	res_free(&r);
	CHECK_STR(slurp(at("d.txt")), "-a-b-\n");
	CHECK_INT(sed(&c, df, NULL, "", "-", 0, NULL, &r), 0);
	CHECK_INT(r.errnum, PROTO_FS_EINVALID);
	CHECK(strstr(r.msg, "pattern is empty") != NULL);
	/* a file that is not UTF-8 fails alone and is left as it was */
	put(at("bin.txt"), "foo \xff\n");
	char *bf[] = { at("bin.txt"), at("d.txt"), NULL };
	CHECK_INT(sed(&c, bf, NULL, "a", "A", 0, NULL, &r), 0);
	CHECK_INT(r.nfiles, 2);
	CHECK_INT(r.files[0].errnum, EILSEQ);
	CHECK_INT(r.files[1].replacements, 1);
	CHECK_INT(r.count, 1);
	res_free(&r);
	CHECK_STR(slurp(at("bin.txt")), "foo \xff\n");
	CHECK_INT(sed(&c, b, NULL, "(", "x", PROTO_FS_REGEX, NULL, &r), 0);
	CHECK_INT(r.errnum, PROTO_FS_EREGEX);
	client_stop(&c);
	cleanup();
}

TEST(sed_path_form_walks_with_globs)
{
	CHECK(tmpdir() != NULL);
	mkdir(at("w"), 0755);
	mkdir(at("w/sub"), 0755);
	put(at("w/x.py"), "old\n");
	put(at("w/sub/y.py"), "old old\n");
	put(at("w/z.txt"), "old\n");
	CHECK_INT(symlink(at("w"), at("wl")), 0);
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	struct res r;
	char *py[] = { "*.py", NULL };
	/* a symlinked root is resolved; results are named under the path given */
	CHECK_INT(sed(&c, NULL, at("wl"), "old", "new", PROTO_FS_RECURSIVE, py, &r), 0);
	CHECK(r.done);
	CHECK_INT(r.count, 3);
	CHECK_INT(r.nfiles, 2);
	CHECK(strncmp(r.files[0].path, at("wl/"), strlen(at("wl/"))) == 0);
	res_free(&r);
	CHECK_STR(slurp(at("w/sub/y.py")), "new new\n");
	CHECK_STR(slurp(at("w/z.txt")), "old\n");
	struct stat st;
	CHECK_INT(lstat(at("wl"), &st), 0);
	CHECK(S_ISLNK(st.st_mode));
	CHECK_INT(sed(&c, NULL, at("w"), "old", "new", 0, NULL, &r), 0);
	CHECK_INT(r.errnum, PROTO_FS_EINVALID);
	CHECK_INT(sed(&c, NULL, at("nope"), "old", "new", PROTO_FS_RECURSIVE, NULL, &r), 0);
	CHECK_INT(r.errnum, ENOENT);
	client_stop(&c);
	cleanup();
}

TEST(read_small_file_and_errors)
{
	CHECK(tmpdir() != NULL);
	put(at("f"), "print(1)\n");
	chmod(at("f"), 0604);
	CHECK_INT(mkfifo(at("fifo"), 0644), 0);
	CHECK_INT(symlink(at("f"), at("link")), 0);
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	struct res r;
	CHECK_INT(path_op(&c, PROTO_FS_READ, at("link"), &r), 0); /* follows the link */
	CHECK(r.meta);
	CHECK_INT(r.m.size, 9);
	CHECK_INT(r.m.mode, 0604);
	CHECK_INT(r.exit_code, 0);
	CHECK_INT(r.len, 9);
	CHECK(memcmp(r.data, "print(1)\n", 9) == 0);
	res_free(&r);
	CHECK_INT(path_op(&c, PROTO_FS_READ, root, &r), 0);
	CHECK_INT(r.errnum, EISDIR);
	CHECK(strstr(r.msg, "is a directory: ") != NULL);
	CHECK_INT(path_op(&c, PROTO_FS_READ, at("fifo"), &r), 0);
	CHECK_INT(r.errnum, PROTO_FS_EWRONGTYPE);
	CHECK_INT(path_op(&c, PROTO_FS_READ, at("nope"), &r), 0);
	CHECK_INT(r.errnum, ENOENT);
	put(at("empty"), "");
	CHECK_INT(path_op(&c, PROTO_FS_READ, at("empty"), &r), 0);
	CHECK(r.meta && r.m.size == 0 && r.len == 0 && r.exit_code == 0);
	res_free(&r);
	client_stop(&c);
	cleanup();
}

static uint64_t fnv(const uint8_t *p, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

TEST(large_read_respects_the_credit_window)
{
	CHECK(tmpdir() != NULL);
	const size_t total = 64u << 20;
	int fd = open(at("big"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	static uint8_t block[1 << 20];
	uint64_t want = 0xcbf29ce484222325ull;
	for (size_t off = 0; off < total; off += sizeof(block)) {
		for (size_t i = 0; i < sizeof(block); i += 8)
			memcpy(block + i, &off, sizeof(off)), block[i] ^= (uint8_t)i;
		want = fnv(block, sizeof(block), want);
		CHECK_INT(write(fd, block, sizeof(block)), (long)sizeof(block));
	}
	close(fd);
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	uint32_t stream = next_stream++;
	struct proto_msg req = { .stream = stream, .type = PROTO_FS_READ, .u.fs_path.path = at("big") };
	CHECK_INT(client_send(&c, &req), 0);
	/* Without credit the guest stops at the window. */
	size_t got = 0;
	uint64_t h = 0xcbf29ce484222325ull;
	struct proto_msg m;
	while (client_next(&c, &m, 1000) == 1) {
		if (m.type == PROTO_STDOUT) {
			got += m.u.data.len;
			h = fnv(m.u.data.data, m.u.data.len, h);
		}
		proto_msg_free(&m);
	}
	CHECK(got > 0 && got <= PROTO_WINDOW);
	struct proto_msg cr = { .stream = stream, .type = PROTO_CREDIT, .u.credit = (uint32_t)got };
	CHECK_INT(client_send(&c, &cr), 0);
	/* Then everything flows as it is credited. */
	int code = -1;
	while (code < 0 && client_next(&c, &m, T) == 1) {
		if (m.stream == stream && m.type == PROTO_STDOUT) {
			got += m.u.data.len;
			h = fnv(m.u.data.data, m.u.data.len, h);
			cr.u.credit = (uint32_t)m.u.data.len;
			client_send(&c, &cr);
		} else if (m.stream == stream && (m.type == PROTO_EXIT || m.type == PROTO_FS_ERROR)) {
			code = m.type == PROTO_EXIT ? m.u.code : 1000;
		}
		proto_msg_free(&m);
	}
	CHECK_INT(code, 0);
	CHECK_INT(got, total);
	CHECK(h == want);
	client_stop(&c);
	cleanup();
}

TEST(kill_cancels_and_bad_requests_fail_only_their_stream)
{
	CHECK(tmpdir() != NULL);
	int fd = open(at("big"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	CHECK_INT(ftruncate(fd, 8 << 20), 0);
	close(fd);
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	uint32_t stream = next_stream++;
	struct proto_msg req = { .stream = stream, .type = PROTO_FS_READ, .u.fs_path.path = at("big") };
	CHECK_INT(client_send(&c, &req), 0);
	struct proto_msg kill = { .stream = stream, .type = PROTO_KILL, .u.signal = 9 };
	CHECK_INT(client_send(&c, &kill), 0);
	struct proto_msg m;
	int errnum = 0;
	while (errnum == 0 && client_next(&c, &m, T) == 1) {
		if (m.stream == stream && m.type == PROTO_FS_ERROR)
			errnum = m.u.fs_error.errnum;
		proto_msg_free(&m);
	}
	CHECK_INT(errnum, ECANCELED);
	/* an fs request the decoder refuses: ERROR on that stream only */
	struct proto_wbuf p;
	proto_wbuf_init(&p);
	proto_put_str(&p, "/x");
	proto_put_u32(&p, PROTO_FS_OVERWRITE); /* rm takes no such flag */
	uint8_t hdr[PROTO_HEADER_SIZE];
	struct proto_header h = { (uint32_t)p.len, 77, PROTO_FS_RM };
	proto_header_encode(&h, hdr);
	CHECK_INT(client_send_raw(&c, hdr, sizeof(hdr)), 0);
	CHECK_INT(client_send_raw(&c, p.data, p.len), 0);
	proto_wbuf_free(&p);
	struct res r;
	memset(&r, 0, sizeof(r));
	int ended = 0;
	while (!ended && client_next(&c, &m, T) == 1) {
		ended = collect(&c, 77, &r, &m, 0);
		proto_msg_free(&m);
	}
	CHECK(r.error != NULL && strstr(r.error, "flags") != NULL);
	res_free(&r);
	/* still serving */
	CHECK_INT(path_op(&c, PROTO_FS_STAT, root, &r), 0);
	CHECK(r.done);
	res_free(&r);
	client_stop(&c);
	cleanup();
}

TEST(hostile_paths)
{
	CHECK(tmpdir() != NULL);
	struct client c;
	CHECK_INT(client_start(&c, NULL), 0);
	struct res r;
	/* ".." is resolved by the guest's own root: /tmp/x/../x is /tmp/x */
	put(at("f"), "dots\n");
	char dots[256];
	snprintf(dots, sizeof(dots), "%s/../%s/f", root, strrchr(root, '/') + 1);
	CHECK_INT(path_op(&c, PROTO_FS_READ, dots, &r), 0);
	CHECK_INT(r.len, 5);
	res_free(&r);
	/* a 300-byte component */
	char longname[320];
	memset(longname, 'n', 300);
	longname[300] = '\0';
	CHECK_INT(path_op(&c, PROTO_FS_STAT, at(longname), &r), 0);
	CHECK_INT(r.errnum, ENAMETOOLONG);
	CHECK(strstr(r.msg, "name too long") != NULL);
	/* a tree deeper than the walk allows: a clear error, no crash */
	char rel[1200] = "deep";
	CHECK_INT(mkdir(at(rel), 0755), 0);
	for (int i = 0; i < 260; i++) {
		strcat(rel, "/d");
		CHECK_INT(mkdir(at(rel), 0755), 0);
	}
	put(at("deep/f"), "x\n");
	CHECK_INT(grep(&c, at("deep"), "x", PROTO_FS_RECURSIVE, NULL, NULL, 0, 0, &r), 0);
	CHECK_INT(r.errnum, ELOOP);
	CHECK(strstr(r.msg, "deeper than") != NULL);
	struct proto_msg m = { .stream = next_stream++, .type = PROTO_FS_RM };
	m.u.fs_rm = (struct proto_fs_rm){ at("deep"), PROTO_FS_RECURSIVE };
	CHECK_INT(call(&c, &m, &r), 0);
	CHECK_INT(r.errnum, ELOOP);
	client_stop(&c);
	cleanup();
}
