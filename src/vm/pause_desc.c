/* A paused VM's description written as JSON (pause_desc.h); its
 * reading is pause_desc_parse.c.  Bytes (a partial frame, unread
 * output) are base64; 64-bit counts are JSON integers (jansson's are
 * 64-bit signed, and no count here comes near 2^63). */
#include "vm/pause_desc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/base64.h"
#include "common/cleanup.h"
#include "common/cleanup_json.h"
#include "common/strv.h"

int pause_file_stat(const char *path, struct pause_file *f, sbx_error_t *err)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return sbx_error_errno(err, errno, "%s", path);
	if ((f->path = strdup(path)) == NULL)
		return sbx_error_set(err, ENOMEM, "pause description");
	f->size = (uint64_t)st.st_size;
	f->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	return 0;
}

void pause_chan_free(struct pause_chan *c)
{
	free(c->partial);
	for (size_t i = 0; i < c->n_streams; i++) {
		for (size_t j = 0; j < c->streams[i].n_out; j++)
			free(c->streams[i].out[j].data);
		free(c->streams[i].out);
	}
	free(c->streams);
	free(c->kills);
	memset(c, 0, sizeof(*c));
}

static void file_free(struct pause_file *f)
{
	free(f->path);
	f->path = NULL;
}

void pause_desc_free(struct pause_desc *d)
{
	file_free(&d->qemu);
	file_free(&d->kernel);
	file_free(&d->boot);
	file_free(&d->image);
	free(d->hostname);
	free(d->user);
	free(d->snap_key);
	sbx_strv_free(d->env);
	sbx_strv_free(d->net_args);
	pause_chan_free(&d->chan);
	memset(d, 0, sizeof(*d));
}

/* Builds objects and counts failures (out of memory) rather than
 * checking each of forty calls: one check at the end. */
struct builder {
	int failed;
};

static void put(struct builder *b, json_t *obj, const char *key, json_t *v)
{
	if (v == NULL || json_object_set_new(obj, key, v) < 0)
		b->failed = 1;
}

static json_t *bytes(struct builder *b, const uint8_t *data, size_t len)
{
	sbx_error_t err = NULL;
	cleanup_free char *text = sbx_base64_encode(data, len, &err);
	sbx_error_free(&err);
	if (text == NULL) {
		b->failed = 1;
		return NULL;
	}
	return json_string(text);
}

static json_t *strings(struct builder *b, char *const *v)
{
	json_t *a = json_array();
	for (size_t i = 0; a != NULL && v != NULL && v[i] != NULL; i++) {
		if (json_array_append_new(a, json_string(v[i])) < 0)
			b->failed = 1;
	}
	return a;
}

static json_t *file(struct builder *b, const struct pause_file *f)
{
	json_t *o = json_object();
	if (o == NULL)
		return NULL;
	put(b, o, "path", json_string(f->path));
	put(b, o, "size", json_integer((json_int_t)f->size));
	put(b, o, "mtime_ns", json_integer(f->mtime_ns));
	return o;
}

static json_t *stream(struct builder *b, const struct pause_stream *s)
{
	json_t *o = json_object(), *out = json_array();
	if (o == NULL || out == NULL) {
		json_decref(o);
		json_decref(out);
		return NULL;
	}
	put(b, o, "id", json_integer(s->id));
	put(b, o, "pid", json_integer(s->pid));
	put(b, o, "pty", json_boolean(s->pty));
	put(b, o, "stdin_open", json_boolean(s->stdin_open));
	put(b, o, "ended", json_boolean(s->ended));
	put(b, o, "code", json_integer(s->code));
	put(b, o, "uncredited", json_integer((json_int_t)s->uncredited));
	put(b, o, "stdin_unacked", json_integer((json_int_t)s->stdin_unacked));
	for (size_t i = 0; i < s->n_out; i++) {
		json_t *chunk = json_object();
		if (chunk == NULL || json_array_append_new(out, chunk) < 0) {
			b->failed = 1;
			continue;
		}
		put(b, chunk, "fd", json_integer(s->out[i].fd));
		put(b, chunk, "data", bytes(b, s->out[i].data, s->out[i].len));
	}
	put(b, o, "output", out);
	return o;
}

