/* fs request and result messages: every one round-trips, every malformed
 * payload is rejected, batches cannot ask for more than their payload. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "proto/proto_msg.h"

static int roundtrip(const struct proto_msg *m, struct proto_msg *out)
{
	struct proto_wbuf f;
	sbx_error_t err = NULL;
	proto_wbuf_init(&f);
	int rc = proto_msg_encode(&f, m, &err);
	struct proto_header h;
	if (rc == 0)
		rc = proto_header_decode(f.data, &h, &err);
	if (rc == 0)
		rc = proto_msg_decode(&h, f.data + PROTO_HEADER_SIZE, out, &err);
	sbx_error_free(&err);
	proto_wbuf_free(&f);
	return rc;
}

static int encodes(const struct proto_msg *m)
{
	struct proto_wbuf f;
	sbx_error_t err = NULL;
	proto_wbuf_init(&f);
	int rc = proto_msg_encode(&f, m, &err);
	sbx_error_free(&err);
	proto_wbuf_free(&f);
	return rc;
}

static char last_err[512];
static int decode_raw(uint8_t type, uint32_t stream, const struct proto_wbuf *p)
{
	struct proto_header h = { .length = (uint32_t)p->len, .stream = stream, .type = type };
	struct proto_msg m;
	sbx_error_t err = NULL;
	int rc = proto_msg_decode(&h, p->data, &m, &err);
	snprintf(last_err, sizeof(last_err), "%s", sbx_error_msg(err));
	sbx_error_free(&err);
	if (rc == 0)
		proto_msg_free(&m);
	return rc;
}

TEST(path_requests_roundtrip)
{
	uint8_t types[] = { PROTO_FS_LS, PROTO_FS_STAT, PROTO_FS_READ };
	for (size_t i = 0; i < sizeof(types); i++) {
		struct proto_msg m = { .stream = 7, .type = types[i], .u.fs_path.path = "/tmp/a b" }, d;
		CHECK_INT(roundtrip(&m, &d), 0);
		CHECK_INT(d.type, types[i]);
		CHECK_STR(d.u.fs_path.path, "/tmp/a b");
		proto_msg_free(&d);
		m.stream = 0; /* fs types never travel on stream 0 */
		CHECK_INT(roundtrip(&m, &d), -1);
	}
	CHECK_STR(proto_type_name(PROTO_FS_GREP), "FS_GREP");
	CHECK_STR(proto_type_name(PROTO_FS_DONE), "FS_DONE");
	CHECK_STR(proto_type_name(0x5f), "?");
}

TEST(mkdir_rm_chmod_mv_roundtrip)
{
	struct proto_msg m = { .stream = 1, .type = PROTO_FS_MKDIR }, d;
	m.u.fs_mkdir = (struct proto_fs_mkdir){ "/x/y", 0700, PROTO_FS_PARENTS };
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_STR(d.u.fs_mkdir.path, "/x/y");
	CHECK_INT(d.u.fs_mkdir.mode, 0700);
	CHECK_INT(d.u.fs_mkdir.flags, PROTO_FS_PARENTS);
	proto_msg_free(&d);

	m = (struct proto_msg){ .stream = 2, .type = PROTO_FS_RM };
	m.u.fs_rm = (struct proto_fs_rm){ "/x", PROTO_FS_RECURSIVE };
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_INT(d.u.fs_rm.flags, PROTO_FS_RECURSIVE);
	proto_msg_free(&d);

	m = (struct proto_msg){ .stream = 3, .type = PROTO_FS_CHMOD };
	m.u.fs_chmod = (struct proto_fs_chmod){ "/x", 04755, PROTO_FS_RECURSIVE | PROTO_FS_SET_GID, 0, 1000 };
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_INT(d.u.fs_chmod.mode, 04755);
	CHECK_INT(d.u.fs_chmod.flags, PROTO_FS_RECURSIVE | PROTO_FS_SET_GID);
	CHECK_INT(d.u.fs_chmod.gid, 1000);
	proto_msg_free(&d);

	m = (struct proto_msg){ .stream = 4, .type = PROTO_FS_MV };
	m.u.fs_mv = (struct proto_fs_mv){ "/a", "/b", PROTO_FS_OVERWRITE };
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_STR(d.u.fs_mv.src, "/a");
	CHECK_STR(d.u.fs_mv.dst, "/b");
	CHECK_INT(d.u.fs_mv.flags, PROTO_FS_OVERWRITE);
	proto_msg_free(&d);
}

