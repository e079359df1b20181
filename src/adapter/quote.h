/* Quoting of caller input inside messages, in the style of the Rust `{:?}`
 * formatting the contract's message texts use ("cmd=\"node 'x\"",
 * ["9bad", "a-b"]), so agents see exactly which value was rejected. */
#ifndef SBX_ADAPTER_QUOTE_H
#define SBX_ADAPTER_QUOTE_H

#include <jansson.h>

/* "text" with \" \\ \n \r \t \0 and \u{hex} for other control bytes.
 * Returns a malloc'd string or NULL when out of memory. */
char *sbx_quote(const char *s);
/* ["a", "b"] for a JSON array of strings (non-strings are skipped). */
char *sbx_quote_list(json_t *array);

#endif