static json_t *chan(struct builder *b, const struct pause_chan *c)
{
	json_t *o = json_object(), *streams = json_array(), *kills = json_array();
	if (o == NULL || streams == NULL || kills == NULL) {
		json_decref(o);
		json_decref(streams);
		json_decref(kills);
		return NULL;
	}
	put(b, o, "next_id", json_integer(c->next_id));
	put(b, o, "partial", bytes(b, c->partial, c->partial_len));
	for (size_t i = 0; i < c->n_streams; i++) {
		json_t *s = stream(b, &c->streams[i]);
		if (s == NULL || json_array_append_new(streams, s) < 0)
			b->failed = 1;
	}
	for (size_t i = 0; i < c->n_kills; i++) {
		json_t *k = json_object();
		if (k == NULL || json_array_append_new(kills, k) < 0) {
			b->failed = 1;
			continue;
		}
		put(b, k, "id", json_integer(c->kills[i].id));
		put(b, k, "sig", json_integer(c->kills[i].sig));
	}
	put(b, o, "streams", streams);
	put(b, o, "kills", kills);
	return o;
}

/* The VM's shape and identity, beside the channel. */
static void shape(struct builder *b, json_t *o, const struct pause_desc *d)
{
	put(b, o, "accel", json_integer(d->accel));
	put(b, o, "nested_virt", json_boolean(d->nested_virt));
	put(b, o, "threads_per_core", json_integer(d->threads_per_core));
	put(b, o, "cpus", json_integer(d->cpus));
	put(b, o, "memory_mib", json_integer(d->memory_mib));
	put(b, o, "tcg_cache_mib", json_integer(d->tcg_cache_mib));
	put(b, o, "scratch_bytes", json_integer((json_int_t)d->scratch_bytes));
	put(b, o, "memory_bytes", json_integer((json_int_t)d->memory_bytes));
	put(b, o, "jail_memory_mib", json_integer((json_int_t)d->jail_memory_mib));
	put(b, o, "nofile", json_integer((json_int_t)d->nofile));
	put(b, o, "pids_max", json_integer(d->pids_max));
	put(b, o, "boot_log", json_boolean(d->boot_log));
	put(b, o, "hostname", json_string(d->hostname));
	put(b, o, "user", json_string(d->user));
	put(b, o, "env", strings(b, d->env));
	put(b, o, "net_args", d->net_args != NULL ? strings(b, d->net_args) : json_null());
	put(b, o, "n_publish", json_integer((json_int_t)d->n_publish));
	put(b, o, "ram_backend", json_boolean(d->ram_backend));
	put(b, o, "ram_shared", json_boolean(d->ram_shared));
	put(b, o, "snap_key", json_string(d->snap_key));
	put(b, o, "template_vm", json_boolean(d->template_vm));
	put(b, o, "pauses", json_integer(d->pauses));
	put(b, o, "net_activity_kept", json_integer(d->net_activity_kept));
	put(b, o, "publish_kept", json_pack("[II]", (json_int_t)d->publish_kept[0], (json_int_t)d->publish_kept[1]));
}

char *pause_desc_format(const struct pause_desc *d, sbx_error_t *err)
{
	struct builder b = { 0 };
	cleanup_json json_t *o = json_object();
	if (o == NULL) {
		sbx_error_set(err, ENOMEM, "pause description");
		return NULL;
	}
	put(&b, o, "format", json_integer(d->format));
	put(&b, o, "proto", json_integer(d->proto));
	put(&b, o, "qemu", file(&b, &d->qemu));
	put(&b, o, "kernel", file(&b, &d->kernel));
	put(&b, o, "boot", file(&b, &d->boot));
	put(&b, o, "image_linked", json_boolean(d->image_linked));
	put(&b, o, "image_store", json_boolean(d->image_store));
	put(&b, o, "image", d->image.path != NULL ? file(&b, &d->image) : json_null());
	shape(&b, o, d);
	put(&b, o, "channel", chan(&b, &d->chan));
	char *text = b.failed ? NULL : json_dumps(o, JSON_COMPACT);
	/* jansson takes only UTF-8 strings: an environment in another
	 * encoding fails here too. */
	if (text == NULL)
		sbx_error_set(err, ENOMEM, "pause description: out of memory, or a string not in UTF-8");
	return text;
}
