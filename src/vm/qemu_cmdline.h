/* Builds the QEMU command line of one VM (microvm, virtio-mmio devices). */
#ifndef SBX_VM_QEMU_CMDLINE_H
#define SBX_VM_QEMU_CMDLINE_H

#include <stdbool.h>

#include "common/error.h"
#include "common/strv.h"
#include "vm/accel.h"

#define SBX_KERNEL_CMDLINE "root=/dev/vda rootfstype=erofs ro init=/init console=hvc0 panic=-1 reboot=t"
#define SBX_KERNEL_QUIET " quiet"
/* For measuring a boot: every kernel message, with the guest's timestamp. */
#define SBX_KERNEL_BOOT_LOG " printk.time=1"
/* Under TCG the APIC timer always fails its 300 ms verification and the TSC
 * watchdog demotes the clock to 4 ms jiffies; both are skipped (measured:
 * init starts ~0.5 s earlier).  The emulated TSC follows the host clock.
 * norandmaps: QEMU 7.2's TCG finds translated code by virtual address, so a
 * process whose binary and libraries sit at new random addresses
 * translates all of its code again; without user-space ASLR every process
 * reuses what the last one translated (measured in a warm python sandbox:
 * `true` 25 -> 7 ms, python3 -c pass 150 -> 100 ms).  The guest is the
 * tenant's alone, and KVM guests keep the kernel's default. */
#define SBX_KERNEL_CMDLINE_TCG " noapictimer tsc=reliable norandmaps"
/* Followed by the host's TSC frequency when known (vm/tsc.h). */
#define SBX_KERNEL_TSC_KHZ " tsc_early_khz="
#define SBX_VM_MAX_CPUS 16 /* the guest kernel's NR_CPUS */
#define SBX_VM_MIN_MEMORY_MIB 64
#define SBX_VM_MAX_MEMORY_MIB (64u * 1024u)
/* TCG's translation cache per VM.  QEMU 7.2's default is 1 GiB, and under
 * sustained work it all becomes resident; the default is the knee of the
 * table in docs/performance.md, "TCG translation cache size" (exec and run time against the cache size). */
#define SBX_VM_TCG_CACHE_DEFAULT_MIB 64
#define SBX_VM_TCG_CACHE_MAX_MIB 2048

/* A virtio-fs device: a connected socket to its virtiofsd (vhost-user). */
struct qemu_share {
	int fd;
	const char *tag;
};

struct qemu_config {
	const char *qemu;      /* binary */
	const char *kernel;    /* PVH ELF */
	const char *boot_disk; /* erofs holding /init -> /dev/vda */
	const char *image;     /* image erofs -> /dev/vdb */
	const char *scratch;   /* ext4 -> /dev/vdc */
	bool scratch_direct;   /* vdc written with O_DIRECT (vm/disk.h
				  disk_direct_io), else through the page cache */
	unsigned cpus, memory_mib;
	enum sbx_accel accel; /* KVM or TCG, already decided */
	unsigned tsc_khz;     /* TCG: the host's TSC frequency, 0 = unknown */
	unsigned tcg_cache_mib; /* TCG: translation cache, 1..SBX_VM_TCG_CACHE_MAX_MIB */
	bool nested_virt;     /* KVM: the guest sees VMX/SVM (vm/guest_cpu.h) */
	unsigned threads_per_core; /* KVM: 2 = two threads per core (cpus even),
				      0 or 1 = one */
	bool boot_log;        /* kernel messages instead of quiet */
	int console_fd;       /* connected stream sockets QEMU inherits */
	int control_fd;
	int qmp_fd;           /* QMP monitor socket, 0 = none (inherited
				 descriptors are never 0) */
	int incoming_fd;      /* saved state to restore (-incoming), 0 = none */
	bool incoming_defer;  /* -incoming defer: the state comes over QMP */
	int ram_fd;           /* guest RAM in this inherited memfd (copy-on-write
				 templates, vm/template_memfd.h), 0 = anonymous */
	bool ram_shared;      /* share=on (the template VM writes it), else a
				 private copy-on-write mapping of a sealed one */
	bool ram_anon;        /* ram_fd 0 and RAM a memory-backend-ram of the
				 file backend's id: the RAM block a clone's
				 state names, without the memfd */
	int net_fd;           /* SOCK_DGRAM socket to the network helper
				 (virtio-net-device eth0), 0 = no NIC */
	const struct qemu_share *shares; /* vhost-user-fs devices; with any,
					    guest RAM is a shared memfd */
	size_t n_shares;
};

/* Returns a NULL-terminated argv (free with sbx_strv_free). */
char **qemu_cmdline(const struct qemu_config *c, sbx_error_t *err);

#endif
