/* virtio-fs shares of a VM (vm.h struct sbx_vm_share): one QEMU C
 * virtiofsd per share, in its own --sandbox=namespace.
 *
 * The daemon makes, per share, a listening socket in the VM's private
 * directory, connects QEMU's end to it and unlinks it: virtiofsd gets the
 * listening socket (--fd), QEMU the connected one (-chardev socket,fd=),
 * so a jailed QEMU needs no path to it.  The VM's keeper (keeper.h) starts
 * each virtiofsd before QEMU, in a process group of its own, and kills the
 * group once QEMU is gone or the daemon dies.
 *
 * A share's directory is opened once (O_PATH) when the VM starts, or
 * handed over already opened by the caller (a worker's checked directory),
 * and virtiofsd never resolves the host path: its child clones that
 * descriptor's mount tree (read-only, recursively, for a read-only
 * share), and in a mount namespace of its own mounts it at `source` on a
 * private tmpfs, which virtiofsd then binds and pivots into.  A directory
 * swapped for a symlink after the check changes nothing it serves; a guest
 * that remounts its side read-write still cannot write the host directory.
 * A read-only share of a directory owned by a user other than root is
 * served as that user: the child drops to its uid and gid and makes a user
 * namespace mapping them to 0, where virtiofsd's own sandbox gets the
 * capabilities it needs over that namespace alone (hosts that forbid
 * unprivileged user namespaces: root, said once in the log). */
#ifndef SBX_VM_VIRTIOFS_H
#define SBX_VM_VIRTIOFS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/error.h"
#include "jail/jail.h"
#include "proto/proto_msg.h"
#include "vm/keeper.h"
#include "vm/qemu_cmdline.h"
#include "vm/vm_share.h"

#define SBX_VM_MAX_SHARES 4
#define VIRTIOFSD_DEFAULT "/usr/lib/qemu/virtiofsd"
/* virtiofsd finds its listening socket here (the keeper puts it there). */
#define VIRTIOFSD_FD 3

struct virtiofs_share {
	char *host_dir;   /* as named, for messages */
	int dir_fd;       /* the directory, pinned (O_PATH); -1 once handed over */
	char *source;     /* virtiofsd's source: "/tmp<vm dir>/<tag>" in its
			     mount namespace */
	uid_t uid;        /* virtiofsd's uid and gid (its user namespace's 0); */
	gid_t gid;        /* 0 keeps root */
	char *guest_path;
	bool read_only;
	char tag[16];     /* "sbxfs<i>": the device's tag the guest mounts */
	char **argv;      /* virtiofsd's */
	int listen_fd;    /* virtiofsd's end, -1 once handed over */
	int qemu_fd;      /* QEMU's connected end, -1 once handed over */
	struct jail *jail; /* its cgroup leaf and limits, NULL without a jail */
};

struct virtiofs {
	struct virtiofs_share *v;
	size_t n;
};

/* Checks and copies the shares: the directory pinned (host_fd dup'ed, or
 * host_dir resolved and opened without following a last symlink) and a
 * directory, guest_path absolute, not "/", without "." or ".."
 * components. */
int virtiofs_init(struct virtiofs *fs, const struct sbx_vm_share *shares, size_t n, sbx_error_t *err);
/* virtiofsd's argv serving `source` on VIRTIOFSD_FD (free with
 * sbx_strv_free). */
char **virtiofs_argv(const char *binary, const char *source, sbx_error_t *err);
/* The binary ($SANDBOX_VIRTIOFSD, else VIRTIOFSD_DEFAULT), each share's
 * source and argv and its socket pair; sockets are made in `dir` (the
 * VM's directory, which also names the sources). */
int virtiofs_open(struct virtiofs *fs, const char *dir, sbx_error_t *err);
/* After virtiofs_open: appends each share's QEMU socket to fds (at
 * *nfds, which QEMU sees from KEEPER_QEMU_FD_BASE) and fills its device
 * (qs) and its virtiofsd (sides), fs->n of each. */
void virtiofs_plan(const struct virtiofs *fs, int *fds, int *nfds, struct qemu_share *qs, struct keeper_side *sides);
/* The shares as CONFIG carries them (out holds fs->n; borrows). */
void virtiofs_config(const struct virtiofs *fs, struct proto_share *out);
/* With an active jail host: each virtiofsd's cgroup leaf "<vm>-fs<i>"
 * (memory, pids, CPU) and rlimits.  virtiofsd confines itself with its
 * own namespace sandbox (as root, or as the owner in a user namespace,
 * above); the leaf caps what it may take from the host. */
int virtiofs_jail(struct virtiofs *fs, struct sbx_jail_host *h, const char *vm_dir, unsigned cpus,
		  sbx_error_t *err);
/* Closes the daemon's copies of the sockets and directories (the keeper
 * has its own). */
void virtiofs_close_fds(struct virtiofs *fs);
void virtiofs_free(struct virtiofs *fs);
/* The keeper's hook in virtiofsd's process before exec (a struct
 * virtiofs_share, the pinned directory at KEEPER_SIDE_FD + 1): its cgroup
 * leaf, the mount at `source`, the owner's uid in a user namespace (all
 * above).  Async-signal-safe. */
int virtiofs_enter(const void *share);

#endif
