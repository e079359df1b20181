/* The registry client's response handling (src/image/oci_registry.c) against a
 * hostile registry: manifest, index, token, blob and error responses with
 * any headers (Content-Length, Docker-Content-Digest, WWW-Authenticate,
 * Location, Retry-After), redirects, retries and failed transfers, through
 * the real code paths with libcurl's transfer left out (fake_curl.h).
 *
 * Input: one byte choosing the call (manifest by tag or by digest, small
 * blob, blob to a file) and the registry (loopback or remote, with or
 * without credentials), then fake_curl's script.  Besides fake_curl's
 * checks: whatever the client accepts is exactly what the last response
 * delivered, verified against its digest and size. */
#include <jansson.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/log.h"
#include "fake_curl.h"
#include "image/digest.h"
#include "image/image_config.h"
#include "image/image_ref.h"
#include "image/oci_manifest.h"
#include "image/oci_registry.h"

static void fail(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_registry: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	abort();
}

static void sha256_digest(const void *p, size_t n, char out[SBX_DIGEST_LEN + 1])
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256(p, n, md);
	strcpy(out, "sha256:");
	for (int i = 0; i < SHA256_DIGEST_LENGTH; i++)
		sprintf(out + 7 + 2 * i, "%02x", md[i]);
}

static void check_delivered(const char *digest, int64_t size)
{
	char got[SBX_DIGEST_LEN + 1];
	size_t len;
	const uint8_t *body = fake_curl_body(&len);
	sha256_digest(body, len, got);
	if (strcmp(got, digest) != 0 || (size >= 0 && (int64_t)len != size))
		fail("the client accepted content other than the response's", digest);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	sbx_log_set_level(SBX_LOG_ERROR);
	setenv("SBX_FUZZ_PASS", "secret", 1);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t op = data[0];
	fake_curl_load(data + 1, size - 1);

	/* A loopback registry (plain http allowed) or a remote one (https only);
	 * with or without configured credentials. */
	const char *name = op & 4 ? "registry.example/team/app:v1" : "127.0.0.1:5000/team/app:v1";
	struct sbx_image_ref ref;
	struct sbx_image_config cfg;
	sbx_error_t err = NULL;
	sbx_image_config_init(&cfg);
	if (sbx_image_ref_parse(name, &ref, &err) < 0)
		fail("ref", sbx_error_msg(err));
	if (op & 8) {
		json_t *auth = json_pack("{s:{s:s,s:s}}", op & 4 ? "registry.example" : "127.0.0.1:5000", "username",
					 "user", "password", "${SBX_FUZZ_PASS}");
		if (auth == NULL || sbx_image_config_parse_key(&cfg, "registry_auth", auth, &err) < 0)
			fail("config", err ? sbx_error_msg(err) : NULL);
		json_decref(auth);
	}
	struct sbx_oci_registry *reg = sbx_oci_registry_open(&ref, &cfg, &err);
	if (reg == NULL)
		fail("open", sbx_error_msg(err));

	size_t ok_len;
	const uint8_t *ok_body = fake_curl_last_ok_body(data + 1, size - 1, &ok_len);
	struct sbx_descriptor d = { .size = (int64_t)ok_len };
	sha256_digest(ok_body ? ok_body : (const uint8_t *)"", ok_len, d.digest);
	switch (op & 3) {
	case 0:
	case 1: { /* a manifest by tag, or by the digest of the last good body */
		struct sbx_manifest m;
		char digest[SBX_DIGEST_LEN + 1];
		const char *reference = op & 1 ? d.digest : "v1";
		if (sbx_oci_registry_manifest(reg, reference, &m, digest, &err) == 0) {
			check_delivered(digest, -1);
			if ((op & 1) && strcmp(digest, d.digest) != 0)
				fail("a manifest by digest came back with another digest", digest);
			sbx_manifest_free(&m);
		}
		break;
	}
	case 2: { /* a small blob (the image config) */
		char *buf = NULL;
		size_t len = 0;
		if (sbx_oci_registry_blob_mem(reg, &d, &buf, &len, &err) == 0) {
			check_delivered(d.digest, d.size);
			size_t got_len;
			const uint8_t *got = fake_curl_body(&got_len);
			if (len != got_len || memcmp(buf, got, len) != 0)
				fail("blob_mem returned other bytes than it verified", NULL);
			free(buf);
		}
		break;
	}
	default: { /* a layer blob into a file */
		int fd = memfd_create("blob", MFD_CLOEXEC);
		if (fd < 0)
			fail("memfd_create", NULL);
		if (sbx_oci_registry_blob(reg, &d, fd, NULL, NULL, &err) == 0) {
			check_delivered(d.digest, d.size);
			if (lseek(fd, 0, SEEK_END) != d.size)
				fail("the blob file has another size than verified", NULL);
		}
		close(fd);
		break;
	}
	}
	sbx_error_free(&err);
	sbx_oci_registry_close(reg);
	sbx_image_config_free(&cfg);
	return 0;
}
