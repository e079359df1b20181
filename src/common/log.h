/* Leveled logging to stderr.  The level comes from SANDBOX_LOG
 * (debug|info|warn|error, default info), the format from SANDBOX_LOG_FORMAT
 * (text, default, or json: one object per line).  Never pass tokens, auth
 * fields, guest environment values or guest data to these functions: ids
 * and names only. */
#ifndef SBX_COMMON_LOG_H
#define SBX_COMMON_LOG_H

#include <stddef.h>

#include "common/error.h"
#include "common/log_line.h"

/* Reads SANDBOX_LOG; returns -1 (and keeps "info") for an unknown value. */
int sbx_log_init_from_env(void);
/* Reads SANDBOX_LOG_FORMAT; an unknown value is an error naming it. */
int sbx_log_format_from_env(sbx_error_t *err);
void sbx_log_set_level(enum sbx_log_level level);
enum sbx_log_level sbx_log_get_level(void);
void sbx_log_set_format(enum sbx_log_format format);
void sbx_log(enum sbx_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sbx_log_fields(enum sbx_log_level level, const struct sbx_log_field *fields, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* sbx_log_kv(level, fields, fmt, ...) for a fields array in scope. */
#define sbx_log_kv(level, fields, ...) \
	sbx_log_fields(level, fields, sizeof(fields) / sizeof((fields)[0]), __VA_ARGS__)

#define sbx_debug(...) sbx_log(SBX_LOG_DEBUG, __VA_ARGS__)
#define sbx_info(...) sbx_log(SBX_LOG_INFO, __VA_ARGS__)
#define sbx_warn(...) sbx_log(SBX_LOG_WARN, __VA_ARGS__)
#define sbx_err(...) sbx_log(SBX_LOG_ERROR, __VA_ARGS__)

#endif
