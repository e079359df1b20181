#include "common/metrics.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sbx_metric_series {
	char *values[SBX_METRIC_MAX_LABELS];
	double value;      /* counter, gauge */
	double sum;        /* histogram */
	uint64_t count;    /* histogram */
	uint64_t *buckets; /* histogram: observations per bucket, not cumulative */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static struct sbx_metric dropped = {
	.name = "sandbox_libkrun_metrics_dropped_total",
	.help = "Metric updates dropped: a label value too long or a family past its series cap",
	.kind = SBX_METRIC_COUNTER,
	.labels = { "metric" },
};

static size_t label_count(const struct sbx_metric *m)
{
	size_t n = 0;
	while (n < SBX_METRIC_MAX_LABELS && m->labels[n] != NULL)
		n++;
	return n;
}

static bool same_values(const struct sbx_metric_series *s, const char *const *values, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(s->values[i], values[i]) != 0)
			return false;
	}
	return true;
}

static void free_series(struct sbx_metric_series *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(s->values[i]);
	free(s->buckets);
}

/* The series of `values`, made on first use; NULL when it cannot be (the
 * caller counts a drop).  Under the lock. */
static struct sbx_metric_series *series_locked(struct sbx_metric *m, const char *const *values)
{
	size_t n = label_count(m);
	for (size_t i = 0; i < m->nseries; i++) {
		if (same_values(&m->series[i], values, n))
			return &m->series[i];
	}
	if (m->nseries >= SBX_METRIC_MAX_SERIES)
		return NULL;
	struct sbx_metric_series s = { 0 };
	for (size_t i = 0; i < n; i++) {
		if (values[i] == NULL || strlen(values[i]) > SBX_METRIC_MAX_VALUE_LEN ||
		    (s.values[i] = strdup(values[i])) == NULL) {
			free_series(&s, i);
			return NULL;
		}
	}
	if (m->kind == SBX_METRIC_HISTOGRAM && m->nbuckets > 0 &&
	    (s.buckets = calloc(m->nbuckets, sizeof(*s.buckets))) == NULL) {
		free_series(&s, n);
		return NULL;
	}
	struct sbx_metric_series *grown = realloc(m->series, (m->nseries + 1) * sizeof(*grown));
	if (grown == NULL) {
		free_series(&s, n);
		return NULL;
	}
	m->series = grown;
	m->series[m->nseries] = s;
	return &m->series[m->nseries++];
}

/* Under the lock. */
static void count_drop_locked(const struct sbx_metric *m)
{
	const char *values[] = { m->name };
	struct sbx_metric_series *s = m != &dropped ? series_locked(&dropped, values) : NULL;
	if (s != NULL)
		s->value += 1;
}

static void update(struct sbx_metric *m, const char *const *values, double v, bool set)
{
	if (isnan(v) || (m->kind == SBX_METRIC_COUNTER && (set || v < 0)))
		return;
	pthread_mutex_lock(&lock);
	struct sbx_metric_series *s = series_locked(m, values);
	if (s == NULL)
		count_drop_locked(m);
	else if (m->kind == SBX_METRIC_HISTOGRAM) {
		size_t i = 0;
		while (i < m->nbuckets && v > m->buckets[i])
			i++;
		if (i < m->nbuckets)
			s->buckets[i]++;
		s->count++;
		s->sum += v;
	} else {
		s->value = set ? v : s->value + v;
	}
	pthread_mutex_unlock(&lock);
}

void sbx_metric_add(struct sbx_metric *m, const char *const *values, double v)
{
	if (m->kind != SBX_METRIC_HISTOGRAM)
		update(m, values, v, false);
}

void sbx_metric_set(struct sbx_metric *m, const char *const *values, double v)
{
	if (m->kind == SBX_METRIC_GAUGE)
		update(m, values, v, true);
}

void sbx_metric_observe(struct sbx_metric *m, const char *const *values, double v)
{
	if (m->kind == SBX_METRIC_HISTOGRAM)
		update(m, values, v, false);
}

