/* The control socket's wire: requests checked field by field, lines and
 * frames bounded, and the adapter's error body turned into what an
 * operator reads. */
#include <jansson.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "control/control_proto.h"
#include "harness.h"

static int parse(const char *text, struct control_request *q, json_t **keep, char *msg, size_t len)
{
	*keep = json_loads(text, JSON_ALLOW_NUL, NULL);
	sbx_error_t err = NULL;
	int rc = control_request_parse(*keep, q, &err);
	snprintf(msg, len, "%s", err != NULL ? sbx_error_msg(err) : "");
	sbx_error_free(&err);
	return rc;
}

/* `text` is refused with a message holding `want`. */
static bool refused(const char *text, const char *want)
{
	struct control_request q;
	json_t *j;
	char msg[256];
	int rc = parse(text, &q, &j, msg, sizeof(msg));
	json_decref(j);
	if (rc == 0 || strstr(msg, want) == NULL) {
		fprintf(stderr, "# %s -> rc %d, message '%s'\n", text, rc, msg);
		return false;
	}
	return true;
}

TEST(requests_parse_with_their_fields)
{
	struct control_request q;
	json_t *j;
	char msg[256];
	CHECK_INT(parse("{\"op\":\"ps\"}", &q, &j, msg, sizeof(msg)), 0);
	CHECK_INT(q.op, CONTROL_PS);
	json_decref(j);
	CHECK_INT(parse("{\"op\":\"exec\",\"sandbox\":\"ab12\",\"argv\":[\"sh\",\"-c\",\"exit 3\"],\"timeout_ms\":500}", &q,
			&j, msg, sizeof(msg)),
		  0);
	CHECK_INT(q.op, CONTROL_EXEC);
	CHECK_STR(q.sandbox, "ab12");
	CHECK_INT(json_array_size(q.argv), 3);
	CHECK_INT(q.timeout_ms, 500);
	CHECK(!q.stdin_frames);
	json_decref(j);
	CHECK_INT(parse("{\"op\":\"exec\",\"sandbox\":\"ab12\",\"argv\":[\"cat\"],\"stdin\":true}", &q, &j, msg, sizeof(msg)), 0);
	CHECK(q.stdin_frames);
	json_decref(j);
	CHECK_INT(parse("{\"op\":\"processes\",\"sandbox\":\"cli-box\"}", &q, &j, msg, sizeof(msg)), 0);
	CHECK_INT(q.op, CONTROL_PROCESSES);
	CHECK_STR(q.sandbox, "cli-box");
	json_decref(j);
	CHECK_INT(parse("{\"op\":\"cp_in\",\"sandbox\":\"x\",\"path\":\"/a\",\"mode\":\"0755\"}", &q, &j, msg, sizeof(msg)), 0);
	CHECK_STR(q.path, "/a");
	CHECK_STR(q.mode, "0755");
	json_decref(j);
	CHECK_INT(parse("{\"op\":\"logs\",\"sandbox\":\"x\",\"follow\":true}", &q, &j, msg, sizeof(msg)), 0);
	CHECK(q.follow);
	json_decref(j);
	CHECK_INT(parse("{\"op\":\"snapshots\"}", &q, &j, msg, sizeof(msg)), 0);
	CHECK_INT(q.op, CONTROL_SNAPSHOTS);
	json_decref(j);
	CHECK_INT(parse("{\"op\":\"snapshot_rm\",\"snapshot\":\"9f81e813\"}", &q, &j, msg, sizeof(msg)), 0);
	CHECK_INT(q.op, CONTROL_SNAPSHOT_RM);
	CHECK_STR(q.snapshot, "9f81e813");
	json_decref(j);
}

