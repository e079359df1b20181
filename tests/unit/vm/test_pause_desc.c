/* A paused VM's description (vm/pause_desc.h): every field survives a
 * write and a read (bytes of a partial frame and unread output too), and
 * hostile text is refused, each with its errno and nothing leaked
 * (ASan): not JSON, truncated, another format, a field of the wrong
 * type or out of range, huge strings, too many streams, a stream id
 * twice, output beyond the window, bad base64, an oversized text. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "harness.h"
#include "proto/proto.h"
#include "vm/pause_desc.h"
#include "vm/pause_dir.h"

static char *env[] = { "A=1", "PATH=/bin", NULL };
static char *net[] = { "--sandbox", "x", "--publish", "8080", NULL };
static uint8_t partial[] = { 1, 0, 0, 0, 5, 0, 0, 0, 'h' };
static uint8_t out1[] = "line 1\n";
static uint8_t out2[] = { 0, 255, 10 };

/* A description as a save fills it (strings borrowed: not freed). */
static void sample(struct pause_desc *d, struct pause_stream *s, struct pause_output *o, struct pause_kill *k)
{
	o[0] = (struct pause_output){ 1, out1, sizeof(out1) - 1 };
	o[1] = (struct pause_output){ 2, out2, sizeof(out2) };
	s[0] = (struct pause_stream){ .id = 7, .pid = 42, .stdin_open = true, .uncredited = 100, .stdin_unacked = 3,
				      .out = o, .n_out = 2 };
	s[1] = (struct pause_stream){ .id = 9, .pid = 43, .pty = true, .ended = true, .code = 137 };
	k[0] = (struct pause_kill){ 11, 9 };
	*d = (struct pause_desc){
		.format = PAUSE_DESC_FORMAT, .proto = PROTO_VERSION,
		.qemu = { "/usr/bin/qemu", 123, 456789 }, .kernel = { "/k", 1, -2 }, .boot = { "/b", 3, 4 },
		.image_store = true, .image = { "/store/img.erofs", 5, 6 },
		.accel = 2, .threads_per_core = 1, .cpus = 2, .memory_mib = 256, .tcg_cache_mib = 64,
		.scratch_bytes = 1ull << 33, .memory_bytes = 256ull << 20, .jail_memory_mib = 600, .nofile = 1024,
		.pids_max = 100, .hostname = "box", .user = "1000:1000", .env = env, .net_args = net, .n_publish = 1,
		.ram_backend = true, .snap_key = "abc", .template_vm = true, .pauses = 2,
		.net_activity_kept = 1700000000000, .publish_kept = { 5, 6 },
		.chan = { .next_id = 12, .partial = partial, .partial_len = sizeof(partial), .streams = s,
			  .n_streams = 2, .kills = k, .n_kills = 1 },
	};
}

static char *sample_text(void)
{
	struct pause_desc d;
	struct pause_stream s[2];
	struct pause_output o[2];
	struct pause_kill k[1];
	sample(&d, s, o, k);
	sbx_error_t err = NULL;
	char *text = pause_desc_format(&d, &err);
	sbx_error_free(&err);
	return text;
}

