/* Processes in a VM (vm.h): each handle is one control stream. */
#include <errno.h>
#include <stdlib.h>

#include "vm/vm_internal.h"

struct sbx_vm_proc {
	struct chan_stream *s;
};

static char *const no_env[] = { NULL };

/* A handle for a process about to start, after checking its command. */
static struct sbx_vm_proc *proc_new(char *const *argv, sbx_error_t *err)
{
	if (argv == NULL || argv[0] == NULL || argv[0][0] == '\0') {
		sbx_error_set(err, EINVAL, "empty command");
		return NULL;
	}
	struct sbx_vm_proc *p = malloc(sizeof(*p));
	if (p == NULL)
		sbx_error_set(err, ENOMEM, "process");
	return p;
}

struct sbx_vm_proc *sbx_vm_spawn(struct sbx_vm *vm, char *const *argv, char *const *env, const char *cwd,
				 bool with_stdin, sbx_error_t *err)
{
	struct sbx_vm_proc *p = proc_new(argv, err);
	if (p == NULL)
		return NULL;
	struct proto_spawn sp = {
		.argv = (char **)argv,
		.env = (char **)(env != NULL ? env : no_env),
		.cwd = (char *)(cwd != NULL ? cwd : ""),
		.flags = with_stdin ? PROTO_SPAWN_STDIN : 0,
	};
	if ((p->s = chan_spawn(vm->chan, &sp, err)) == NULL) {
		free(p);
		return NULL;
	}
	return p;
}

struct sbx_vm_proc *sbx_vm_spawn_pty(struct sbx_vm *vm, char *const *argv, char *const *env, const char *cwd,
				     uint16_t rows, uint16_t cols, sbx_error_t *err)
{
	struct sbx_vm_proc *p = proc_new(argv, err);
	if (p == NULL)
		return NULL;
	struct proto_spawn_pty sp = {
		.argv = (char **)argv,
		.env = (char **)(env != NULL ? env : no_env),
		.cwd = (char *)(cwd != NULL ? cwd : ""),
		.rows = rows,
		.cols = cols,
	};
	if ((p->s = chan_spawn_pty(vm->chan, &sp, err)) == NULL) {
		free(p);
		return NULL;
	}
	return p;
}

ssize_t sbx_vm_proc_write(struct sbx_vm_proc *p, const void *buf, size_t len, int64_t deadline,
			  sbx_error_t *err)
{
	return chan_stream_write(p->s, buf, len, deadline, err);
}

int sbx_vm_proc_close_stdin(struct sbx_vm_proc *p, sbx_error_t *err)
{
	return chan_stream_close_stdin(p->s, err);
}

ssize_t sbx_vm_proc_read(struct sbx_vm_proc *p, int *fd, void *buf, size_t len, int64_t deadline,
			 sbx_error_t *err)
{
	enum chan_output which = CHAN_STDOUT;
	ssize_t n = chan_stream_read(p->s, &which, buf, len, deadline, err);
	*fd = which == CHAN_STDERR ? 2 : 1;
	return n;
}

int sbx_vm_proc_kill(struct sbx_vm_proc *p, int sig, sbx_error_t *err)
{
	if (sig < 1 || sig > PROTO_MAX_SIGNAL)
		return sbx_error_set(err, EINVAL, "bad signal %d", sig);
	return chan_stream_kill(p->s, sig, err);
}

int sbx_vm_proc_wait(struct sbx_vm_proc *p, int64_t deadline, int *status, sbx_error_t *err)
{
	return chan_stream_wait(p->s, deadline, status, err);
}

int sbx_vm_proc_pid(struct sbx_vm_proc *p, int64_t deadline, uint32_t *pid, sbx_error_t *err)
{
	return chan_stream_started(p->s, deadline, pid, err);
}

int sbx_vm_proc_resize(struct sbx_vm_proc *p, uint16_t rows, uint16_t cols, sbx_error_t *err)
{
	return chan_stream_resize(p->s, rows, cols, err);
}

struct sbx_vm_proc *sbx_vm_adopted_proc(struct sbx_vm *vm, uint32_t pid)
{
	struct sbx_vm_proc *p = malloc(sizeof(*p));
	if (p == NULL)
		return NULL;
	/* Each saved stream once (vm_adopt.c, channel_adopt.c). */
	if ((p->s = chan_take_adopted(vm->chan, pid)) == NULL) {
		free(p);
		return NULL;
	}
	return p;
}

void sbx_vm_proc_free(struct sbx_vm_proc *p)
{
	if (p == NULL)
		return;
	chan_stream_release(p->s);
	free(p);
}
