/* A whole-request deadline for the connections of the metrics endpoint:
 * libmicrohttpd's own timeout counts idle time only, so a client that sends
 * one header line every few seconds would hold its connection for ever.
 * Each connection is timed from its accept, and again from the end of each
 * of its requests; one past the deadline is shut down (the server then sees
 * its end and closes it).  A thread of its own checks every second. */
#ifndef SBX_CMD_SERVE_DEADLINE_H
#define SBX_CMD_SERVE_DEADLINE_H

#include <stdbool.h>

#include "common/error.h"

struct serve_deadline;

/* Watches at most `slots` connections at once (the server's connection
 * limit), each for `deadline_ms`.  NULL with *err when the thread cannot
 * start. */
struct serve_deadline *serve_deadline_start(unsigned slots, int deadline_ms, sbx_error_t *err);
/* Ends the thread; the connections still open are left to their server. */
void serve_deadline_stop(struct serve_deadline *d);

/* A connection accepted on `fd`: its token goes to serve_deadline_restart
 * and serve_deadline_closed.  With every slot taken (the server let more in
 * than it said) the connection is shut at once and the token is NULL. */
void *serve_deadline_opened(struct serve_deadline *d, int fd);
/* Its request was answered: the next one has a deadline of its own. */
void serve_deadline_restart(struct serve_deadline *d, void *token);
/* The server closes it: its descriptor is never touched again. */
void serve_deadline_closed(struct serve_deadline *d, void *token);

#endif
