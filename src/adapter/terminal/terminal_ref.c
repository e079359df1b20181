/* A terminal's life in memory (terminal_internal.h): leaving the table,
 * and the last reference freeing it. */
#include "adapter/terminal/terminal_internal.h"

#include <stdlib.h>

void terminal_unref(struct sbx_terminal *term)
{
	pthread_mutex_lock(&term->lock);
	bool last = --term->refs == 0;
	pthread_mutex_unlock(&term->lock);
	if (!last)
		return;
	if (term->io.release != NULL)
		term->io.release(term->io.ud);
	pthread_mutex_destroy(&term->lock);
	pthread_cond_destroy(&term->cond);
	json_decref(term->argv);
	free(term);
}

/* Called by the output pump before it lets go of the VM, so never after
 * the table is freed. */
void terminal_remove(struct sbx_terminal *term)
{
	struct sbx_terminals *t = term->table;
	pthread_mutex_lock(&t->lock);
	for (struct sbx_terminal **p = &t->head; *p != NULL; p = &(*p)->next) {
		if (*p == term) {
			*p = term->next;
			break;
		}
	}
	pthread_mutex_unlock(&t->lock);
}
