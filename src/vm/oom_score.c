#include "vm/oom_score.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"

void sbx_oom_protect_self(void)
{
	char value[16];
	int n = snprintf(value, sizeof(value), "%d", SBX_DAEMON_OOM_SCORE_ADJ);
	cleanup_close int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd >= 0 && write(fd, value, (size_t)n) == n) {
		sbx_debug("oom_score_adj %d: the OOM killer takes VMs before the daemon", SBX_DAEMON_OOM_SCORE_ADJ);
		return;
	}
	sbx_info("cannot lower the daemon's oom_score_adj (%s; it needs CAP_SYS_RESOURCE): under memory pressure "
		 "the OOM killer still picks VMs first (they run at 1000)",
		 strerror(errno));
}