TEST(grep_and_sed_roundtrip)
{
	char *inc[] = { "*.py", "src/**", NULL }, *exc[] = { "node_modules/", NULL }, *none[] = { NULL };
	struct proto_msg m = { .stream = 5, .type = PROTO_FS_GREP }, d;
	m.u.fs_grep = (struct proto_fs_grep){ "/w", "fo+", PROTO_FS_RECURSIVE | PROTO_FS_IGNORE_CASE, inc, exc,
					      10000, 4096 };
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_STR(d.u.fs_grep.pattern, "fo+");
	CHECK_STR(d.u.fs_grep.include[1], "src/**");
	CHECK(d.u.fs_grep.include[2] == NULL);
	CHECK_STR(d.u.fs_grep.exclude[0], "node_modules/");
	CHECK(d.u.fs_grep.max_matches == 10000 && d.u.fs_grep.max_line_bytes == 4096);
	proto_msg_free(&d);
	m.u.fs_grep.pattern = ""; /* an empty regex is valid: it matches every line */
	CHECK_INT(roundtrip(&m, &d), 0);
	proto_msg_free(&d);

	char *files[] = { "/a.txt", "/b.txt", NULL };
	m = (struct proto_msg){ .stream = 6, .type = PROTO_FS_SED };
	m.u.fs_sed = (struct proto_fs_sed){ files, "", "(\\w+)", "<$1>", PROTO_FS_REGEX | PROTO_FS_FIRST_ONLY, none,
					    none };
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_STR(d.u.fs_sed.files[1], "/b.txt");
	CHECK_STR(d.u.fs_sed.path, "");
	CHECK_STR(d.u.fs_sed.replacement, "<$1>");
	CHECK_INT(d.u.fs_sed.flags, PROTO_FS_REGEX | PROTO_FS_FIRST_ONLY);
	proto_msg_free(&d);
	m.u.fs_sed.files = none;
	m.u.fs_sed.path = "/w";
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK(d.u.fs_sed.files[0] == NULL);
	proto_msg_free(&d);
	/* Exactly one of files / path. */
	m.u.fs_sed.files = files;
	CHECK_INT(roundtrip(&m, &d), -1);
	m.u.fs_sed.files = none;
	m.u.fs_sed.path = "";
	CHECK_INT(roundtrip(&m, &d), -1);
}

