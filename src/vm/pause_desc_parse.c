/* Reading a paused VM's description (pause_desc.h).  Written by another
 * process, perhaps another build, perhaps damaged: every field is
 * checked for its type and range before anything is allocated for it,
 * and a failure frees whatever was taken. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/cleanup.h"
#include "common/cleanup_json.h"
#include "proto/proto.h"
#include "proto/proto_msg_types.h"
#include "vm/pause_desc.h"

/* A damaged description: EBADMSG (EINVAL is for text that is no
 * description at all). */
static int bad(sbx_error_t *err, const char *key, const char *why)
{
	return sbx_error_set(err, EBADMSG, "pause description: %s %s", key, why);
}

static int get_int(json_t *o, const char *key, int64_t min, int64_t max, int64_t *out, sbx_error_t *err)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v))
		return bad(err, key, "is not an integer");
	json_int_t n = json_integer_value(v);
	if (n < min || n > max)
		return bad(err, key, "is out of range");
	*out = n;
	return 0;
}

/* Unsigned fields of every width through one call. */
#define GET_U(o, key, max, dst, err)                                                  \
	({                                                                            \
		int64_t v_;                                                           \
		int rc_ = get_int(o, key, 0, (int64_t)(max), &v_, err);               \
		if (rc_ == 0)                                                         \
			*(dst) = (__typeof__(*(dst)))v_;                              \
		rc_;                                                                  \
	})

static int get_bool(json_t *o, const char *key, bool *out, sbx_error_t *err)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_boolean(v))
		return bad(err, key, "is not a boolean");
	*out = json_is_true(v);
	return 0;
}

/* A bounded string without NUL bytes in it (C reads only to the first). */
static int str_of(json_t *v, const char *key, char **out, sbx_error_t *err)
{
	if (!json_is_string(v))
		return bad(err, key, "is not a string");
	size_t len = json_string_length(v);
	if (len > PAUSE_DESC_MAX_STRING)
		return bad(err, key, "is too long");
	if (strlen(json_string_value(v)) != len)
		return bad(err, key, "holds a NUL byte");
	if ((*out = strdup(json_string_value(v))) == NULL)
		return sbx_error_set(err, ENOMEM, "pause description");
	return 0;
}

static int get_str(json_t *o, const char *key, char **out, sbx_error_t *err)
{
	return str_of(json_object_get(o, key), key, out, err);
}

static int get_strv(json_t *o, const char *key, char ***out, sbx_error_t *err)
{
	json_t *a = json_object_get(o, key);
	if (!json_is_array(a))
		return bad(err, key, "is not a list");
	size_t n = json_array_size(a);
	if (n > PAUSE_DESC_MAX_LIST)
		return bad(err, key, "is too long a list");
	char **v = calloc(n + 1, sizeof(*v));
	if (v == NULL)
		return sbx_error_set(err, ENOMEM, "pause description");
	*out = v;
	for (size_t i = 0; i < n; i++) {
		if (str_of(json_array_get(a, i), key, &v[i], err) < 0)
			return -1;
	}
	return 0;
}

static int get_bytes(json_t *o, const char *key, size_t max, uint8_t **out, size_t *len, sbx_error_t *err)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_string(v))
		return bad(err, key, "is not a string");
	/* Checked before decoding: 4 symbols per 3 bytes. */
	if (json_string_length(v) > (max + 2) / 3 * 4)
		return bad(err, key, "is too long");
	sbx_error_t derr = NULL;
	*out = sbx_base64_decode(json_string_value(v), json_string_length(v), len, &derr);
	sbx_error_free(&derr);
	if (*out == NULL)
		return bad(err, key, "is not base64");
	if (*len > max)
		return bad(err, key, "is too long");
	return 0;
}

static int get_file(json_t *o, const char *key, struct pause_file *f, sbx_error_t *err)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_object(v))
		return bad(err, key, "is not an object");
	if (get_str(v, "path", &f->path, err) < 0 || GET_U(v, "size", INT64_MAX, &f->size, err) < 0 ||
	    get_int(v, "mtime_ns", INT64_MIN, INT64_MAX, &f->mtime_ns, err) < 0)
		return sbx_error_prefix(err, "%s", key);
	if (f->path[0] != '/')
		return bad(err, key, "is not an absolute path");
	return 0;
}