TEST(a_description_survives_its_write_and_read)
{
	char *text = sample_text();
	CHECK(text != NULL);
	struct pause_desc d;
	sbx_error_t err = NULL;
	int rc = pause_desc_parse(text, strlen(text), &d, &err);
	free(text);
	CHECK_INT(rc, 0);
	CHECK_STR(d.qemu.path, "/usr/bin/qemu");
	CHECK(d.qemu.size == 123 && d.qemu.mtime_ns == 456789 && d.kernel.mtime_ns == -2);
	CHECK(!d.image_linked && d.image_store);
	CHECK_STR(d.image.path, "/store/img.erofs");
	CHECK(d.accel == 2 && d.cpus == 2 && d.memory_mib == 256 && d.tcg_cache_mib == 64);
	CHECK(d.scratch_bytes == 1ull << 33 && d.jail_memory_mib == 600 && d.nofile == 1024 && d.pids_max == 100);
	CHECK_STR(d.hostname, "box");
	CHECK_STR(d.user, "1000:1000");
	CHECK_STR(d.env[1], "PATH=/bin");
	CHECK(d.env[2] == NULL);
	CHECK_STR(d.net_args[3], "8080");
	CHECK(d.n_publish == 1 && d.ram_backend && !d.ram_shared && d.template_vm && d.pauses == 2);
	CHECK_STR(d.snap_key, "abc");
	CHECK(d.net_activity_kept == 1700000000000 && d.publish_kept[0] == 5 && d.publish_kept[1] == 6);
	CHECK_INT(d.chan.next_id, 12);
	CHECK(d.chan.partial_len == sizeof(partial) && memcmp(d.chan.partial, partial, sizeof(partial)) == 0);
	CHECK_INT(d.chan.n_streams, 2);
	struct pause_stream *s = &d.chan.streams[0];
	CHECK(s->id == 7 && s->pid == 42 && s->stdin_open && !s->ended && s->uncredited == 100 &&
	      s->stdin_unacked == 3);
	CHECK_INT(s->n_out, 2);
	CHECK(s->out[0].fd == 1 && s->out[0].len == 7 && memcmp(s->out[0].data, out1, 7) == 0);
	CHECK(s->out[1].fd == 2 && s->out[1].len == 3 && memcmp(s->out[1].data, out2, 3) == 0);
	s = &d.chan.streams[1];
	CHECK(s->id == 9 && s->pty && s->ended && s->code == 137 && s->n_out == 0);
	CHECK(d.chan.n_kills == 1 && d.chan.kills[0].id == 11 && d.chan.kills[0].sig == 9);
	pause_desc_free(&d);
	/* No network: null, read back as none. */
	struct pause_desc e;
	struct pause_stream es[2];
	struct pause_output eo[2];
	struct pause_kill ek[1];
	sample(&e, es, eo, ek);
	e.net_args = NULL;
	e.image = (struct pause_file){ 0 };
	e.image_linked = true;
	text = pause_desc_format(&e, &err);
	CHECK(text != NULL);
	CHECK_INT(pause_desc_parse(text, strlen(text), &d, &err), 0);
	free(text);
	CHECK(d.net_args == NULL && d.image.path == NULL && d.image_linked);
	pause_desc_free(&d);
}

/* The sample with one edit made through jansson: its parse's errno. */
static int parse_edited(void (*edit)(json_t *), const char **why)
{
	char *text = sample_text();
	json_t *o = text != NULL ? json_loads(text, 0, NULL) : NULL;
	free(text);
	if (o == NULL)
		return -1;
	edit(o);
	char *edited = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	struct pause_desc d = { 0 };
	sbx_error_t err = NULL;
	int rc = edited != NULL ? pause_desc_parse(edited, strlen(edited), &d, &err) : 0;
	free(edited);
	int e = rc < 0 && err != NULL ? err->errnum : 0;
	static char msg[256];
	snprintf(msg, sizeof(msg), "%s", sbx_error_msg(err));
	*why = msg;
	sbx_error_free(&err);
	if (rc == 0)
		pause_desc_free(&d);
	/* Nothing left behind on failure: the struct is empty. */
	if (rc < 0 && (d.hostname != NULL || d.chan.streams != NULL || d.env != NULL))
		return -2;
	return e;
}

static json_t *stream0(json_t *o)
{
	return json_array_get(json_object_get(json_object_get(o, "channel"), "streams"), 0);
}

static void edit_format(json_t *o) { json_object_set_new(o, "format", json_integer(PAUSE_DESC_FORMAT + 1)); }
static void edit_no_format(json_t *o) { json_object_del(o, "format"); }
static void edit_cpus_type(json_t *o) { json_object_set_new(o, "cpus", json_string("2")); }
static void edit_cpus_zero(json_t *o) { json_object_set_new(o, "cpus", json_integer(0)); }
static void edit_memory_huge(json_t *o) { json_object_set_new(o, "memory_mib", json_integer(1ll << 40)); }
static void edit_negative(json_t *o) { json_object_set_new(o, "scratch_bytes", json_integer(-1)); }
static void edit_no_hostname(json_t *o) { json_object_del(o, "hostname"); }
static void edit_env_type(json_t *o) { json_array_append_new(json_object_get(o, "env"), json_integer(1)); }
static void edit_relative_qemu(json_t *o)
{
	json_object_set_new(json_object_get(o, "qemu"), "path", json_string("qemu"));
}

static void edit_huge_string(json_t *o)
{
	char *big = malloc(PAUSE_DESC_MAX_STRING + 2);
	memset(big, 'a', PAUSE_DESC_MAX_STRING + 1);
	big[PAUSE_DESC_MAX_STRING + 1] = '\0';
	json_object_set_new(o, "hostname", json_string(big));
	free(big);
}

