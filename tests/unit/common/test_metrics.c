#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/metrics.h"
#include "common/metrics_families.h"
#include "harness.h"

/* The families are static, as the daemon's are: their series live as long
 * as the process. */
static char *render(struct sbx_metric *m)
{
	struct sbx_metric *fams[] = { m };
	size_t len = 0;
	sbx_error_t err = NULL;
	char *text = sbx_metrics_render(fams, 1, &len, &err);
	sbx_error_free(&err);
	if (text != NULL && strlen(text) != len) {
		free(text);
		return NULL;
	}
	return text;
}

/* The text up to (not including) the dropped-updates family. */
static char *own_text(struct sbx_metric *m)
{
	char *text = render(m);
	char *cut = text != NULL ? strstr(text, "# HELP sandbox_libkrun_metrics_dropped_total") : NULL;
	if (cut != NULL)
		*cut = '\0';
	return text;
}

TEST(metrics_counter_and_gauge_without_labels_start_at_zero)
{
	static struct sbx_metric c = { .name = "t_plain_total", .help = "plain", .kind = SBX_METRIC_COUNTER };
	char *text = own_text(&c);
	CHECK_STR(text, "# HELP t_plain_total plain\n# TYPE t_plain_total counter\nt_plain_total 0\n");
	free(text);
	sbx_metric_add(&c, NULL, 2);
	sbx_metric_add(&c, NULL, 1.5);
	sbx_metric_add(&c, NULL, -1); /* a counter never goes down */
	sbx_metric_set(&c, NULL, 100); /* nor is it set */
	text = own_text(&c);
	CHECK(text != NULL && strstr(text, "\nt_plain_total 3.5\n") != NULL);
	free(text);

	static struct sbx_metric g = { .name = "t_gauge", .help = "g", .kind = SBX_METRIC_GAUGE };
	sbx_metric_set(&g, NULL, 7);
	sbx_metric_add(&g, NULL, -2);
	text = own_text(&g);
	CHECK_STR(text, "# HELP t_gauge g\n# TYPE t_gauge gauge\nt_gauge 5\n");
	free(text);
	sbx_metric_zero(&g);
	text = own_text(&g);
	CHECK(text != NULL && strstr(text, "\nt_gauge 0\n") != NULL);
	free(text);
}

TEST(metrics_labels_are_escaped)
{
	static struct sbx_metric c = { .name = "t_esc_total", .help = "a \\ and\na newline", .kind = SBX_METRIC_COUNTER,
				.labels = { "a", "b" } };
	sbx_metric_add(&c, (const char *[]){ "q\"uote", "back\\slash\nnl" }, 1);
	sbx_metric_add(&c, (const char *[]){ "plain", "x" }, 2);
	sbx_metric_add(&c, (const char *[]){ "plain", "x" }, 3);
	char *text = own_text(&c);
	CHECK_STR(text, "# HELP t_esc_total a \\\\ and\\na newline\n"
			"# TYPE t_esc_total counter\n"
			"t_esc_total{a=\"q\\\"uote\",b=\"back\\\\slash\\nnl\"} 1\n"
			"t_esc_total{a=\"plain\",b=\"x\"} 5\n");
	free(text);
}

TEST(metrics_histogram_buckets_are_cumulative)
{
	static const double b[] = { 0.1, 1, 10 };
	static struct sbx_metric h = { .name = "t_seconds", .help = "h", .kind = SBX_METRIC_HISTOGRAM, .labels = { "op" },
				.buckets = b, .nbuckets = 3 };
	const char *op[] = { "exec" };
	sbx_metric_observe(&h, op, 0.05);
	sbx_metric_observe(&h, op, 0.1); /* le is inclusive */
	sbx_metric_observe(&h, op, 5);
	sbx_metric_observe(&h, op, 50);
	sbx_metric_add(&h, op, 1); /* not a histogram's update */
	char *text = own_text(&h);
	CHECK_STR(text, "# HELP t_seconds h\n# TYPE t_seconds histogram\n"
			"t_seconds_bucket{op=\"exec\",le=\"0.1\"} 2\n"
			"t_seconds_bucket{op=\"exec\",le=\"1\"} 2\n"
			"t_seconds_bucket{op=\"exec\",le=\"10\"} 3\n"
			"t_seconds_bucket{op=\"exec\",le=\"+Inf\"} 4\n"
			"t_seconds_sum{op=\"exec\"} 55.15\n"
			"t_seconds_count{op=\"exec\"} 4\n");
	free(text);

	static struct sbx_metric empty = { .name = "t_empty_seconds", .help = "e", .kind = SBX_METRIC_HISTOGRAM,
				    .buckets = b, .nbuckets = 3 };
	text = own_text(&empty);
	CHECK(text != NULL && strstr(text, "t_empty_seconds_bucket{le=\"+Inf\"} 0\n"
					   "t_empty_seconds_sum 0\nt_empty_seconds_count 0\n") != NULL);
	free(text);
}

