#include "adapter/sandbox/lang.h"

#include <string.h>

/* Isolated (-I: no user site, no PYTHON* env) and no .pyc written (-B). */
static char *const python_warm_up[] = { "python3", "-I", "-B", "-c", "pass", NULL };
static char *const node_warm_up[] = { "node", "-e", "0", NULL };
static char *const sh_warm_up[] = { "/bin/sh", "-c", ":", NULL };

static const struct {
	const char *lang;
	struct run_lang l;
} table[] = {
	{ "node", { "node", "/tmp/run.js", node_warm_up } },
	{ "js", { "node", "/tmp/run.js", node_warm_up } },
	{ "javascript", { "node", "/tmp/run.js", node_warm_up } },
	{ "python", { "python3", "/tmp/run.py", python_warm_up } },
	{ "py", { "python3", "/tmp/run.py", python_warm_up } },
	{ "shell", { "/bin/sh", "/tmp/run.sh", sh_warm_up } },
	{ "sh", { "/bin/sh", "/tmp/run.sh", sh_warm_up } },
	{ "bash", { "/bin/sh", "/tmp/run.sh", sh_warm_up } },
};

struct run_lang run_lang_lookup(const char *lang)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (strcmp(table[i].lang, lang) == 0)
			return table[i].l;
	}
	return (struct run_lang){ lang, "/tmp/run.txt", NULL };
}