static void edit_long_env(json_t *o)
{
	json_t *a = json_object_get(o, "env");
	for (unsigned i = 0; i <= PAUSE_DESC_MAX_LIST; i++)
		json_array_append_new(a, json_string("X=1"));
}

static void edit_many_streams(json_t *o)
{
	json_t *a = json_object_get(json_object_get(o, "channel"), "streams");
	for (unsigned i = 0; i <= PAUSE_DESC_MAX_STREAMS; i++)
		json_array_append(a, json_array_get(a, 1));
}

static void edit_twice(json_t *o)
{
	json_t *a = json_object_get(json_object_get(o, "channel"), "streams");
	json_array_append_new(a, json_deep_copy(json_array_get(a, 0)));
}

static void edit_id_zero(json_t *o) { json_object_set_new(stream0(o), "id", json_integer(0)); }
static void edit_fd(json_t *o)
{
	json_object_set_new(json_array_get(json_object_get(stream0(o), "output"), 0), "fd", json_integer(3));
}
static void edit_base64(json_t *o)
{
	json_object_set_new(json_object_get(o, "channel"), "partial", json_string("no base64!"));
}

static void edit_window(json_t *o)
{
	size_t n = PROTO_WINDOW + 3;
	char *b64 = malloc(n / 3 * 4 + 1);
	for (size_t i = 0; i < n / 3 * 4; i++)
		b64[i] = 'A';
	b64[n / 3 * 4] = '\0';
	json_object_set_new(json_array_get(json_object_get(stream0(o), "output"), 0), "data", json_string(b64));
	free(b64);
}

static void edit_kill_sig(json_t *o)
{
	json_t *k = json_array_get(json_object_get(json_object_get(o, "channel"), "kills"), 0);
	json_object_set_new(k, "sig", json_integer(65));
}

static void edit_code(json_t *o) { json_object_set_new(stream0(o), "code", json_integer(256)); }

TEST(damaged_descriptions_are_refused_with_their_errno)
{
	static const struct {
		void (*edit)(json_t *);
		int errnum;
	} cases[] = {
		{ edit_format, EPROTONOSUPPORT }, { edit_no_format, EINVAL },  { edit_cpus_type, EBADMSG },
		{ edit_cpus_zero, EBADMSG },      { edit_memory_huge, EBADMSG }, { edit_negative, EBADMSG },
		{ edit_no_hostname, EBADMSG },    { edit_env_type, EBADMSG },  { edit_relative_qemu, EBADMSG },
		{ edit_huge_string, EBADMSG },    { edit_long_env, EBADMSG },  { edit_many_streams, EBADMSG },
		{ edit_twice, EBADMSG },          { edit_id_zero, EBADMSG },   { edit_fd, EBADMSG },
		{ edit_base64, EBADMSG },         { edit_window, EBADMSG },    { edit_kill_sig, EBADMSG },
		{ edit_code, EBADMSG },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *why = "";
		int e = parse_edited(cases[i].edit, &why);
		if (e != cases[i].errnum) {
			printf("# case %zu: errno %d, expected %d (%s)\n", i, e, cases[i].errnum, why);
			CHECK_INT(e, cases[i].errnum);
		}
	}
}

TEST(text_that_is_no_description_is_refused)
{
	char *text = sample_text();
	CHECK(text != NULL);
	struct pause_desc d;
	sbx_error_t err = NULL;
	/* Cut anywhere: never a description. */
	size_t len = strlen(text);
	for (size_t cut = 0; cut < len; cut += len / 97 + 1) {
		if (pause_desc_parse(text, cut, &d, &err) == 0) {
			pause_desc_free(&d);
			free(text);
			CHECK(!"a truncated description parsed");
		}
		CHECK(err != NULL && err->errnum == EINVAL);
		sbx_error_free(&err);
	}
	free(text);
	CHECK_INT(pause_desc_parse("[1,2]", 5, &d, &err), -1);
	CHECK_INT(err->errnum, EINVAL);
	sbx_error_free(&err);
	CHECK_INT(pause_desc_parse("{\"format\":1,\"format\":1}", 24, &d, &err), -1);
	sbx_error_free(&err);
	/* Too large: refused before it is read as JSON. */
	size_t big = PAUSE_DESC_MAX_BYTES + 1;
	char *huge = malloc(big + 1);
	CHECK(huge != NULL);
	memset(huge, ' ', big);
	huge[big] = '\0';
	CHECK_INT(pause_desc_parse(huge, big, &d, &err), -1);
	free(huge);
	CHECK_INT(err->errnum, EBADMSG);
	sbx_error_free(&err);
}

