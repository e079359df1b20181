/* Terminals: a command on a pseudo-terminal in a sandbox's guest, fed keys
 * and read for its screen by two pump threads (terminal_pump.c), kept in
 * the adapter's table of open terminals (terminal_table.c).  Where the keys
 * come from and the screen goes to is the caller's: terminal::open binds
 * them to engine channels (handlers_terminal.c), the operator's `shell` to
 * its control socket (control/control_shell.c).
 *
 * A terminal takes no exec slot.  Its output pump holds the sandbox's VM
 * (like an fs operation) and polls for `stop`, so stopping the sandbox ends
 * every terminal in it.  Keys bump the sandbox's idle clock; output does
 * not.  The terminal leaves the table when its command exits. */
#ifndef SBX_ADAPTER_TERMINAL_TERMINAL_H
#define SBX_ADAPTER_TERMINAL_TERMINAL_H

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

#include "adapter/adapter_state.h"
#include "common/error.h"
#include "common/uuid.h"

#define SBX_TERMINALS_PER_SANDBOX 8u /* open terminals of one sandbox (S003 past it) */
#define SBX_TERMINAL_GRACE_MS 2000   /* SIGHUP, then SIGKILL after this */
#define SBX_TERMINAL_DIM_MAX 1000u   /* rows, cols: 1..this */

/* The caller's ends.  keys() and release() run on the input pump's thread
 * (release() may instead run on the output pump's), screen() and ended()
 * on the output pump's. */
struct sbx_terminal_io {
	/* The next keys: >0 bytes at *data (valid until the next call), 0 when
	 * the caller has no more (the command runs on: on a terminal the end
	 * of input is a key, ^D), -1 when the caller is gone (the terminal
	 * then closes).  Blocks until keys come. */
	ssize_t (*keys)(void *ud, const uint8_t **data, sbx_error_t *err);
	/* Screen bytes; -1 when the caller is gone: the terminal then closes. */
	int (*screen)(void *ud, const void *data, size_t len, sbx_error_t *err);
	/* Once, after the last screen(): the command's exit status (0-255,
	 * 128+signal; -1 when unknown) and, when the terminal broke, why. */
	void (*ended)(void *ud, int exit_code, const char *fail);
	/* Optional, from the output pump's thread once the command is gone:
	 * makes a keys() blocked meanwhile return. */
	void (*wake)(void *ud);
	/* Once nothing calls the above any more: frees ud. */
	void (*release)(void *ud);
	void *ud;
};

struct sbx_terminal_spec {
	char *const *argv;  /* non-empty */
	char *const *env;   /* "K=V", layered over the sandbox's */
	uint16_t rows, cols; /* 1..SBX_TERMINAL_DIM_MAX */
};

struct sbx_terminals;
struct sbx_terminals *sbx_terminals_new(sbx_error_t *err);
/* Once every sandbox stopped (their terminals have left the table). */
void sbx_terminals_free(struct sbx_terminals *t);

/* Starts `spec` in sandbox `sandbox_id` (any UUID form: S001 otherwise;
 * S002/S004; S003 past SBX_TERMINALS_PER_SANDBOX; S300 without a VM or
 * when the guest cannot start it) and its pumps; fills `terminal_id`.  On
 * success io->release() will be called once; on failure it is not. */
int sbx_terminal_open(struct sbx_adapter *a, const char *sandbox_id, const struct sbx_terminal_spec *spec,
		      const struct sbx_terminal_io *io, char terminal_id[SBX_UUID_STRLEN + 1], sbx_error_t *err);
/* The open terminals of sandbox `sandbox_id` (canonical), newest first:
 * [{terminal_id, argv, pid, started_at}, ...]; NULL when out of memory. */
json_t *sbx_terminal_rows(struct sbx_terminals *t, const char *sandbox_id);
/* S001 for an unknown terminal_id (naming it), S002/S004 for the sandbox. */
int sbx_terminal_resize(struct sbx_adapter *a, const char *sandbox_id, const char *terminal_id, uint16_t rows,
			uint16_t cols, sbx_error_t *err);
/* SIGHUP to the command's group, SIGKILL after SBX_TERMINAL_GRACE_MS;
 * returns once the output pump ended (the screen's end sent). */
int sbx_terminal_close(struct sbx_adapter *a, const char *sandbox_id, const char *terminal_id, sbx_error_t *err);

#endif
