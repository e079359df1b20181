#include "vm/qemu_cmdline.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"

#define MAX_ARGS 96

struct argv_builder {
	char *v[MAX_ARGS + 1];
	size_t n;
	int failed;
};

static void add(struct argv_builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct argv_builder *b, const char *fmt, ...)
{
	if (b->failed)
		return;
	if (b->n == MAX_ARGS) {
		b->failed = 1;
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&b->v[b->n], fmt, ap) < 0) {
		b->v[b->n] = NULL;
		b->failed = 1;
	} else {
		b->n++;
	}
	va_end(ap);
}

/* QEMU's option parser splits on ',' (",," escapes it): a path with a comma
 * would smuggle in options, so refuse it. */
static int check_path(const char *what, const char *p, sbx_error_t *err)
{
	if (p == NULL || p[0] == '\0')
		return sbx_error_set(err, EINVAL, "qemu: no %s path", what);
	if (strchr(p, ',') != NULL)
		return sbx_error_set(err, EINVAL, "qemu: %s path contains a comma: %s", what, p);
	return 0;
}

enum disk_mode { DISK_READ_ONLY, DISK_WRITABLE, DISK_WRITABLE_DIRECT };

/* Read-only disks share the host's page cache (one image serves every VM
 * of it).  A writable one is the VM's own and thrown away or private:
 * flushes are skipped, and with O_DIRECT its writes never become the
 * host's dirty page cache, which is charged to the VM's memory cgroup and
 * which cgroup v1 cannot write back fast enough under its limit (a guest
 * filling a 1 GiB disk held its leaf at the limit, 152 MiB of it page
 * cache). */
static void add_disk(struct argv_builder *b, const char *id, const char *path, enum disk_mode mode)
{
	add(b, "-drive");
	if (mode == DISK_READ_ONLY)
		add(b, "file=%s,if=none,id=%s,format=raw,readonly=on,cache=writeback", path, id);
	else
		add(b, "file=%s,if=none,id=%s,format=raw,readonly=off,%s,discard=unmap", path, id,
		    mode == DISK_WRITABLE_DIRECT ? "cache.direct=on,cache.no-flush=on" : "cache=unsafe");
	add(b, "-device");
	add(b, "virtio-blk-device,drive=%s", id);
}

/* vhost-user maps guest RAM into virtiofsd: RAM must be a shared memfd.
 * virtiofsd (libvhost-user) refuses legacy virtio, microvm's default for
 * virtio-mmio. */
static void add_shares(struct argv_builder *b, const struct qemu_config *c)
{
	add(b, "-global");
	add(b, "virtio-mmio.force-legacy=false");
	add(b, "-machine"); /* merged with -M's options */
	add(b, "memory-backend=ram");
	add(b, "-object");
	add(b, "memory-backend-memfd,id=ram,size=%uM,share=on", c->memory_mib);
	for (size_t i = 0; i < c->n_shares; i++) {
		add(b, "-chardev");
		add(b, "socket,id=fs%zu,fd=%d", i, c->shares[i].fd);
		add(b, "-device");
		add(b, "vhost-user-fs-device,chardev=fs%zu,tag=%s", i, c->shares[i].tag);
	}
}