TEST(bad_requests_are_refused_naming_the_field)
{
	CHECK(refused("[1]", "JSON object"));
	CHECK(refused("{}", "missing field `op`"));
	CHECK(refused("{\"op\":\"rm -rf\"}", "unknown op"));
	CHECK(refused("{\"op\":5}", "field `op`"));
	CHECK(refused("{\"op\":\"exec\",\"argv\":[\"true\"]}", "missing field `sandbox`"));
	CHECK(refused("{\"op\":\"exec\",\"sandbox\":\"\",\"argv\":[\"true\"]}", "field `sandbox`"));
	CHECK(refused("{\"op\":\"exec\",\"sandbox\":\"x\",\"argv\":[]}", "field `argv`"));
	CHECK(refused("{\"op\":\"exec\",\"sandbox\":\"x\",\"argv\":[\"a\",1]}", "argv[1]"));
	CHECK(refused("{\"op\":\"exec\",\"sandbox\":\"x\",\"argv\":[\"a\\u0000b\"]}", "argv[0]"));
	CHECK(refused("{\"op\":\"exec\",\"sandbox\":\"x\",\"argv\":[\"a\"],\"timeout_ms\":-1}", "timeout_ms"));
	CHECK(refused("{\"op\":\"cp_out\",\"sandbox\":\"x\"}", "missing field `path`"));
	CHECK(refused("{\"op\":\"stat\",\"sandbox\":\"x\",\"path\":\"/a\\u0000b\"}", "NUL"));
	CHECK(refused("{\"op\":\"logs\",\"sandbox\":\"x\",\"follow\":1}", "follow"));
	CHECK(refused("{\"op\":\"exec\",\"sandbox\":\"x\",\"argv\":[\"a\"],\"stdin\":\"aGkK\"}", "field `stdin`"));
	CHECK(refused("{\"op\":\"processes\"}", "missing field `sandbox`"));
	CHECK(refused("{\"op\":\"snapshot_rm\"}", "missing field `snapshot`"));
	CHECK(refused("{\"op\":\"snapshot_rm\",\"snapshot\":7}", "field `snapshot`"));
}

TEST(argv_is_bounded)
{
	json_t *argv = json_array();
	for (unsigned i = 0; i <= CONTROL_ARGV_MAX; i++)
		json_array_append_new(argv, json_string("a"));
	json_t *req = json_pack("{s:s, s:s, s:o}", "op", "exec", "sandbox", "x", "argv", argv);
	struct control_request q;
	sbx_error_t err = NULL;
	CHECK_INT(control_request_parse(req, &q, &err), -1);
	CHECK(strstr(sbx_error_msg(err), "more than") != NULL);
	sbx_error_free(&err);
	json_decref(req);
}

/* A socket pair whose other end got `data`, then was closed. */
static int fed(const void *data, size_t len)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return -1;
	if (write(sv[1], data, len) != (ssize_t)len)
		return -1;
	close(sv[1]);
	return sv[0];
}

TEST(shell_requests_and_sizes_are_bounded)
{
	struct control_request q;
	json_t *j;
	char msg[256];
	CHECK_INT(parse("{\"op\":\"shell\",\"sandbox\":\"x\",\"rows\":30,\"cols\":100,\"term\":\"vt100\"}", &q, &j, msg,
			sizeof(msg)),
		  0);
	CHECK_INT(q.op, CONTROL_SHELL);
	CHECK(q.argv == NULL);
	CHECK_INT(q.rows, 30);
	CHECK_INT(q.cols, 100);
	CHECK_STR(q.term, "vt100");
	json_decref(j);
	CHECK_INT(parse("{\"op\":\"shell\",\"sandbox\":\"x\",\"rows\":1,\"cols\":1000,\"argv\":[\"top\"]}", &q, &j, msg,
			sizeof(msg)),
		  0);
	CHECK_INT(json_array_size(q.argv), 1);
	json_decref(j);
	CHECK(refused("{\"op\":\"shell\",\"sandbox\":\"x\",\"cols\":80}", "`rows`"));
	CHECK(refused("{\"op\":\"shell\",\"sandbox\":\"x\",\"rows\":0,\"cols\":80}", "1 to 1000"));
	CHECK(refused("{\"op\":\"shell\",\"sandbox\":\"x\",\"rows\":24,\"cols\":1001}", "1 to 1000"));
	CHECK(refused("{\"op\":\"shell\",\"sandbox\":\"x\",\"rows\":24,\"cols\":80.5}", "`cols`"));
	CHECK(refused("{\"op\":\"shell\",\"sandbox\":\"x\",\"rows\":24,\"cols\":80,\"argv\":[]}", "field `argv`"));
	CHECK(refused("{\"op\":\"shell\",\"sandbox\":\"x\",\"rows\":24,\"cols\":80,\"term\":\"\"}", "field `term`"));
	char big[256];
	snprintf(big, sizeof(big), "{\"op\":\"shell\",\"sandbox\":\"x\",\"rows\":24,\"cols\":80,\"term\":\"%065d\"}", 0);
	CHECK(refused(big, "at most 64 bytes"));
	/* A resize message. */
	uint16_t r, c;
	sbx_error_t err = NULL;
	json_t *m = json_loads("{\"rows\":40,\"cols\":120}", 0, NULL);
	CHECK_INT(control_size_parse(m, &r, &c, &err), 0);
	CHECK_INT(r, 40);
	CHECK_INT(c, 120);
	json_decref(m);
	m = json_loads("{\"rows\":40,\"cols\":-1}", 0, NULL);
	CHECK_INT(control_size_parse(m, &r, &c, &err), -1);
	sbx_error_free(&err);
	json_decref(m);
}

