#include "vm/template_console.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/path.h"
#include "vm/console_ring.h"

/* The file's first CONSOLE_RING_SIZE bytes into the ring; an errno when
 * it cannot be read (ENOENT: the template has none). */
static int read_into(const char *dir, struct console_ring *r)
{
	cleanup_free char *p = sbx_path_join(dir, TEMPLATE_CONSOLE_FILE);
	if (p == NULL)
		return ENOMEM;
	cleanup_close int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return errno;
	if (!S_ISREG(st.st_mode))
		return EINVAL;
	char buf[4096];
	size_t total = 0;
	while (total < CONSOLE_RING_SIZE) {
		size_t want = CONSOLE_RING_SIZE - total < sizeof(buf) ? CONSOLE_RING_SIZE - total : sizeof(buf);
		ssize_t n = read(fd, buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		if (n == 0)
			break;
		console_ring_append(r, buf, (size_t)n);
		total += (size_t)n;
	}
	return 0;
}

char *template_console_lead(const char *dir, const char *key)
{
	cleanup_free struct console_ring *r = malloc(sizeof(*r));
	cleanup_free char *text = malloc(CONSOLE_RING_SIZE + 1);
	if (r == NULL || text == NULL)
		return NULL;
	console_ring_init(r);
	int e = read_into(dir, r);
	char *lead = NULL;
	int n;
	if (e == ENOENT)
		n = asprintf(&lead,
			     "--- the console of template %.12s's boot is not available (a template made by an "
			     "earlier version) ---\n",
			     key);
	else if (e != 0)
		n = asprintf(&lead, "--- the console of template %.12s's boot is not available: %s ---\n", key,
			     strerror(e));
	else {
		size_t len = console_ring_tail(r, text, CONSOLE_RING_SIZE, INT_MAX);
		bool open_line = len > 0 && text[len - 1] != '\n';
		n = asprintf(&lead,
			     "--- the console of template %.12s's boot, up to its save (at most its last %u bytes) "
			     "---\n%s%s--- the end of the template's console: this VM was restored from it ---\n",
			     key, CONSOLE_RING_SIZE, text, open_line ? "\n" : "");
	}
	return n < 0 ? NULL : lead;
}
