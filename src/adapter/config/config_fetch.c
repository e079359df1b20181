#include "adapter/config/config_fetch.h"

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

#define FETCH_TRIES 3
#define FETCH_TIMEOUT_MS 10000

int sbx_config_id(char *id, size_t size, sbx_error_t *err)
{
	const char *name = getenv("III_CONFIG_NAME");
	const char *start = name != NULL ? name : "";
	while (isspace((unsigned char)*start))
		start++;
	size_t len = strlen(start);
	while (len > 0 && isspace((unsigned char)start[len - 1]))
		len--;
	if (len == 0) {
		start = "sandbox-libkrun";
		len = strlen(start);
	}
	if (len >= size)
		return sbx_error_set(err, ENAMETOOLONG, "III_CONFIG_NAME is longer than %zu bytes", size - 1);
	memcpy(id, start, len);
	id[len] = '\0';
	return 0;
}

/* Waits up to `ms` for engine_stop(); true when it came (a stop ends the
 * retries at once, without a warning). */
static bool stopped_within(struct engine *e, int ms)
{
	struct pollfd p = { .fd = engine_cancel_fd(e), .events = POLLIN };
	int r;
	/* serve blocks its signals in every thread, so EINTR is rare. */
	while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR)
		;
	return r != 0;
}

struct sbx_config *sbx_config_fetch(struct engine *e, sbx_error_t *err)
{
	char id[256];
	if (sbx_config_id(id, sizeof(id), err) < 0)
		return NULL;
	json_t *req = json_pack("{s:s}", "id", id);
	if (req == NULL)
		return sbx_error_errno(err, ENOMEM, "configuration::get"), NULL;
	json_t *result = NULL, *error_body = NULL;
	int rc = -1;
	for (int attempt = 1; attempt <= FETCH_TRIES; attempt++) {
		sbx_error_free(err);
		rc = engine_call(e, NULL, "configuration::get", req, FETCH_TIMEOUT_MS, &result, &error_body, err);
		if (rc >= 0 || stopped_within(e, 0))
			break;
		sbx_warn("configuration::get '%s' failed (attempt %d of %d): %s", id, attempt, FETCH_TRIES,
			 sbx_error_msg(*err));
		if (attempt < FETCH_TRIES && stopped_within(e, 250 * attempt))
			break;
	}
	json_decref(req);
	if (rc < 0)
		return sbx_error_prefix(err, "configuration::get '%s'", id), NULL;

	struct sbx_config *cfg = NULL;
	if (rc == 1) {
		const char *code = json_string_value(json_object_get(error_body, "code"));
		const char *msg = json_string_value(json_object_get(error_body, "message"));
		if (code != NULL && strcmp(code, "NOT_FOUND") == 0) {
			sbx_info("no configuration entry '%s': using the defaults", id);
			cfg = sbx_config_parse(NULL, err);
		} else {
			sbx_error_set(err, EIO, "configuration::get '%s' failed: %s: %s", id, code ? code : "(no code)",
				      msg ? msg : "(no message)");
		}
		json_decref(error_body);
		return cfg;
	}
	/* The answer is {id, value}; a missing or null value means defaults. */
	cfg = sbx_config_parse(json_object_get(result, "value"), err);
	json_decref(result);
	if (cfg == NULL)
		sbx_error_prefix(err, "configuration '%s'", id);
	return cfg;
}
