/* A template's save that fails part way leaves its VM running: against a
 * scripted QEMU monitor, a migration that does not finish by the deadline
 * is cancelled and waited out before `cont` (a `cont` sent while it still
 * ran would be undone by its end), and a `stop` whose answer comes late is
 * followed by a `cont` (before, the VM stayed stopped).  A save that
 * completes still ends with `cont` and a complete template. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "harness.h"
#include "vm/qmp.h"
#include "vm/qmp_restart.h"
#include "vm/snapshot.h"

#define KEY "00000000000000000000000000000000000000000000000000000000000000aa"
#define DEADLINE_MS 300

enum migration { MIGRATION_HANGS, MIGRATION_COMPLETES };

struct monitor {
	int fd;
	enum migration migration;
	int stop_late_ms; /* the `stop` answer comes this late */
	bool migrating, cancelled;
	bool cont_sent, cont_while_migrating, cancel_before_cont;
	char seen[4096]; /* the commands, in order, each once in a row */
};

static void say(int fd, const char *line)
{
	size_t n = strlen(line);
	ssize_t w = send(fd, line, n, MSG_NOSIGNAL); /* the save may have closed its end */
	(void)w;
}

static void note(struct monitor *m, const char *name)
{
	size_t len = strlen(m->seen);
	size_t n = strlen(name);
	/* query-migrate is polled: once per run of them. */
	if (len >= n && strcmp(m->seen + len - n, name) == 0)
		return;
	snprintf(m->seen + len, sizeof(m->seen) - len, "%s%s", len ? " " : "", name);
}

static void answer(struct monitor *m, const char *cmd)
{
	char name[64] = "";
	const char *e = strstr(cmd, "\"execute\": \"");
	if (e != NULL)
		sscanf(e + 12, "%63[^\"]", name);
	note(m, name);
	if (strcmp(name, "stop") == 0 && m->stop_late_ms > 0)
		usleep((useconds_t)m->stop_late_ms * 1000);
	if (strcmp(name, "migrate") == 0)
		m->migrating = true;
	if (strcmp(name, "migrate_cancel") == 0)
		m->cancelled = m->migrating;
	if (strcmp(name, "cont") == 0) {
		m->cont_sent = true;
		m->cont_while_migrating = m->migrating && !m->cancelled && m->migration == MIGRATION_HANGS;
		m->cancel_before_cont = strstr(m->seen, "migrate_cancel") != NULL;
	}
	if (strcmp(name, "query-status") == 0) {
		/* qmp_sync's: its id echoed. */
		char reply[256];
		const char *id = strstr(cmd, "\"id\": ");
		snprintf(reply, sizeof(reply), "{\"return\": {\"status\": \"paused\"}, %.*s}\n",
			 id != NULL ? (int)strcspn(id, "}") : 0, id != NULL ? id : "");
		say(m->fd, reply);
		return;
	}
	if (strcmp(name, "query-migrate") == 0) {
		const char *status = !m->migrating			    ? "{\"return\": {}}\n"
				     : m->cancelled			    ? "{\"return\": {\"status\": \"cancelled\"}}\n"
				     : m->migration == MIGRATION_COMPLETES ? "{\"return\": {\"status\": \"completed\"}}\n"
									    : "{\"return\": {\"status\": \"active\"}}\n";
		say(m->fd, status);
		return;
	}
	say(m->fd, "{\"return\": {}}\n");
}

static void *serve(void *arg)
{
	struct monitor *m = arg;
	char buf[8192];
	size_t len = 0;
	say(m->fd, "{\"QMP\": {\"version\": {}}}\n");
	for (;;) {
		ssize_t got = read(m->fd, buf + len, sizeof(buf) - 1 - len);
		if (got <= 0)
			break;
		len += (size_t)got;
		buf[len] = '\0';
		char *nl;
		while ((nl = strchr(buf, '\n')) != NULL) {
			*nl = '\0';
			answer(m, buf);
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len + 1);
		}
	}
	close(m->fd);
	return NULL;
}

static char state[] = "/tmp/sbx-qmp-restart-XXXXXX";
static char scratch[512];

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	(void)remove(path); /* what cannot go stays in /tmp: nothing to fail */
	return 0;
}

static void remove_state(void)
{
	(void)nftw(state, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static bool ready(void)
{
	if (scratch[0] != '\0')
		return true;
	if (mkdtemp(state) == NULL)
		return false;
	atexit(remove_state);
	setenv("III_SANDBOX_STATE_DIR", state, 1);
	snprintf(scratch, sizeof(scratch), "%s/scratch.ext4", state);
	int fd = open(scratch, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	bool ok = fd >= 0 && write(fd, "disk", 4) == 4;
	if (fd >= 0)
		close(fd);
	return ok;
}

/* One streamed save against the scripted monitor m; its result. */
static int save(struct monitor *m, sbx_error_t *err)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -2;
	m->fd = sv[1];
	pthread_t t;
	if (pthread_create(&t, NULL, serve, m) != 0)
		return -2;
	struct qmp q;
	int rc = -2;
	if (qmp_open(&q, sv[0], sbx_now_ms() + 5000, err) == 0) {
		rc = snapshot_save(&q, KEY, "key text", scratch, "console", NULL, sbx_now_ms() + DEADLINE_MS, err);
		qmp_close(&q);
	}
	pthread_join(t, NULL);
	return rc;
}

static bool template_complete(void)
{
	char p[600];
	snprintf(p, sizeof(p), "%s/snapshots/%s/key", state, KEY);
	return access(p, F_OK) == 0;
}

TEST(a_migration_past_the_deadline_is_cancelled_and_waited_out_before_cont)
{
	CHECK(ready());
	struct monitor m = { .migration = MIGRATION_HANGS };
	sbx_error_t err = NULL;
	CHECK_INT(save(&m, &err), -1);
	printf("# %s\n# commands: %s\n", sbx_error_msg(err), m.seen);
	CHECK(err != NULL && err->errnum == ETIMEDOUT);
	sbx_error_free(&err);
	CHECK(m.cont_sent);
	CHECK(m.cancel_before_cont);
	CHECK(!m.cont_while_migrating);
	CHECK(!template_complete());
}

TEST(a_stop_answered_past_the_deadline_is_followed_by_cont)
{
	CHECK(ready());
	struct monitor m = { .migration = MIGRATION_COMPLETES, .stop_late_ms = DEADLINE_MS + 300 };
	sbx_error_t err = NULL;
	CHECK_INT(save(&m, &err), -1);
	sbx_error_free(&err);
	printf("# commands: %s\n", m.seen);
	CHECK(!m.migrating);
	CHECK(m.cont_sent);
	CHECK(!template_complete());
}

TEST(a_save_that_completes_ends_with_cont_and_a_complete_template)
{
	CHECK(ready());
	struct monitor m = { .migration = MIGRATION_COMPLETES };
	sbx_error_t err = NULL;
	int rc = save(&m, &err);
	if (rc != 0)
		printf("# %s\n", sbx_error_msg(err));
	sbx_error_free(&err);
	printf("# commands: %s\n", m.seen);
	CHECK_INT(rc, 0);
	CHECK(m.cont_sent && !m.cont_while_migrating);
	CHECK(template_complete());
}
