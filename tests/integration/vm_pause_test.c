/* Pause and resume of a running VM (vm.h sbx_vm_pause, sbx_vm_resume),
 * on one booted VM: a background writer's output stays continuous over
 * three pause/resume cycles (no line lost, cut or doubled), a process
 * started before the pause still runs after it (its stdin and stdout
 * work), an exec in flight over a pause completes, a file written before
 * the pause is there after, the guest's clock is the host's again after
 * a pause of more than 3 s (RESUMED), the pause directory is 0700 with
 * 0600 files and goes at the resume, the VM counts as alive while paused
 * and a ping then fails by its deadline, a second pause and the resume of
 * a running VM fail, pauses whose deadline passes part way leave the VM
 * running, a kill of a paused VM's process returns at once
 * (the signal arrives after the resume), a paused VM's stop removes
 * its state, and a resume from a broken state leaves the VM dead with
 * its cause (its stop removes the state too).  Prints
 * TAP.  Usage: vm_pause_test IMAGE.erofs   (uses a private state
 * directory) */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "vm/vm.h"
#include "vm_tap.h"

#define READY_MS 180000
#define OP_MS 60000
#define CYCLES 3

/* The background writer's output, read on a thread of its own all along. */
struct collector {
	struct sbx_vm_proc *p;
	char *buf;
	size_t len, cap;
	int status;
	char error[256];
};

static void *collect(void *arg)
{
	struct collector *c = arg;
	sbx_error_t err = NULL;
	for (;;) {
		if (c->cap - c->len < 4096) {
			char *nb = realloc(c->buf, c->cap * 2);
			if (nb == NULL)
				break;
			c->buf = nb;
			c->cap *= 2;
		}
		int fd;
		/* Generous: a pause stops the output for seconds. */
		ssize_t n = sbx_vm_proc_read(c->p, &fd, c->buf + c->len, c->cap - c->len - 1, sbx_now_ms() + 300000,
					     &err);
		if (n <= 0)
			break;
		if (fd == 1)
			c->len += (size_t)n;
	}
	c->buf[c->len] = '\0';
	if (err != NULL)
		snprintf(c->error, sizeof(c->error), "%s", sbx_error_msg(err));
	sbx_error_free(&err);
	c->status = -1;
	if (sbx_vm_proc_wait(c->p, sbx_now_ms() + OP_MS, &c->status, &err) < 0)
		snprintf(c->error, sizeof(c->error), "wait: %s", sbx_error_msg(err));
	sbx_error_free(&err);
	return NULL;
}

/* Lines "0".."n-1" then "end", each once and whole: *n, or a reason. */
static bool continuous(const char *text, long *n, char *why, size_t cap)
{
	*n = 0;
	for (const char *p = text; *p != '\0';) {
		const char *nl = strchr(p, '\n');
		if (nl == NULL) {
			snprintf(why, cap, "a cut line at %ld: \"%.40s\"", *n, p);
			return false;
		}
		if ((size_t)(nl - p) == 3 && strncmp(p, "end", 3) == 0)
			return nl[1] == '\0' || (snprintf(why, cap, "output after end"), false);
		char *e;
		long v = strtol(p, &e, 10);
		if (e != nl || v != *n) {
			snprintf(why, cap, "line %ld reads \"%.*s\"", *n, (int)(nl - p < 40 ? nl - p : 40), p);
			return false;
		}
		(*n)++;
		p = nl + 1;
	}
	snprintf(why, cap, "no end line after %ld lines", *n);
	return false;
}

/* The pause directory is 0700, and every file in it 0600 but the store
 * image's second name. */
static bool modes_private(const char *dir, char *why, size_t cap)
{
	struct stat st;
	if (stat(dir, &st) < 0 || (st.st_mode & 0777) != 0700) {
		snprintf(why, cap, "%.400s: mode %o", dir, (unsigned)(st.st_mode & 0777));
		return false;
	}
	DIR *d = opendir(dir);
	struct dirent *e;
	int files = 0;
	bool ok = d != NULL;
	while (ok && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char p[700];
		snprintf(p, sizeof(p), "%.400s/%.255s", dir, e->d_name);
		/* store.erofs is a second name of the image store's file,
		 * shared read-only with every VM of that image: its mode is
		 * the store's, and the pause must not change it. */
		bool store_link = strcmp(e->d_name, "store.erofs") == 0;
		if (lstat(p, &st) < 0 || !S_ISREG(st.st_mode) ||
		    (store_link ? st.st_nlink < 2 : (st.st_mode & 0777) != 0600)) {
			snprintf(why, cap, "%.400s: mode %o", p, (unsigned)(st.st_mode & 0777));
			ok = false;
		}
		files++;
	}
	if (d != NULL)
		closedir(d);
	if (ok && files < 2) {
		snprintf(why, cap, "%d files in %.300s (state and scratch disk expected)", files, dir);
		ok = false;
	}
	return ok;
}

