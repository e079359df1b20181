/* Leveled logging to stderr.  The level comes from SANDBOX_LOG
 * (debug|info|warn|error, default info).  Never pass tokens, auth fields or
 * guest environment values to these functions. */
#ifndef SBX_COMMON_LOG_H
#define SBX_COMMON_LOG_H

enum sbx_log_level { SBX_LOG_DEBUG, SBX_LOG_INFO, SBX_LOG_WARN, SBX_LOG_ERROR };

/* Reads SANDBOX_LOG; returns -1 (and keeps "info") for an unknown value. */
int sbx_log_init_from_env(void);
void sbx_log_set_level(enum sbx_log_level level);
enum sbx_log_level sbx_log_get_level(void);
void sbx_log(enum sbx_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define sbx_debug(...) sbx_log(SBX_LOG_DEBUG, __VA_ARGS__)
#define sbx_info(...) sbx_log(SBX_LOG_INFO, __VA_ARGS__)
#define sbx_warn(...) sbx_log(SBX_LOG_WARN, __VA_ARGS__)
#define sbx_err(...) sbx_log(SBX_LOG_ERROR, __VA_ARGS__)

#endif
