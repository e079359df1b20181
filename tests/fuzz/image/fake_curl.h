/* A stand-in for libcurl's transfer, for fuzz_image_registry: the
 * easy-API calls oci_registry_http.c makes for a transfer (setopt, perform, getinfo,
 * reset) are defined in fake_curl.c, which the link binds ahead of
 * libcurl's, and serve scripted responses; nanosleep is defined there too,
 * so retry pauses cost nothing (and are checked against the client's cap).
 * libcurl's URL parser and escaping stay the real ones.
 *
 * A script is responses separated by FAKE_CURL_SEP, each
 * "HTTP/1.1 NNN ...\r\nName: value\r\n\r\nbody", or "!" and one byte: a
 * transfer failing with that CURLcode (0: could not connect).  Each
 * transfer takes the next response, and the next ones after a redirect it
 * follows; none left is a failed connection.  Any check that fails aborts:
 * no request header may carry CR or LF, credentials and tokens never go
 * over plain http off loopback, pauses stay within the Retry-After cap. */
#ifndef SBX_FUZZ_FAKE_CURL_H
#define SBX_FUZZ_FAKE_CURL_H

#include <stddef.h>
#include <stdint.h>

#define FAKE_CURL_SEP "\nSBXRESP\n"

/* Serves this script (borrowed) from now on. */
void fake_curl_load(const uint8_t *script, size_t len);
/* The bytes the last transfer's body callback accepted. */
const uint8_t *fake_curl_body(size_t *len);
/* The body of the script's last response with status 200 (NULL if none). */
const uint8_t *fake_curl_last_ok_body(const uint8_t *script, size_t len, size_t *body_len);

#endif
