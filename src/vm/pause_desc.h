/* The description of a paused VM (pause_dir.h PAUSE_VM, vm.h
 * sbx_vm_pause_save): what a later process needs to start the VM again,
 * as plain data.  pause_desc.c writes it as JSON, pause_desc_parse.c
 * reads it back and checks every field: the file is read by a process
 * that did not write it and must be taken as hostile. */
#ifndef SBX_VM_PAUSE_DESC_H
#define SBX_VM_PAUSE_DESC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Bumped whenever a field changes meaning: an older description is refused. */
#define PAUSE_DESC_FORMAT 1
/* Upper bounds of what a description may hold: its text, a string in it,
 * a list (environment, network arguments), the streams. */
#define PAUSE_DESC_MAX_BYTES (16u * 1024u * 1024u)
#define PAUSE_DESC_MAX_STRING 4096u
#define PAUSE_DESC_MAX_LIST 1024u
#define PAUSE_DESC_MAX_STREAMS 4096u
#define PAUSE_DESC_MAX_KILLS 4096u

/* A host file the VM ran, and what it was then: a later process refuses
 * to run a different one. */
struct pause_file {
	char *path;
	uint64_t size;
	int64_t mtime_ns;
};

/* A chunk of a stream's output not read before the save. */
struct pause_output {
	int fd; /* 1 stdout, 2 stderr */
	uint8_t *data;
	size_t len;
};

/* An open stream of the control channel (vm/channel_internal.h chan_stream). */
struct pause_stream {
	uint32_t id, pid;
	bool pty, stdin_open, ended;
	int code;
	uint64_t uncredited, stdin_unacked;
	struct pause_output *out;
	size_t n_out;
};

struct pause_kill {
	uint32_t id, sig;
};

/* The control channel at the save: the host end of the connection the
 * guest never saw close. */
struct pause_chan {
	uint32_t next_id;
	uint8_t *partial; /* the guest's frame read in part, raw */
	size_t partial_len;
	struct pause_stream *streams;
	size_t n_streams;
	struct pause_kill *kills; /* signals kept for the resume */
	size_t n_kills;
};

struct pause_desc {
	int format;
	unsigned proto;
	struct pause_file qemu, kernel, boot;
	bool image_linked;       /* the image is in the directory: PAUSE_IMAGE (private)
				    or PAUSE_STORE_IMAGE (a store's, its second name) */
	bool image_store;        /* a store's image, not the VM's own */
	struct pause_file image; /* a store image's path (path NULL: none known) */
	int accel;               /* enum sbx_accel: KVM or TCG */
	bool nested_virt;
	unsigned threads_per_core;
	unsigned cpus, memory_mib, tcg_cache_mib;
	uint64_t scratch_bytes, memory_bytes, jail_memory_mib, nofile;
	unsigned pids_max;
	bool boot_log;
	char *hostname, *user;
	char **env;      /* NULL-terminated */
	char **net_args; /* NULL = no network */
	size_t n_publish;
	bool ram_backend, ram_shared;
	char *snap_key;
	bool template_vm; /* sbx_vm_template names snap_key */
	unsigned pauses;
	int64_t net_activity_kept;
	uint64_t publish_kept[2];
	struct pause_chan chan;
};

/* The file at path as it is now (f->path a copy of path). */
int pause_file_stat(const char *path, struct pause_file *f, sbx_error_t *err);

void pause_desc_free(struct pause_desc *d);
void pause_chan_free(struct pause_chan *c);
/* The description as JSON text (malloc'd). */
char *pause_desc_format(const struct pause_desc *d, sbx_error_t *err);
/* Parses and checks a description (len bytes of text, at most
 * PAUSE_DESC_MAX_BYTES): 0 with *d filled (free with pause_desc_free),
 * else -1 with EINVAL (no JSON object with a format: not a description),
 * EPROTONOSUPPORT (another format) or EBADMSG (a damaged one: a field
 * missing, of another type or out of range, too large); *d is then
 * empty. */
int pause_desc_parse(const char *text, size_t len, struct pause_desc *d, sbx_error_t *err);

#endif
