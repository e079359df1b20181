#include "vm/accel.h"

#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/scodes.h"

int sbx_accel_parse(const char *s, enum sbx_accel *out, sbx_error_t *err)
{
	if (s == NULL || s[0] == '\0' || strcmp(s, "auto") == 0)
		*out = SBX_ACCEL_AUTO;
	else if (strcmp(s, "kvm") == 0)
		*out = SBX_ACCEL_KVM;
	else if (strcmp(s, "tcg") == 0)
		*out = SBX_ACCEL_TCG;
	else
		return sbx_error_set(err, EINVAL, "accel must be auto, kvm or tcg");
	return 0;
}

const char *sbx_accel_name(enum sbx_accel a)
{
	return a == SBX_ACCEL_KVM ? "kvm" : a == SBX_ACCEL_TCG ? "tcg" : "auto";
}

int sbx_accel_decide(enum sbx_accel want, const struct sbx_kvm_probe *p, enum sbx_accel *out, char *why,
		     size_t why_cap, sbx_error_t *err)
{
	if (why != NULL && why_cap > 0)
		why[0] = '\0';
	if (want == SBX_ACCEL_TCG || p->cause == SBX_KVM_USABLE) {
		*out = want == SBX_ACCEL_TCG ? SBX_ACCEL_TCG : SBX_ACCEL_KVM;
		return 0;
	}
	char cause[512];
	sbx_kvm_explain(p, cause, sizeof(cause));
	if (want == SBX_ACCEL_KVM)
		return sbx_error_scode(err, SBX_S_VM_BOOT, "accel kvm is unusable here: %s; or use accel tcg (or auto)",
				       cause);
	*out = SBX_ACCEL_TCG;
	if (why != NULL && why_cap > 0)
		snprintf(why, why_cap, "%s", cause);
	return 0;
}

/* The probe, or what the test hook makes of it. */
static void probe_host(struct sbx_kvm_probe *p)
{
	const char *hook = getenv(SBX_ACCEL_PROBE_ENV);
	if (hook != NULL && strcmp(hook, "usable") == 0)
		*p = (struct sbx_kvm_probe){ .cause = SBX_KVM_USABLE, .api_version = KVM_API_VERSION };
	else
		sbx_kvm_probe(&sbx_kvm_real_host, p);
}

int sbx_accel_choose(enum sbx_accel want, enum sbx_accel *out, sbx_error_t *err)
{
	if (want == SBX_ACCEL_TCG) {
		*out = SBX_ACCEL_TCG;
		return 0;
	}
	struct sbx_kvm_probe p;
	probe_host(&p);
	char why[512];
	if (sbx_accel_decide(want, &p, out, why, sizeof(why), err) < 0)
		return -1;
	static atomic_bool warned;
	if (why[0] != '\0' && !atomic_exchange(&warned, true))
		sbx_warn("KVM is not usable, VMs run under TCG emulation (a cold boot takes seconds, code runs "
			 "20-50x slower): %s",
			 why);
	return 0;
}

void sbx_accel_choice_init(struct sbx_accel_choice *c, enum sbx_accel want)
{
	c->want = want;
	atomic_init(&c->in_use, SBX_ACCEL_AUTO);
}

int sbx_accel_choice_decide(struct sbx_accel_choice *c, sbx_error_t *err)
{
	enum sbx_accel a;
	if (sbx_accel_choose(c->want, &a, err) < 0)
		return -1;
	atomic_store(&c->in_use, (int)a);
	return 0;
}

enum sbx_accel sbx_accel_choice_get(const struct sbx_accel_choice *c)
{
	int a = atomic_load(&c->in_use);
	return a != SBX_ACCEL_AUTO ? (enum sbx_accel)a : c->want;
}

bool sbx_accel_choice_fall_back(struct sbx_accel_choice *c, const char *cause)
{
	if (c->want != SBX_ACCEL_AUTO)
		return false;
	int was = SBX_ACCEL_KVM;
	if (atomic_compare_exchange_strong(&c->in_use, &was, SBX_ACCEL_TCG))
		sbx_warn("a VM could not start under KVM (%s): from now on this process's VMs run under TCG "
			 "emulation (a cold boot takes seconds, code runs 20-50x slower); set accel: tcg to skip "
			 "KVM, or fix the host's KVM and restart",
			 cause);
	return atomic_load(&c->in_use) == SBX_ACCEL_TCG;
}

uint32_t sbx_kvm_overhead_mib(uint32_t guest_mib, uint32_t cpus)
{
	uint32_t per_map = (guest_mib + 511) / 512;
	return 2 * per_map + cpus + 2;
}
