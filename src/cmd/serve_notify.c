#include "cmd/serve_notify.h"

#include <stdlib.h>
#include <systemd/sd-daemon.h>

#include "common/log.h"

#define WAIT_STEP_MS 1000

void serve_notify_ready(struct engine *e, const char *url)
{
	if (getenv("NOTIFY_SOCKET") == NULL)
		return;
	bool said_waiting = false;
	for (;;) {
		sbx_error_t err = NULL;
		int rc = engine_wait_connected(e, WAIT_STEP_MS, &err);
		sbx_error_free(&err);
		if (rc == 0)
			break;
		if (engine_fatally_rejected(e) || engine_stopping(e))
			return;
		if (!said_waiting)
			serve_notify_waiting(url);
		said_waiting = true;
	}
	int rc = sd_notifyf(0, "READY=1\nSTATUS=serving, connected to %s", url);
	if (rc < 0)
		sbx_warn("sd_notify READY=1 failed (%d); the service manager will not see serve ready", rc);
	else
		sbx_debug("sd_notify: READY=1");
}

void serve_notify_waiting(const char *url)
{
	/* The manager shows the start as pending until READY=1; say why. */
	if (getenv("NOTIFY_SOCKET") != NULL && sd_notifyf(0, "STATUS=waiting for the engine at %s", url) < 0)
		sbx_warn("sd_notify: cannot send the status");
}

void serve_notify_stopping(void)
{
	if (getenv("NOTIFY_SOCKET") != NULL && sd_notify(0, "STOPPING=1") < 0)
		sbx_warn("sd_notify STOPPING=1 failed");
}