TEST(lines_are_bounded_and_whole)
{
	const char *lines = "{\"op\":\"ps\"}\nsecond\npartial";
	int fd = fed(lines, strlen(lines));
	CHECK(fd >= 0);
	struct control_reader r;
	control_reader_init(&r, fd);
	char *line;
	sbx_error_t err = NULL;
	CHECK_INT(control_read_line(&r, 64, &line, &err), 1);
	CHECK_STR(line, "{\"op\":\"ps\"}");
	free(line);
	CHECK_INT(control_read_line(&r, 6, &line, &err), 1);
	CHECK_STR(line, "second");
	free(line);
	/* EOF inside a line is an error, not a short line. */
	CHECK_INT(control_read_line(&r, 64, &line, &err), -1);
	CHECK(line == NULL);
	sbx_error_free(&err);
	close(fd);

	size_t big = CONTROL_LINE_MAX + 10;
	char *text = malloc(big);
	CHECK(text != NULL);
	memset(text, 'a', big);
	fd = fed(text, big);
	free(text);
	control_reader_init(&r, fd);
	CHECK_INT(control_read_json(&r, &(json_t *){ NULL }, &err), -1);
	CHECK(strstr(sbx_error_msg(err), "longer than") != NULL);
	sbx_error_free(&err);
	close(fd);

	fd = fed("ab\0c\n", 5);
	control_reader_init(&r, fd);
	CHECK_INT(control_read_line(&r, 64, &line, &err), -1);
	CHECK(strstr(sbx_error_msg(err), "NUL") != NULL);
	sbx_error_free(&err);
	close(fd);

	fd = fed("", 0);
	control_reader_init(&r, fd);
	CHECK_INT(control_read_line(&r, 64, &line, &err), 0);
	close(fd);
}

TEST(frames_are_checked)
{
	sbx_error_t err = NULL;
	size_t len;
	int stream;
	json_t *m = json_loads("{\"data\":4}", 0, NULL);
	CHECK_INT(control_frame_parse(m, &len, &stream, &err), 1);
	CHECK_INT(len, 4);
	CHECK_INT(stream, 1);
	json_decref(m);
	m = json_loads("{\"data\":9,\"fd\":2}", 0, NULL);
	CHECK_INT(control_frame_parse(m, &len, &stream, &err), 1);
	CHECK_INT(len, 9);
	CHECK_INT(stream, 2);
	json_decref(m);
	m = json_loads("{\"end\":true}", 0, NULL);
	CHECK_INT(control_frame_parse(m, &len, &stream, &err), 0);
	json_decref(m);
	const char *bad[] = { "{\"data\":0}", "{\"data\":-1}", "{\"data\":1048577}", "{\"data\":\"4\"}",
			      "{\"data\":4,\"x\":1}", "{\"end\":false}", "{}", "{\"data\":4,\"fd\":3}",
			      "{\"data\":4,\"fd\":\"2\"}", "{\"fd\":1}" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m = json_loads(bad[i], 0, NULL);
		CHECK(m != NULL);
		CHECK_INT(control_frame_parse(m, &len, &stream, &err), -1);
		sbx_error_free(&err);
		json_decref(m);
	}
}