static int get_output(json_t *a, struct pause_stream *s, sbx_error_t *err)
{
	if (!json_is_array(a) || json_array_size(a) > PROTO_WINDOW)
		return bad(err, "output", "is not a list, or too long a one");
	size_t n = json_array_size(a), total = 0;
	if (n > 0 && (s->out = calloc(n, sizeof(*s->out))) == NULL)
		return sbx_error_set(err, ENOMEM, "pause description");
	/* Counted before it is filled: a failure part way frees it too. */
	for (size_t i = 0; i < n; i++) {
		struct pause_output *o = &s->out[s->n_out++];
		json_t *v = json_array_get(a, i);
		if (!json_is_object(v))
			return bad(err, "output", "holds a non-object");
		int64_t fd;
		if (get_int(v, "fd", 1, 2, &fd, err) < 0 ||
		    get_bytes(v, "data", PROTO_WINDOW - total, &o->data, &o->len, err) < 0)
			return -1;
		o->fd = (int)fd;
		total += o->len;
	}
	return 0;
}

static int get_stream(json_t *v, struct pause_stream *s, sbx_error_t *err)
{
	if (!json_is_object(v))
		return bad(err, "streams", "holds a non-object");
	int64_t code;
	if (GET_U(v, "id", UINT32_MAX, &s->id, err) < 0 || GET_U(v, "pid", UINT32_MAX, &s->pid, err) < 0 ||
	    get_bool(v, "pty", &s->pty, err) < 0 || get_bool(v, "stdin_open", &s->stdin_open, err) < 0 ||
	    get_bool(v, "ended", &s->ended, err) < 0 || get_int(v, "code", -1, 255, &code, err) < 0 ||
	    GET_U(v, "uncredited", PROTO_WINDOW, &s->uncredited, err) < 0 ||
	    GET_U(v, "stdin_unacked", PROTO_WINDOW, &s->stdin_unacked, err) < 0)
		return -1;
	s->code = (int)code;
	if (s->id == 0)
		return bad(err, "id", "is 0");
	return get_output(json_object_get(v, "output"), s, err);
}

static int get_kills(json_t *a, struct pause_chan *c, sbx_error_t *err)
{
	if (!json_is_array(a) || json_array_size(a) > PAUSE_DESC_MAX_KILLS)
		return bad(err, "kills", "is not a list, or too long a one");
	size_t n = json_array_size(a);
	if (n > 0 && (c->kills = calloc(n, sizeof(*c->kills))) == NULL)
		return sbx_error_set(err, ENOMEM, "pause description");
	for (; c->n_kills < n; c->n_kills++) {
		json_t *k = json_array_get(a, c->n_kills);
		struct pause_kill *pk = &c->kills[c->n_kills];
		if (!json_is_object(k) || GET_U(k, "id", UINT32_MAX, &pk->id, err) < 0 ||
		    GET_U(k, "sig", PROTO_MAX_SIGNAL, &pk->sig, err) < 0)
			return sbx_error_prefix(err, "kills");
		if (pk->id == 0 || pk->sig == 0)
			return bad(err, "kills", "holds a 0");
	}
	return 0;
}

static int get_chan(json_t *o, struct pause_chan *c, sbx_error_t *err)
{
	if (!json_is_object(o))
		return bad(err, "channel", "is not an object");
	json_t *a = json_object_get(o, "streams");
	if (GET_U(o, "next_id", UINT32_MAX, &c->next_id, err) < 0 ||
	    get_bytes(o, "partial", PROTO_HEADER_SIZE + PROTO_MAX_PAYLOAD, &c->partial, &c->partial_len, err) < 0 ||
	    get_kills(json_object_get(o, "kills"), c, err) < 0)
		return -1;
	if (!json_is_array(a) || json_array_size(a) > PAUSE_DESC_MAX_STREAMS)
		return bad(err, "streams", "is not a list, or too long a one");
	size_t n = json_array_size(a);
	if (n > 0 && (c->streams = calloc(n, sizeof(*c->streams))) == NULL)
		return sbx_error_set(err, ENOMEM, "pause description");
	for (size_t i = 0; i < n; i++) {
		struct pause_stream *s = &c->streams[c->n_streams++]; /* freed with the rest on failure */
		if (get_stream(json_array_get(a, i), s, err) < 0)
			return -1;
		for (size_t j = 0; j < i; j++) {
			if (c->streams[j].id == s->id)
				return bad(err, "streams", "holds an id twice");
		}
	}
	return 0;
}

