/* Wall-clock times as the replies show them: CLOCK_REALTIME milliseconds,
 * and their RFC 3339 UTC text with milliseconds ("2026-12-02T15:59:15.320Z"). */
#ifndef SBX_COMMON_WALL_TIME_H
#define SBX_COMMON_WALL_TIME_H

#include <jansson.h>
#include <stdint.h>

#define SBX_WALL_TEXT_LEN 32 /* the text and its NUL, with room to spare */

/* CLOCK_REALTIME now, in milliseconds. */
int64_t sbx_wall_ms(void);
/* `ms` (CLOCK_REALTIME) as RFC 3339 text: 0, or -1 when it cannot be
 * written (a time gmtime refuses). */
int sbx_wall_text(int64_t ms, char out[SBX_WALL_TEXT_LEN]);
/* Sets o[key] to that text; leaves o alone when it cannot be written. */
void sbx_wall_set(json_t *o, const char *key, int64_t ms);

#endif
