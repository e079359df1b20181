/* The snapshots of live sandboxes on disk (issue 39):
 * `<state dir>/sandbox-snapshots/<snapshot id>/`, 0700, a paused state
 * (vm/pause_dir.h: the guest's memory and devices, its scratch disk, the
 * VM's and the sandbox's records, files 0600) that is never resumed, only
 * branched into new sandboxes, and its own record `snapshot.json`.  A
 * directory with a record is a whole snapshot: it is written under
 * another name and renamed.  Snapshots are the caller's data: kept across
 * restarts of `serve`, removed only by snapshot::delete. */
#ifndef SBX_ADAPTER_SNAPSHOT_SNAPSHOT_STORE_H
#define SBX_ADAPTER_SNAPSHOT_SNAPSHOT_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "common/uuid.h"

#define SNAPSHOT_RECORD_FORMAT 1
/* Leftovers of a capture (the source's pause) and of a snapshot being
 * written, in the snapshots directory: removed by the next daemon. */
#define SNAPSHOT_CAPTURE_PREFIX ".capture-"
#define SNAPSHOT_NEW_PREFIX ".new-"
/* A snapshot being deleted: out of the list at once (a rename), then
 * removed. */
#define SNAPSHOT_GONE_PREFIX ".gone-"

struct snapshot_meta {
	char id[SBX_UUID_STRLEN + 1];
	char source[SBX_UUID_STRLEN + 1]; /* the sandbox it was taken of */
	char *name;			  /* NULL when unset */
	char *image;			  /* catalog name */
	uint32_t cpus, memory_mb;
	bool network;
	uint64_t size_bytes;
	int64_t created_ms; /* wall clock */
};
void snapshot_meta_free(struct snapshot_meta *m);

/* `<state dir>/sandbox-snapshots` (made 0700 when missing), malloc'd. */
char *snapshot_root(sbx_error_t *err);
/* `<root>/<prefix><id>`, malloc'd. */
char *snapshot_path(const char *root, const char *prefix, const char *id, sbx_error_t *err);
/* Writes m as dir's record, whole or not at all. */
int snapshot_meta_write(const char *dir, const struct snapshot_meta *m, sbx_error_t *err);
/* Reads and checks dir's record (hostile: bounded, every field's type and
 * range); -1 with S001 naming what is wrong. */
int snapshot_meta_read(const char *dir, struct snapshot_meta *m, sbx_error_t *err);
/* The snapshot `id` (a canonical UUID): its directory (malloc'd) and
 * record; S001 "unknown snapshot_id" when there is none. */
char *snapshot_store_find(const char *id, struct snapshot_meta *m, sbx_error_t *err);
/* Calls fn for each whole snapshot, in no order; returns how many. */
size_t snapshot_each(void (*fn)(const char *dir, const struct snapshot_meta *m, void *ud), void *ud);
/* What the snapshots hold on disk together (their records' size_bytes). */
uint64_t snapshot_store_bytes(void);
/* Syncs a snapshot's files (the scratch disk written, the others linked)
 * and the directory itself, before its record names it whole. */
int snapshot_sync(const char *dir, sbx_error_t *err);
/* Removes `dir`'s regular files and the directory (a snapshot, or what a
 * capture left); true when it is gone. */
bool snapshot_store_remove_dir(const char *dir);
/* Deletes snapshot `dir` (snapshot_store_find's) of id `id`: renamed out of
 * the list, then removed; false (err set) when it could not be. */
int snapshot_delete(const char *dir, const char *id, sbx_error_t *err);
/* Removes what captures and snapshots being written left in the
 * snapshots directory (a daemon that died meanwhile): a capture's paused
 * state through `discard` (the backend's discard_paused, which leaves one
 * another daemon holds).  Returns how many went. */
unsigned snapshot_sweep(bool (*discard)(void *ctx, const char *dir), void *ctx);

#endif
