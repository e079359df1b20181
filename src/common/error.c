#include "common/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Used when the error itself cannot be allocated: the failure is still
 * reported, with a fixed text instead of the lost one. */
static struct sbx_error oom_error = { ENOMEM, "", "out of memory while reporting an error" };

static void replace(sbx_error_t *err, int errnum, const char *scode, char *msg)
{
	sbx_error_free(err);
	struct sbx_error *e = calloc(1, sizeof(*e));
	if (e == NULL || msg == NULL) {
		free(e);
		free(msg);
		*err = &oom_error;
		return;
	}
	e->errnum = errnum;
	if (scode != NULL)
		snprintf(e->scode, sizeof(e->scode), "%s", scode);
	e->msg = msg;
	*err = e;
}

__attribute__((format(printf, 1, 0))) static char *vformat(const char *fmt, va_list ap)
{
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		return NULL;
	return s;
}

int sbx_error_set(sbx_error_t *err, int errnum, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = vformat(fmt, ap);
	va_end(ap);
	replace(err, errnum, NULL, msg);
	return -1;
}

int sbx_error_errno(sbx_error_t *err, int errnum, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *head = vformat(fmt, ap);
	va_end(ap);
	char *msg = NULL;
	if (head != NULL && asprintf(&msg, "%s: %s", head, strerror(errnum)) < 0)
		msg = NULL;
	free(head);
	replace(err, errnum, NULL, msg);
	return -1;
}

int sbx_error_scode(sbx_error_t *err, const char *scode, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = vformat(fmt, ap);
	va_end(ap);
	replace(err, 0, scode, msg);
	return -1;
}

int sbx_error_prefix(sbx_error_t *err, const char *fmt, ...)
{
	if (*err == NULL || *err == &oom_error)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	char *head = vformat(fmt, ap);
	va_end(ap);
	char *msg = NULL;
	if (head != NULL && asprintf(&msg, "%s: %s", head, (*err)->msg) < 0)
		msg = NULL;
	free(head);
	if (msg == NULL)
		return -1; /* keep the original message rather than lose it */
	free((*err)->msg);
	(*err)->msg = msg;
	return -1;
}

void sbx_error_default_scode(sbx_error_t *err, const char *scode)
{
	if (*err != NULL && *err != &oom_error && (*err)->scode[0] == '\0')
		snprintf((*err)->scode, sizeof((*err)->scode), "%s", scode);
}

const char *sbx_error_msg(sbx_error_t err)
{
	return err != NULL ? err->msg : "";
}

void sbx_error_free(sbx_error_t *err)
{
	if (*err != NULL && *err != &oom_error) {
		free((*err)->msg);
		free(*err);
	}
	*err = NULL;
}
