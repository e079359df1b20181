/* Scope-bound release of memory and descriptors (GCC/Clang cleanup
 * attribute): keeps error paths short and leak-free. */
#ifndef SBX_COMMON_CLEANUP_H
#define SBX_COMMON_CLEANUP_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void sbx_freep(void *p)
{
	free(*(void **)p);
}

static inline void sbx_closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

static inline void sbx_fclosep(FILE **f)
{
	if (*f != NULL)
		fclose(*f);
}

static inline void sbx_closedirp(DIR **d)
{
	if (*d != NULL)
		closedir(*d);
}

/* Both ends of a socketpair or pipe; -1 ends are skipped. */
static inline void sbx_close_pairp(int (*pair)[2])
{
	for (int i = 0; i < 2; i++) {
		if ((*pair)[i] >= 0)
			close((*pair)[i]);
	}
}

#define cleanup_free __attribute__((cleanup(sbx_freep)))
#define cleanup_close __attribute__((cleanup(sbx_closep)))
#define cleanup_file __attribute__((cleanup(sbx_fclosep)))
#define cleanup_dir __attribute__((cleanup(sbx_closedirp)))
#define cleanup_fd_pair __attribute__((cleanup(sbx_close_pairp)))

/* Hands ownership out of a cleanup-scoped variable. */
#define sbx_steal_ptr(p) ({ __typeof__(p) _tmp = (p); (p) = NULL; _tmp; })
#define sbx_steal_fd(fd) ({ int _tmp = (fd); (fd) = -1; _tmp; })

#endif
