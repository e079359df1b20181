/* What the guest does with host input short of starting a process or
 * touching files: frames through the reader, decoded into SPAWN/SPAWN_PTY/
 * RESIZE/CONFIG/STDIN/KILL/FS_*..., a SPAWN's or SPAWN_PTY's environment
 * merged over a CONFIG's boot env, an fs request's globs matched and its
 * pattern compiled. */
#include <stdlib.h>
#include <string.h>

#include "guest/fs_glob.h"
#include "guest/fs_regex.h"
#include "guest/spawn.h"
#include "proto/proto_msg.h"
#include "proto/proto_reader.h"

static void check_spawn(char **spawn_env, char **boot_env)
{
	sbx_error_t err = NULL;
	char **env = spawn_merge_env(boot_env, spawn_env, &err);
	if (env == NULL) {
		sbx_error_free(&err);
		return;
	}
	/* Every spawn entry must win over the boot env. */
	for (size_t i = 0; spawn_env[i] != NULL; i++) {
		size_t k = strcspn(spawn_env[i], "=");
		const char *found = NULL;
		for (size_t j = 0; env[j] != NULL; j++)
			if (strncmp(env[j], spawn_env[i], k + 1) == 0)
				found = env[j];
		if (found == NULL)
			abort();
	}
	sbx_strv_free(env);
}

/* Globs against the request's own path, as the walk would ask. */
static void check_globs(char **globs, const char *path)
{
	const char *rel = path[0] == '/' ? path + 1 : path;
	for (size_t i = 0; globs[i] != NULL; i++) {
		fs_glob_match(globs[i], rel);
		fs_glob_match_dir(globs[i], rel);
	}
	fs_glob_keep(globs, NULL, rel);
}

static void check_fs(const struct proto_msg *m)
{
	struct fs_regex re;
	sbx_error_t err = NULL;
	if (m->type == PROTO_FS_GREP) {
		const struct proto_fs_grep *g = &m->u.fs_grep;
		check_globs(g->include, g->path);
		check_globs(g->exclude, g->path);
		if (fs_regex_compile(&re, g->pattern, false, g->flags & PROTO_FS_IGNORE_CASE, &err) == 0) {
			size_t ms, me;
			fs_regex_find(&re, g->path, strlen(g->path), 0, &ms, &me, &err);
		}
		fs_regex_free(&re);
	} else if (m->type == PROTO_FS_SED) {
		const struct proto_fs_sed *q = &m->u.fs_sed;
		/* the decoder guarantees exactly one of files / path */
		if ((q->files[0] != NULL) == (q->path[0] != '\0'))
			abort();
		check_globs(q->include, q->path[0] != '\0' ? q->path : q->files[0]);
	}
	sbx_error_free(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *default_env[] = { "PATH=/usr/bin:/bin", "HOME=/root", NULL };
	struct proto_reader rd;
	proto_reader_init(&rd);
	struct proto_msg config = { 0 };
	size_t off = 0;
	while (off < size) {
		size_t used;
		struct proto_header h;
		const uint8_t *payload;
		sbx_error_t err = NULL;
		int rc = proto_reader_feed(&rd, data + off, size - off, &used, &h, &payload, &err);
		off += used;
		if (rc < 0) {
			sbx_error_free(&err);
			break;
		}
		if (rc == 0)
			continue;
		struct proto_msg m;
		if (proto_msg_decode(&h, payload, &m, &err) < 0) {
			sbx_error_free(&err);
			continue;
		}
		if (m.type == PROTO_CONFIG) {
			proto_msg_free(&config);
			config = m; /* kept: later SPAWNs merge over its env */
			continue;
		}
		check_fs(&m);
		char **boot_env = config.type == PROTO_CONFIG ? config.u.config.env : default_env;
		if (m.type == PROTO_SPAWN)
			check_spawn(m.u.spawn.env, boot_env);
		else if (m.type == PROTO_SPAWN_PTY)
			check_spawn(m.u.spawn_pty.env, boot_env);
		proto_msg_free(&m);
	}
	proto_msg_free(&config);
	proto_reader_free(&rd);
	return 0;
}
