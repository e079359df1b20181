/* Building file system paths. */
#ifndef SBX_COMMON_PATH_H
#define SBX_COMMON_PATH_H

/* "<dir>/<name>" (malloc'd), or NULL when out of memory. */
char *sbx_path_join(const char *dir, const char *name);
/* The last component of `path`, trailing slashes aside (malloc'd): "b" for
 * "/a/b/" and "b", "" for "/" and "", or NULL when out of memory. */
char *sbx_path_last(const char *path);

#endif
