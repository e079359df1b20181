/* Build products the daemon runs with (the boot disk, the network helper)
 * live beside its executable, or at their place in the build tree that
 * holds it: test programs sit a few directories deeper than the binary. */
#ifndef SBX_VM_EXE_DIR_H
#define SBX_VM_EXE_DIR_H

/* The first of `names` (paths relative to a directory, NULL-terminated)
 * that access(mode) accepts in the executable's directory or one of its
 * three parents, nearest first; a new string, or NULL when none is. */
char *vm_find_beside_exe(const char *const *names, int mode);

#endif
