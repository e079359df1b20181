/* Wall-clock times as text (wall_time.h). */
#include "common/wall_time.h"

#include <stdio.h>
#include <time.h>

int64_t sbx_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sbx_wall_text(int64_t ms, char out[SBX_WALL_TEXT_LEN])
{
	out[0] = '\0';
	if (ms < 0)
		return -1;
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char buf[SBX_WALL_TEXT_LEN];
	if (gmtime_r(&t, &tm) == NULL || strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		return -1;
	int n = snprintf(out, SBX_WALL_TEXT_LEN, "%s.%03dZ", buf, (int)(ms % 1000));
	if (n < 0 || n >= SBX_WALL_TEXT_LEN) {
		out[0] = '\0';
		return -1;
	}
	return 0;
}

void sbx_wall_set(json_t *o, const char *key, int64_t ms)
{
	char text[SBX_WALL_TEXT_LEN];
	if (sbx_wall_text(ms, text) == 0)
		json_object_set_new(o, key, json_string(text));
}
