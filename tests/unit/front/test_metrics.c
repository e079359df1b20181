/* The front's families: one member_up series per member known, 1 or 0,
 * kept at 0 when the member goes; forwarded calls by member and outcome;
 * no VM family. */
#include <stdlib.h>
#include <string.h>

#include "front/front_internal.h"
#include "front/front_metrics.h"
#include "harness.h"

static char *scrape(struct front *f)
{
	front_collect_metrics(f);
	size_t n, len;
	struct sbx_metric *const *fams = front_metric_families(&n);
	sbx_error_t err = NULL;
	char *text = sbx_metrics_render(fams, n, &len, &err);
	sbx_error_free(&err);
	return text;
}

static void add_member(struct front *f, const char *ns, bool up)
{
	struct front_member *m = &f->members[f->nmembers++];
	strcpy(m->ns, ns);
	m->up = up;
}

TEST(members_up_and_gone)
{
	sbx_error_t err = NULL;
	struct front *f = front_new(NULL, NULL, NULL, &err);
	CHECK(f != NULL);
	add_member(f, "m1", true);
	add_member(f, "m2", true);
	add_member(f, "m3", false);
	char *text = scrape(f);
	CHECK(text != NULL);
	CHECK(strstr(text, "# TYPE sandbox_libkrun_front_member_up gauge\n") != NULL);
	CHECK(strstr(text, "sandbox_libkrun_front_member_up{member=\"m1\"} 1\n") != NULL);
	CHECK(strstr(text, "sandbox_libkrun_front_member_up{member=\"m3\"} 0\n") != NULL);
	CHECK(strstr(text, "sandbox_libkrun_engine_up 0\n") != NULL);
	CHECK(strstr(text, "sandbox_libkrun_sandboxes") == NULL);
	CHECK(strstr(text, "sandbox_libkrun_vm_") == NULL);
	free(text);
	f->members[1].up = false;
	text = scrape(f);
	CHECK(text != NULL);
	CHECK(strstr(text, "sandbox_libkrun_front_member_up{member=\"m2\"} 0\n") != NULL);
	free(text);
	front_free(f);
}

TEST(forwarded_by_member_and_outcome)
{
	front_metrics_forwarded("m1", FRONT_FWD_OK);
	front_metrics_forwarded("m1", FRONT_FWD_OK);
	front_metrics_forwarded("m1", FRONT_FWD_ERROR);
	front_metrics_forwarded("m2", FRONT_FWD_UNREACHABLE);
	front_metrics_forwarded("m2", 7); /* not an outcome: no series */
	front_metrics_full("create");
	front_metrics_refresh(0);
	front_metrics_refresh(1);
	size_t n, len;
	struct sbx_metric *const *fams = front_metric_families(&n);
	sbx_error_t err = NULL;
	char *text = sbx_metrics_render(fams, n, &len, &err);
	sbx_error_free(&err);
	CHECK(text != NULL);
	const char *want[] = {
		"sandbox_libkrun_front_forwarded_calls_total{member=\"m1\",outcome=\"ok\"} 2\n",
		"sandbox_libkrun_front_forwarded_calls_total{member=\"m1\",outcome=\"error\"} 1\n",
		"sandbox_libkrun_front_forwarded_calls_total{member=\"m2\",outcome=\"unreachable\"} 1\n",
		"sandbox_libkrun_front_full_refusals_total{function=\"create\"} 1\n",
		"sandbox_libkrun_front_refreshes_total 2\n",
		"sandbox_libkrun_front_refresh_failures_total 1\n",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		if (strstr(text, want[i]) == NULL)
			sbx_test_fail(__FILE__, __LINE__, "missing: %s", want[i]);
	}
	if (strstr(text, "member=\"m2\",outcome=\"ok\"") != NULL)
		sbx_test_fail(__FILE__, __LINE__, "a series no call made");
	free(text);
}
