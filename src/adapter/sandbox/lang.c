#include "adapter/sandbox/lang.h"

#include <string.h>

static const struct {
	const char *lang;
	struct run_lang l;
} table[] = {
	{ "node", { "node", "/tmp/run.js" } },
	{ "js", { "node", "/tmp/run.js" } },
	{ "javascript", { "node", "/tmp/run.js" } },
	{ "python", { "python3", "/tmp/run.py" } },
	{ "py", { "python3", "/tmp/run.py" } },
	{ "shell", { "/bin/sh", "/tmp/run.sh" } },
	{ "sh", { "/bin/sh", "/tmp/run.sh" } },
	{ "bash", { "/bin/sh", "/tmp/run.sh" } },
};

struct run_lang run_lang_lookup(const char *lang)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (strcmp(table[i].lang, lang) == 0)
			return table[i].l;
	}
	return (struct run_lang){ lang, "/tmp/run.txt" };
}
