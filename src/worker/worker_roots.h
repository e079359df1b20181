/* Where a worker's host directory may be (contract §7.19): inside the
 * Compose project directory (III_COMPOSE_PROJECT_DIR) or the Compose
 * package cache ($III_COMPOSE_STATE_DIR/packages, else
 * ~/.iii/compose/packages), after symlinks and `..` are resolved. */
#ifndef SBX_WORKER_ROOTS_H
#define SBX_WORKER_ROOTS_H

#include <stdbool.h>

#include "common/error.h"

/* *canonical (malloc'd) is host_path resolved; *in_package_cache tells
 * which root holds it (the cache wins when the project holds the cache).
 * S501 naming both roots (an unset project directory as unset) when it is
 * in neither, does not resolve, or is not absolute. */
int worker_roots_check(const char *host_path, char **canonical, bool *in_package_cache, sbx_error_t *err);

/* worker_roots_check, then the directory pinned: *fd an O_PATH
 * descriptor (close-on-exec) of *canonical, opened without following any
 * symlink and whose own path is still *canonical.  What a caller uses
 * afterwards goes through *fd, never the path: a directory swapped for a
 * symlink later changes nothing.  S501 when the path changed during the
 * check, S001 "host_path <path>: Not a directory" for a file. */
int worker_roots_open(const char *host_path, char **canonical, bool *in_package_cache, int *fd, sbx_error_t *err);

/* The package cache as configured (not resolved), malloc'd. */
char *worker_package_cache(sbx_error_t *err);

/* True when canonical path `path` is `root` or below it ("/proj" does not
 * hold "/project2"). */
bool worker_path_within(const char *path, const char *root);

#endif
