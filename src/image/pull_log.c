#include "image/pull_log.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"

void pull_log_init(struct pull_log *l, const char *ref, bool enabled)
{
	*l = (struct pull_log){
		.ref = ref, .enabled = enabled, .progress = enabled && !isatty(STDERR_FILENO), .start_ms = sbx_now_ms()
	};
	l->next_ms = l->start_ms + PULL_LOG_EVERY_MS;
}

void pull_log_layer(struct pull_log *l, size_t index, size_t count, uint64_t done, uint64_t total)
{
	bool ended = done >= total;
	if (ended) {
		l->bytes += total;
		l->layers++;
	}
	int64_t now = sbx_now_ms();
	if (!l->progress || (!ended && now < l->next_ms))
		return;
	l->next_ms = now + PULL_LOG_EVERY_MS;
	struct sbx_log_field f[] = { SBX_LF_STR("event", "pull_progress"), SBX_LF_STR("ref", l->ref),
				     SBX_LF_INT("layer", index + 1), SBX_LF_INT("layers", count),
				     SBX_LF_INT("bytes", done), SBX_LF_INT("size", total),
				     SBX_LF_STR("done", ended ? "true" : "false") };
	sbx_log_kv(SBX_LOG_INFO, f, "pulling %s: layer %zu/%zu, %llu of %llu bytes%s", l->ref, index + 1, count,
		   (unsigned long long)done, (unsigned long long)total, ended ? ", done" : "");
}

/* The URL without its user:password@. */
static void strip_userinfo(const char *url, char *out, size_t cap)
{
	const char *scheme = strstr(url, "://");
	const char *host = scheme != NULL ? scheme + 3 : url;
	size_t auth_len = strcspn(host, "/?#");
	const char *at = memchr(host, '@', auth_len);
	if (at == NULL)
		snprintf(out, cap, "%s", url);
	else
		snprintf(out, cap, "%.*s%s", (int)(host - url), url, at + 1);
}

void pull_log_done(const struct pull_log *l, const char *registry, uint64_t image_bytes)
{
	if (!l->enabled)
		return;
	char reg[512];
	strip_userinfo(registry, reg, sizeof(reg));
	int64_t ms = sbx_now_ms() - l->start_ms;
	struct sbx_log_field f[] = { SBX_LF_STR("event", "pull"),	   SBX_LF_STR("ref", l->ref),
				     SBX_LF_STR("registry", reg),	   SBX_LF_INT("layers", l->layers),
				     SBX_LF_INT("bytes", l->bytes),	   SBX_LF_INT("image_bytes", image_bytes),
				     SBX_LF_INT("duration_ms", ms) };
	sbx_log_kv(SBX_LOG_INFO, f, "pulled %s from %s: %llu bytes in %d layer%s, %.1f s", l->ref, reg,
		   (unsigned long long)l->bytes, (int)l->layers, l->layers == 1 ? "" : "s", (double)ms / 1000.0);
}
