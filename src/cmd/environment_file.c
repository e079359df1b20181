#include "cmd/environment_file.h"

#include <sys/stat.h>

#include "common/log.h"

#define ENVIRONMENT_FILE SBX_SYSCONFDIR "/sandbox-libkrun/environment"

void environment_file_check(void)
{
	struct stat st;
	if (stat(ENVIRONMENT_FILE, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & S_IROTH) != 0)
		sbx_warn("config: %s (the service's environment: the worker token, registry_auth's ${VAR} values) "
			 "is readable by every user: make it 0600 (or 0640 with a group of its own)",
			 ENVIRONMENT_FILE);
}