static int get_shape(json_t *o, struct pause_desc *d, sbx_error_t *err)
{
	int64_t accel, kept;
	json_t *net = json_object_get(o, "net_args");
	json_t *pk = json_object_get(o, "publish_kept");
	if (get_int(o, "accel", 1, 2, &accel, err) < 0 || get_bool(o, "nested_virt", &d->nested_virt, err) < 0 ||
	    GET_U(o, "threads_per_core", 2, &d->threads_per_core, err) < 0 ||
	    GET_U(o, "cpus", 64, &d->cpus, err) < 0 || GET_U(o, "memory_mib", 1u << 20, &d->memory_mib, err) < 0 ||
	    GET_U(o, "tcg_cache_mib", 1u << 20, &d->tcg_cache_mib, err) < 0 ||
	    GET_U(o, "scratch_bytes", INT64_MAX, &d->scratch_bytes, err) < 0 ||
	    GET_U(o, "memory_bytes", INT64_MAX, &d->memory_bytes, err) < 0 ||
	    GET_U(o, "jail_memory_mib", INT64_MAX, &d->jail_memory_mib, err) < 0 ||
	    GET_U(o, "nofile", INT64_MAX, &d->nofile, err) < 0 ||
	    GET_U(o, "pids_max", UINT32_MAX, &d->pids_max, err) < 0 || get_bool(o, "boot_log", &d->boot_log, err) < 0 ||
	    get_str(o, "hostname", &d->hostname, err) < 0 || get_str(o, "user", &d->user, err) < 0 ||
	    get_strv(o, "env", &d->env, err) < 0 || (!json_is_null(net) && get_strv(o, "net_args", &d->net_args, err) < 0) ||
	    GET_U(o, "n_publish", 64, &d->n_publish, err) < 0 || get_bool(o, "ram_backend", &d->ram_backend, err) < 0 ||
	    get_bool(o, "ram_shared", &d->ram_shared, err) < 0 || get_str(o, "snap_key", &d->snap_key, err) < 0 ||
	    get_bool(o, "template_vm", &d->template_vm, err) < 0 || GET_U(o, "pauses", UINT32_MAX, &d->pauses, err) < 0 ||
	    get_int(o, "net_activity_kept", 0, INT64_MAX, &d->net_activity_kept, err) < 0)
		return -1;
	d->accel = (int)accel;
	if (d->cpus == 0 || d->memory_mib == 0 || d->threads_per_core == 0)
		return bad(err, "cpus, memory_mib or threads_per_core", "is 0");
	if (!json_is_array(pk) || json_array_size(pk) != 2)
		return bad(err, "publish_kept", "is not a pair");
	for (size_t i = 0; i < 2; i++) {
		kept = json_integer_value(json_array_get(pk, i));
		if (!json_is_integer(json_array_get(pk, i)) || kept < 0)
			return bad(err, "publish_kept", "holds a bad count");
		d->publish_kept[i] = (uint64_t)kept;
	}
	return 0;
}

static int parse(json_t *o, struct pause_desc *d, sbx_error_t *err)
{
	int64_t format;
	json_t *f = json_object_get(o, "format");
	if (!json_is_object(o) || !json_is_integer(f))
		return sbx_error_set(err, EINVAL, "not a pause description (no format)");
	format = json_integer_value(f);
	if (format != PAUSE_DESC_FORMAT)
		return sbx_error_set(err, EPROTONOSUPPORT, "pause description of format %lld, this build reads %d",
				     (long long)format, PAUSE_DESC_FORMAT);
	d->format = (int)format;
	json_t *image = json_object_get(o, "image");
	if (GET_U(o, "proto", UINT32_MAX, &d->proto, err) < 0 || get_file(o, "qemu", &d->qemu, err) < 0 ||
	    get_file(o, "kernel", &d->kernel, err) < 0 || get_file(o, "boot", &d->boot, err) < 0 ||
	    get_bool(o, "image_linked", &d->image_linked, err) < 0 ||
	    get_bool(o, "image_store", &d->image_store, err) < 0 ||
	    (!json_is_null(image) && get_file(o, "image", &d->image, err) < 0) || get_shape(o, d, err) < 0 ||
	    get_chan(json_object_get(o, "channel"), &d->chan, err) < 0)
		return -1;
	if (!d->image_linked && d->image.path == NULL)
		return bad(err, "image", "is neither in the directory nor named");
	return 0;
}

int pause_desc_parse(const char *text, size_t len, struct pause_desc *d, sbx_error_t *err)
{
	memset(d, 0, sizeof(*d));
	if (len > PAUSE_DESC_MAX_BYTES)
		return bad(err, "text", "is too large");
	json_error_t jerr;
	cleanup_json json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (o == NULL)
		return sbx_error_set(err, EINVAL, "not a pause description: %s (line %d)", jerr.text, jerr.line);
	if (parse(o, d, err) < 0) {
		pause_desc_free(d);
		return -1;
	}
	return 0;
}