/* Another thread's calls all through the pauses: pings (by a short
 * deadline), execs and file writes, each succeeding or timing out. */
struct hammer {
	struct sbx_vm *vm;
	volatile bool stop;
	int pings, pings_timed_out, execs, writes;
	char error[256];
};

static void *hammer_main(void *arg)
{
	struct hammer *h = arg;
	while (!h->stop && h->error[0] == '\0') {
		sbx_error_t err = NULL;
		if (sbx_vm_ping(h->vm, sbx_now_ms() + 200, &err) == 0)
			h->pings++;
		else if (err != NULL && err->errnum == ETIMEDOUT)
			h->pings_timed_out++;
		else
			snprintf(h->error, sizeof(h->error), "ping: %s", sbx_error_msg(err));
		sbx_error_free(&err);
		char *out = vm_sh(h->vm, "echo hammer", OP_MS);
		if (out != NULL && strcmp(out, "hammer\n") == 0)
			h->execs++;
		else
			snprintf(h->error, sizeof(h->error), "exec read \"%s\"", out != NULL ? out : "(failed)");
		free(out);
		char data[32];
		int n = snprintf(data, sizeof(data), "%d\n", h->writes);
		if (sbx_vm_write_file(h->vm, "/tmp/hammer", 0600, false, data, (size_t)n, sbx_now_ms() + OP_MS, &err) == 0)
			h->writes++;
		else
			snprintf(h->error, sizeof(h->error), "write: %s", sbx_error_msg(err));
		sbx_error_free(&err);
		usleep(50000);
	}
	return NULL;
}

/* Connects to 127.0.0.1:port and reads what the guest's server says
 * (up to 63 bytes, 10 s at most). */
static bool fetch(uint16_t port, char *out, size_t cap)
{
	out[0] = '\0';
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct timeval tv = { .tv_sec = 10 };
	bool ok = fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0 &&
		  connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	size_t len = 0;
	while (ok && len < cap - 1) {
		ssize_t n = read(fd, out + len, cap - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	out[len] = '\0';
	if (fd >= 0)
		close(fd);
	return ok && len > 0;
}

/* A networked VM whose published port's server started before the
 * pause answers through the new network helper after the resume. */
static void networked(const char *image, const char *state)
{
	sbx_error_t err = NULL;
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof(sa);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 16) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0) {
		result(false, "a networked VM's published port answers before and after a pause", "host listener");
		return;
	}
	uint16_t port = ntohs(sa.sin_port);
	char *net_args[] = { "--sandbox", "pause-test", "--publish", "8080", NULL };
	struct sbx_vm_options opt = { .cpus = 1, .memory_mib = 256, .image = image, .hostname = "paused",
				      .net_args = net_args, .publish_fds = &lfd, .n_publish = 1 };
	struct sbx_vm *vm = sbx_vm_start(&opt, &err);
	close(lfd); /* the VM keeps its own copy */
	if (vm != NULL && sbx_vm_wait_ready(vm, sbx_now_ms() + READY_MS, &err) < 0) {
		sbx_vm_stop(vm, 0);
		vm = NULL;
	}
	char *srv_argv[] = { "sh", "-c", "while true; do echo served | nc -l -p 8080; done", NULL };
	struct sbx_vm_proc *srv = vm != NULL ? sbx_vm_spawn(vm, srv_argv, NULL, NULL, false, &err) : NULL;
	char before[64] = "", after[64] = "", dir[600];
	snprintf(dir, sizeof(dir), "%.500s/pause-net", state);
	/* The server listens before the first fetch (a fixed sleep lost the
	 * race on a loaded host: the helper accepted, nobody in the guest
	 * did), and again before the pause (else a first connection after
	 * the resume finds nobody listening yet). */
	static const char wait_listening[] = "i=0; while ! netstat -tln | grep -q ':8080 '; do sleep 0.1; "
					     "i=$((i+1)); [ $i -gt 100 ] && exit 1; done; echo listening";
	char *listening = srv != NULL ? vm_sh(vm, wait_listening, OP_MS) : NULL;
	bool ok = listening != NULL && fetch(port, before, sizeof(before));
	free(listening);
	listening = ok ? vm_sh(vm, wait_listening, OP_MS) : NULL;
	ok = listening != NULL;
	free(listening);
	struct sbx_vm_pause_info info;
	ok = ok && sbx_vm_pause(vm, dir, &info, sbx_now_ms() + OP_MS, &err) == 0 &&
	     sbx_vm_resume(vm, sbx_now_ms() + OP_MS, &err) == 0;
	int tries = 0;
	for (int64_t t = sbx_now_ms(); ok && tries < 6 && !fetch(port, after, sizeof(after)); t = sbx_now_ms()) {
		printf("# attempt %d failed after %lld ms: %s\n", tries, (long long)(sbx_now_ms() - t), strerror(errno));
		tries++;
		usleep(500000);
	}
	if (tries > 0)
		printf("# published port after the resume: %d failed connection(s) before one answered\n", tries);
	ok = ok && after[0] != '\0';
	if (!ok && vm != NULL) {
		char *diag = vm_sh(vm, "netstat -tan; ip neigh; ip -s link show eth0; ps", OP_MS);
		printf("# guest after the resume:\n# %s\n", diag != NULL ? diag : "(no answer)");
		free(diag);
	}
	/* The helper started by the resume lives on: so does the VM. */
	sleep(1);
	bool alive = vm != NULL && sbx_vm_alive(vm);
	char why[300];
	snprintf(why, sizeof(why), "before \"%s\", after \"%s\", alive %d: %s", before, after, alive,
		 sbx_error_msg(err));
	result(ok && tries == 0 && alive && strcmp(before, "served\n") == 0 && strcmp(after, "served\n") == 0,
	       "a networked VM's published port answers before and after a pause", why);
	sbx_error_free(&err);
	sbx_vm_proc_free(srv);
	if (vm != NULL)
		sbx_vm_stop(vm, sbx_now_ms() + 10000);
}

