#include "cmd/image_template.h"

#include <stdio.h>
#include <stdlib.h>

#include "adapter/vm_backend/template_warm.h"
#include "adapter/vm_backend/vm_backend.h"
#include "common/clock.h"
#include "common/log.h"
#include "jail/jail.h"
#include "vm/vm.h"

#define PREFIX "sandbox-libkrun image: "

static void not_made(const char *name, sbx_error_t *err)
{
	fprintf(stderr, PREFIX "warning: the template of %s was not made: %s (its first create will make it)\n",
		name, sbx_error_msg(*err));
	sbx_error_free(err);
}

void image_template_make(const struct sbx_config *cfg, const char *name, const char *ref)
{
	/* The VM layer's info lines would bury the lines of this step. */
	if (getenv("SANDBOX_LOG") == NULL)
		sbx_log_set_level(SBX_LOG_WARN);
	fprintf(stderr, PREFIX "making the VM template of %s (%u CPU%s, %u MiB)\n", name, cfg->default_cpus,
		cfg->default_cpus == 1 ? "" : "s", cfg->default_memory_mb);
	int64_t t0 = sbx_now_ms();
	sbx_error_t err = NULL;
	if (sbx_config_decide_accel(cfg, &err) < 0) {
		not_made(name, &err);
		return;
	}
	struct sbx_jail_host *jail = sbx_jail_host_new(cfg->jail, cfg->jail_uid_base, &err);
	void *backend = jail != NULL ? vm_backend_new(cfg, jail, &err) : NULL;
	void *vm = backend != NULL ? template_boot(cfg, &vm_backend_ops, backend, name, ref, &err) : NULL;
	if (vm == NULL) {
		not_made(name, &err);
		vm_backend_free(backend);
		return;
	}
	const struct sbx_vm_timings *t = sbx_vm_timings(vm_backend_vm(vm));
	bool saved = t->saved, present = t->restored && !t->saved;
	vm_backend_ops.stop(vm);
	vm_backend_free(backend);
	double s = (double)(sbx_now_ms() - t0) / 1000.0;
	if (saved)
		fprintf(stderr, PREFIX "the template of %s: saved in %.1f s\n", name, s);
	else if (present)
		fprintf(stderr, PREFIX "the template of %s: already made (checked in %.1f s)\n", name, s);
	else
		fprintf(stderr,
			PREFIX "the template of %s: not saved here (%.1f s): another process was making it, or the "
			       "warning above says why\n",
			name, s);
}