TEST(read_frame_gives_a_frame_then_the_end_and_refuses_a_peer_gone_first)
{
	int sv[2];
	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	sbx_error_t err = NULL;
	CHECK_INT(control_send_frame(sv[1], "abc", 3, &err), 0);
	CHECK_INT(control_send_end(sv[1], &err), 0);
	CHECK_INT(control_send_frame(sv[1], "z", 1, &err), 0);
	close(sv[1]);
	struct control_reader r;
	control_reader_init(&r, sv[0]);
	uint8_t *buf = malloc(CONTROL_FRAME_MAX);
	CHECK(buf != NULL);
	CHECK_INT(control_read_frame(&r, buf, &err), 3);
	CHECK(memcmp(buf, "abc", 3) == 0);
	CHECK_INT(control_read_frame(&r, buf, &err), 0);
	CHECK_INT(control_read_frame(&r, buf, &err), 1);
	CHECK_INT(control_read_frame(&r, buf, &err), -1);
	CHECK(strstr(sbx_error_msg(err), "closed before") != NULL);
	sbx_error_free(&err);
	free(buf);
	close(sv[0]);
}

TEST(frames_round_trip_over_a_socket)
{
	int sv[2];
	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	sbx_error_t err = NULL;
	CHECK_INT(control_send_frame(sv[1], "hello", 5, &err), 0);
	CHECK_INT(control_send_output(sv[1], 2, "err", 3, &err), 0);
	CHECK_INT(control_send_end(sv[1], &err), 0);
	CHECK_INT(control_send_ok(sv[1], json_pack("{s:i}", "n", 5), &err), 0);
	close(sv[1]);
	struct control_reader r;
	control_reader_init(&r, sv[0]);
	json_t *m;
	size_t len;
	int stream;
	char buf[8];
	CHECK_INT(control_read_json(&r, &m, &err), 1);
	CHECK_INT(control_frame_parse(m, &len, &stream, &err), 1);
	json_decref(m);
	CHECK_INT(control_read_exact(&r, buf, len, &err), 0);
	CHECK(memcmp(buf, "hello", 5) == 0);
	CHECK_INT(control_read_json(&r, &m, &err), 1);
	CHECK_INT(control_frame_parse(m, &len, &stream, &err), 1);
	CHECK_INT(stream, 2);
	json_decref(m);
	CHECK_INT(control_read_exact(&r, buf, len, &err), 0);
	CHECK(memcmp(buf, "err", 3) == 0);
	CHECK_INT(control_read_json(&r, &m, &err), 1);
	CHECK_INT(control_frame_parse(m, &len, &stream, &err), 0);
	json_decref(m);
	CHECK_INT(control_read_json(&r, &m, &err), 1);
	CHECK(json_is_true(json_object_get(m, "ok")));
	CHECK_INT(json_integer_value(json_object_get(json_object_get(m, "result"), "n")), 5);
	json_decref(m);
	/* A frame cut short by the peer is an error. */
	CHECK_INT(control_read_exact(&r, buf, 1, &err), -1);
	sbx_error_free(&err);
	close(sv[0]);
}

TEST(error_bodies_become_scode_and_message)
{
	json_t *body = json_pack("{s:s, s:s}", "code", "invocation_failed", "message",
				 "handler error: {\"type\":\"validation\",\"code\":\"S002\",\"message\":\"sandbox not found: x\"}");
	json_t *e = control_error_from_body(body);
	CHECK_STR(json_string_value(json_object_get(e, "code")), "S002");
	CHECK_STR(json_string_value(json_object_get(e, "message")), "sandbox not found: x");
	json_decref(e);
	json_decref(body);
	body = json_pack("{s:s, s:s}", "code", "invocation_failed", "message", "handler error: {not json");
	e = control_error_from_body(body);
	CHECK_STR(json_string_value(json_object_get(e, "code")), "invocation_failed");
	json_decref(e);
	json_decref(body);
	e = control_error_from_body(NULL);
	CHECK_STR(json_string_value(json_object_get(e, "message")), "failed");
	json_decref(e);
}
