/* Standby VMs over a fake VM maker: one per image after a create asks,
 * never handed out twice, the least recently used image's dropped, a
 * stale one stopped, the rest stopped with it. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter/vm_backend/standby.h"
#include "common/clock.h"
#include "harness.h"

struct fake {
	char image[32];
	atomic_bool gone;
};

static atomic_int made, discarded, fail_next;

static void *make(void *ctx, const char *image, const char *ref)
{
	(void)ctx;
	(void)ref;
	if (atomic_exchange(&fail_next, 0))
		return NULL;
	struct fake *f = calloc(1, sizeof(*f));
	snprintf(f->image, sizeof(f->image), "%s", image);
	atomic_fetch_add(&made, 1);
	return f;
}

static void discard(void *ctx, void *vm)
{
	(void)ctx;
	atomic_fetch_add(&discarded, 1);
	free(vm);
}

static bool stale(void *ctx, void *vm)
{
	(void)ctx;
	return atomic_load(&((struct fake *)vm)->gone);
}

static void reset(void)
{
	atomic_store(&made, 0);
	atomic_store(&discarded, 0);
	atomic_store(&fail_next, 0);
}

/* Whether the counter reaches n within ms. */
static int reaches(atomic_int *c, int n, int64_t ms)
{
	int64_t end = sbx_now_ms() + ms;
	while (atomic_load(c) < n && sbx_now_ms() < end)
		usleep(5000);
	return atomic_load(c) >= n;
}

/* Takes the image's standby, waiting up to ms for one. */
static struct fake *take_within(struct standby *sb, const char *image, int64_t ms)
{
	int64_t end = sbx_now_ms() + ms;
	struct fake *f;
	while ((f = standby_take(sb, image)) == NULL && sbx_now_ms() < end)
		usleep(5000);
	return f;
}

TEST(standby_one_per_image_after_a_create_never_twice)
{
	reset();
	struct standby *sb = standby_start(make, discard, stale, NULL);
	CHECK(sb != NULL);
	/* Nothing is launched before a create asks. */
	usleep(100 * 1000);
	CHECK_INT(atomic_load(&made), 0);
	CHECK(standby_take(sb, "python") == NULL);
	standby_want(sb, "python", "docker.io/iiidev/python:latest");
	struct fake *a = take_within(sb, "python", 5000);
	CHECK(a != NULL && strcmp(a->image, "python") == 0);
	/* Taken: none waits until the next create asks again. */
	CHECK(standby_take(sb, "python") == NULL);
	usleep(100 * 1000);
	CHECK_INT(atomic_load(&made), 1);
	/* Asking twice while one waits launches no second one. */
	standby_want(sb, "python", "docker.io/iiidev/python:latest");
	CHECK(reaches(&made, 2, 5000));
	standby_want(sb, "python", "docker.io/iiidev/python:latest");
	usleep(100 * 1000);
	CHECK_INT(atomic_load(&made), 2);
	CHECK(standby_take(sb, "node") == NULL);
	standby_stop(sb);
	/* The waiting one went with it; the taken one is the caller's. */
	CHECK_INT(atomic_load(&discarded), 1);
	free(a);
}

static struct standby *racing;

static void *take_python(void *arg)
{
	(void)arg;
	return standby_take(racing, "python");
}

TEST(standby_racing_takes_get_it_once)
{
	reset();
	struct standby *sb = standby_start(make, discard, stale, NULL);
	CHECK(sb != NULL);
	standby_want(sb, "python", NULL);
	CHECK(reaches(&made, 1, 5000));
	usleep(20 * 1000);
	/* Ten threads take at once: one of them gets the VM. */
	racing = sb;
	pthread_t t[10];
	void *got[10];
	for (int i = 0; i < 10; i++)
		CHECK_INT(pthread_create(&t[i], NULL, take_python, NULL), 0);
	int n = 0;
	for (int i = 0; i < 10; i++) {
		pthread_join(t[i], &got[i]);
		if (got[i] != NULL) {
			n++;
			free(got[i]);
		}
	}
	CHECK_INT(n, 1);
	standby_stop(sb);
	CHECK_INT(atomic_load(&discarded), 0);
}

