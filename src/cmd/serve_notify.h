/* serve under a service manager (systemd's Type=notify): READY=1 once the
 * engine has every function, STOPPING=1 when a stop begins.  Nothing is
 * sent when $NOTIFY_SOCKET is unset. */
#ifndef SBX_CMD_SERVE_NOTIFY_H
#define SBX_CMD_SERVE_NOTIFY_H

#include "engine/engine.h"

/* Waits until the engine connection has registered the worker and every
 * function added so far (they are sent before the connection counts as
 * registered), then sends READY=1; returns without it when the engine
 * stops or rejects the worker first.  Call after the functions are added. */
void serve_notify_ready(struct engine *e, const char *url);

/* STATUS=waiting for the engine at URL: why the start is still pending. */
void serve_notify_waiting(const char *url);

void serve_notify_stopping(void);

#endif
