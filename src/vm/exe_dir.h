/* Parts the daemon runs with (the boot disk, the network helper) are found
 * relative to its executable: at their installed place, <prefix>/<libexecdir>
 * /sandbox-libkrun/ with <prefix> the executable's directory less <bindir>
 * (so an installed tree can be moved whole), or at their place in the build
 * tree that holds it (test programs sit a few directories deeper). */
#ifndef SBX_VM_EXE_DIR_H
#define SBX_VM_EXE_DIR_H

/* The installed place of part `name` for an executable at `exe` (absolute),
 * given meson's bindir and libexecdir (relative to the prefix, or absolute);
 * a new string, or NULL when `exe` is not in <prefix>/<bindir>/ and
 * libexecdir is relative. */
char *vm_installed_part(const char *exe, const char *bindir, const char *libexecdir, const char *name);

/* The installed part `name` if access(mode) accepts it, else the first of
 * `build_names` (paths relative to a directory, NULL-terminated) accepted
 * in the executable's directory or one of its three parents, nearest
 * first; a new string, or NULL when none is. */
char *vm_find_part(const char *name, const char *const *build_names, int mode);

#endif