TEST(results_roundtrip)
{
	struct proto_fs_entry ents[] = { { "a", 0644, 0, 12, -5 }, { "d", 0755, PROTO_FS_ENTRY_DIR, 4096, 1755800000 },
					 { "l", 0777, PROTO_FS_ENTRY_SYMLINK, 3, 0 } };
	struct proto_msg m = { .stream = 9, .type = PROTO_FS_ENTRIES }, d;
	m.u.fs_batch.n = 3;
	m.u.fs_batch.v.entries = ents;
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_INT(d.u.fs_batch.n, 3);
	CHECK_STR(d.u.fs_batch.v.entries[1].name, "d");
	CHECK_INT(d.u.fs_batch.v.entries[1].flags, PROTO_FS_ENTRY_DIR);
	CHECK_INT(d.u.fs_batch.v.entries[0].mtime, -5); /* signed mtime survives */
	CHECK_INT(d.u.fs_batch.v.entries[2].mode, 0777);
	proto_msg_free(&d);

	struct proto_fs_match ms[] = { { "/w/a.py", 3, "x = 1" }, { "/w/b.py", 1, "" } };
	m = (struct proto_msg){ .stream = 9, .type = PROTO_FS_MATCHES };
	m.u.fs_batch.n = 2;
	m.u.fs_batch.v.matches = ms;
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_STR(d.u.fs_batch.v.matches[0].content, "x = 1");
	CHECK_INT(d.u.fs_batch.v.matches[0].line, 3);
	proto_msg_free(&d);

	struct proto_fs_sed_file fs[] = { { "/a", 4, 0, "" }, { "/b", 0, 2, "file not found: /b" } };
	m = (struct proto_msg){ .stream = 9, .type = PROTO_FS_SED_FILES };
	m.u.fs_batch.n = 2;
	m.u.fs_batch.v.files = fs;
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_INT(d.u.fs_batch.v.files[0].replacements, 4);
	CHECK_INT(d.u.fs_batch.v.files[1].errnum, 2);
	CHECK_STR(d.u.fs_batch.v.files[1].error, "file not found: /b");
	proto_msg_free(&d);

	m = (struct proto_msg){ .stream = 9, .type = PROTO_FS_META };
	m.u.fs_meta = (struct proto_fs_meta){ 1ull << 40, 0640, 1755800000 };
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK(d.u.fs_meta.size == 1ull << 40);
	CHECK_INT(d.u.fs_meta.mode, 0640);
	CHECK_INT(d.u.fs_meta.mtime, 1755800000);

	m = (struct proto_msg){ .stream = 9, .type = PROTO_FS_DONE };
	m.u.fs_done = (struct proto_fs_done){ 10000, PROTO_FS_TRUNCATED };
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_INT(d.u.fs_done.count, 10000);
	CHECK_INT(d.u.fs_done.flags, PROTO_FS_TRUNCATED);
}

TEST(encoder_refuses_what_decoder_refuses)
{
	static char longpath[PROTO_MAX_PATH + 2];
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	struct proto_msg m = { .stream = 1, .type = PROTO_FS_LS, .u.fs_path.path = longpath };
	CHECK_INT(encodes(&m), -1);
	m.u.fs_path.path = "";
	CHECK_INT(encodes(&m), -1);
	m.u.fs_path.path = NULL;
	CHECK_INT(encodes(&m), -1);

	m = (struct proto_msg){ .stream = 1, .type = PROTO_FS_ENTRIES };
	CHECK_INT(encodes(&m), -1); /* an empty batch */
	static char content[PROTO_FS_MAX_CONTENT + 1];
	memset(content, 'c', sizeof(content) - 1);
	struct proto_fs_match big = { "/a", 1, content };
	m = (struct proto_msg){ .stream = 1, .type = PROTO_FS_MATCHES };
	m.u.fs_batch.n = 1;
	m.u.fs_batch.v.matches = &big;
	CHECK_INT(encodes(&m), 0);
	content[PROTO_FS_MAX_CONTENT] = 'c';
	char *more = calloc(1, PROTO_FS_MAX_CONTENT + 2);
	CHECK(more != NULL);
	memset(more, 'c', PROTO_FS_MAX_CONTENT + 1);
	big.content = more;
	CHECK_INT(encodes(&m), -1);
	free(more);

	char *globs[PROTO_FS_MAX_GLOBS + 2];
	for (size_t i = 0; i < PROTO_FS_MAX_GLOBS + 1; i++)
		globs[i] = "*.c";
	globs[PROTO_FS_MAX_GLOBS + 1] = NULL;
	char *none[] = { NULL };
	m = (struct proto_msg){ .stream = 1, .type = PROTO_FS_GREP };
	m.u.fs_grep = (struct proto_fs_grep){ "/", "x", 0, globs, none, 0, 0 };
	CHECK_INT(encodes(&m), -1);
	globs[PROTO_FS_MAX_GLOBS] = NULL;
	CHECK_INT(encodes(&m), 0);
}

