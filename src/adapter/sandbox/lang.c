#include "adapter/sandbox/lang.h"

#include <errno.h>
#include <string.h>

#include "common/nearest.h"

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

int run_lang_check(const char *lang, sbx_error_t *err)
{
	size_t n = sizeof(table) / sizeof(table[0]);
	for (size_t i = 0; i < n; i++)
		if (strcmp(table[i].lang, lang) == 0)
			return 0;
	if (lang[0] == '\0')
		return sbx_error_set(err, EINVAL, "lang is empty");
	/* A program: an absolute path or a bare name, nothing a shell would split. */
	for (const char *c = lang; *c != '\0'; c++) {
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
		      strchr("._+-", *c) != NULL || (*c == '/' && lang[0] == '/')))
			return sbx_error_set(err, EINVAL,
					     "lang '%s' is neither a known lang (node, js, javascript, python, py, shell, "
					     "sh, bash) nor an interpreter's name or absolute path",
					     lang);
	}
	/* One edit from a known lang is a typo, not an interpreter ("nodejs",
	 * two from "node", may well be one). */
	for (size_t i = 0; strlen(lang) > 2 && i < n; i++)
		if (sbx_edit_distance(lang, table[i].lang) == 1)
			return sbx_error_set(err, EINVAL, "unknown lang '%s' (did you mean '%s'?)", lang, table[i].lang);
	return 0;
}
