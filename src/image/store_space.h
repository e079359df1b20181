/* The free space of the image store's file system, checked while an image
 * is built: a hostile or huge image stops with an error naming the
 * directory and what it needs, before it fills the host's disk. */
#ifndef SBX_IMAGE_STORE_SPACE_H
#define SBX_IMAGE_STORE_SPACE_H

#include <stdint.h>

#include "common/error.h"

/* Kept free for the host beside what an image needs. */
#define SBX_STORE_SPACE_RESERVE (256ull << 20)

/* Fails with S102 naming dir unless the file system of fd (open on dir)
 * has need + SBX_STORE_SPACE_RESERVE bytes free for an unprivileged writer. */
int sbx_store_space_check(int fd, const char *dir, uint64_t need, sbx_error_t *err);
/* The bytes an unprivileged writer may still write in the file system of
 * fd (open on dir; named in the error). */
int sbx_store_space_avail(int fd, const char *dir, uint64_t *avail, sbx_error_t *err);

#endif
