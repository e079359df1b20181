/* The control socket's listener (control_server.h): the socket file and
 * its mode, the peer check, one thread per connection. */
#include "control/control_server.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/state_dir.h"
#include "control/control_ops.h"

#define IO_TIMEOUT_SECS 60   /* a peer that stops reading or writing */
#define DRAIN_MAX (64u << 20) /* what is read of a peer after its answer */

struct control_server {
	struct control_ctx ctx;
	atomic_bool stopping;
	char *path;
	ino_t ino;
	bool has_group;
	gid_t gid;
	int listen_fd;
	int wake[2]; /* the stop's pipe, polled by the accept thread */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t idle;
	int conns[CONTROL_CONN_MAX]; /* -1: free slot */
};

struct conn {
	struct control_server *s;
	int slot;
};

/* Whether `gid` is among the supplementary groups of process `pid`. */
static bool peer_in_group(pid_t pid, gid_t gid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	cleanup_file FILE *f = fopen(path, "re");
	if (f == NULL)
		return false;
	char line[4096];
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "Groups:", 7) != 0)
			continue;
		char *p = line + 7, *end;
		for (unsigned long g = strtoul(p, &end, 10); end != p; g = strtoul(p, &end, 10)) {
			if (g == gid)
				return true;
			p = end;
		}
		return false;
	}
	return false;
}

/* Root, the daemon's own user, or a member of control_group. */
static bool peer_allowed(const struct control_server *s, int fd, char *why, size_t len)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
		snprintf(why, len, "cannot read the peer's credentials: %s", strerror(errno));
		return false;
	}
	if (cred.uid == 0 || cred.uid == geteuid())
		return true;
	if (s->has_group && (cred.gid == s->gid || peer_in_group(cred.pid, s->gid)))
		return true;
	snprintf(why, len, "uid %u may not use this daemon's control socket (root%s only)", (unsigned)cred.uid,
		 s->has_group ? " and members of control_group" : "");
	return false;
}

/* After the answer: reads what the peer still sends (a copy refused
 * mid-way), so that closing does not reset the connection before the
 * peer read its final line. */
static void drain(int fd)
{
	shutdown(fd, SHUT_WR);
	char buf[16384];
	size_t total = 0;
	ssize_t n;
	while (total < DRAIN_MAX && (n = read(fd, buf, sizeof(buf))) > 0)
		total += (size_t)n;
}

static void *conn_main(void *arg)
{
	struct conn *cn = arg;
	struct control_server *s = cn->s;
	int fd = s->conns[cn->slot];
	struct control_reader *r = malloc(sizeof(*r));
	if (r != NULL) {
		control_reader_init(r, fd);
		control_serve(&s->ctx, r, fd);
		free(r);
	}
	drain(fd);
	pthread_mutex_lock(&s->lock);
	close(fd);
	s->conns[cn->slot] = -1;
	pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->lock);
	free(cn);
	return NULL;
}

static void refuse(int fd, const char *code, const char *why)
{
	sbx_error_t err = NULL;
	if (control_send_error(fd, code, why, &err) < 0)
		sbx_error_free(&err);
	close(fd);
}

static void admit(struct control_server *s, int fd)
{
	char why[160];
	if (!peer_allowed(s, fd, why, sizeof(why))) {
		sbx_warn("control socket: refused: %s", why);
		refuse(fd, "refused", why);
		return;
	}
	struct timeval tv = { IO_TIMEOUT_SECS, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	pthread_mutex_lock(&s->lock);
	int slot = 0;
	while (slot < CONTROL_CONN_MAX && s->conns[slot] >= 0)
		slot++;
	if (slot < CONTROL_CONN_MAX)
		s->conns[slot] = fd;
	pthread_mutex_unlock(&s->lock);
	if (slot == CONTROL_CONN_MAX) {
		refuse(fd, "busy", "the control socket serves " "16 connections at once; try again");
		return;
	}
	struct conn *cn = malloc(sizeof(*cn));
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (cn != NULL) {
		*cn = (struct conn){ s, slot };
		if (pthread_create(&t, &attr, conn_main, cn) == 0) {
			pthread_attr_destroy(&attr);
			return;
		}
	}
	pthread_attr_destroy(&attr);
	free(cn);
	pthread_mutex_lock(&s->lock);
	s->conns[slot] = -1;
	pthread_mutex_unlock(&s->lock);
	refuse(fd, "busy", "cannot start a thread for this connection");
}

static void *accept_main(void *arg)
{
	struct control_server *s = arg;
	struct pollfd p[2] = { { s->listen_fd, POLLIN, 0 }, { s->wake[0], POLLIN, 0 } };
	while (!atomic_load(&s->stopping)) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents != 0)
			break;
		if ((p[0].revents & POLLIN) == 0)
			continue;
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			admit(s, fd);
	}
	return NULL;
}

