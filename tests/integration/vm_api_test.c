/* Boots one VM through src/vm/vm.h and runs many checks in it, then the
 * python rootfs as users (nobody, 1234:5678, an unknown one).  Prints TAP.
 * Usage: vm_api_test ROOTFS [PYTHON_ROOTFS]   (needs a built boot disk) */
#include <errno.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vm/vm.h"
#include "vm_tap.h"

#define BIG_SIZE (10u * 1024u * 1024u)
#define CONCURRENT 20

static int64_t in_ms(int ms)
{
	return sbx_now_ms() + ms;
}

struct run {
	char *out, *err;
	size_t out_len, err_len;
	int status;
	char why[512];
};

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

static int append(char **buf, size_t *len, const char *p, size_t n)
{
	char *nb = realloc(*buf, *len + n + 1);
	if (nb == NULL)
		return -1;
	memcpy(nb + *len, p, n);
	*len += n;
	nb[*len] = '\0';
	*buf = nb;
	return 0;
}

/* Runs argv with `input` on stdin (NULL = none); collects everything. */
static int run(struct sbx_vm *vm, char *const *argv, const char *input, size_t input_len, int timeout_ms,
	       struct run *r)
{
	memset(r, 0, sizeof(*r));
	r->out = calloc(1, 1);
	r->err = calloc(1, 1);
	sbx_error_t err = NULL;
	int64_t deadline = in_ms(timeout_ms);
	struct sbx_vm_proc *p = sbx_vm_spawn(vm, argv, NULL, NULL, input != NULL, &err);
	if (p == NULL)
		goto fail;
	for (size_t off = 0; input != NULL && off < input_len;) {
		ssize_t n = sbx_vm_proc_write(p, input + off, input_len - off, deadline, &err);
		if (n < 0)
			goto fail;
		off += (size_t)n;
	}
	if (input != NULL && sbx_vm_proc_close_stdin(p, &err) < 0)
		goto fail;
	char buf[65536];
	for (;;) {
		int fd;
		ssize_t n = sbx_vm_proc_read(p, &fd, buf, sizeof(buf), deadline, &err);
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		if (fd == 1 ? append(&r->out, &r->out_len, buf, (size_t)n) : append(&r->err, &r->err_len, buf, (size_t)n))
			goto fail;
	}
	if (sbx_vm_proc_wait(p, deadline, &r->status, &err) < 0)
		goto fail;
	sbx_vm_proc_free(p);
	return 0;
fail:
	snprintf(r->why, sizeof(r->why), "%s", err != NULL ? sbx_error_msg(err) : "out of memory");
	sbx_error_free(&err);
	sbx_vm_proc_free(p);
	return -1;
}

/* Runs a shell command; true when it exits with `status` and its stdout
 * equals `out` (when not NULL). */
static void check_sh(struct sbx_vm *vm, const char *name, const char *cmd, int status, const char *out)
{
	char *argv[] = { "/bin/sh", "-c", (char *)cmd, NULL };
	struct run r;
	char why[1024];
	if (run(vm, argv, NULL, 0, 60000, &r) < 0) {
		result(false, name, r.why);
	} else {
		snprintf(why, sizeof(why), "status %d, stdout '%s', stderr '%.200s'", r.status, r.out, r.err);
		result(r.status == status && (out == NULL || strcmp(r.out, out) == 0), name, why);
	}
	run_free(&r);
}

