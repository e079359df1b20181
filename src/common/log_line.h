/* One log line built in memory, text or JSON: the part of the log with no
 * state and no I/O, so that tests can read what it makes.  Levels, formats
 * and fields are defined here, below the log (log.h) that uses them. */
#ifndef SBX_COMMON_LOG_LINE_H
#define SBX_COMMON_LOG_LINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

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

/* Writes the line (newline included, no NUL) into buf[cap] and returns its
 * length.  Text: "<time> <level> <msg> key=value...", a value quoted and
 * escaped when it holds a space, '"', '=', '\', a control byte or invalid
 * UTF-8.  JSON: {"time","level","msg",fields...} with every string
 * escaped, control bytes as \u00XX and invalid UTF-8 as \ufffd.  A line
 * longer than cap is cut and ends its cut string with "..."; the message
 * leaves room for the fields.  cap must be at least 256. */
size_t sbx_log_line(char *buf, size_t cap, enum sbx_log_format format, const struct timespec *ts,
		    enum sbx_log_level level, const struct sbx_log_field *fields, size_t n, const char *msg);

#endif
