/* The front's life: its member table, the thread that keeps it, and the
 * handler every sandbox-libkrun::* id of the front runs. */
#include "front/front.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "adapter/adapter.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "front/front_internal.h"

static void free_pinned(struct front *f)
{
	for (size_t i = 0; i < f->npinned; i++)
		free(f->pinned[i]);
	free(f->pinned);
	f->pinned = NULL;
	f->npinned = 0;
}

/* "a, b,c" into f->pinned; every name checked as a namespace. */
static int parse_pinned(struct front *f, const char *list, sbx_error_t *err)
{
	cleanup_free char *copy = strdup(list);
	f->pinned = calloc(FRONT_MAX_MEMBERS, sizeof(*f->pinned));
	if (copy == NULL || f->pinned == NULL)
		return sbx_error_errno(err, ENOMEM, "III_SANDBOX_MEMBERS");
	char *save = NULL;
	for (char *tok = strtok_r(copy, ", ", &save); tok != NULL; tok = strtok_r(NULL, ", ", &save)) {
		if (f->npinned == FRONT_MAX_MEMBERS)
			return sbx_error_set(err, EINVAL, "III_SANDBOX_MEMBERS names more than %d members",
					     FRONT_MAX_MEMBERS);
		if (strlen(tok) > FRONT_NS_MAX || strcmp(tok, f->own_ns) == 0)
			return sbx_error_set(err, EINVAL,
					     "III_SANDBOX_MEMBERS: '%.64s' cannot be a member's namespace (over %d "
					     "bytes, or the front's own)",
					     tok, FRONT_NS_MAX);
		if ((f->pinned[f->npinned] = strdup(tok)) == NULL)
			return sbx_error_errno(err, ENOMEM, "III_SANDBOX_MEMBERS");
		f->npinned++;
	}
	if (f->npinned == 0)
		return sbx_error_set(err, EINVAL, "III_SANDBOX_MEMBERS names no namespace");
	return 0;
}

struct front *front_new(struct engine *e, const char *own_namespace, const char *members, sbx_error_t *err)
{
	const char *own = own_namespace != NULL && own_namespace[0] != '\0' ? own_namespace : "default";
	if (strlen(own) > FRONT_NS_MAX) {
		sbx_error_set(err, EINVAL, "the front's namespace is over %d bytes", FRONT_NS_MAX);
		return NULL;
	}
	struct front *f = calloc(1, sizeof(*f));
	if (f == NULL) {
		sbx_error_errno(err, ENOMEM, "front");
		return NULL;
	}
	f->e = e;
	memcpy(f->own_ns, own, strlen(own) + 1);
	pthread_mutex_init(&f->lock, NULL);
	pthread_mutex_init(&f->refresh_lock, NULL);
	f->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (f->wake_fd < 0) {
		sbx_error_errno(err, errno, "eventfd");
		front_free(f);
		return NULL;
	}
	if (members != NULL && members[0] != '\0' && parse_pinned(f, members, err) < 0) {
		front_free(f);
		return NULL;
	}
	return f;
}

/* Refreshes every tick, or at once when a call found a member gone; ends
 * when the engine client stops. */
static void *keeper(void *arg)
{
	struct front *f = arg;
	struct pollfd p[2] = { { .fd = f->wake_fd, .events = POLLIN }, { .fd = engine_cancel_fd(f->e), .events = POLLIN } };
	while (!atomic_load(&f->stop)) {
		front_refresh(f);
		int r = poll(p, 2, FRONT_TICK_MS);
		if (r > 0 && (p[1].revents & POLLIN))
			break;
		uint64_t v;
		if (r > 0 && read(f->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			break;
	}
	return NULL;
}

int front_start(struct front *f, sbx_error_t *err)
{
	int rc = pthread_create(&f->thread, NULL, keeper, f);
	if (rc != 0)
		return sbx_error_errno(err, rc, "starting the front's member thread");
	f->running = true;
	return 0;
}

static bool placed_op(const char *op)
{
	return strcmp(op, "create") == 0 || strcmp(op, "run") == 0 || strcmp(op, "worker::prepare") == 0;
}

int front_handle(void *userdata, const struct engine_invocation *inv, json_t *data, json_t **out)
{
	struct front *f = userdata;
	const char *prefix = SBX_WORKER_NAME "::";
	const char *op = inv->function_id;
	if (strncmp(op, prefix, strlen(prefix)) == 0)
		op += strlen(prefix);
	if (placed_op(op))
		return front_place_call(f, inv, op, data, out);
	return front_route_call(f, inv, op, data, out);
}

void front_stop(struct front *f)
{
	if (f == NULL || !f->running)
		return;
	atomic_store(&f->stop, true);
	uint64_t one = 1;
	if (write(f->wake_fd, &one, sizeof(one)) < 0)
		sbx_debug("front: the keeper was woken already");
	pthread_join(f->thread, NULL);
	f->running = false;
}

void front_free(struct front *f)
{
	if (f == NULL)
		return;
	front_stop(f);
	for (size_t i = 0; i < f->nmembers; i++)
		json_decref(f->members[i].info);
	front_owners_free(&f->owners);
	front_owners_free(&f->workers);
	free_pinned(f);
	if (f->wake_fd >= 0)
		close(f->wake_fd);
	pthread_mutex_destroy(&f->lock);
	pthread_mutex_destroy(&f->refresh_lock);
	free(f);
}
