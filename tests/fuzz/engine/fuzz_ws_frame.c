/* libFuzzer target: the WebSocket frame decoder, fed in chunks of varying
 * size, as the client (unmasked frames) and as a server (masked). */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engine/ws_frame.h"

static void run(const uint8_t *data, size_t size, bool masked, size_t chunk)
{
	struct ws_decoder d;
	ws_decoder_init(&d, masked, 64 * 1024);
	uint8_t *buf = malloc(size + 1);
	size_t have = 0, fed = 0;
	for (;;) {
		struct ws_message m;
		size_t used, need;
		sbx_error_t err = NULL;
		int r = ws_decoder_next(&d, buf, have, &used, &need, &m, &err);
		sbx_error_free(&err);
		if (r < 0)
			break;
		if (r == 1) {
			/* Touch every byte handed out: ASan checks the bounds. */
			volatile uint8_t sum = 0;
			for (size_t i = 0; i < m.len; i++)
				sum ^= m.data[i];
			(void)sum;
		}
		if (used > have)
			abort();
		memmove(buf, buf + used, have - used);
		have -= used;
		if (r == 1)
			continue;
		if (fed == size)
			break;
		size_t n = size - fed < chunk ? size - fed : chunk;
		memcpy(buf + have, data + fed, n);
		have += n;
		fed += n;
	}
	free(buf);
	ws_decoder_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t chunk = (size_t)(data[0] % 32) + 1;
	run(data + 1, size - 1, false, chunk);
	run(data + 1, size - 1, true, chunk);
	run(data + 1, size - 1, false, size);
	return 0;
}
