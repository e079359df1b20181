/* The network side of create (see sandbox_network.h). */
#include "adapter/sandbox/sandbox_network.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/request.h"
#include "proto/proto_net_addr.h"

int sandbox_network_decode(json_t *req, struct sandbox_create_args *c, sbx_error_t *err)
{
	json_t *v = json_object_get(req, "network");
	c->network = false;
	c->network_rules = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (json_is_object(v)) {
		c->network = true;
		c->network_rules = v;
		return 0;
	}
	if (!json_is_boolean(v))
		return req_type_error(v, "network", "a boolean or an object {allow, deny}", err);
	c->network = json_is_true(v);
	return 0;
}

char *sandbox_network_rewrite(const char *s)
{
	static const char *const from[] = { "://localhost:", "://127.0.0.1:" };
	static const char to[] = "://" NET_ADDR_GATEWAY_TEXT ":";
	_Static_assert(sizeof(to) - 1 <= 13, "the rewrite must not grow a value");
	char *out = malloc(strlen(s) + 1);
	if (out == NULL)
		return NULL;
	char *o = out;
	while (*s != '\0') {
		size_t skip = 0;
		for (size_t i = 0; i < 2 && skip == 0; i++) {
			if (strncmp(s, from[i], strlen(from[i])) == 0)
				skip = strlen(from[i]);
		}
		if (skip > 0) {
			memcpy(o, to, sizeof(to) - 1);
			o += sizeof(to) - 1;
			s += skip;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
	return out;
}

static int rewrite_env(json_t *env, sbx_error_t *err)
{
	size_t i;
	json_t *item;
	json_array_foreach(env, i, item) {
		const char *kv = json_string_value(item);
		const char *eq = kv != NULL ? strchr(kv, '=') : NULL;
		if (eq == NULL || (strstr(eq, "://localhost:") == NULL && strstr(eq, "://127.0.0.1:") == NULL))
			continue;
		char *value = sandbox_network_rewrite(kv);
		if (value == NULL || json_array_set_new(env, i, json_string(value)) < 0) {
			free(value);
			return sbx_error_errno(err, ENOMEM, "env");
		}
		free(value);
	}
	return 0;
}

int sandbox_network_prepare(const struct sbx_config *cfg, const struct sandbox_create_args *c, const char *id,
			    json_t *env, char ***args, sbx_error_t *err)
{
	*args = NULL;
	struct net_policy narrow = { 0 };
	int rc = -1;
	if (c->network_rules != NULL && net_config_narrowing(&cfg->net, c->network_rules, &narrow, err) < 0)
		goto out;
	if (rewrite_env(env, err) < 0)
		goto out;
	if ((*args = net_config_helper_args(&cfg->net, &narrow, id, err)) != NULL)
		rc = 0;
out:
	net_policy_free(&narrow);
	return rc;
}