char **qemu_cmdline(const struct qemu_config *c, sbx_error_t *err)
{
	if (check_path("qemu", c->qemu, err) < 0 || check_path("kernel", c->kernel, err) < 0 ||
	    check_path("boot disk", c->boot_disk, err) < 0 || check_path("image", c->image, err) < 0 ||
	    check_path("scratch disk", c->scratch, err) < 0)
		return NULL;
	if (c->ram_fd < 0 || (c->ram_fd > 0 && c->n_shares > 0) || (c->ram_anon && (c->ram_fd > 0 || c->n_shares > 0))) {
		sbx_error_set(err, EINVAL, "qemu: guest RAM is a template's memfd or the shares' one");
		return NULL;
	}
	if (c->cpus < 1 || c->cpus > SBX_VM_MAX_CPUS) {
		sbx_error_set(err, EINVAL, "cpus must be 1..%d", SBX_VM_MAX_CPUS);
		return NULL;
	}
	if (c->memory_mib < SBX_VM_MIN_MEMORY_MIB || c->memory_mib > SBX_VM_MAX_MEMORY_MIB) {
		sbx_error_set(err, EINVAL, "memory must be %d..%u MiB", SBX_VM_MIN_MEMORY_MIB, SBX_VM_MAX_MEMORY_MIB);
		return NULL;
	}
	if (c->accel != SBX_ACCEL_KVM && c->accel != SBX_ACCEL_TCG) {
		sbx_error_set(err, EINVAL, "qemu: accelerator not decided");
		return NULL;
	}
	if (c->accel == SBX_ACCEL_TCG && (c->tcg_cache_mib < 1 || c->tcg_cache_mib > SBX_VM_TCG_CACHE_MAX_MIB)) {
		sbx_error_set(err, EINVAL, "tcg cache must be 1..%d MiB", SBX_VM_TCG_CACHE_MAX_MIB);
		return NULL;
	}
	if (c->accel != SBX_ACCEL_KVM && (c->nested_virt || c->threads_per_core > 1)) {
		sbx_error_set(err, EINVAL, "qemu: nested virtualisation and SMT are for KVM guests");
		return NULL;
	}
	if (c->threads_per_core > 2 || (c->threads_per_core == 2 && c->cpus % 2 != 0)) {
		sbx_error_set(err, EINVAL, "qemu: two threads per core need an even CPU count");
		return NULL;
	}
	if (c->console_fd < 0 || c->control_fd < 0) {
		sbx_error_set(err, EBADF, "qemu: console and control sockets are required");
		return NULL;
	}
	for (size_t i = 0; i < c->n_shares; i++) {
		if (c->shares[i].fd <= 0 || c->shares[i].tag == NULL || c->shares[i].tag[0] == '\0' ||
		    strpbrk(c->shares[i].tag, ",=") != NULL) {
			sbx_error_set(err, EINVAL, "qemu: bad share %zu", i);
			return NULL;
		}
	}
	struct argv_builder b = { .n = 0 };
	add(&b, "%s", c->qemu);
	add(&b, "-M");
	add(&b, "microvm,acpi=off,ioapic2=off%s", c->ram_fd > 0 || c->ram_anon ? ",memory-backend=ram" : "");
	if (c->ram_fd > 0) {
		/* QEMU 7.2 open()s mem-path (no fd= nor /dev/fdset for a memory
		 * backend): its own /proc names the inherited memfd.  No prealloc:
		 * a clone's pages stay the template's until written. */
		add(&b, "-object");
		add(&b, "memory-backend-file,id=ram,mem-path=/proc/self/fd/%d,size=%uM,share=%s,prealloc=off",
		    c->ram_fd, c->memory_mib, c->ram_shared ? "on" : "off");
	} else if (c->ram_anon) {
		/* Anonymous memory: a page the state leaves zero is never
		 * allocated (a memfd allocates every page QEMU reads). */
		add(&b, "-object");
		add(&b, "memory-backend-ram,id=ram,size=%uM", c->memory_mib);
	}
	add(&b, "-nodefaults");
	add(&b, "-no-user-config");
	add(&b, "-display");
	add(&b, "none");
	add(&b, "-sandbox");
	add(&b, "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny");
	add(&b, "-no-reboot");
	add(&b, "-accel");
	if (c->accel == SBX_ACCEL_KVM) {
		add(&b, "kvm");
		/* The host's CPU without its PMU (guest access to the host's
		 * performance counters) and, unless asked, without VMX/SVM:
		 * with them every guest would drive the host kernel's nested
		 * virtualisation (kvm_intel/kvm_amd nested=1 by default).
		 * QEMU 7.2 cannot hide an AMD host's legacy counters
		 * (docs/security.md). */
		add(&b, "-cpu");
		add(&b, "host,%spmu=off", c->nested_virt ? "" : "vmx=off,svm=off,");
	} else {
		/* One thread for all vCPUs of a guest with several: with one
		 * thread per vCPU (QEMU 7.2), a vCPU can run a stale block of
		 * code another vCPU just patched (the kernel's static keys at
		 * boot) and the guest oopses on the int3 of the patch. */
		add(&b, "tcg,thread=%s,tb-size=%u", c->cpus > 1 ? "single" : "multi", c->tcg_cache_mib);
		/* Without ERMS/FSRM the guest's kernel and libc copy with rep
		 * movsq or vector loops: QEMU 7.2 runs a rep movsb as one
		 * translated block per byte, and every copy_to_user of a file's
		 * or a packet's bytes paid that (bench/fs, bench/net). */
		add(&b, "-cpu");
		add(&b, "max,erms=off,fsrm=off");
	}
	add(&b, "-smp");
	if (c->threads_per_core == 2)
		add(&b, "cpus=%u,cores=%u,threads=2", c->cpus, c->cpus / 2);
	else
		add(&b, "%u", c->cpus);
	add(&b, "-m");
	add(&b, "%u", c->memory_mib);
	add(&b, "-kernel");
	add(&b, "%s", c->kernel);
	add(&b, "-append");
	if (c->accel == SBX_ACCEL_TCG && c->tsc_khz > 0)
		add(&b, "%s%s%s%s%u", SBX_KERNEL_CMDLINE, c->boot_log ? SBX_KERNEL_BOOT_LOG : SBX_KERNEL_QUIET,
		    SBX_KERNEL_CMDLINE_TCG, SBX_KERNEL_TSC_KHZ, c->tsc_khz);
	else
		add(&b, "%s%s%s", SBX_KERNEL_CMDLINE, c->boot_log ? SBX_KERNEL_BOOT_LOG : SBX_KERNEL_QUIET,
		    c->accel == SBX_ACCEL_TCG ? SBX_KERNEL_CMDLINE_TCG : "");
	add(&b, "-chardev");
	add(&b, "socket,id=console,fd=%d", c->console_fd);
	add(&b, "-chardev");
	add(&b, "socket,id=control,fd=%d", c->control_fd);
	add(&b, "-device");
	add(&b, "virtio-serial-device,max_ports=2");
	add(&b, "-device");
	add(&b, "virtconsole,chardev=console");
	add(&b, "-device");
	add(&b, "virtserialport,chardev=control,name=control");
	add_disk(&b, "boot", c->boot_disk, DISK_READ_ONLY);
	add_disk(&b, "image", c->image, DISK_READ_ONLY);
	add_disk(&b, "scratch", c->scratch, c->scratch_direct ? DISK_WRITABLE_DIRECT : DISK_WRITABLE);
	add(&b, "-device");
	add(&b, "virtio-rng-device");
	/* Free page reporting: pages the guest frees go back to the host
	 * instead of staying resident in QEMU for the VM's whole life.  Not
	 * for guest RAM shared by clones: QEMU 7.2 discards such RAM by
	 * punching a hole in the file (the seal refuses it). */
	/* A clone loaded without its memfd keeps the clone's device set. */
	if (c->ram_fd == 0 && !c->ram_anon) {
		add(&b, "-device");
		add(&b, "virtio-balloon-device,free-page-reporting=on");
	}
	if (c->net_fd > 0) {
		/* one Ethernet frame per datagram */
		add(&b, "-netdev");
		add(&b, "dgram,id=n0,local.type=fd,local.str=%d", c->net_fd);
		add(&b, "-device");
		add(&b, "virtio-net-device,netdev=n0");
	}
	if (c->n_shares > 0)
		add_shares(&b, c);
	if (c->qmp_fd > 0) {
		add(&b, "-chardev");
		add(&b, "socket,id=qmp,fd=%d", c->qmp_fd);
		add(&b, "-mon");
		add(&b, "chardev=qmp,mode=control");
	}
	if (c->incoming_defer) {
		add(&b, "-incoming");
		add(&b, "defer");
	} else if (c->incoming_fd > 0) {
		add(&b, "-incoming");
		add(&b, "fd:%d", c->incoming_fd);
	}
	if (b.failed) {
		for (size_t i = 0; i < b.n; i++)
			free(b.v[i]);
		sbx_error_set(err, ENOMEM, "qemu command line");
		return NULL;
	}
	char **v = calloc(b.n + 1, sizeof(char *));
	if (v == NULL) {
		for (size_t i = 0; i < b.n; i++)
			free(b.v[i]);
		sbx_error_set(err, ENOMEM, "qemu command line");
		return NULL;
	}
	memcpy(v, b.v, b.n * sizeof(char *));
	return v;
}
