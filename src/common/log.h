/* Leveled logging to stderr.  The level comes from SANDBOX_LOG
 * (debug|info|warn|error, default info), the format from SANDBOX_LOG_FORMAT
 * (text, default, or json: one object per line).  Never pass tokens, auth
 * fields, guest environment values or guest data to these functions: ids
 * and names only. */
#ifndef SBX_COMMON_LOG_H
#define SBX_COMMON_LOG_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

enum sbx_log_level { SBX_LOG_DEBUG, SBX_LOG_INFO, SBX_LOG_WARN, SBX_LOG_ERROR };
enum sbx_log_format { SBX_LOG_TEXT, SBX_LOG_JSON };

/* A structured field: `key=value` in text, its own key in JSON.  Keys are
 * the code's own snake_case constants; a string field whose value is NULL
 * is left out. */
struct sbx_log_field {
	const char *key;
	const char *str; /* the value when not NULL ... */
	int64_t num;     /* ... else this number, when is_num */
	bool is_num;
};
#define SBX_LF_STR(k, v) ((struct sbx_log_field){ .key = (k), .str = (v) })
#define SBX_LF_INT(k, v) ((struct sbx_log_field){ .key = (k), .num = (int64_t)(v), .is_num = true })

/* Longest line written, newline included: a longer one is cut, and says so
 * ("..."), still a whole JSON object in JSON mode. */
#define SBX_LOG_LINE_MAX 4096

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
