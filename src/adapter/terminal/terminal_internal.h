/* One open terminal, shared by the table (terminal_table.c) and its two
 * pumps (terminal_pump.c). */
#ifndef SBX_ADAPTER_TERMINAL_TERMINAL_INTERNAL_H
#define SBX_ADAPTER_TERMINAL_TERMINAL_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>

#include "adapter/fs/fs_hold.h"
#include "adapter/terminal/terminal.h"

struct sbx_terminals {
	pthread_mutex_t lock;
	struct sbx_terminal *head;
};

struct sbx_terminal {
	struct sbx_terminal *next; /* in the table */
	struct sbx_terminals *table;
	char id[SBX_UUID_STRLEN + 1];
	struct fs_hold hold; /* the sandbox and its VM, until the output pump ends */
	const struct sbx_backend_ops *ops;
	void *proc; /* NULL while starting, and once freed */
	struct sbx_terminal_io io;
	/* What `ps --processes` lists, set before it enters the table */
	json_t *argv;       /* the command (owned) */
	int64_t started_ms; /* CLOCK_REALTIME */
	uint32_t pid;       /* in the guest; set with `proc` */

	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned refs;    /* each pump, and each caller of terminal_find() */
	bool closing;     /* close asked, the sandbox stopping, or the caller gone */
	bool writing;     /* the input pump is in proc_write (the proc stays) */
	unsigned resizing; /* resize calls in proc_resize (the proc stays) */
	bool out_done;    /* the output pump let go of the process and the VM */
};

/* terminal_ref.c: out of the table; the last reference frees (calling
 * io.release() when set). */
void terminal_remove(struct sbx_terminal *term);
void terminal_unref(struct sbx_terminal *term);

/* The pumps' side: starts both (detached), each holding a reference. */
int terminal_pumps_start(struct sbx_terminal *term, sbx_error_t *err);

#endif
