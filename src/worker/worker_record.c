#include "worker/worker_record.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/scodes.h"
#include "common/state_dir.h"
#include "common/strv.h"

const char *worker_source_name(enum worker_source s)
{
	return s == WORKER_SOURCE_PACKAGE ? "package" : "path";
}

int worker_name_check(const char *worker, sbx_error_t *err)
{
	size_t n = strlen(worker);
	bool ok = n >= 1 && n <= WORKER_NAME_MAX && strcmp(worker, ".") != 0 && strcmp(worker, "..") != 0;
	for (size_t i = 0; ok && i < n; i++) {
		char c = worker[i];
		ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		     c == '_' || c == '-';
	}
	if (!ok)
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST,
				       "worker name must be 1 to %d of A-Z a-z 0-9 . _ - (and not . or ..)",
				       WORKER_NAME_MAX);
	return 0;
}

int worker_dir(const char *worker, char *buf, size_t len, sbx_error_t *err)
{
	if (worker_name_check(worker, err) < 0)
		return -1;
	cleanup_free char *state = sbx_state_dir(err);
	if (state == NULL)
		return -1;
	int n = snprintf(buf, len, "%s/workers/%s", state, worker);
	if (n < 0 || (size_t)n >= len)
		return sbx_error_set(err, ENAMETOOLONG, "worker directory of %s: path too long", worker);
	return 0;
}

void worker_record_free(struct worker_record *r)
{
	free(r->worker);
	free(r->host_path);
	free(r->base_image);
	free(r->image_erofs);
	sbx_strv_free(r->env);
	free(r->setup);
	free(r->install);
	free(r->start);
	sbx_strv_free(r->exec);
	sbx_strv_free(r->image_env);
	free(r->image_user);
	free(r->image_workdir);
	memset(r, 0, sizeof(*r));
}
