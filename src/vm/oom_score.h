/* Who the kernel's OOM killer picks.  Every QEMU raises its own score to
 * the maximum (keeper.c); the daemon asks for a negative one, which needs
 * CAP_SYS_RESOURCE.  Without it the daemon keeps the default score, still
 * far below any VM's. */
#ifndef SBX_VM_OOM_SCORE_H
#define SBX_VM_OOM_SCORE_H

#define SBX_DAEMON_OOM_SCORE_ADJ (-500)

/* Sets this process's oom_score_adj to SBX_DAEMON_OOM_SCORE_ADJ, logging
 * the outcome. */
void sbx_oom_protect_self(void);

#endif