/* Lines "0\n", "1\n"... into a process's stdin, a batch per write,
 * through the pauses (held writes block), then "end" and EOF. */
struct feeder {
	struct sbx_vm_proc *p;
	volatile bool stop;
	long lines;
	char error[256];
};

static void *feed_main(void *arg)
{
	struct feeder *f = arg;
	char buf[8192];
	sbx_error_t err = NULL;
	while (!f->stop && f->error[0] == '\0') {
		size_t len = 0;
		for (int k = 0; k < 200; k++)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%ld\n", f->lines++);
		for (size_t off = 0; off < len && f->error[0] == '\0';) {
			ssize_t n = sbx_vm_proc_write(f->p, buf + off, len - off, sbx_now_ms() + OP_MS, &err);
			if (n <= 0)
				snprintf(f->error, sizeof(f->error), "write: %s", sbx_error_msg(err));
			else
				off += (size_t)n;
			sbx_error_free(&err);
		}
		usleep(20000);
	}
	if (f->error[0] == '\0' && (sbx_vm_proc_write(f->p, "end\n", 4, sbx_now_ms() + OP_MS, &err) != 4 ||
				      sbx_vm_proc_close_stdin(f->p, &err) < 0))
		snprintf(f->error, sizeof(f->error), "end: %s", sbx_error_msg(err));
	sbx_error_free(&err);
	return NULL;
}

/* sbx_vm_proc_kill in a thread of its own, saying when it returned. */
struct killer {
	struct sbx_vm_proc *p;
	int sig, rc;
	atomic_bool done;
};

static void *kill_main(void *arg)
{
	struct killer *k = arg;
	sbx_error_t err = NULL;
	k->rc = sbx_vm_proc_kill(k->p, k->sig, &err);
	sbx_error_free(&err);
	atomic_store(&k->done, true);
	return NULL;
}

static bool gone(const char *path)
{
	return access(path, F_OK) < 0 && errno == ENOENT;
}

/* Reads a line of the stdin echo process's output. */
/* Pauses whose deadline passes part way (before the vCPUs stop, while
 * they stand still, while the migration runs) fail and leave the VM
 * running: it answers a ping, also well after the migration such a pause
 * started would have ended (QEMU stops a VM whose migration completed). */
