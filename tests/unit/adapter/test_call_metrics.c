#include <stdlib.h>
#include <string.h>

#include "adapter/call_metrics.h"
#include "adapter/scode.h"
#include "common/metrics_families.h"
#include "harness.h"

static char *render_all(void)
{
	size_t n, len;
	struct sbx_metric *const *fams = sbx_metric_families(&n);
	sbx_error_t err = NULL;
	char *text = sbx_metrics_render(fams, n, &len, &err);
	sbx_error_free(&err);
	return text;
}

static json_t *failure(const char *scode, const char *run_step)
{
	sbx_error_t e = NULL;
	sbx_error_scode(&e, scode, "detail");
	json_t *body = sbx_error_body_from_error(e, run_step, "00000000-0000-4000-8000-000000000000", NULL);
	sbx_error_free(&e);
	return body;
}

TEST(call_outcomes_are_ok_or_the_contracts_scodes)
{
	int64_t start = sbx_call_metrics_start();
	json_t *ok = json_object();
	json_t *s002 = failure("S002", NULL);
	json_t *run_s200 = failure("S200", "exec"); /* run's wrapped envelope keeps its code */
	json_t *decode = sbx_error_body_decode("bad json");
	json_t *forged = json_pack("{s:s, s:s}", "code", "invocation_failed", "message",
				   "handler error: {\"code\":\"S999\\\"injected\"}");
	CHECK(ok != NULL && s002 != NULL && run_s200 != NULL && decode != NULL && forged != NULL);
	sbx_call_metrics_record("exec", 0, ok, start);
	sbx_call_metrics_record("exec", -1, s002, start);
	sbx_call_metrics_record("run", -1, run_s200, start);
	sbx_call_metrics_record("fs::ls", -1, decode, start);
	sbx_call_metrics_record("fs::ls", -1, forged, start);
	sbx_call_metrics_record("fs::ls", -1, NULL, start);
	json_decref(ok);
	json_decref(s002);
	json_decref(run_s200);
	json_decref(decode);
	json_decref(forged);
	char *text = render_all();
	CHECK(text != NULL);
	static const char *const want[] = {
		"sandbox_libkrun_calls_total{function=\"exec\",outcome=\"ok\"} 1\n",
		"sandbox_libkrun_calls_total{function=\"exec\",outcome=\"S002\"} 1\n",
		"sandbox_libkrun_calls_total{function=\"run\",outcome=\"S200\"} 1\n",
		"sandbox_libkrun_calls_total{function=\"fs::ls\",outcome=\"other\"} 3\n",
		"sandbox_libkrun_errors_total{scode=\"S002\"} 1\n",
		"sandbox_libkrun_errors_total{scode=\"S200\"} 1\n",
		"sandbox_libkrun_errors_total{scode=\"other\"} 3\n",
		"sandbox_libkrun_call_duration_seconds_count{function=\"exec\"} 2\n",
		"sandbox_libkrun_call_duration_seconds_bucket{function=\"fs::ls\",le=\"+Inf\"} 3\n",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		if (strstr(text, want[i]) == NULL) {
			free(text);
			CHECK_STR("(missing)", want[i]);
		}
	}
	CHECK(strstr(text, "S999") == NULL);
	CHECK(strstr(text, "errors_total{scode=\"ok\"}") == NULL);
	free(text);
}