TEST(malformed_requests_are_rejected)
{
	struct proto_wbuf p;
	proto_wbuf_init(&p);
	/* mode out of range */
	proto_put_str(&p, "/x");
	proto_put_u32(&p, 010000);
	proto_put_u32(&p, 0);
	CHECK_INT(decode_raw(PROTO_FS_MKDIR, 1, &p), -1);
	CHECK(strstr(last_err, "out of range") != NULL);
	/* a flag the op does not take */
	p.len = 0;
	proto_put_str(&p, "/x");
	proto_put_u32(&p, PROTO_FS_OVERWRITE);
	CHECK_INT(decode_raw(PROTO_FS_RM, 1, &p), -1);
	CHECK(strstr(last_err, "unknown fs flags") != NULL);
	/* empty path */
	p.len = 0;
	proto_put_str(&p, "");
	CHECK_INT(decode_raw(PROTO_FS_STAT, 1, &p), -1);
	/* path with an embedded NUL */
	p.len = 0;
	proto_put_u32(&p, 3);
	proto_put_bytes(&p, "/\0x", 3);
	CHECK_INT(decode_raw(PROTO_FS_READ, 1, &p), -1);
	/* trailing bytes */
	p.len = 0;
	proto_put_str(&p, "/x");
	proto_put_u32(&p, 0);
	CHECK_INT(decode_raw(PROTO_FS_LS, 1, &p), -1);
	CHECK(strstr(last_err, "trailing") != NULL);
	/* too many globs */
	p.len = 0;
	proto_put_str(&p, "/");
	proto_put_str(&p, "x");
	proto_put_u32(&p, 0);
	proto_put_u32(&p, PROTO_FS_MAX_GLOBS + 1);
	for (size_t i = 0; i < PROTO_FS_MAX_GLOBS + 1; i++)
		proto_put_str(&p, "*");
	proto_put_u32(&p, 0);
	proto_put_u64(&p, 0);
	proto_put_u64(&p, 0);
	CHECK_INT(decode_raw(PROTO_FS_GREP, 1, &p), -1);
	CHECK(strstr(last_err, "more than") != NULL);
	/* undefined fs type in the reserved range */
	p.len = 0;
	CHECK_INT(decode_raw(0x5e, 1, &p), -1);
	CHECK(strstr(last_err, "unsupported") != NULL);
	proto_wbuf_free(&p);
}

TEST(batch_counts_are_checked_before_allocating)
{
	struct proto_wbuf p;
	proto_wbuf_init(&p);
	proto_put_u32(&p, PROTO_FS_MAX_BATCH); /* claims 4096 entries, holds one */
	proto_put_str(&p, "a");
	proto_put_u32(&p, 0644);
	proto_put_u32(&p, 0);
	proto_put_u64(&p, 1);
	proto_put_u64(&p, 1);
	CHECK_INT(decode_raw(PROTO_FS_ENTRIES, 1, &p), -1);
	CHECK(strstr(last_err, "batch") != NULL);
	p.len = 0;
	proto_put_u32(&p, 0);
	CHECK_INT(decode_raw(PROTO_FS_MATCHES, 1, &p), -1);
	/* second item truncated: the first one is freed (ASan checks) */
	p.len = 0;
	proto_put_u32(&p, 2);
	proto_put_str(&p, "/a");
	proto_put_u64(&p, 1);
	proto_put_str(&p, "hit");
	proto_put_str(&p, "/b");
	proto_put_u64(&p, 2);
	proto_put_u32(&p, 0);
	proto_put_u32(&p, 0);
	proto_put_u32(&p, 0);
	CHECK_INT(decode_raw(PROTO_FS_MATCHES, 1, &p), -1);
	/* line 0 */
	p.len = 0;
	proto_put_u32(&p, 1);
	proto_put_str(&p, "/a");
	proto_put_u64(&p, 0);
	proto_put_str(&p, "x");
	CHECK_INT(decode_raw(PROTO_FS_MATCHES, 1, &p), -1);
	/* sed file: success with an error text */
	p.len = 0;
	proto_put_u32(&p, 1);
	proto_put_str(&p, "/a");
	proto_put_u64(&p, 0);
	proto_put_i32(&p, 0);
	proto_put_str(&p, "oops");
	CHECK_INT(decode_raw(PROTO_FS_SED_FILES, 1, &p), -1);
	/* FS_DONE with an unknown flag */
	p.len = 0;
	proto_put_u64(&p, 1);
	proto_put_u32(&p, 0x80);
	CHECK_INT(decode_raw(PROTO_FS_DONE, 1, &p), -1);
	proto_wbuf_free(&p);
}
