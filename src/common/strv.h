/* NULL-terminated vectors of malloc'd strings (argv, env): one owner frees
 * the vector and every string in it. */
#ifndef SBX_COMMON_STRV_H
#define SBX_COMMON_STRV_H

#include <stddef.h>

/* Entries before the NULL; 0 for a NULL vector. */
size_t sbx_strv_len(char *const *v);
/* A deep copy (a NULL vector copies as an empty one); NULL when out of
 * memory. */
char **sbx_strv_dup(char *const *v);
/* Frees every string and the vector; NULL is a no-op. */
void sbx_strv_free(char **v);

static inline void sbx_strv_freep(char ***v)
{
	sbx_strv_free(*v);
}
#define cleanup_strv __attribute__((cleanup(sbx_strv_freep)))

#endif