static void late_deadlines(struct sbx_vm *vm, const char *state)
{
	char why[512] = "";
	int failed = 0;
	bool ok = true;
	for (int ms = 2; ms <= 2000 && ok; ms += ms < 60 ? 8 : 60) {
		char dir[600];
		snprintf(dir, sizeof(dir), "%s/pause-late-%d", state, ms);
		struct sbx_vm_pause_info info;
		sbx_error_t err = NULL;
		int rc = sbx_vm_pause(vm, dir, &info, sbx_now_ms() + ms, &err);
		if (rc == 0) { /* in time: later deadlines would be too */
			rc = sbx_vm_resume(vm, sbx_now_ms() + OP_MS, &err);
			ok = rc == 0;
			snprintf(why, sizeof(why), "a pause in %d ms: resume %s", ms, sbx_error_msg(err));
			sbx_error_free(&err);
			break;
		}
		printf("# a pause with %d ms: %s\n", ms, sbx_error_msg(err));
		sbx_error_free(&err);
		failed++;
		usleep(1500000);
		if (sbx_vm_paused(vm) || !gone(dir) || sbx_vm_ping(vm, sbx_now_ms() + 10000, &err) < 0) {
			ok = false;
			snprintf(why, sizeof(why), "after a pause with %d ms: paused %d, dir gone %d, ping: %s", ms,
				 sbx_vm_paused(vm), gone(dir), sbx_error_msg(err));
		}
		sbx_error_free(&err);
	}
	printf("# %d pauses failed by their deadline\n", failed);
	result(ok && failed > 0, "pauses that fail by their deadline part way leave the VM running", why);
}

/* A resume from a state QEMU cannot load fails and leaves the VM dead,
 * with a cause that says so; its processes' calls fail at once (not by
 * their deadlines); its stop removes the pause directory. */
static void broken_state(struct sbx_vm *vm, const char *state)
{
	char dir[600], file[700], why[512] = "";
	snprintf(dir, sizeof(dir), "%s/pause-broken", state);
	snprintf(file, sizeof(file), "%s/state", dir);
	sbx_error_t err = NULL;
	char *argv[] = { "sleep", "1000", NULL };
	struct sbx_vm_proc *p = sbx_vm_spawn(vm, argv, NULL, NULL, false, &err);
	struct sbx_vm_pause_info info;
	bool ok = p != NULL && sbx_vm_pause(vm, dir, &info, sbx_now_ms() + OP_MS, &err) == 0 &&
		  truncate(file, 4096) == 0;
	int resumed = ok ? sbx_vm_resume(vm, sbx_now_ms() + OP_MS, &err) : 0;
	char cause[300] = "";
	sbx_vm_death_cause(vm, 0, cause, sizeof(cause));
	snprintf(why, sizeof(why), "setup %d, resume %d (%s), alive %d, paused %d, cause \"%s\"", ok, resumed,
		 sbx_error_msg(err), sbx_vm_alive(vm), sbx_vm_paused(vm), cause);
	ok = ok && resumed < 0 && !sbx_vm_alive(vm) && !sbx_vm_paused(vm) && strstr(cause, "did not resume") != NULL;
	sbx_error_free(&err);
	int64_t t = sbx_now_ms();
	int status = -1;
	bool waited = p != NULL && sbx_vm_proc_wait(p, t + 20000, &status, &err) == 0;
	bool fast = sbx_now_ms() - t < 5000;
	sbx_error_free(&err);
	result(ok && !waited && fast && !gone(dir),
	       "a resume QEMU cannot load leaves the VM dead with its cause, its processes failing at once", why);
	sbx_vm_proc_free(p);
	sbx_vm_stop(vm, sbx_now_ms() + 10000);
	result(gone(dir), "stopping a VM whose resume failed removes its pause directory", dir);
}

