/* Fakes of the process port (a pty-like process: echoes keys, answers
 * `stty size`, exits on `exit`, on SIGHUP unless told to ignore it, and on
 * SIGKILL), of exec (`cat` answers its stdin; any other command runs until
 * cancelled, S004, or its deadline, S200) and of the stream port
 * (in-memory channels), for test_terminal.c and test_control_shell.c. */
#ifndef SBX_TEST_FAKE_TERM_PORTS_H
#define SBX_TEST_FAKE_TERM_PORTS_H

#include <jansson.h>
#include <stdbool.h>

#include "adapter/adapter_state.h"

extern const struct sbx_backend_ops fake_term_backend;
extern const struct sbx_stream_ops fake_term_streams;

struct fake_term_state {
	int procs_live, procs_started, readers_open, writers_open;
	int hups, kills, stdin_closed;
	int execs_live, execs_cancelled; /* exec: running now; ended by cancelled() */
	int exec_polls;                  /* cancelled() answers "no" seen by an exec */
	bool ignore_hup;  /* the next processes ignore SIGHUP */
	bool fail_start;  /* proc_start fails (S300) */
	char last_argv2[256], last_env0[64];
	int last_rows, last_cols; /* the last start's or resize's */
};

/* Copies the counters (under the fakes' lock). */
struct fake_term_state fake_term_state(void);
void fake_term_set(bool ignore_hup, bool fail_start);

/* Channels by the channel_id of a ref the adapter handed out. */
/* Appends keys to the channel (what a caller writing its writer ref does). */
void fake_chan_write(json_t *ref, const char *text);
/* Ends the channel normally (the caller closes its writer). */
void fake_chan_close(json_t *ref);
/* Ends the channel as a writer that vanished (the reader gets -1). */
void fake_chan_abort(json_t *ref);
/* Waits up to ms for the channel's bytes to contain `needle`. */
bool fake_chan_wait_for(json_t *ref, const char *needle, int ms);
/* Waits up to ms for the channel to be closed; *fail gets the error
 * frame's text, "" for a normal end. */
bool fake_chan_wait_closed(json_t *ref, int ms, char *fail, size_t len);
/* Waits up to ms for pred() on the state. */
bool fake_term_wait(bool (*pred)(const struct fake_term_state *s), int ms);

#endif
