#include <stdbool.h>
#include <string.h>

#include "harness.h"
#include "vm/qemu_cmdline.h"

static struct qemu_config base(void)
{
	return (struct qemu_config){
		.qemu = "/usr/bin/qemu-system-x86_64", .kernel = "/s/k.pvh", .boot_disk = "/b/boot.erofs",
		.image = "/i/img.erofs", .scratch = "/v/scratch.ext4", .cpus = 2, .memory_mib = 256,
		.accel = SBX_ACCEL_TCG, .console_fd = 4, .control_fd = 5, .tcg_cache_mib = 64,
	};
}

/* Index of the argument equal to s, or -1. */
static int find(char **v, const char *s)
{
	for (int i = 0; v[i] != NULL; i++) {
		if (strcmp(v[i], s) == 0)
			return i;
	}
	return -1;
}

/* The value that follows option `opt` (first occurrence). */
static const char *after(char **v, const char *opt)
{
	int i = find(v, opt);
	return i >= 0 && v[i + 1] != NULL ? v[i + 1] : NULL;
}

TEST(tcg_command_line)
{
	struct qemu_config c = base();
	sbx_error_t err = NULL;
	char **v = qemu_cmdline(&c, &err);
	CHECK(v != NULL);
	CHECK_STR(v[0], "/usr/bin/qemu-system-x86_64");
	CHECK_STR(after(v, "-M"), "microvm,acpi=off,ioapic2=off");
	CHECK(find(v, "-nodefaults") > 0);
	CHECK(find(v, "-no-user-config") > 0);
	CHECK(find(v, "-no-reboot") > 0);
	CHECK_STR(after(v, "-sandbox"), "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny");
	/* base() has 2 vCPUs: one TCG thread for both; a single vCPU gets its own. */
	CHECK_STR(after(v, "-accel"), "tcg,thread=single,tb-size=64");
	c.cpus = 1;
	char **one = qemu_cmdline(&c, &err);
	CHECK(one != NULL);
	CHECK_STR(after(one, "-accel"), "tcg,thread=multi,tb-size=64");
	sbx_strv_free(one);
	c.cpus = 2;
	CHECK_STR(after(v, "-cpu"), "max,erms=off,fsrm=off");
	CHECK_STR(after(v, "-smp"), "2");
	CHECK_STR(after(v, "-m"), "256");
	CHECK_STR(after(v, "-kernel"), "/s/k.pvh");
	CHECK_STR(after(v, "-append"), "root=/dev/vda rootfstype=erofs ro init=/init console=hvc0 panic=-1 "
					"reboot=t quiet noapictimer tsc=reliable norandmaps");
	CHECK(find(v, "socket,id=console,fd=4") > 0);
	CHECK(find(v, "socket,id=control,fd=5") > 0);
	CHECK(find(v, "virtconsole,chardev=console") > 0);
	CHECK(find(v, "virtserialport,chardev=control,name=control") > 0);
	CHECK(find(v, "virtio-rng-device") > 0);
	CHECK(find(v, "virtio-balloon-device,free-page-reporting=on") > 0);
	/* Disk order is the guest's vda, vdb, vdc. */
	int boot = find(v, "file=/b/boot.erofs,if=none,id=boot,format=raw,readonly=on,cache=writeback");
	int image = find(v, "file=/i/img.erofs,if=none,id=image,format=raw,readonly=on,cache=writeback");
	int scratch = find(v, "file=/v/scratch.ext4,if=none,id=scratch,format=raw,readonly=off,cache=unsafe,discard=unmap");
	CHECK(boot > 0 && image > boot && scratch > image);
	CHECK(find(v, "-netdev") < 0);
	sbx_strv_free(v);
}

TEST(scratch_disk_written_without_the_page_cache)
{
	struct qemu_config c = base();
	c.scratch_direct = true;
	sbx_error_t err = NULL;
	char **v = qemu_cmdline(&c, &err);
	CHECK(v != NULL);
	CHECK(find(v, "file=/v/scratch.ext4,if=none,id=scratch,format=raw,readonly=off,cache.direct=on,"
		      "cache.no-flush=on,discard=unmap") > 0);
	/* The images stay in the page cache every VM of them shares. */
	CHECK(find(v, "file=/i/img.erofs,if=none,id=image,format=raw,readonly=on,cache=writeback") > 0);
	sbx_strv_free(v);
}

TEST(kvm_command_line)
{
	struct qemu_config c = base();
	c.accel = SBX_ACCEL_KVM;
	sbx_error_t err = NULL;
	char **v = qemu_cmdline(&c, &err);
	CHECK(v != NULL);
	CHECK_STR(after(v, "-accel"), "kvm");
	/* No nested virtualisation, no host PMU, one thread per core. */
	CHECK_STR(after(v, "-cpu"), "host,vmx=off,svm=off,pmu=off");
	CHECK_STR(after(v, "-smp"), "2");
	CHECK_STR(after(v, "-append"), SBX_KERNEL_CMDLINE SBX_KERNEL_QUIET);
	sbx_strv_free(v);
	/* KVM guests find their TSC's rate themselves. */
	c.tsc_khz = 2445406;
	v = qemu_cmdline(&c, &err);
	CHECK(v != NULL);
	CHECK_STR(after(v, "-append"), SBX_KERNEL_CMDLINE SBX_KERNEL_QUIET);
	sbx_strv_free(v);
}

