/* A restored guest that dies within SNAPSHOT_EARLY_DEATH_MS of ready
 * condemns its template (vm_check_early_death, issue 38 item 2), dated by
 * the death itself: the control connection's loss, when the channel saw
 * it, not the moment someone noticed (the reaper's scan, every
 * REAPER_PERIOD_MS, or a pool's claim, much later).  No VM: a channel over
 * a socketpair whose guest end closes stands for the guest. */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "vm/vm_internal.h"

#define KEY "1111111111111111111111111111111111111111111111111111111111111111"
/* How long after the loss the stop looks: past the window, had it used
 * the stop's clock. */
#define NOTICED_AFTER_MS 600

static char state[] = "/tmp/sbx-early-death-XXXXXX";

static int put_template(void)
{
	static bool made;
	if (!made && mkdtemp(state) == NULL)
		return -1;
	made = true;
	setenv("III_SANDBOX_STATE_DIR", state, 1);
	char p[600];
	snprintf(p, sizeof(p), "%s/snapshots", state);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/snapshots/%s", state, KEY);
	mkdir(p, 0700);
	const char *files[] = { "state", "scratch.ext4" };
	for (size_t i = 0; i < 2; i++) {
		char f[700];
		snprintf(f, sizeof(f), "%s/%s", p, files[i]);
		FILE *out = fopen(f, "we");
		if (out == NULL || fclose(out) != 0)
			return -1;
	}
	return 0;
}

static bool template_present(void)
{
	sbx_error_t err = NULL;
	char *dir = snapshot_find(KEY, &err);
	bool present = dir != NULL;
	free(dir);
	sbx_error_free(&err);
	return present;
}

/* A channel whose guest end is gone; its loss seen by the reader. */
static struct chan *lost_channel(void)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return NULL;
	sbx_error_t err = NULL;
	struct chan *c = chan_open(sv[0], &err);
	sbx_error_free(&err);
	close(sv[1]);
	for (int i = 0; c != NULL && !chan_dead(c) && i < 5000; i++)
		usleep(1000);
	return c;
}

/* A restored VM that was ready `before_ms` before its connection was lost. */
static void restored_vm(struct sbx_vm *vm, struct chan *c, int64_t before_ms)
{
	memset(vm, 0, sizeof(*vm));
	vm->chan = c;
	vm->t.restored = true;
	vm->t.ready = 1000;
	vm->t0 = sbx_now_ms() - before_ms - vm->t.ready;
	snprintf(vm->snap_key, sizeof(vm->snap_key), "%s", KEY);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

/* Lost 300 ms inside the window, noticed 300 ms past it: dropped.  (Before,
 * the death was dated when the stop looked: the template stayed.) */
TEST(a_connection_lost_early_drops_the_template_however_late_it_is_noticed)
{
	CHECK_INT(put_template(), 0);
	struct chan *c = lost_channel();
	CHECK(c != NULL && chan_dead(c));
	struct sbx_vm vm;
	restored_vm(&vm, c, SNAPSHOT_EARLY_DEATH_MS - 300);
	usleep(NOTICED_AFTER_MS * 1000);
	vm_check_early_death(&vm);
	chan_close(c);
	CHECK(!template_present());
}

/* Lost past the window: the template is not at fault.  (2 s past it: the
 * reader's wake-up may lag the close on a loaded machine.) */
TEST(a_connection_lost_late_keeps_the_template)
{
	CHECK_INT(put_template(), 0);
	struct chan *c = lost_channel();
	CHECK(c != NULL && chan_dead(c));
	struct sbx_vm vm;
	restored_vm(&vm, c, SNAPSHOT_EARLY_DEATH_MS + 2000);
	vm_check_early_death(&vm);
	chan_close(c);
	CHECK(template_present());
}

/* A VM that was paused and resumed: its QEMU ended on purpose, and one
 * dying early after a resume is not its template's fault. */
TEST(a_paused_vm_keeps_the_template)
{
	CHECK_INT(put_template(), 0);
	struct chan *c = lost_channel();
	CHECK(c != NULL && chan_dead(c));
	struct sbx_vm vm;
	restored_vm(&vm, c, SNAPSHOT_EARLY_DEATH_MS - 300);
	vm.pauses = 1;
	vm_check_early_death(&vm);
	chan_close(c);
	CHECK(template_present());
}

/* QEMU seen gone (gone_ms) while the connection still looked alive: that
 * moment dates the death. */
TEST(qemu_seen_gone_early_drops_the_template)
{
	CHECK_INT(put_template(), 0);
	int sv[2];
	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	sbx_error_t err = NULL;
	struct chan *c = chan_open(sv[0], &err);
	CHECK(c != NULL);
	struct sbx_vm vm;
	restored_vm(&vm, c, SNAPSHOT_EARLY_DEATH_MS - 300);
	vm.gone_ms = sbx_now_ms();
	usleep(NOTICED_AFTER_MS * 1000);
	vm_check_early_death(&vm);
	chan_close(c);
	close(sv[1]);
	CHECK(!template_present());
	nftw(state, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}
