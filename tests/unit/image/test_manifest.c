#include "harness.h"

#include <stdio.h>

#include "image/digest.h"
#include "image/oci_manifest.h"

#define H1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define H2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"

static int decode(const char *json, const char *ct, struct sbx_manifest *m, char *msg)
{
	sbx_error_t err = NULL;
	int rc = sbx_manifest_decode(json, strlen(json), ct, m, &err);
	snprintf(msg, 256, "%s", sbx_error_msg(err));
	sbx_error_free(&err);
	return rc;
}

TEST(decodes_oci_manifest)
{
	struct sbx_manifest m;
	char msg[256];
	const char *j = "{\"schemaVersion\":2,\"mediaType\":\"" SBX_MT_OCI_MANIFEST "\","
			"\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"" H1
			"\",\"size\":7},"
			"\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+zstd\",\"digest\":\"" H2
			"\",\"size\":99}]}";
	CHECK(decode(j, NULL, &m, msg) == 0);
	CHECK_INT(m.kind, SBX_MANIFEST_IMAGE);
	CHECK_STR(m.config.digest, H1);
	CHECK_INT(m.n_entries, 1);
	CHECK_INT(m.entries[0].size, 99);
	CHECK(sbx_layer_media_type_ok(m.entries[0].media_type));
	sbx_manifest_free(&m);
}

TEST(decodes_docker_list_and_picks_platform)
{
	struct sbx_manifest m;
	char msg[256];
	const char *j = "{\"schemaVersion\":2,\"manifests\":["
			"{\"mediaType\":\"" SBX_MT_DOCKER_MANIFEST "\",\"digest\":\"" H1
			"\",\"size\":1,\"platform\":{\"os\":\"linux\",\"architecture\":\"arm64\",\"variant\":\"v8\"}},"
			"{\"mediaType\":\"" SBX_MT_DOCKER_MANIFEST "\",\"digest\":\"" H2
			"\",\"size\":2,\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"}}]}";
	CHECK(decode(j, SBX_MT_DOCKER_LIST "; charset=utf-8", &m, msg) == 0);
	CHECK_INT(m.kind, SBX_MANIFEST_INDEX);
	sbx_error_t err = NULL;
	CHECK_INT(sbx_manifest_pick_platform(&m, "amd64", &err), 1);
	CHECK_INT(sbx_manifest_pick_platform(&m, "arm64", &err), 0);
	CHECK(sbx_manifest_pick_platform(&m, "riscv64", &err) < 0);
	CHECK(strstr(sbx_error_msg(err), "no linux/riscv64 manifest") != NULL);
	CHECK(strstr(sbx_error_msg(err), "linux/arm64/v8, linux/amd64") != NULL);
	sbx_error_free(&err);
	sbx_manifest_free(&m);
}

TEST(refuses_bad_documents)
{
	struct sbx_manifest m;
	char msg[256];
	static const char *const bad[] = {
		"",
		"[]",
		"{\"schemaVersion\":1}",
		"{\"schemaVersion\":2,\"mediaType\":\"text/plain\"}",
		"{\"schemaVersion\":2,\"config\":{\"digest\":\"" H1 "\",\"size\":1}}",
		"{\"schemaVersion\":2,\"config\":{\"digest\":\"sha256:12\",\"size\":1},\"layers\":[]}",
		"{\"schemaVersion\":2,\"config\":{\"digest\":\"" H1 "\",\"size\":-1},\"layers\":[]}",
		"{\"schemaVersion\":2,\"config\":{\"digest\":\"" H1 "\",\"size\":1},\"layers\":[1]}",
		"{\"schemaVersion\":2,\"schemaVersion\":2}",
		"{\"schemaVersion\":2,\"manifests\":[{\"digest\":\"" H1 "\",\"size\":1,\"platform\":7}]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (decode(bad[i], NULL, &m, msg) == 0) {
			sbx_test_fail(__FILE__, __LINE__, "accepted: %s", bad[i]);
			return;
		}
	}
}

TEST(digest_helpers)
{
	char d[SBX_DIGEST_LEN + 1];
	sbx_error_t err = NULL;
	CHECK(sbx_sha256_buf("abc", 3, d, &err) == 0);
	CHECK_STR(d, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	CHECK(sbx_digest_valid(d));
	CHECK(!sbx_digest_valid("sha256:BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"));
	CHECK(!sbx_digest_valid("sha512:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
}
