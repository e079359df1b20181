/* The service's environment file, SYSCONFDIR/sandbox-libkrun/environment
 * (the unit's EnvironmentFile=): it holds the worker token and
 * registry_auth's ${VAR} values.  systemd reads it, not the daemon, which
 * knows it by the path the package installs it at. */
#ifndef SBX_CMD_ENVIRONMENT_FILE_H
#define SBX_CMD_ENVIRONMENT_FILE_H

/* Warns when the file exists and every user may read it. */
void environment_file_check(void);

#endif
