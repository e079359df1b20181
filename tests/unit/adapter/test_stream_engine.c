/* The byte-channel port over the engine client (vm_backend/stream_engine.c):
 * the ref checks it answers S001 for, and S218 for an engine that is not
 * there.  The channel I/O itself is tests/unit/engine/test_channel.c's. */
#include <string.h>

#include "adapter/vm_backend/stream_engine.h"
#include "common/scodes.h"
#include "engine/engine.h"
#include "harness.h"

/* An engine client never started, pointed at a port nothing listens on. */
static struct engine *nowhere(void)
{
	struct engine_options o = { .url = "ws://127.0.0.1:1", .worker_name = "unit" };
	sbx_error_t err = NULL;
	struct engine *e = engine_new(&o, &err);
	sbx_error_free(&err);
	return e;
}

static json_t *ref(const char *dir)
{
	return json_pack("{s:s, s:s, s:s}", "channel_id", "c1", "access_key", "k", "direction", dir);
}

TEST(writer_open_takes_only_writer_refs)
{
	struct engine *e = nowhere();
	CHECK(e != NULL);
	sbx_error_t err = NULL;
	json_t *r = ref("read");
	CHECK(stream_engine_ops.writer_open(e, r, &err) == NULL);
	json_decref(r);
	CHECK_STR(err->scode, SBX_S_INVALID_REQUEST);
	CHECK(strstr(sbx_error_msg(err), "`direction` must be \"write\"") != NULL);
	sbx_error_free(&err);

	r = json_pack("{s:s, s:s}", "channel_id", "c1", "direction", "write");
	CHECK(stream_engine_ops.writer_open(e, r, &err) == NULL);
	json_decref(r);
	CHECK_STR(err->scode, SBX_S_INVALID_REQUEST);
	CHECK(strstr(sbx_error_msg(err), "`access_key`") != NULL);
	sbx_error_free(&err);

	/* A writer ref gets as far as the engine, which is not there. */
	r = ref("write");
	CHECK(stream_engine_ops.writer_open(e, r, &err) == NULL);
	json_decref(r);
	CHECK_STR(err->scode, SBX_S_FS_CHANNEL);
	CHECK(strstr(sbx_error_msg(err), "write end of channel c1") != NULL);
	sbx_error_free(&err);
	engine_free(e);
}

TEST(reader_open_takes_only_reader_refs)
{
	struct engine *e = nowhere();
	CHECK(e != NULL);
	sbx_error_t err = NULL;
	json_t *r = ref("write");
	CHECK(stream_engine_ops.reader_open(e, r, -1, &err) == NULL);
	json_decref(r);
	CHECK_STR(err->scode, SBX_S_INVALID_REQUEST);
	CHECK(strstr(sbx_error_msg(err), "`direction` must be \"read\"") != NULL);
	sbx_error_free(&err);

	r = ref("read");
	CHECK(stream_engine_ops.reader_open(e, r, -1, &err) == NULL);
	json_decref(r);
	CHECK_STR(err->scode, SBX_S_FS_CHANNEL);
	sbx_error_free(&err);
	engine_free(e);
}
