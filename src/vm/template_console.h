/* The console of a template's boot (vm/snapshot.h).  The save keeps what
 * the guest wrote up to HELLO, at most the console ring's last
 * CONSOLE_RING_SIZE bytes, made printable (vm/console_ring.h), as the
 * template's "console" file; a VM restored from the template starts its
 * console log with it, between two marker lines, or with one line saying
 * the template has none (made by an older version). */
#ifndef SBX_VM_TEMPLATE_CONSOLE_H
#define SBX_VM_TEMPLATE_CONSOLE_H

#define TEMPLATE_CONSOLE_FILE "console"

/* The lead of the console log of a VM restored from the template in
 * `dir` (key: the template's).  Reads at most CONSOLE_RING_SIZE bytes of
 * the file, opened once, never through a link, and prints them as the
 * ring does (control bytes become '?').  NULL only when out of memory. */
char *template_console_lead(const char *dir, const char *key);

#endif