static void md5_hex(const void *p, size_t n, char hex[33])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	EVP_Digest(p, n, md, &len, EVP_md5(), NULL);
	for (unsigned i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

static void check_big_output(struct sbx_vm *vm)
{
	char *argv[] = { "/bin/sh", "-c",
			 "head -c 10485760 /dev/urandom > /tmp/big && md5sum /tmp/big >&2 && cat /tmp/big", NULL };
	struct run r;
	if (run(vm, argv, NULL, 0, 120000, &r) < 0) {
		result(false, "10 MiB of output arrive intact", r.why);
		run_free(&r);
		return;
	}
	char hex[33];
	md5_hex(r.out, r.out_len, hex);
	char why[256];
	snprintf(why, sizeof(why), "got %zu bytes, md5 %s, guest said %.40s", r.out_len, hex, r.err);
	result(r.status == 0 && r.out_len == BIG_SIZE && strncmp(r.err, hex, 32) == 0,
	       "10 MiB of output arrive intact", why);
	run_free(&r);
}

static void check_stdin(struct sbx_vm *vm)
{
	size_t n = 3 * 1024 * 1024 + 7; /* several flow-control windows */
	char *data = malloc(n);
	if (data == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		data[i] = (char)('a' + i % 26);
	char *argv[] = { "/bin/sh", "-c", "md5sum | cut -c1-32", NULL };
	struct run r;
	char hex[33], why[256];
	md5_hex(data, n, hex);
	if (run(vm, argv, data, n, 120000, &r) < 0) {
		result(false, "stdin is piped in full", r.why);
	} else {
		snprintf(why, sizeof(why), "guest md5 %.40s, host %s", r.out, hex);
		result(r.status == 0 && strncmp(r.out, hex, 32) == 0, "stdin is piped in full", why);
	}
	run_free(&r);
	free(data);
}

struct conc {
	struct sbx_vm *vm;
	int i;
	bool ok;
	char why[512];
};

static void *conc_main(void *arg)
{
	struct conc *c = arg;
	char cmd[64], want[32];
	snprintf(cmd, sizeof(cmd), "sleep 1; echo proc-%d", c->i);
	snprintf(want, sizeof(want), "proc-%d\n", c->i);
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct run r;
	if (run(c->vm, argv, NULL, 0, 120000, &r) < 0)
		snprintf(c->why, sizeof(c->why), "%s", r.why);
	else
		c->ok = r.status == 0 && strcmp(r.out, want) == 0;
	run_free(&r);
	return NULL;
}

static void check_concurrent(struct sbx_vm *vm)
{
	struct conc c[CONCURRENT];
	pthread_t th[CONCURRENT];
	int64_t t0 = sbx_now_ms();
	for (int i = 0; i < CONCURRENT; i++) {
		c[i] = (struct conc){ .vm = vm, .i = i };
		if (pthread_create(&th[i], NULL, conc_main, &c[i]) != 0)
			c[i].i = -1;
	}
	bool ok = true;
	char why[600] = "";
	for (int i = 0; i < CONCURRENT; i++) {
		if (c[i].i < 0) {
			ok = false;
			continue;
		}
		pthread_join(th[i], NULL);
		if (!c[i].ok) {
			ok = false;
			snprintf(why, sizeof(why), "process %d: %s", i, c[i].why);
		}
	}
	int64_t took = sbx_now_ms() - t0;
	if (ok && took > 15000) {
		ok = false;
		snprintf(why, sizeof(why), "20 x 'sleep 1' took %lld ms: not concurrent", (long long)took);
	}
	result(ok, "20 concurrent processes in one VM", why);
}

static void check_timeout_kill(struct sbx_vm *vm)
{
	sbx_error_t err = NULL;
	char *argv[] = { "/bin/sh", "-c", "sleep 4321 & sleep 4322; echo never", NULL };
	struct sbx_vm_proc *p = sbx_vm_spawn(vm, argv, NULL, NULL, false, &err);
	int status = -1;
	bool timed_out = p != NULL && sbx_vm_proc_wait(p, in_ms(1500), &status, &err) < 0 &&
			 err->errnum == ETIMEDOUT;
	sbx_error_free(&err);
	bool killed = p != NULL && sbx_vm_proc_kill(p, SIGKILL, &err) == 0 &&
		      sbx_vm_proc_wait(p, in_ms(10000), &status, &err) == 0;
	char why[256];
	snprintf(why, sizeof(why), "timed out %d, killed %d, status %d %s", timed_out, killed, status,
		 err ? sbx_error_msg(err) : "");
	sbx_error_free(&err);
	sbx_vm_proc_free(p);
	result(timed_out && killed && status == 128 + SIGKILL, "a process past its deadline is killed", why);
	/* The whole group went: no sleep 4321 / 4322 left behind. */
	check_sh(vm, "kill on timeout leaves no process", "ps -o args | grep -c '[s]leep 432'", 1, "0\n");
}

/* Moves an image directory with FS_MV: the overlay must not answer EXDEV. */
/* Reads the terminal's screen into r->out until it holds `needle`. */
static bool screen_until(struct sbx_vm_proc *p, struct run *r, const char *needle, int64_t deadline,
			 sbx_error_t *err)
{
	char buf[4096];
	while (strstr(r->out, needle) == NULL) {
		int fd;
		ssize_t n = sbx_vm_proc_read(p, &fd, buf, sizeof(buf), deadline, err);
		if (n <= 0 || fd != 1 || append(&r->out, &r->out_len, buf, (size_t)n) < 0)
			return false;
	}
	return true;
}

static bool type_keys(struct sbx_vm_proc *p, const char *keys, sbx_error_t *err)
{
	return sbx_vm_proc_write(p, keys, strlen(keys), in_ms(10000), err) == (ssize_t)strlen(keys);
}

/* An interactive shell on a terminal: keys echo, the size is the one asked
 * for, a resize is seen, and the shell's own exit ends the stream. */
static void check_pty(struct sbx_vm *vm)
{
	char *argv[] = { "/bin/sh", NULL }, *env[] = { "PS1=$ ", NULL };
	struct run r = { .out = calloc(1, 1) };
	sbx_error_t err = NULL;
	int64_t deadline = in_ms(60000);
	struct sbx_vm_proc *p = sbx_vm_spawn_pty(vm, argv, env, NULL, 33, 101, &err);
	bool ok = p != NULL && screen_until(p, &r, "$ ", deadline, &err);
	result(ok, "a shell on a terminal prompts", sbx_error_msg(err));
	ok = ok && type_keys(p, "echo hi\n", &err) && screen_until(p, &r, "echo hi\r\nhi\r\n", deadline, &err);
	result(ok, "typed keys echo and run", ok ? NULL : r.out);
	ok = ok && type_keys(p, "stty size\n", &err) && screen_until(p, &r, "33 101\r\n", deadline, &err);
	result(ok, "stty size shows the requested size", ok ? NULL : r.out);
	ok = ok && sbx_vm_proc_resize(p, 40, 120, &err) == 0 && type_keys(p, "stty size\n", &err) &&
	     screen_until(p, &r, "40 120\r\n", deadline, &err);
	result(ok, "a resize shows in stty size", ok ? NULL : r.out);
	int status = -1;
	ok = ok && type_keys(p, "exit 3\n", &err) && sbx_vm_proc_wait(p, deadline, &status, &err) == 0 && status == 3;
	result(ok, "the shell's exit code ends the terminal", sbx_error_msg(err));
	sbx_error_free(&err);
	sbx_vm_proc_free(p);
	run_free(&r);
}

static bool fs_mv(struct sbx_vm *vm, const char *src, const char *dst, char *why, size_t cap)
{
	sbx_error_t err = NULL;
	struct proto_msg req = { .type = PROTO_FS_MV, .u.fs_mv = { (char *)src, (char *)dst, 0 } };
	struct sbx_vm_fs *op = sbx_vm_fs_start(vm, &req, &err);
	struct proto_fs_done done = { 0 };
	int rc = -1;
	if (op != NULL) {
		struct proto_msg batch;
		while ((rc = sbx_vm_fs_next(op, &batch, &done, in_ms(30000), &err)) == 1)
			proto_msg_free(&batch);
		sbx_vm_fs_free(op);
	}
	snprintf(why, cap, "%s", sbx_error_msg(err));
	sbx_error_free(&err);
	return rc == 0 && done.count == 1;
}

static void check_image_dirs_rename(struct sbx_vm *vm)
{
	/* mv falls back to copy + delete on EXDEV: only an unchanged inode
	 * number of a file inside shows that the directory was renamed. */
	check_sh(vm, "mv renames a directory that comes from the image (no copy)",
		 "ino() { set -- $(ls -id \"$1\"); echo \"$1\"; }; a=$(ino /etc/passwd); "
		 "mv /etc /etc.moved && b=$(ino /etc.moved/passwd) && mv /etc.moved /etc && test -f /etc/passwd "
		 "&& test \"$a\" = \"$b\" && echo renamed",
		 0, "renamed\n");
	char why[512];
	bool ok = fs_mv(vm, "/root", "/root.moved", why, sizeof(why));
	result(ok, "fs mv renames a directory that comes from the image", why);
	if (ok) {
		check_sh(vm, "the moved image directory is where fs mv put it",
			 "test -d /root.moved && test ! -e /root && echo moved", 0, "moved\n");
		ok = fs_mv(vm, "/root.moved", "/root", why, sizeof(why));
		result(ok, "fs mv moves it back", why);
	}
}

/* Boots `image` as `user`; returns the VM once ready, else NULL with *err. */
static struct sbx_vm *boot_as(struct sbx_vm_options opt, const char *image, const char *user, sbx_error_t *err)
{
	opt.image = image;
	opt.user = user;
	struct sbx_vm *vm = sbx_vm_start(&opt, err);
	if (vm != NULL && sbx_vm_wait_ready(vm, in_ms(180000), err) < 0) {
		sbx_vm_stop(vm, in_ms(10000));
		return NULL;
	}
	return vm;
}

/* The image's User inside the guest: processes drop to it, fs operations
 * stay root.  The python VM already runs as "nobody" (its checks come
 * first); this boots "1234:5678" and the unresolvable "nosuchuser". */
static void check_numeric_and_unknown_users(const struct sbx_vm_options *opt, const char *image)
{
	sbx_error_t err = NULL;
	struct sbx_vm *vm = boot_as(*opt, image, "1234:5678", &err);
	result(vm != NULL, "user 1234:5678: the VM boots", sbx_error_msg(err));
	sbx_error_free(&err);
	if (vm != NULL) {
		check_sh(vm, "user 1234:5678: id -u, id -g, HOME without a passwd entry",
			 "id -u; id -g; echo \"$HOME\"", 0, "1234\n5678\n/\n");
		sbx_vm_stop(vm, in_ms(10000));
	}
	vm = boot_as(*opt, image, "nosuchuser", &err);
	bool named = vm == NULL && err != NULL && strstr(sbx_error_msg(err), "nosuchuser") != NULL &&
		     strcmp(err->scode, "S300") == 0;
	result(named, "user nosuchuser: ready fails (S300) naming the user", sbx_error_msg(err));
	sbx_error_free(&err);
	if (vm != NULL)
		sbx_vm_stop(vm, in_ms(10000));
}

static void check_python_as_nobody(struct sbx_vm *vm)
{
	check_sh(vm, "user nobody: id -u, id -g, id -G and HOME from /etc/passwd",
		 "id -u; id -g; id -G; echo \"$HOME\"", 0, "65534\n65534\n65534\n/nonexistent\n");
	check_sh(vm, "user nobody: /root is not writable by processes", "echo x > /root/f", 2, NULL);
	sbx_error_t err = NULL;
	bool wrote = sbx_vm_write_file(vm, "/root/by-fs", 0600, false, "fs", 2, in_ms(30000), &err) == 0;
	result(wrote, "user nobody: fs operations still run as root", sbx_error_msg(err));
	sbx_error_free(&err);
	check_sh(vm, "user nobody: the root-owned file fs wrote is not readable", "cat /root/by-fs", 1, "");
	/* A terminal's slave side belongs to the user its process runs as. */
	char *argv[] = { "/bin/sh", "-c", "id -u; stat -c %u \"$(tty)\"", NULL };
	struct run r = { .out = calloc(1, 1) };
	struct sbx_vm_proc *p = sbx_vm_spawn_pty(vm, argv, NULL, NULL, 24, 80, &err);
	bool ok = p != NULL && screen_until(p, &r, "65534\r\n65534\r\n", in_ms(60000), &err);
	result(ok, "user nobody: a terminal's process runs as nobody and owns the terminal",
	       ok ? NULL : err != NULL ? sbx_error_msg(err) : r.out);
	sbx_error_free(&err);
	sbx_vm_proc_free(p);
	run_free(&r);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: vm_api_test ROOTFS [PYTHON_ROOTFS]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	sbx_error_t err = NULL;
	struct sbx_vm_options opt = { .cpus = 2, .memory_mib = 384, .accel = SBX_ACCEL_AUTO, .image = argv[1] };
	char *env[] = { "GREETING=hello from config", NULL };
	opt.env = env;
	opt.hostname = "itest";
	struct sbx_vm *vm = sbx_vm_start(&opt, &err);
	result(vm != NULL, "VM starts", sbx_error_msg(err));
	if (vm == NULL)
		return 1;
	bool ready = sbx_vm_wait_ready(vm, in_ms(120000), &err) == 0;
	result(ready, "guest init becomes ready", sbx_error_msg(err));
	sbx_error_free(&err);
	if (ready) {
		result(sbx_vm_ping(vm, in_ms(10000), &err) == 0 && sbx_vm_alive(vm), "ping answers", sbx_error_msg(err));
		sbx_error_free(&err);
		check_sh(vm, "echo", "echo hello", 0, "hello\n");
		check_sh(vm, "exit code passes through", "exit 42", 42, "");
		check_sh(vm, "unknown command exits 127", "exec /no/such/cmd 2>/dev/null", 127, "");
		check_sh(vm, "boot env and hostname from CONFIG", "echo \"$GREETING\"; hostname", 0,
			 "hello from config\nitest\n");
		check_sh(vm, "root by default, HOME from /etc/passwd", "id -u; echo \"$HOME\"", 0, "0\n/root\n");
		check_sh(vm, "--cpus 2 visible in nproc", "nproc", 0, "2\n");
		check_sh(vm, "memory cap visible to the guest",
			 "t=$(awk '/MemTotal/ {print $2}' /proc/meminfo); [ \"$t\" -le 393216 ] && [ \"$t\" -gt 262144 ]",
			 0, "");
		check_stdin(vm);
		check_big_output(vm);
		check_concurrent(vm);
		check_timeout_kill(vm);
		check_pty(vm);
		const char *marker = getenv("HOST_MARKER");
		if (marker != NULL) {
			char cmd[512];
			snprintf(cmd, sizeof(cmd), "find / -name '%s' 2>/dev/null | wc -l", marker);
			check_sh(vm, "a host file is not visible anywhere in the guest", cmd, 0, "0\n");
		}
		check_sh(vm, "the root is writable (overlay on the scratch disk)",
			 "echo x > /written && cat /written", 0, "x\n");
		check_image_dirs_rename(vm);
	}
	int status = sbx_vm_stop(vm, in_ms(10000));
	char why[64];
	snprintf(why, sizeof(why), "qemu status %d", status);
	result(status == 0, "the VM powers off cleanly", why);
	if (argc > 2) {
		opt.cpus = 1;
		vm = boot_as(opt, argv[2], "nobody", &err);
		bool ok = vm != NULL;
		result(ok, "python rootfs boots (user nobody)", sbx_error_msg(err));
		sbx_error_free(&err);
		if (ok) {
			check_python_as_nobody(vm);
			char *py[] = { "python3", "-c", "print(6*7)", NULL };
			struct run r;
			bool pok = run(vm, py, NULL, 0, 120000, &r) == 0 && r.status == 0 && strcmp(r.out, "42\n") == 0;
			result(pok, "python3 -c 'print(6*7)' prints 42", r.why[0] ? r.why : r.err);
			run_free(&r);
			sbx_vm_stop(vm, in_ms(10000));
		}
		check_numeric_and_unknown_users(&opt, argv[2]);
	}
	printf("1..%d\n", test_no);
	return failures == 0 ? 0 : 1;
}