TEST(metrics_series_are_capped_and_drops_counted)
{
	static struct sbx_metric c = { .name = "t_capped_total", .help = "c", .kind = SBX_METRIC_COUNTER, .labels = { "k" } };
	char v[16];
	for (int i = 0; i < SBX_METRIC_MAX_SERIES + 5; i++) {
		snprintf(v, sizeof(v), "v%d", i);
		sbx_metric_add(&c, (const char *[]){ v }, 1);
	}
	char long_value[SBX_METRIC_MAX_VALUE_LEN + 2];
	memset(long_value, 'x', sizeof(long_value) - 1);
	long_value[sizeof(long_value) - 1] = '\0';
	static struct sbx_metric other = { .name = "t_long_total", .help = "l", .kind = SBX_METRIC_COUNTER, .labels = { "k" } };
	sbx_metric_add(&other, (const char *[]){ long_value }, 1);
	CHECK_INT(c.nseries, SBX_METRIC_MAX_SERIES);
	CHECK_INT(other.nseries, 0);
	char *text = render(&c);
	CHECK(text != NULL && strstr(text, "t_capped_total{k=\"v255\"} 1\n") != NULL);
	CHECK(strstr(text, "v256") == NULL);
	CHECK(strstr(text, "sandbox_libkrun_metrics_dropped_total{metric=\"t_capped_total\"} 5\n") != NULL);
	CHECK(strstr(text, "sandbox_libkrun_metrics_dropped_total{metric=\"t_long_total\"} 1\n") != NULL);
	free(text);
}

static struct sbx_metric racy = { .name = "t_racy_total", .help = "r", .kind = SBX_METRIC_COUNTER,
				  .labels = { "k" } };

static void *hammer(void *arg)
{
	const char *k = arg;
	for (int i = 0; i < 10000; i++)
		sbx_metric_add(&racy, (const char *[]){ k }, 1);
	return NULL;
}

TEST(metrics_updates_from_threads_all_count)
{
	static const char *keys[] = { "a", "b", "a", "b" };
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		CHECK(pthread_create(&t[i], NULL, hammer, (void *)keys[i]) == 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	char *text = own_text(&racy);
	CHECK(text != NULL && strstr(text, "t_racy_total{k=\"a\"} 20000\n") != NULL);
	CHECK(strstr(text, "t_racy_total{k=\"b\"} 20000\n") != NULL);
	free(text);
}

/* A KVM restore ready in 4 ms and a pool create in 20 ms land in buckets
 * of their own, not all under the TCG-sized lowest one. */
TEST(create_ready_buckets_reach_down_to_5_ms)
{
	const char *mode[] = { "restore" };
	sbx_metric_observe(&sbx_m_create_seconds, mode, 0.004);
	sbx_metric_observe(&sbx_m_create_seconds, mode, 0.02);
	char *text = own_text(&sbx_m_create_seconds);
	CHECK(text != NULL);
	CHECK(strstr(text, "sandbox_libkrun_create_ready_seconds_bucket{boot_mode=\"restore\",le=\"0.005\"} 1\n"
			   "sandbox_libkrun_create_ready_seconds_bucket{boot_mode=\"restore\",le=\"0.01\"} 1\n"
			   "sandbox_libkrun_create_ready_seconds_bucket{boot_mode=\"restore\",le=\"0.025\"} 2\n"
			   "sandbox_libkrun_create_ready_seconds_bucket{boot_mode=\"restore\",le=\"0.05\"} 2\n") != NULL);
	free(text);
}