TEST(standby_least_recently_used_image_dropped)
{
	reset();
	struct standby *sb = standby_start(make, discard, stale, NULL);
	CHECK(sb != NULL);
	const char *images[STANDBY_IMAGES + 1] = { "i0", "i1", "i2", "i3", "i4" };
	for (int i = 0; i < STANDBY_IMAGES; i++) {
		standby_want(sb, images[i], NULL);
		CHECK(reaches(&made, i + 1, 5000));
		usleep(5000);
	}
	/* i0 is used again: i1 is now the least recently used. */
	struct fake *f = take_within(sb, "i0", 5000);
	CHECK(f != NULL);
	free(f);
	standby_want(sb, "i0", NULL);
	CHECK(reaches(&made, STANDBY_IMAGES + 1, 5000));
	standby_want(sb, images[STANDBY_IMAGES], NULL);
	CHECK(reaches(&made, STANDBY_IMAGES + 2, 5000));
	CHECK(reaches(&discarded, 1, 5000));
	CHECK(take_within(sb, "i1", 200) == NULL);
	for (int i = 0; i <= STANDBY_IMAGES; i++) {
		if (i == 1)
			continue;
		f = take_within(sb, images[i], 2000);
		CHECK(f != NULL && strcmp(f->image, images[i]) == 0);
		free(f);
	}
	standby_stop(sb);
	CHECK_INT(atomic_load(&discarded), 1);
}

TEST(standby_failed_launch_waits_for_the_next_create)
{
	reset();
	struct standby *sb = standby_start(make, discard, stale, NULL);
	CHECK(sb != NULL);
	atomic_store(&fail_next, 1);
	standby_want(sb, "python", NULL);
	usleep(300 * 1000);
	/* A failed launch is not retried in a loop... */
	CHECK_INT(atomic_load(&made), 0);
	CHECK(standby_take(sb, "python") == NULL);
	/* ...the next create asks again. */
	standby_want(sb, "python", NULL);
	struct fake *f = take_within(sb, "python", 5000);
	CHECK(f != NULL);
	free(f);
	standby_stop(sb);
	CHECK_INT(atomic_load(&discarded), 0);
}

/* The fake of the image "gone-soon", kept to mark it gone. */
static struct fake *last_made;

static void *make_tracked(void *ctx, const char *image, const char *ref)
{
	struct fake *f = make(ctx, image, ref);
	last_made = f;
	return f;
}

TEST(standby_of_a_removed_image_stopped_by_the_periodic_check)
{
	reset();
	struct standby *sb = standby_start(make_tracked, discard, stale, NULL);
	CHECK(sb != NULL);
	standby_want(sb, "gone-soon", NULL);
	CHECK(reaches(&made, 1, 5000));
	atomic_store(&last_made->gone, true);
	/* The check runs every 5 s. */
	CHECK(reaches(&discarded, 1, 12000));
	CHECK(standby_take(sb, "gone-soon") == NULL);
	standby_stop(sb);
	CHECK_INT(atomic_load(&discarded), 1);
}

TEST(standby_ready_while_a_vm_waits)
{
	reset();
	CHECK(!standby_ready(NULL));
	struct standby *sb = standby_start(make, discard, stale, NULL);
	CHECK(sb != NULL);
	CHECK(!standby_ready(sb));
	standby_want(sb, "python", NULL);
	CHECK(reaches(&made, 1, 5000));
	int64_t end = sbx_now_ms() + 5000;
	while (!standby_ready(sb) && sbx_now_ms() < end)
		usleep(5000);
	CHECK(standby_ready(sb));
	struct fake *a = standby_take(sb, "python");
	CHECK(a != NULL);
	CHECK(!standby_ready(sb));
	standby_stop(sb);
	free(a);
}