void sbx_metric_zero(struct sbx_metric *m)
{
	if (m->kind != SBX_METRIC_GAUGE)
		return;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < m->nseries; i++)
		m->series[i].value = 0;
	pthread_mutex_unlock(&lock);
}

/* A sample value: integers exactly, other values with 15 significant
 * digits (0.1 stays "0.1"). */
static void put_number(FILE *out, double v)
{
	if (isinf(v))
		fputs(v > 0 ? "+Inf" : "-Inf", out);
	else
		fprintf(out, "%.15g", v);
}

/* Escapes per the format: label values \ " and newline; HELP \ and newline. */
static void put_escaped(FILE *out, const char *s, bool quote)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\')
			fputs("\\\\", out);
		else if (*s == '\n')
			fputs("\\n", out);
		else if (*s == '"' && quote)
			fputs("\\\"", out);
		else
			fputc(*s, out);
	}
}

/* {a="x",b="y"} with `le` last for a histogram bucket; nothing when there
 * are no labels at all. */
static void put_labels(FILE *out, const struct sbx_metric *m, const struct sbx_metric_series *s, const double *le)
{
	size_t n = label_count(m);
	if (n == 0 && le == NULL)
		return;
	fputc('{', out);
	for (size_t i = 0; i < n; i++) {
		fprintf(out, "%s%s=\"", i > 0 ? "," : "", m->labels[i]);
		put_escaped(out, s->values[i], true);
		fputc('"', out);
	}
	if (le != NULL) {
		fprintf(out, "%sle=\"", n > 0 ? "," : "");
		put_number(out, *le);
		fputc('"', out);
	}
	fputc('}', out);
}

static void put_histogram(FILE *out, const struct sbx_metric *m, const struct sbx_metric_series *s)
{
	uint64_t cumulative = 0;
	for (size_t b = 0; b < m->nbuckets; b++) {
		cumulative += s->buckets != NULL ? s->buckets[b] : 0;
		fprintf(out, "%s_bucket", m->name);
		put_labels(out, m, s, &m->buckets[b]);
		fprintf(out, " %llu\n", (unsigned long long)cumulative);
	}
	const double inf = INFINITY;
	fprintf(out, "%s_bucket", m->name);
	put_labels(out, m, s, &inf);
	fprintf(out, " %llu\n%s_sum", (unsigned long long)s->count, m->name);
	put_labels(out, m, s, NULL);
	fputc(' ', out);
	put_number(out, s->sum);
	fprintf(out, "\n%s_count", m->name);
	put_labels(out, m, s, NULL);
	fprintf(out, " %llu\n", (unsigned long long)s->count);
}

static void put_family(FILE *out, const struct sbx_metric *m)
{
	static const char *const kinds[] = { "counter", "gauge", "histogram" };
	fprintf(out, "# HELP %s ", m->name);
	put_escaped(out, m->help, false);
	fprintf(out, "\n# TYPE %s %s\n", m->name, kinds[m->kind]);
	/* A family without labels has its one sample from the start. */
	static const struct sbx_metric_series zero = { 0 };
	size_t n = m->nseries == 0 && label_count(m) == 0 ? 1 : m->nseries;
	for (size_t i = 0; i < n; i++) {
		const struct sbx_metric_series *s = m->nseries > 0 ? &m->series[i] : &zero;
		if (m->kind == SBX_METRIC_HISTOGRAM) {
			put_histogram(out, m, s);
			continue;
		}
		fputs(m->name, out);
		put_labels(out, m, s, NULL);
		fputc(' ', out);
		put_number(out, s->value);
		fputc('\n', out);
	}
}

char *sbx_metrics_render(struct sbx_metric *const *fams, size_t n, size_t *len, sbx_error_t *err)
{
	char *text = NULL;
	FILE *out = open_memstream(&text, len);
	if (out == NULL)
		return sbx_error_errno(err, errno, "metrics"), NULL;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < n; i++)
		put_family(out, fams[i]);
	put_family(out, &dropped);
	pthread_mutex_unlock(&lock);
	bool failed = ferror(out) != 0;
	if (fclose(out) != 0 || failed) {
		free(text);
		return sbx_error_errno(err, ENOMEM, "metrics"), NULL;
	}
	return text;
}
