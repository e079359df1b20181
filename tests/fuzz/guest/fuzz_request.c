/* What the guest does with host input short of starting a process: frames
 * through the reader, decoded into SPAWN/CONFIG/STDIN/KILL..., and a
 * SPAWN's environment merged over a CONFIG's boot env. */
#include <stdlib.h>
#include <string.h>

#include "guest/spawn.h"
#include "proto/proto_msg.h"
#include "proto/proto_reader.h"

static void check_spawn(const struct proto_spawn *sp, char **boot_env)
{
	sbx_error_t err = NULL;
	char **env = spawn_merge_env(boot_env, sp->env, &err);
	if (env == NULL) {
		sbx_error_free(&err);
		return;
	}
	/* Every spawn entry must win over the boot env. */
	for (size_t i = 0; sp->env[i] != NULL; i++) {
		size_t k = strcspn(sp->env[i], "=");
		const char *found = NULL;
		for (size_t j = 0; env[j] != NULL; j++)
			if (strncmp(env[j], sp->env[i], k + 1) == 0)
				found = env[j];
		if (found == NULL)
			abort();
	}
	proto_strv_free(env);
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
		if (m.type == PROTO_SPAWN)
			check_spawn(&m.u.spawn, config.type == PROTO_CONFIG ? config.u.config.env : default_env);
		proto_msg_free(&m);
	}
	proto_msg_free(&config);
	proto_reader_free(&rd);
	return 0;
}
