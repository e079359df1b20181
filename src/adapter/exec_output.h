/* One output stream of an exec (contract §7.4, 1.1): the first 1 MiB is
 * kept, the rest is counted and discarded while the process runs on; the
 * reply carries it lossy-UTF-8 decoded (invalid sequences -> U+FFFD). */
#ifndef SBX_ADAPTER_EXEC_OUTPUT_H
#define SBX_ADAPTER_EXEC_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define EXEC_OUTPUT_CAP (1024u * 1024u)

struct exec_output {
	uint8_t *data; /* allocated on the first byte, at most `cap` bytes */
	size_t len, cap;
	bool truncated;
};

void exec_output_init(struct exec_output *o, size_t cap);
void exec_output_free(struct exec_output *o);
/* Keeps what fits under the cap and marks the rest as truncated. */
int exec_output_append(struct exec_output *o, const void *buf, size_t n, sbx_error_t *err);

/* A UTF-8 copy of `n` bytes (*out_len bytes, plus a terminating NUL):
 * each maximal invalid prefix (overlong forms, surrogates, code points
 * above U+10FFFF, truncated sequences) becomes U+FFFD.  NUL bytes are kept
 * (U+0000 is valid UTF-8), so callers use *out_len, not strlen(). */
char *utf8_lossy(const uint8_t *p, size_t n, size_t *out_len, sbx_error_t *err);

/* min(requested, max(ceiling, 1)): the effective exec deadline in ms. */
uint64_t exec_effective_timeout_ms(uint64_t requested, uint64_t ceiling);

#endif
