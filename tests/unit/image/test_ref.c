/* Reference parsing, checked against the examples in Docker's documentation
 * (docker tag / docker pull / the distribution reference grammar). */
#include "harness.h"

#include <stdio.h>

#include "image/image_ref.h"

static const char *parse(const char *in, char *out, size_t len)
{
	struct sbx_image_ref ref;
	sbx_error_t err = NULL;
	if (sbx_image_ref_parse(in, &ref, &err) < 0) {
		sbx_error_free(&err);
		return NULL;
	}
	if (sbx_image_ref_format(&ref, out, len) < 0)
		return NULL;
	return out;
}

#define D64 "sha256:e2e16842c9b54d985bf1ef9242a313f36b856181f188de21313820e177002501"

TEST(one_part_name_gets_library_and_latest)
{
	char b[600];
	CHECK_STR(parse("ubuntu", b, sizeof(b)), "docker.io/library/ubuntu:latest");
	CHECK_STR(parse("ubuntu:22.04", b, sizeof(b)), "docker.io/library/ubuntu:22.04");
	CHECK_STR(parse("library/ubuntu", b, sizeof(b)), "docker.io/library/ubuntu:latest");
}

TEST(two_part_name_on_docker_hub)
{
	char b[600];
	CHECK_STR(parse("iiidev/python", b, sizeof(b)), "docker.io/iiidev/python:latest");
	CHECK_STR(parse("docker.io/iiidev/python:latest", b, sizeof(b)), "docker.io/iiidev/python:latest");
	CHECK_STR(parse("index.docker.io/ubuntu", b, sizeof(b)), "docker.io/library/ubuntu:latest");
}

TEST(registry_with_port)
{
	char b[600];
	struct sbx_image_ref r;
	sbx_error_t err = NULL;
	/* docker tag example */
	CHECK(sbx_image_ref_parse("myregistryhost:5000/fedora/httpd:version1.0", &r, &err) == 0);
	CHECK_STR(r.domain, "myregistryhost:5000");
	CHECK_STR(r.path, "fedora/httpd");
	CHECK_STR(r.tag, "version1.0");
	CHECK_STR(sbx_image_ref_api_host(&r), "myregistryhost:5000");
	CHECK_STR(parse("localhost:5000/ubuntu", b, sizeof(b)), "localhost:5000/ubuntu:latest");
	CHECK_STR(parse("localhost/latest", b, sizeof(b)), "localhost/latest:latest");
	CHECK_STR(parse("[::1]:5000/x/y:t", b, sizeof(b)), "[::1]:5000/x/y:t");
	CHECK_STR(parse("127.0.0.1:5000/iiidev/python", b, sizeof(b)), "127.0.0.1:5000/iiidev/python:latest");
}

TEST(docker_hub_api_host)
{
	struct sbx_image_ref r;
	sbx_error_t err = NULL;
	CHECK(sbx_image_ref_parse("python", &r, &err) == 0);
	CHECK_STR(sbx_image_ref_api_host(&r), "registry-1.docker.io");
	CHECK_STR(sbx_image_ref_manifest_key(&r), "latest");
}

TEST(digests)
{
	char b[600];
	struct sbx_image_ref r;
	sbx_error_t err = NULL;
	CHECK_STR(parse("ubuntu@" D64, b, sizeof(b)), "docker.io/library/ubuntu@" D64);
	CHECK(sbx_image_ref_parse("ubuntu@" D64, &r, &err) == 0);
	CHECK_STR(r.tag, "");
	CHECK_STR(sbx_image_ref_manifest_key(&r), D64);
	CHECK_STR(parse("ubuntu:22.04@" D64, b, sizeof(b)), "docker.io/library/ubuntu:22.04@" D64);
	CHECK_STR(parse("localhost:5000/a/b@" D64, b, sizeof(b)), "localhost:5000/a/b@" D64);
}

TEST(documented_valid_names)
{
	char b[600];
	CHECK_STR(parse("sub-dom1.foo.com/bar/baz/quux:some-long-tag", b, sizeof(b)),
		  "sub-dom1.foo.com/bar/baz/quux:some-long-tag");
	CHECK_STR(parse("b.gcr.io/test.example.com/my-app:test.example.com", b, sizeof(b)),
		  "b.gcr.io/test.example.com/my-app:test.example.com");
	CHECK_STR(parse("xn--n3h.com/myimage:xn--n3h.com", b, sizeof(b)), "xn--n3h.com/myimage:xn--n3h.com");
	CHECK_STR(parse("a__b/c---d.e_f", b, sizeof(b)), "docker.io/a__b/c---d.e_f:latest");
	/* An upper-case first component is a host name, as in Docker. */
	CHECK_STR(parse("Foo/bar", b, sizeof(b)), "Foo/bar:latest");
}

TEST(invalid_names_are_refused)
{
	char b[600];
	static const char *const bad[] = {
		"",
		":tag",
		"UPPERCASE",
		"docker.io/Library/ubuntu",
		"a/../b",
		"-foo",
		"foo-",
		"foo_",
		"foo___bar",
		"foo//bar",
		"foo/",
		"foo:",
		"foo:-tag",
		"foo:bad tag",
		"foo@sha256:abc",
		"foo@sha256:E2E16842C9B54D985BF1EF9242A313F36B856181F188DE21313820E177002501",
		"foo@md5:d41d8cd98f00b204e9800998ecf8427e",
		"host:port/x",
		"host:123456/x",
		"-host.com/x",
		"[zz]:5000/x",
		"aa/asdf$$^/aa",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(bad[i], b, sizeof(b)) != NULL) {
			sbx_test_fail(__FILE__, __LINE__, "'%s' was accepted as '%s'", bad[i], b);
			return;
		}
	}
}

TEST(name_length_limit)
{
	char name[300], b[600];
	memset(name, 'a', sizeof(name));
	/* docker.io/ + library/ + 237 = 255: the longest one-part name */
	name[237] = '\0';
	CHECK(parse(name, b, sizeof(b)) != NULL);
	name[237] = 'a';
	name[238] = '\0';
	CHECK(parse(name, b, sizeof(b)) == NULL);
}

TEST(format_refuses_short_buffer)
{
	struct sbx_image_ref r;
	sbx_error_t err = NULL;
	char b[10];
	CHECK(sbx_image_ref_parse("ubuntu", &r, &err) == 0);
	CHECK_INT(sbx_image_ref_format(&r, b, sizeof(b)), -1);
}