static bool echo_roundtrip(struct sbx_vm_proc *p, const char *word, char *why, size_t cap)
{
	sbx_error_t err = NULL;
	char line[64], out[128] = "";
	snprintf(line, sizeof(line), "%s\n", word);
	bool ok = sbx_vm_proc_write(p, line, strlen(line), sbx_now_ms() + OP_MS, &err) == (ssize_t)strlen(line);
	size_t len = 0;
	int64_t deadline = sbx_now_ms() + OP_MS;
	while (ok && strchr(out, '\n') == NULL && len < sizeof(out) - 1) {
		int fd;
		ssize_t n = sbx_vm_proc_read(p, &fd, out + len, sizeof(out) - 1 - len, deadline, &err);
		if (n <= 0) {
			ok = false;
			break;
		}
		len += (size_t)n;
		out[len] = '\0';
	}
	char want[80];
	snprintf(want, sizeof(want), "got %s\n", word);
	if (!ok || strcmp(out, want) != 0) {
		snprintf(why, cap, "wanted \"%s\", read \"%s\" (%s)", word, out, sbx_error_msg(err));
		ok = false;
	}
	sbx_error_free(&err);
	return ok;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: vm_pause_test IMAGE.erofs\n");
		return 2;
	}
	char state[] = "/tmp/sbx-pause-test-XXXXXX";
	if (mkdtemp(state) == NULL)
		return 2;
	setenv("III_SANDBOX_STATE_DIR", state, 1);
	char why[512] = "";
	sbx_error_t err = NULL;

	if (getenv("PAUSE_TEST_ONLY_NET") != NULL) { /* for debugging the network's part */
		networked(argv[1], state);
		printf("1..%d\n", test_no);
		return failures ? 1 : 0;
	}
	struct sbx_vm_options opt = { .cpus = 1, .memory_mib = 256, .image = argv[1], .hostname = "paused" };
	struct sbx_vm *vm = sbx_vm_start(&opt, &err);
	if (vm != NULL && sbx_vm_wait_ready(vm, sbx_now_ms() + READY_MS, &err) < 0) {
		sbx_vm_stop(vm, 0);
		vm = NULL;
	}
	result(vm != NULL, "the VM boots", sbx_error_msg(err));
	sbx_error_free(&err);
	if (vm == NULL) {
		printf("1..%d\n", test_no);
		return 1;
	}

	/* Before the first pause: a file, a writer, an echo process. */
	static const char before[] = "written before the pause\n";
	int wrote = sbx_vm_write_file(vm, "/root/before.txt", 0644, false, before, sizeof(before) - 1,
				      sbx_now_ms() + OP_MS, &err);
	result(wrote == 0, "a file is written before the pause", sbx_error_msg(err));
	sbx_error_free(&err);
	char *writer_argv[] = { "sh", "-c",
				"i=0; while [ ! -e /tmp/stop-writer ]; do echo $i; i=$((i+1)); sleep 0.05; done; echo end",
				NULL };
	struct collector col = { .cap = 1 << 16 };
	col.buf = malloc(col.cap);
	col.p = sbx_vm_spawn(vm, writer_argv, NULL, NULL, false, &err);
	pthread_t reader;
	bool reading = col.buf != NULL && col.p != NULL && pthread_create(&reader, NULL, collect, &col) == 0;
	result(reading, "a background writer runs", sbx_error_msg(err));
	sbx_error_free(&err);
	char *echo_argv[] = { "sh", "-c", "while read w; do echo \"got $w\"; done", NULL };
	struct sbx_vm_proc *echo = sbx_vm_spawn(vm, echo_argv, NULL, NULL, true, &err);
	result(echo != NULL && echo_roundtrip(echo, "first", why, sizeof(why)), "an echo process answers before the pause",
	       echo == NULL ? sbx_error_msg(err) : why);
	sbx_error_free(&err);
	sleep(1);

	/* Host to guest: a stdin stream fed all along, echoed back by cat. */
	char *cat_argv[] = { "cat", NULL };
	struct feeder feed = { 0 };
	struct collector cat_out = { .cap = 1 << 16 };
	cat_out.buf = malloc(cat_out.cap);
	feed.p = cat_out.p = sbx_vm_spawn(vm, cat_argv, NULL, NULL, true, &err);
	sbx_error_free(&err);
	pthread_t feeder_thread, cat_reader;
	bool feeding = feed.p != NULL && cat_out.buf != NULL && pthread_create(&cat_reader, NULL, collect, &cat_out) == 0;
	if (feeding && pthread_create(&feeder_thread, NULL, feed_main, &feed) != 0) {
		sbx_vm_proc_close_stdin(feed.p, &err);
		sbx_error_free(&err);
		pthread_join(cat_reader, NULL);
		feeding = false;
	}
	struct hammer ham = { .vm = vm };
	pthread_t hammer_thread;
	bool hammering = pthread_create(&hammer_thread, NULL, hammer_main, &ham) == 0;
	char dirs[CYCLES + 1][600];
	bool cycles_ok = true, modes_ok = true, removed_ok = true, alive_ok = true, again_ok = true, ping_ok = true;
	bool inflight_ok = true;
	char cycle_why[512] = "", mode_why[512] = "", misc_why[512] = "";
	int64_t clock_skew_ms = 0;
	for (int i = 0; i < CYCLES; i++) {
		snprintf(dirs[i], sizeof(dirs[i]), "%s/pause-%d", state, i);
		/* An exec in flight over the pause: it completes after. */
		char *sl_argv[] = { "sh", "-c", "sleep 2; echo slept", NULL };
		struct sbx_vm_proc *sl = sbx_vm_spawn(vm, sl_argv, NULL, NULL, false, &err);
		sbx_error_free(&err);
		usleep(300000);
		struct sbx_vm_pause_info info;
		int rc = sbx_vm_pause(vm, dirs[i], &info, sbx_now_ms() + OP_MS, &err);
		if (rc < 0) {
			cycles_ok = false;
			snprintf(cycle_why, sizeof(cycle_why), "pause %d: %s", i, sbx_error_msg(err));
			sbx_error_free(&err);
			sbx_vm_proc_free(sl);
			break;
		}
		printf("# pause %d: %lld ms (vCPUs stopped %lld ms), %llu bytes\n", i, (long long)info.duration_ms,
		       (long long)info.stopped_ms, (unsigned long long)info.size_bytes);
		if (info.size_bytes == 0 || info.duration_ms <= 0 || info.stopped_ms <= 0) {
			cycles_ok = false;
			snprintf(cycle_why, sizeof(cycle_why), "pause %d: info not filled", i);
		}
		if (modes_ok && !modes_private(dirs[i], mode_why, sizeof(mode_why)))
			modes_ok = false;
		if (!sbx_vm_paused(vm) || !sbx_vm_alive(vm)) {
			alive_ok = false;
			snprintf(misc_why, sizeof(misc_why), "cycle %d: paused %d alive %d", i, sbx_vm_paused(vm),
				 sbx_vm_alive(vm));
		}
		/* A second pause fails (EALREADY); a ping fails by its deadline. */
		char other[700];
		snprintf(other, sizeof(other), "%.600s-again", dirs[i]);
		struct sbx_vm_pause_info info2;
		if (sbx_vm_pause(vm, other, &info2, sbx_now_ms() + 2000, &err) == 0 || err == NULL ||
		    err->errnum != EALREADY || !gone(other))
			again_ok = false;
		sbx_error_free(&err);
		int64_t t = sbx_now_ms();
		if (sbx_vm_ping(vm, t + 300, &err) == 0 || err == NULL || err->errnum != ETIMEDOUT ||
		    sbx_now_ms() - t > 3000)
			ping_ok = false;
		sbx_error_free(&err);
		/* The second pause stands still for more than 3 s: the clock. */
		sleep(i == 1 ? 4 : 1);
		int64_t r0 = sbx_now_ms();
		rc = sbx_vm_resume(vm, sbx_now_ms() + OP_MS, &err);
		printf("# resume %d: %lld ms\n", i, (long long)(sbx_now_ms() - r0));
		if (rc < 0) {
			cycles_ok = false;
			snprintf(cycle_why, sizeof(cycle_why), "resume %d: %s", i, sbx_error_msg(err));
			sbx_error_free(&err);
			sbx_vm_proc_free(sl);
			break;
		}
		if (i == 1) {
			/* Whole seconds (busybox's date has no %N): the
			 * truncation costs at most 1 s of the 2. */
			char *out = vm_sh(vm, "date +%s", OP_MS);
			struct timespec now;
			clock_gettime(CLOCK_REALTIME, &now);
			if (out != NULL)
				clock_skew_ms = (int64_t)strtoll(out, NULL, 10) * 1000 - (int64_t)now.tv_sec * 1000;
			else
				clock_skew_ms = INT64_MAX;
			free(out);
		}
		if (!gone(dirs[i])) {
			removed_ok = false;
			snprintf(misc_why, sizeof(misc_why), "%.400s still there after the resume", dirs[i]);
		}
		if (sbx_vm_paused(vm) || !sbx_vm_alive(vm))
			alive_ok = false;
		/* The exec in flight finishes. */
		char out[64] = "";
		int fd, status = -1;
		ssize_t n = sl != NULL ? sbx_vm_proc_read(sl, &fd, out, sizeof(out) - 1, sbx_now_ms() + OP_MS, &err) : -1;
		if (n < 0 || strncmp(out, "slept", 5) != 0 || sbx_vm_proc_wait(sl, sbx_now_ms() + OP_MS, &status, &err) < 0 ||
		    status != 0) {
			inflight_ok = false;
			snprintf(misc_why, sizeof(misc_why), "cycle %d: in-flight exec read \"%s\", status %d (%s)", i, out,
				 status, sbx_error_msg(err));
		}
		sbx_error_free(&err);
		sbx_vm_proc_free(sl);
		/* The echo process answers on every cycle. */
		char word[16];
		snprintf(word, sizeof(word), "cycle%d", i);
		if (echo != NULL && !echo_roundtrip(echo, word, cycle_why, sizeof(cycle_why)))
			cycles_ok = false;
	}
	ham.stop = true;
	if (hammering)
		pthread_join(hammer_thread, NULL);
	feed.stop = true;
	if (feeding) {
		pthread_join(feeder_thread, NULL);
		pthread_join(cat_reader, NULL);
	}
	long echoed = 0;
	bool fed_whole = feeding && feed.error[0] == '\0' && continuous(cat_out.buf, &echoed, why, sizeof(why)) &&
			 echoed == feed.lines && cat_out.status == 0;
	if (feeding && feed.error[0] != '\0')
		snprintf(why, sizeof(why), "%s", feed.error);
	printf("# host to guest: %ld lines fed, %ld echoed\n", feed.lines, echoed);
	result(fed_whole, "a stdin stream fed through the pauses reaches the guest whole (cat echoes every line once)",
	       why);
	free(cat_out.buf);
	sbx_vm_proc_free(feed.p);
	snprintf(why, sizeof(why), "%s (%d pings, %d timed out, %d execs, %d writes)", ham.error, ham.pings,
		 ham.pings_timed_out, ham.execs, ham.writes);
	printf("# another thread: %s\n", why);
	result(hammering && ham.error[0] == '\0' && ham.execs > CYCLES,
	       "another thread's pings, execs and file writes through the pauses succeed or time out", why);
	result(cycles_ok, "3 pause/resume cycles succeed and the echo process answers after each", cycle_why);
	result(modes_ok, "the pause directory is 0700 and its files 0600", mode_why);
	result(removed_ok, "the pause directory is removed by the resume", misc_why);
	result(alive_ok, "a paused VM is alive and paused; a resumed one alive and not paused", misc_why);
	result(again_ok, "a second pause of a paused VM fails with EALREADY and makes nothing", NULL);
	result(ping_ok, "a ping while paused fails with ETIMEDOUT by its deadline", NULL);
	result(inflight_ok, "an exec in flight over each pause completes", misc_why);
	snprintf(why, sizeof(why), "guest - host = %lld ms", (long long)clock_skew_ms);
	result(clock_skew_ms > -2000 && clock_skew_ms < 2000,
	       "after a pause of 4 s the guest's clock is within 2 s of the host's", why);

	char *kept = vm_sh(vm, "cat /root/before.txt", OP_MS);
	result(kept != NULL && strcmp(kept, before) == 0, "a file written before the pauses is there after", kept);
	free(kept);
	/* A pause that cannot make its directory leaves the VM running. */
	struct sbx_vm_pause_info failed_info;
	int failed_pause = sbx_vm_pause(vm, "/nonexistent-sbx-dir/pause", &failed_info, sbx_now_ms() + 5000, &err);
	sbx_error_free(&err);
	char *still = vm_sh(vm, "echo still", OP_MS);
	result(failed_pause < 0 && !sbx_vm_paused(vm) && still != NULL && strcmp(still, "still\n") == 0,
	       "a failed pause leaves the VM running", still);
	free(still);
	late_deadlines(vm, state);
	int resumed = sbx_vm_resume(vm, sbx_now_ms() + 2000, &err);
	result(resumed < 0 && err != NULL && err->errnum == EINVAL, "resuming a running VM fails with EINVAL",
	       sbx_error_msg(err));
	sbx_error_free(&err);

	/* The writer ends: its output is whole. */
	struct sbx_vm_pause_info info;
	char *stopped = vm_sh(vm, "touch /tmp/stop-writer", OP_MS);
	free(stopped);
	if (reading)
		pthread_join(reader, NULL);
	long lines = 0;
	bool whole = reading && continuous(col.buf, &lines, why, sizeof(why));
	if (whole && lines < 40) {
		snprintf(why, sizeof(why), "only %ld lines", lines);
		whole = false;
	}
	printf("# the writer wrote %ld lines; %s\n", lines, col.error);
	result(whole && col.status == 0,
	       "the background writer's output is continuous over the pauses (no line lost, cut or doubled)", why);
	sbx_vm_proc_free(col.p);
	free(col.buf);
	sbx_vm_proc_free(echo);

	/* A signal to a process of a paused VM does not wait for the resume:
	 * it goes after RESUMED.  (In a thread: one that waited would wait
	 * for this thread's resume.) */
	char *sleeper_argv[] = { "sleep", "1000", NULL };
	struct killer kl = { .p = sbx_vm_spawn(vm, sleeper_argv, NULL, NULL, false, &err), .sig = 15 };
	sbx_error_free(&err);
	char kill_dir[600];
	snprintf(kill_dir, sizeof(kill_dir), "%s/pause-kill", state);
	uint32_t sleeper_pid = 0;
	bool kill_ok = kl.p != NULL && sbx_vm_proc_pid(kl.p, sbx_now_ms() + OP_MS, &sleeper_pid, &err) == 0 &&
		       sbx_vm_pause(vm, kill_dir, &info, sbx_now_ms() + OP_MS, &err) == 0;
	pthread_t kill_thread;
	bool killing = kill_ok && pthread_create(&kill_thread, NULL, kill_main, &kl) == 0;
	for (int i = 0; killing && i < 200 && !atomic_load(&kl.done); i++)
		usleep(10000);
	bool returned = killing && atomic_load(&kl.done);
	int kill_status = -1;
	kill_ok = kill_ok && sbx_vm_resume(vm, sbx_now_ms() + OP_MS, &err) == 0;
	if (killing)
		pthread_join(kill_thread, NULL);
	kill_ok = kill_ok && killing && kl.rc == 0 && sbx_vm_proc_wait(kl.p, sbx_now_ms() + OP_MS, &kill_status, &err) == 0;
	snprintf(why, sizeof(why), "returned while paused %d, kill %d, status %d (%s)", returned, kl.rc, kill_status,
		 sbx_error_msg(err));
	result(kill_ok && returned && kill_status == 128 + 15,
	       "a kill of a paused VM's process returns at once and the signal arrives after the resume", why);
	sbx_error_free(&err);
	sbx_vm_proc_free(kl.p);

	/* A paused VM's stop removes its state. */
	snprintf(dirs[CYCLES], sizeof(dirs[CYCLES]), "%s/pause-last", state);
	int paused = sbx_vm_pause(vm, dirs[CYCLES], &info, sbx_now_ms() + OP_MS, &err);
	bool was_there = paused == 0 && !gone(dirs[CYCLES]);
	result(paused == 0 && was_there, "the VM pauses once more", sbx_error_msg(err));
	sbx_error_free(&err);
	sbx_vm_stop(vm, sbx_now_ms() + 10000);
	result(gone(dirs[CYCLES]), "stopping a paused VM removes its pause directory", dirs[CYCLES]);

	/* A cold-booted VM (no template: its RAM is its own, its monitor
	 * first opened by the pause) pauses and resumes too. */
	struct sbx_vm_options cold = opt;
	cold.cold_boot = true;
	vm = sbx_vm_start(&cold, &err);
	if (vm != NULL && sbx_vm_wait_ready(vm, sbx_now_ms() + READY_MS, &err) < 0) {
		sbx_vm_stop(vm, 0);
		vm = NULL;
	}
	char cold_dir[600];
	snprintf(cold_dir, sizeof(cold_dir), "%s/pause-cold", state);
	bool cold_ok = vm != NULL && sbx_vm_pause(vm, cold_dir, &info, sbx_now_ms() + OP_MS, &err) == 0 &&
		       sbx_vm_resume(vm, sbx_now_ms() + OP_MS, &err) == 0;
	char *host = cold_ok ? vm_sh(vm, "hostname", OP_MS) : NULL;
	result(cold_ok && host != NULL && strcmp(host, "paused\n") == 0 && gone(cold_dir),
	       "a cold-booted VM pauses, resumes and serves", err != NULL ? sbx_error_msg(err) : host);
	free(host);
	sbx_error_free(&err);
	if (vm != NULL)
		broken_state(vm, state); /* and stops it */

	networked(argv[1], state);

	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", state);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", state);
	printf("1..%d\n", test_no);
	return failures ? 1 : 0;
}
