#include "worker/worker_resources.h"

#include <errno.h>
#include <math.h> /* isfinite: a macro, no libm */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "image/image_config.h"

/* x > 0 and at most a few million: the next integer at or above it. */
static unsigned round_up(double x)
{
	unsigned u = (unsigned)x;
	return (double)u < x ? u + 1 : u;
}

static int bad(sbx_error_t *err, const char *what, const char *expected, json_t *v)
{
	return sbx_error_set(err, EINVAL, "`%s` must be %s, not %s", what, expected, sbx_config_json_kind(v));
}

static int out_of_range(sbx_error_t *err, const char *what, json_t *v, unsigned max, const char *unit)
{
	char shown[48];
	if (json_is_string(v))
		snprintf(shown, sizeof(shown), "\"%.32s\"", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(shown, sizeof(shown), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else
		snprintf(shown, sizeof(shown), "%g", json_real_value(v));
	return sbx_error_set(err, ERANGE, "`%s` %s is out of range (1 to %u%s)", what, shown, max, unit);
}

/* A finite number > 0 written as digits[.digits]; *out its value. */
static bool decimal(const char *s, size_t n, double *out)
{
	if (n == 0 || n > 32)
		return false;
	char buf[40];
	memcpy(buf, s, n);
	buf[n] = '\0';
	size_t dots = 0;
	for (size_t i = 0; i < n; i++) {
		if (buf[i] == '.')
			dots++;
		else if (buf[i] < '0' || buf[i] > '9')
			return false;
	}
	if (dots > 1 || buf[0] == '.' || buf[n - 1] == '.')
		return false;
	*out = strtod(buf, NULL);
	return isfinite(*out);
}

int worker_cpus_parse(json_t *v, const char *what, unsigned *out, sbx_error_t *err)
{
	double cpus;
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		cpus = i < 0 ? -1 : i > WORKER_MAX_CPUS ? WORKER_MAX_CPUS + 1 : (double)i;
	} else if (json_is_real(v)) {
		cpus = json_real_value(v);
	} else if (json_is_string(v)) {
		const char *text = json_string_value(v);
		size_t n = strlen(text);
		bool milli = n > 0 && text[n - 1] == 'm';
		if (!decimal(text, milli ? n - 1 : n, &cpus))
			return bad(err, what, "a number of CPUs (2, 1.5, \"500m\")", v);
		if (milli)
			cpus /= 1000;
	} else {
		return bad(err, what, "a number of CPUs (2, 1.5, \"500m\")", v);
	}
	if (!(cpus > 0) || cpus > WORKER_MAX_CPUS)
		return out_of_range(err, what, v, WORKER_MAX_CPUS, "");
	*out = round_up(cpus);
	return 0;
}

int worker_memory_parse(json_t *v, const char *what, unsigned *out_mb, sbx_error_t *err)
{
	static const struct {
		const char *suffix;
		double per_mib;
	} units[] = { { "Ki", 1.0 / 1024 }, { "Mi", 1 }, { "Gi", 1024 }, { "Ti", 1024.0 * 1024 } };
	double mib;
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		mib = i < 0 ? -1 : i > (json_int_t)WORKER_MAX_MEMORY_MB ? WORKER_MAX_MEMORY_MB + 1.0 : (double)i;
	} else if (json_is_string(v)) {
		const char *text = json_string_value(v);
		size_t n = strlen(text);
		double per_mib = 1.0 / (1024 * 1024); /* plain digits: bytes */
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			if (n > 2 && strcmp(text + n - 2, units[i].suffix) == 0) {
				per_mib = units[i].per_mib;
				n -= 2;
				break;
			}
		}
		double amount;
		if (!decimal(text, n, &amount))
			return bad(err, what, "MiB as a number, or \"512Mi\", \"2Gi\", \"1048576Ki\" or bytes", v);
		mib = amount * per_mib;
	} else {
		return bad(err, what, "MiB as a number, or \"512Mi\", \"2Gi\", \"1048576Ki\" or bytes", v);
	}
	if (!(mib > 0) || mib > WORKER_MAX_MEMORY_MB)
		return out_of_range(err, what, v, WORKER_MAX_MEMORY_MB, " MiB");
	*out_mb = round_up(mib);
	return 0;
}

int worker_resources_parse(json_t *obj, const char *what, bool strict, struct worker_resources *out,
			   sbx_error_t *err)
{
	*out = (struct worker_resources){ 0, 0 };
	if (!json_is_object(obj))
		return bad(err, what, "a map of cpus and memory", obj);
	const char *key;
	json_t *v;
	char name[64];
	json_object_foreach (obj, key, v) {
		snprintf(name, sizeof(name), "%s.%.32s", what, key);
		int rc;
		if (json_is_null(v))
			rc = 0;
		else if (strcmp(key, "cpus") == 0)
			rc = worker_cpus_parse(v, name, &out->cpus, err);
		else if (strcmp(key, "memory") == 0)
			rc = worker_memory_parse(v, name, &out->memory_mb, err);
		else
			rc = strict ? sbx_error_set(err, EINVAL, "unknown key `%s`", name) : 0;
		if (rc < 0)
			return -1;
	}
	return 0;
}

struct worker_resources worker_resources_resolve(const char *worker, bool bundle, struct worker_resources request,
						 struct worker_resources manifest)
{
	struct worker_resources r = {
		request.cpus ? request.cpus : manifest.cpus ? manifest.cpus : WORKER_DEFAULT_CPUS,
		request.memory_mb ? request.memory_mb : manifest.memory_mb ? manifest.memory_mb : WORKER_DEFAULT_MEMORY_MB,
	};
	if (bundle && (r.cpus > WORKER_BUNDLE_MAX_CPUS || r.memory_mb > WORKER_BUNDLE_MAX_MEMORY_MB)) {
		sbx_warn("worker %s: a bundle asked for %u vCPUs and %u MiB; capped at %u vCPUs and %u MiB", worker,
			 r.cpus, r.memory_mb, WORKER_BUNDLE_MAX_CPUS, WORKER_BUNDLE_MAX_MEMORY_MB);
		if (r.cpus > WORKER_BUNDLE_MAX_CPUS)
			r.cpus = WORKER_BUNDLE_MAX_CPUS;
		if (r.memory_mb > WORKER_BUNDLE_MAX_MEMORY_MB)
			r.memory_mb = WORKER_BUNDLE_MAX_MEMORY_MB;
	}
	return r;
}