/* A socket file another daemon still answers on is not ours to take. */
static int clear_path(const char *path, sbx_error_t *err)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : sbx_error_errno(err, errno, "control socket %s", path);
	if (!S_ISSOCK(st.st_mode))
		return sbx_error_set(err, EEXIST, "control socket %s: exists and is not a socket", path);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	cleanup_close int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return sbx_error_set(err, EADDRINUSE, "control socket %s: another daemon serves it", path);
	if (unlink(path) < 0)
		return sbx_error_errno(err, errno, "control socket %s: remove the stale one", path);
	return 0;
}

int control_group_gid(const char *group, gid_t *gid, sbx_error_t *err)
{
	char buf[16384];
	struct group gr, *res = NULL;
	int e = getgrnam_r(group, &gr, buf, sizeof(buf), &res);
	if (res == NULL)
		return sbx_error_set(err, e != 0 ? e : ENOENT, "config key `control_group`: no group `%s`", group);
	*gid = gr.gr_gid;
	return 0;
}

static int bind_socket(struct control_server *s, sbx_error_t *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(s->path) >= sizeof(sa.sun_path))
		return sbx_error_set(err, ENAMETOOLONG, "control socket %s: a path of at most %zu bytes", s->path,
				     sizeof(sa.sun_path) - 1);
	memcpy(sa.sun_path, s->path, strlen(s->path) + 1);
	cleanup_free char *dir = strdup(s->path);
	char *slash = dir != NULL ? strrchr(dir, '/') : NULL;
	if (slash != NULL && slash != dir) {
		*slash = '\0';
		if (sbx_mkdir_p(dir, 0755, err) < 0)
			return -1;
	}
	if (clear_path(s->path, err) < 0)
		return -1;
	s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->listen_fd < 0)
		return sbx_error_errno(err, errno, "control socket");
	if (bind(s->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return sbx_error_errno(err, errno, "control socket %s: bind", s->path);
	/* The peer check stands even while the mode is being set. */
	struct stat st;
	if (chmod(s->path, s->has_group ? 0660 : 0600) < 0 || (s->has_group && chown(s->path, (uid_t)-1, s->gid) < 0) ||
	    stat(s->path, &st) < 0)
		return sbx_error_errno(err, errno, "control socket %s: mode", s->path);
	s->ino = st.st_ino;
	if (listen(s->listen_fd, CONTROL_CONN_MAX) < 0)
		return sbx_error_errno(err, errno, "control socket %s: listen", s->path);
	return 0;
}

static void server_free(struct control_server *s)
{
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->wake[0] >= 0)
		close(s->wake[0]);
	if (s->wake[1] >= 0)
		close(s->wake[1]);
	struct stat st;
	if (s->ino != 0 && stat(s->path, &st) == 0 && st.st_ino == s->ino)
		unlink(s->path);
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->lock);
	free(s->path);
	free(s);
}

struct control_server *control_server_start(struct sbx_adapter *a, const struct control_options *o,
					    sbx_error_t *err)
{
	struct control_server *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return sbx_error_errno(err, ENOMEM, "control socket"), NULL;
	s->listen_fd = s->wake[0] = s->wake[1] = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->idle, NULL);
	for (int i = 0; i < CONTROL_CONN_MAX; i++)
		s->conns[i] = -1;
	s->ctx = (struct control_ctx){ a, o->status, o->status_ud, &s->stopping };
	s->path = strdup(o->path);
	if (s->path == NULL) {
		sbx_error_errno(err, ENOMEM, "control socket");
		goto fail;
	}
	s->has_group = o->has_group;
	s->gid = o->gid;
	if (bind_socket(s, err) < 0)
		goto fail;
	if (pipe2(s->wake, O_CLOEXEC) < 0) {
		sbx_error_errno(err, errno, "control socket: pipe");
		goto fail;
	}
	if (pthread_create(&s->thread, NULL, accept_main, s) != 0) {
		sbx_error_set(err, EAGAIN, "control socket: cannot start its thread");
		goto fail;
	}
	return s;
fail:
	server_free(s);
	return NULL;
}

void control_server_stop(struct control_server *s)
{
	if (s == NULL)
		return;
	atomic_store(&s->stopping, true);
	if (write(s->wake[1], "x", 1) < 0)
		sbx_warn("control socket: wake: %s", strerror(errno));
	pthread_join(s->thread, NULL);
	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < CONTROL_CONN_MAX; i++) {
		if (s->conns[i] >= 0)
			shutdown(s->conns[i], SHUT_RDWR);
	}
	for (;;) {
		int open = 0;
		for (int i = 0; i < CONTROL_CONN_MAX; i++)
			open += s->conns[i] >= 0;
		if (open == 0)
			break;
		pthread_cond_wait(&s->idle, &s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	server_free(s);
}
