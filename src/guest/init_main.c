/* PID 1 of the VM: builds the root, says HELLO, applies CONFIG (and mounts
 * its shares), answers READY, then hands the control port to the
 * dispatcher. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/reboot.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "guest/boot_config.h"
#include "guest/boot_mounts.h"
#include "guest/boot_net.h"
#include "guest/boot_shares.h"
#include "guest/control_port.h"
#include "guest/dispatch.h"
#include "guest/warm_up.h"
#include "proto/proto_msg.h"
#include "proto/proto_reader.h"

static int send_msg(int fd, const struct proto_msg *m)
{
	struct proto_wbuf f;
	sbx_error_t err = NULL;
	proto_wbuf_init(&f);
	int rc = proto_msg_encode(&f, m, &err);
	for (size_t off = 0; rc == 0 && off < f.len;) {
		ssize_t n = write(fd, f.data + off, f.len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			sbx_error_errno(&err, errno, "write control port");
			rc = -1;
			break;
		}
		off += (size_t)n;
	}
	if (rc < 0)
		sbx_err("init: %s", sbx_error_msg(err));
	sbx_error_free(&err);
	proto_wbuf_free(&f);
	return rc;
}

/* Blocking read of the next message (boot phase).  Returns 1 with a
 * message, 0 for a message that did not decode (skip it), -1 when the
 * connection is unusable (framing or read error). */
static int next_msg(int fd, struct proto_reader *rd, struct proto_msg *m, sbx_error_t *err)
{
	static uint8_t buf[4096];
	static size_t off, len;
	for (;;) {
		while (off < len) {
			size_t used;
			struct proto_header h;
			const uint8_t *payload;
			int rc = proto_reader_feed(rd, buf + off, len - off, &used, &h, &payload, err);
			off += used;
			if (rc < 0)
				return -1;
			if (rc == 1)
				return proto_msg_decode(&h, payload, m, err) == 0 ? 1 : 0;
		}
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sbx_error_errno(err, errno, "read control port");
		if (n == 0) /* the host is not connected yet */
			usleep(50000);
		off = 0;
		len = n > 0 ? (size_t)n : 0;
	}
}

static void power_off(void)
{
	kill(-1, SIGKILL);
	sync();
	/* With reboot=t and QEMU -no-reboot this ends the VM. */
	reboot(RB_AUTOBOOT);
	for (;;)
		pause();
}

/* After a failure that leaves no protocol to serve: keep reaping (PID 1
 * must) until the host stops the VM. */
static void reap_forever(void)
{
	for (;;)
		if (waitpid(-1, NULL, 0) < 0 && errno == ECHILD)
			sleep(1);
}

/* Reports a boot failure on the console and, when possible, as ERROR on
 * stream 0, then waits for SHUTDOWN. */
static void boot_failed(int port, struct proto_reader *rd, const char *msg)
{
	fprintf(stderr, "init: boot failed: %s\n", msg);
	if (port < 0)
		reap_forever();
	struct proto_msg e = { .stream = 0, .type = PROTO_ERROR, .u.message = (char *)msg };
	send_msg(port, &e);
	for (;;) {
		struct proto_msg m;
		sbx_error_t err = NULL;
		int rc = next_msg(port, rd, &m, &err);
		sbx_error_free(&err);
		if (rc < 0)
			reap_forever();
		if (rc == 0)
			continue;
		int shutdown = m.type == PROTO_SHUTDOWN;
		proto_msg_free(&m);
		if (shutdown)
			power_off();
	}
}

int main(void)
{
	if (getpid() != 1) {
		fprintf(stderr, "init: must run as PID 1 of the sandbox VM\n");
		return 1;
	}
	sbx_error_t err = NULL;
	struct proto_reader rd;
	proto_reader_init(&rd);
	if (boot_early_mounts(&err) < 0)
		boot_failed(-1, &rd, sbx_error_msg(err));
	/* All that is the same in every sandbox of an image happens before
	 * HELLO, where templates are saved: a restored VM skips it. */
	int root_ok = boot_switch_root(&err) == 0 && boot_root_mounts(&err) == 0 && boot_net_loopback(&err) == 0 &&
		      boot_cgroup_prepare(&err) == 0;
	boot_resolve_default_user();
	/* Before a failed root is reported, find the port: the host should
	 * hear why, not just time out. */
	sbx_error_t perr = NULL;
	int port = control_port_open(&perr);
	if (port < 0) {
		fprintf(stderr, "init: %s\n", sbx_error_msg(perr));
		boot_failed(-1, &rd, root_ok ? sbx_error_msg(perr) : sbx_error_msg(err));
	}
	if (!root_ok)
		boot_failed(port, &rd, sbx_error_msg(err));

	struct proto_msg hello = { .stream = 0, .type = PROTO_HELLO, .u.version = PROTO_VERSION };
	if (send_msg(port, &hello) < 0)
		reap_forever();
	struct proto_msg m;
	for (;;) {
		int rc = next_msg(port, &rd, &m, &err);
		if (rc < 0) {
			fprintf(stderr, "init: control port: %s\n", sbx_error_msg(err));
			reap_forever();
		}
		if (rc == 0) {
			sbx_err("init: before CONFIG: %s", sbx_error_msg(err));
			sbx_error_free(&err);
			continue;
		}
		if (m.type == PROTO_CONFIG)
			break;
		if (m.type == PROTO_SHUTDOWN)
			power_off();
		if (m.type == PROTO_WARM_UP && warm_up_run(m.u.warm_up, &err) < 0) {
			/* Not fatal: CONFIG and the first exec pay for it. */
			sbx_err("init: %s", sbx_error_msg(err));
			sbx_error_free(&err);
		}
		if (m.type == PROTO_PING) {
			struct proto_msg pong = { .stream = 0, .type = PROTO_PONG, .u.nonce = m.u.nonce };
			send_msg(port, &pong);
		}
		proto_msg_free(&m);
	}
	int cg = -1;
	struct guest_user user;
	char **boot_env = NULL;
	if (boot_apply_config(&m.u.config, &err) < 0 || boot_mount_shares(&m.u.config, &err) < 0 ||
	    boot_resolve_user(&m.u.config, &user, &boot_env, &err) < 0 ||
	    (cg = boot_process_cgroup(m.u.config.memory_bytes, &err)) < 0)
		boot_failed(port, &rd, sbx_error_msg(err));
	struct proto_msg ready = { .stream = 0, .type = PROTO_READY };
	if (send_msg(port, &ready) < 0)
		reap_forever();

	/* The boot env and user live as long as PID 1: every process gets
	 * them. */
	struct dispatch_config cfg = { .boot_env = boot_env, .cgroup_dir_fd = cg, .exec_pids_max = m.u.config.pids_max,
				       .user = &user };
	int rc = dispatch_serve(port, &cfg, &err);
	if (rc < 0) {
		fprintf(stderr, "init: %s\n", sbx_error_msg(err));
		reap_forever();
	}
	power_off();
}
