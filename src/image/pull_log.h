/* The log of a daemon's image pull: when stderr is not a terminal, a line
 * as each layer completes (n/N, bytes) and, while a layer downloads, at
 * most one line every PULL_LOG_EVERY_MS; then one info line for the pull
 * (ref, registry, bytes, seconds).  Nothing when not enabled (the CLI). */
#ifndef SBX_IMAGE_PULL_LOG_H
#define SBX_IMAGE_PULL_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PULL_LOG_EVERY_MS 5000

struct pull_log {
	const char *ref;
	bool enabled;
	bool progress; /* enabled, and stderr is no terminal */
	int64_t start_ms;
	int64_t next_ms; /* the next in-layer line not before */
	uint64_t bytes;  /* of the layers downloaded */
	size_t layers;
};

void pull_log_init(struct pull_log *l, const char *ref, bool enabled);
/* A layer's download moved on (done < total) or ended (done == total). */
void pull_log_layer(struct pull_log *l, size_t index, size_t count, uint64_t done, uint64_t total);
/* The pull ended well; `registry` is the base URL it came from (its
 * user:password@, when it has one, is not logged). */
void pull_log_done(const struct pull_log *l, const char *registry, uint64_t image_bytes);

#endif
