/* One log line built in memory, text or JSON: the part of the log with no
 * state and no I/O, so that tests can read what it makes. */
#ifndef SBX_COMMON_LOG_LINE_H
#define SBX_COMMON_LOG_LINE_H

#include <stddef.h>
#include <time.h>

#include "common/log.h"

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