TEST(tcg_tsc_frequency_and_boot_log)
{
	struct qemu_config c = base();
	c.tsc_khz = 2445406;
	sbx_error_t err = NULL;
	char **v = qemu_cmdline(&c, &err);
	CHECK(v != NULL);
	CHECK_STR(after(v, "-append"), "root=/dev/vda rootfstype=erofs ro init=/init console=hvc0 panic=-1 "
					"reboot=t quiet noapictimer tsc=reliable norandmaps tsc_early_khz=2445406");
	sbx_strv_free(v);
	c.boot_log = true;
	v = qemu_cmdline(&c, &err);
	CHECK(v != NULL);
	CHECK_STR(after(v, "-append"), "root=/dev/vda rootfstype=erofs ro init=/init console=hvc0 panic=-1 "
					"reboot=t printk.time=1 noapictimer tsc=reliable norandmaps tsc_early_khz=2445406");
	sbx_strv_free(v);
}

TEST(monitor_and_incoming_state)
{
	struct qemu_config c = base();
	sbx_error_t err = NULL;
	char **v = qemu_cmdline(&c, &err);
	CHECK(v != NULL);
	CHECK(find(v, "-mon") < 0);
	CHECK(find(v, "-incoming") < 0);
	sbx_strv_free(v);
	c.qmp_fd = 6;
	c.incoming_fd = 7;
	v = qemu_cmdline(&c, &err);
	CHECK(v != NULL);
	CHECK(find(v, "socket,id=qmp,fd=6") > 0);
	CHECK_STR(after(v, "-mon"), "chardev=qmp,mode=control");
	CHECK_STR(after(v, "-incoming"), "fd:7");
	sbx_strv_free(v);
}

/* Copy-on-write templates: the template VM writes its RAM memfd shared,
 * a clone maps the sealed one privately and takes its device state over
 * QMP; QEMU names the inherited memfd in its own /proc.  No balloon with
 * either: free page reporting would punch holes in the memfd. */
TEST(memfd_guest_ram)
{
	struct qemu_config c = base();
	c.ram_fd = 8;
	c.ram_shared = true;
	sbx_error_t err = NULL;
	char **v = qemu_cmdline(&c, &err);
	CHECK(v != NULL);
	CHECK_STR(after(v, "-M"), "microvm,acpi=off,ioapic2=off,memory-backend=ram");
	CHECK_STR(after(v, "-object"),
		  "memory-backend-file,id=ram,mem-path=/proc/self/fd/8,size=256M,share=on,prealloc=off");
	CHECK(find(v, "virtio-balloon-device,free-page-reporting=on") < 0);
	sbx_strv_free(v);
	c.ram_shared = false;
	c.qmp_fd = 6;
	c.incoming_fd = 7;
	c.incoming_defer = true;
	v = qemu_cmdline(&c, &err);
	CHECK(v != NULL);
	CHECK_STR(after(v, "-object"),
		  "memory-backend-file,id=ram,mem-path=/proc/self/fd/8,size=256M,share=off,prealloc=off");
	CHECK_STR(after(v, "-incoming"), "defer");
	sbx_strv_free(v);
	c.ram_fd = -1;
	CHECK(qemu_cmdline(&c, &err) == NULL);
	sbx_error_free(&err);
}

/* An adopted template clone without its memfd: the clone's RAM block id
 * and device set (no balloon), anonymous memory, the state over QMP. */
TEST(anonymous_ram_backend_for_a_clone_loaded_without_its_memfd)
{
	struct qemu_config c = base();
	c.ram_anon = true;
	c.qmp_fd = 6;
	c.incoming_fd = 7;
	c.incoming_defer = true;
	sbx_error_t err = NULL;
	char **v = qemu_cmdline(&c, &err);
	CHECK(v != NULL);
	CHECK_STR(after(v, "-M"), "microvm,acpi=off,ioapic2=off,memory-backend=ram");
	CHECK_STR(after(v, "-object"), "memory-backend-ram,id=ram,size=256M");
	CHECK(find(v, "virtio-balloon-device,free-page-reporting=on") < 0);
	CHECK_STR(after(v, "-incoming"), "defer");
	sbx_strv_free(v);
	c.ram_fd = 8;
	CHECK(qemu_cmdline(&c, &err) == NULL);
	sbx_error_free(&err);
}

/* A worker VM that asked (vm/guest_cpu.h decides): VMX/SVM, still no PMU;
 * two threads per core. */
