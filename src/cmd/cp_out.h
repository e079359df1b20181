/* `cp ID:/path DST` (cmd_cp.c): a sandbox's file or tree written on the
 * host.  What the daemon sends is the guest's word: names, modes, sizes
 * and bytes are hostile (docs/security.md, "The operator's cp"). */
#ifndef SBX_CMD_CP_OUT_H
#define SBX_CMD_CP_OUT_H

#include <jansson.h>
#include <stdint.h>

#include "cmd/control_client.h"

/* --max-bytes when not given: the most a copy out may write in all. */
#define CP_MAX_BYTES_DEFAULT (1ull << 30)
/* What each file or directory counts against --max-bytes besides its
 * bytes (a block of the host's disk at the least), so that the bound
 * bounds the number of entries too. */
#define CP_ENTRY_BYTES 4096u

/* Copies the guest's `guest` (its fs::stat entry `entry`) to `dst`: into
 * it when it is an existing directory (keeping the guest's name), else as
 * `dst` itself.  Every host entry is created new (O_EXCL, mkdirat) under a
 * directory descriptor and never followed; modes lose setuid, setgid and
 * sticky bits and are masked by the umask; a file gets no byte past the
 * size the guest declared for it (more is an error and the file is
 * removed); the declared sizes, and CP_ENTRY_BYTES for each entry,
 * together stay within max_bytes (checked before each entry is created).
 * `dst` is not empty.  Returns a CLI_EXIT_* code after printing what
 * failed. */
int cp_out(const struct cli_opts *o, const char *ref, const char *guest, json_t *entry, const char *dst,
	   uint64_t max_bytes);

#endif
