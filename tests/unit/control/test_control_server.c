/* The control socket's listener (control_server.c): the socket's mode and
 * group, and the peer check behind it (SO_PEERCRED): root and the daemon's
 * own user are served, another user is refused with a final line saying
 * so, a member of control_group (its primary or a supplementary group) is
 * served.  The socket is opened to everyone by the test so that the peer
 * check, not the mode, is what answers.  Needs root (to be another user);
 * skipped otherwise. */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adapter/adapter_state.h"
#include "adapter/sandbox_registry.h"
#include "control/control_server.h"
#include "harness.h"

#define NOBODY 65534
#define GROUP 4242

/* What a client answered: 0 served (a ps answer), 1 refused, 2 anything else. */
enum { SERVED, REFUSED, OTHER };

/* Connects as uid/gid with `groups`, sends a ps, reads the final line.  In
 * a child: after fork only system calls. */
static int as_user(const char *path, uid_t uid, gid_t gid, gid_t supplementary)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		gid_t groups[1] = { supplementary };
		if (setgroups(supplementary != 0 ? 1 : 0, groups) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
			_exit(10);
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
		if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			_exit(11);
		/* A refused peer may find the connection closed already. */
		static const char req[] = "{\"op\":\"ps\"}\n";
		if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) < 0 && errno != EPIPE && errno != ECONNRESET)
			_exit(12);
		char buf[4096];
		size_t got = 0;
		ssize_t n;
		while (got < sizeof(buf) - 1 && (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
			got += (size_t)n;
		buf[got] = '\0';
		if (strstr(buf, "\"ok\":true") != NULL && strstr(buf, "\"sandboxes\"") != NULL)
			_exit(SERVED);
		if (strstr(buf, "\"ok\":false") != NULL && strstr(buf, "\"refused\"") != NULL &&
		    strstr(buf, "may not use this daemon's control socket") != NULL)
			_exit(REFUSED);
		_exit(OTHER);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

struct fixture {
	char dir[64], path[96];
	struct sbx_adapter a;
	struct control_server *s;
};

static int start(struct fixture *x, bool has_group)
{
	snprintf(x->dir, sizeof(x->dir), "/tmp/sbx-control-XXXXXX");
	if (mkdtemp(x->dir) == NULL || chmod(x->dir, 0755) < 0)
		return -1;
	snprintf(x->path, sizeof(x->path), "%s/control.sock", x->dir);
	sbx_error_t err = NULL;
	x->a = (struct sbx_adapter){ .reg = sbx_registry_new(&err) };
	struct control_options o = { .path = x->path, .has_group = has_group, .gid = GROUP };
	x->s = x->a.reg != NULL ? control_server_start(&x->a, &o, &err) : NULL;
	sbx_error_free(&err);
	return x->s != NULL ? 0 : -1;
}

static void finish(struct fixture *x)
{
	control_server_stop(x->s);
	sbx_registry_free(x->a.reg);
	rmdir(x->dir);
}

TEST(the_socket_is_0600_and_another_user_is_refused_by_the_peer_check)
{
	if (geteuid() != 0) {
		sbx_test_skip("needs root to connect as another user");
		return;
	}
	struct fixture x;
	CHECK_INT(start(&x, false), 0);
	struct stat st;
	CHECK_INT(stat(x.path, &st), 0);
	CHECK_INT(st.st_mode & 07777, 0600);
	CHECK(S_ISSOCK(st.st_mode));
	/* Root (the daemon's own user here) is served. */
	CHECK_INT(as_user(x.path, 0, 0, 0), SERVED);
	/* Opened to all: the peer check alone refuses nobody. */
	CHECK_INT(chmod(x.path, 0666), 0);
	CHECK_INT(as_user(x.path, NOBODY, NOBODY, 0), REFUSED);
	/* Nor does a group the daemon was not given help. */
	CHECK_INT(as_user(x.path, NOBODY, GROUP, GROUP), REFUSED);
	finish(&x);
}

TEST(control_group_members_are_served_by_primary_or_supplementary_group)
{
	if (geteuid() != 0) {
		sbx_test_skip("needs root to connect as another user");
		return;
	}
	struct fixture x;
	CHECK_INT(start(&x, true), 0);
	struct stat st;
	CHECK_INT(stat(x.path, &st), 0);
	CHECK_INT(st.st_mode & 07777, 0660);
	CHECK_INT(st.st_gid, GROUP);
	CHECK_INT(as_user(x.path, NOBODY, GROUP, 0), SERVED);
	CHECK_INT(as_user(x.path, NOBODY, NOBODY, GROUP), SERVED);
	/* Outside the group: the mode refuses first; opened, the check does. */
	CHECK_INT(as_user(x.path, NOBODY, NOBODY, 0), 11);
	CHECK_INT(chmod(x.path, 0666), 0);
	CHECK_INT(as_user(x.path, NOBODY, NOBODY, 0), REFUSED);
	finish(&x);
}