static void put_file(const char *dir, const char *name, const char *text)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (f != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

static struct stat stat_of(const char *dir, const char *name)
{
	char path[1024];
	struct stat st = { 0 };
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	stat(path, &st);
	return st;
}

/* The --sandbox value of dir's description ("" without one). */
static char *label_of(const char *dir, char *buf, size_t len)
{
	buf[0] = '\0';
	char *text = pause_dir_read_text(dir, PAUSE_VM, PAUSE_DESC_MAX_BYTES);
	struct pause_desc d = { 0 };
	sbx_error_t err = NULL;
	if (text != NULL && pause_desc_parse(text, strlen(text), &d, &err) == 0) {
		for (size_t i = 0; d.net_args != NULL && d.net_args[i] != NULL && d.net_args[i + 1] != NULL; i++) {
			if (strcmp(d.net_args[i], "--sandbox") == 0)
				snprintf(buf, len, "%s", d.net_args[i + 1]);
		}
		pause_desc_free(&d);
	}
	sbx_error_free(&err);
	free(text);
	return buf;
}

/* A snapshot's branch (pause_dir_branch): the state shared (one inode),
 * the scratch disk a copy of its own, the description written again with
 * the network helper's sandbox named, 0700/0600; without the state,
 * nothing is left. */
TEST(a_branch_shares_the_state_copies_the_scratch_and_names_its_sandbox)
{
	char from[] = "/tmp/sbx-test-branch-XXXXXX";
	CHECK(mkdtemp(from) != NULL);
	char text_dir[256], to[256], to2[256], bad[256];
	snprintf(to, sizeof(to), "%s/to", from);
	snprintf(to2, sizeof(to2), "%s/to2", from);
	snprintf(bad, sizeof(bad), "%s/bad", from);
	snprintf(text_dir, sizeof(text_dir), "%s/from", from);
	CHECK(mkdir(text_dir, 0700) == 0);
	char *desc = sample_text();
	CHECK(desc != NULL);
	put_file(text_dir, PAUSE_VM, desc);
	free(desc);
	put_file(text_dir, PAUSE_STATE, "guest memory");
	put_file(text_dir, PAUSE_SCRATCH, "written blocks");
	put_file(text_dir, PAUSE_SANDBOX, "{}");
	sbx_error_t err = NULL;
	CHECK_INT(pause_dir_branch(text_dir, to, "sb-new", &err), 0);
	CHECK(err == NULL);
	CHECK(stat_of(to, PAUSE_STATE).st_ino == stat_of(text_dir, PAUSE_STATE).st_ino);
	CHECK(stat_of(to, PAUSE_SANDBOX).st_ino == stat_of(text_dir, PAUSE_SANDBOX).st_ino);
	CHECK(stat_of(to, PAUSE_SCRATCH).st_ino != stat_of(text_dir, PAUSE_SCRATCH).st_ino);
	char *copy = pause_dir_read_text(to, PAUSE_SCRATCH, 64);
	CHECK(copy != NULL && strcmp(copy, "written blocks") == 0);
	free(copy);
	CHECK_INT(stat_of(to, PAUSE_VM).st_mode & 0777, 0600);
	CHECK_INT(stat_of(to, ".").st_mode & 0777, 0700);
	char buf[64];
	CHECK_STR(label_of(to, buf, sizeof(buf)), "sb-new");
	CHECK_STR(label_of(text_dir, buf, sizeof(buf)), "x");
	CHECK_INT(pause_dir_branch(text_dir, to2, NULL, &err), 0);
	CHECK_STR(label_of(to2, buf, sizeof(buf)), "x");
	/* No state: refused, nothing made. */
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", text_dir, PAUSE_STATE);
	unlink(path);
	CHECK_INT(pause_dir_branch(text_dir, bad, "y", &err), -1);
	CHECK(err != NULL);
	sbx_error_free(&err);
	CHECK(access(bad, F_OK) < 0);
	pause_dir_remove(to);
	pause_dir_remove(to2);
	pause_dir_remove(text_dir);
	rmdir(from);
}
