/* run's lang table (contract §7.7): interpreter and code file per lang. */
#ifndef SBX_ADAPTER_LANG_H
#define SBX_ADAPTER_LANG_H

#include "common/error.h"

struct run_lang {
	const char *program; /* looked up in the guest's PATH unless absolute */
	const char *file;    /* where the code is written */
	char *const *warm_up; /* the program started once, writing nothing
				 (no bytecode, no user dirs), by a warm pool's
				 VM of the image named like the lang (proto.h
				 WARM_UP); NULL for any other lang */
};

/* node/js/javascript, python/py, shell/sh/bash (-> /bin/sh: bash is not in
 * every image); any other lang is the program itself, with /tmp/run.txt. */
struct run_lang run_lang_lookup(const char *lang);

/* Fails, naming the mistake, for a lang that can only fail in the guest:
 * empty, not a program's name or absolute path, or a typo of a known lang
 * (within sbx_nearest's distance).  For a check before booting a VM. */
int run_lang_check(const char *lang, sbx_error_t *err);

#endif
