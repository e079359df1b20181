/* virtio-fs shares of a VM (vm.h struct sbx_vm_share): one QEMU C
 * virtiofsd per share, in its own --sandbox=namespace.
 *
 * The daemon makes, per share, a listening socket in the VM's private
 * directory, connects QEMU's end to it and unlinks it: virtiofsd gets the
 * listening socket (--fd), QEMU the connected one (-chardev socket,fd=),
 * so a jailed QEMU needs no path to it.  The VM's keeper (keeper.h) starts
 * each virtiofsd before QEMU, in a process group of its own, and kills the
 * group once QEMU is gone or the daemon dies.  A read-only share is also
 * read-only on the host side: virtiofsd's child first makes its directory
 * a read-only bind (recursively) in a mount namespace of its own, which
 * virtiofsd's own bind inherits, so a guest that remounts its side
 * read-write still cannot write the host directory. */
#ifndef SBX_VM_VIRTIOFS_H
#define SBX_VM_VIRTIOFS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "proto/proto_msg.h"
#include "vm/keeper.h"
#include "vm/qemu_cmdline.h"
#include "vm/vm.h"

#define SBX_VM_MAX_SHARES 4
#define VIRTIOFSD_DEFAULT "/usr/lib/qemu/virtiofsd"
/* virtiofsd finds its listening socket here (the keeper puts it there). */
#define VIRTIOFSD_FD 3

struct virtiofs_share {
	char *host_dir;   /* canonical */
	char *guest_path;
	bool read_only;
	char tag[16];     /* "sbxfs<i>": the device's tag the guest mounts */
	char **argv;      /* virtiofsd's */
	int listen_fd;    /* virtiofsd's end, -1 once handed over */
	int qemu_fd;      /* QEMU's connected end, -1 once handed over */
};

struct virtiofs {
	struct virtiofs_share *v;
	size_t n;
};

/* Checks and copies the shares: host_dir an existing directory (made
 * canonical, without ',' or '\' which virtiofsd's options would split
 * on), guest_path absolute, not "/", without "." or ".." components. */
int virtiofs_init(struct virtiofs *fs, const struct sbx_vm_share *shares, size_t n, sbx_error_t *err);
/* virtiofsd's argv serving `source` on VIRTIOFSD_FD (free with
 * sbx_strv_free). */
char **virtiofs_argv(const char *binary, const char *source, sbx_error_t *err);
/* The binary ($SANDBOX_VIRTIOFSD, else VIRTIOFSD_DEFAULT), each share's
 * argv and its socket pair; sockets are made in `dir`. */
int virtiofs_open(struct virtiofs *fs, const char *dir, sbx_error_t *err);
/* After virtiofs_open: appends each share's QEMU socket to fds (at
 * *nfds, which QEMU sees from KEEPER_QEMU_FD_BASE) and fills its device
 * (qs) and its virtiofsd (sides), fs->n of each. */
void virtiofs_plan(const struct virtiofs *fs, int *fds, int *nfds, struct qemu_share *qs, struct keeper_side *sides);
/* The shares as CONFIG carries them (out holds fs->n; borrows). */
void virtiofs_config(const struct virtiofs *fs, struct proto_share *out);
/* Closes the daemon's copies of the sockets (the keeper has its own). */
void virtiofs_close_fds(struct virtiofs *fs);
void virtiofs_free(struct virtiofs *fs);
/* The keeper's hook in virtiofsd's process before exec (a struct
 * virtiofs_share): the read-only bind above.  Async-signal-safe. */
int virtiofs_enter(const void *share);

#endif