TEST(kvm_nesting_and_smt_when_asked)
{
	struct qemu_config c = base();
	c.accel = SBX_ACCEL_KVM;
	c.nested_virt = true;
	c.cpus = 4;
	c.threads_per_core = 2;
	sbx_error_t err = NULL;
	char **v = qemu_cmdline(&c, &err);
	CHECK(v != NULL);
	CHECK_STR(after(v, "-cpu"), "host,pmu=off");
	CHECK_STR(after(v, "-smp"), "cpus=4,cores=2,threads=2");
	sbx_strv_free(v);
	/* Neither is TCG's, and an odd count has no whole cores. */
	c.cpus = 3;
	CHECK(qemu_cmdline(&c, &err) == NULL);
	sbx_error_free(&err);
	c.cpus = 4;
	c.accel = SBX_ACCEL_TCG;
	CHECK(qemu_cmdline(&c, &err) == NULL);
	sbx_error_free(&err);
	c.threads_per_core = 0;
	CHECK(qemu_cmdline(&c, &err) == NULL);
	sbx_error_free(&err);
	c.nested_virt = false;
	c.threads_per_core = 2;
	CHECK(qemu_cmdline(&c, &err) == NULL);
	sbx_error_free(&err);
}

TEST(rejects_bad_configs)
{
	sbx_error_t err = NULL;
	struct qemu_config c = base();
	c.image = "/i/x,readonly=off";
	CHECK(qemu_cmdline(&c, &err) == NULL);
	CHECK(strstr(sbx_error_msg(err), "comma") != NULL);
	sbx_error_free(&err);
	c = base();
	c.cpus = 0;
	CHECK(qemu_cmdline(&c, &err) == NULL);
	sbx_error_free(&err);
	c.cpus = SBX_VM_MAX_CPUS + 1;
	CHECK(qemu_cmdline(&c, &err) == NULL);
	sbx_error_free(&err);
	c = base();
	c.memory_mib = 16;
	CHECK(qemu_cmdline(&c, &err) == NULL);
	sbx_error_free(&err);
	/* An unbounded translation cache is what exhausted hosts under load. */
	c = base();
	c.tcg_cache_mib = 0;
	CHECK(qemu_cmdline(&c, &err) == NULL);
	CHECK(strstr(sbx_error_msg(err), "tcg cache") != NULL);
	sbx_error_free(&err);
	c.tcg_cache_mib = SBX_VM_TCG_CACHE_MAX_MIB + 1;
	CHECK(qemu_cmdline(&c, &err) == NULL);
	sbx_error_free(&err);
	/* KVM has no translation cache: the value is not looked at. */
	c.accel = SBX_ACCEL_KVM;
	char **v = qemu_cmdline(&c, &err);
	CHECK(v != NULL);
	CHECK_STR(after(v, "-accel"), "kvm");
	sbx_strv_free(v);
	c = base();
	c.accel = SBX_ACCEL_AUTO;
	CHECK(qemu_cmdline(&c, &err) == NULL);
	sbx_error_free(&err);
	c = base();
	c.scratch = NULL;
	CHECK(qemu_cmdline(&c, &err) == NULL);
	sbx_error_free(&err);
}

TEST(virtio_fs_shares)
{
	struct qemu_config c = base();
	struct qemu_share shares[] = { { 6, "sbxfs0" }, { 7, "sbxfs1" } };
	c.shares = shares;
	c.n_shares = 2;
	sbx_error_t err = NULL;
	char **v = qemu_cmdline(&c, &err);
	CHECK(v != NULL);
	/* vhost-user needs guest RAM in a shared memfd, and modern virtio. */
	CHECK_STR(after(v, "-machine"), "memory-backend=ram");
	CHECK_STR(after(v, "-object"), "memory-backend-memfd,id=ram,size=256M,share=on");
	CHECK_STR(after(v, "-global"), "virtio-mmio.force-legacy=false");
	CHECK(find(v, "socket,id=fs0,fd=6") > 0);
	CHECK(find(v, "vhost-user-fs-device,chardev=fs0,tag=sbxfs0") > 0);
	CHECK(find(v, "socket,id=fs1,fd=7") > 0);
	CHECK(find(v, "vhost-user-fs-device,chardev=fs1,tag=sbxfs1") > 0);
	sbx_strv_free(v);

	/* Without shares: no memory backend, legacy virtio-mmio as before. */
	c.n_shares = 0;
	v = qemu_cmdline(&c, &err);
	CHECK(v != NULL);
	CHECK(find(v, "-object") < 0 && find(v, "-global") < 0 && find(v, "-machine") < 0);
	sbx_strv_free(v);

	/* A tag that would smuggle in options, or no socket, is refused. */
	struct qemu_share bad[][1] = { { { 6, "a,b" } }, { { 6, "a=b" } }, { { 6, "" } }, { { 0, "t" } } };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c.shares = bad[i];
		c.n_shares = 1;
		CHECK(qemu_cmdline(&c, &err) == NULL);
		sbx_error_free(&err);
	}
}
