/* publish_address, publish_port_range, publish_max_connections (see
 * config_publish.h). */
#include "adapter/config/config_publish.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "image/image_config.h"

void sbx_publish_config_init(struct sbx_publish_config *p)
{
	*p = (struct sbx_publish_config){ .port_lo = SBX_PUBLISH_PORT_LO_DEFAULT,
					  .port_hi = SBX_PUBLISH_PORT_HI_DEFAULT,
					  .max_connections = SBX_PUBLISH_MAX_CONNECTIONS_DEFAULT };
	snprintf(p->address, sizeof(p->address), "%s", SBX_PUBLISH_ADDRESS_DEFAULT);
	inet_pton(AF_INET, p->address, &p->addr);
}

static int parse_address(struct sbx_publish_config *p, const char *k, json_t *v, sbx_error_t *err)
{
	const char *s = json_string_value(v);
	struct in_addr a;
	if (s == NULL || strlen(s) >= sizeof(p->address) || inet_pton(AF_INET, s, &a) != 1)
		return sbx_config_type_error(err, k, "an IPv4 address of the host (e.g. \"127.0.0.1\" or \"0.0.0.0\")", v);
	snprintf(p->address, sizeof(p->address), "%s", s);
	p->addr = a.s_addr;
	return 0;
}

static int port_of(json_t *v, json_int_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 65535)
		return -1;
	*out = json_integer_value(v);
	return 0;
}

static int parse_range(struct sbx_publish_config *p, const char *k, json_t *v, sbx_error_t *err)
{
	json_int_t lo, hi;
	if (!json_is_array(v) || json_array_size(v) != 2 || port_of(json_array_get(v, 0), &lo) < 0 ||
	    port_of(json_array_get(v, 1), &hi) < 0 || lo > hi)
		return sbx_config_type_error(err, k, "[first, last]: two ports 1-65535, first <= last", v);
	p->port_lo = (uint16_t)lo;
	p->port_hi = (uint16_t)hi;
	return 0;
}

static int parse_max(struct sbx_publish_config *p, const char *k, json_t *v, sbx_error_t *err)
{
	if (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    json_integer_value(v) > SBX_PUBLISH_MAX_CONNECTIONS_MAX)
		return sbx_config_type_error(err, k, "an integer from 1 to 1024", v);
	p->max_connections = (uint32_t)json_integer_value(v);
	return 0;
}

/* The keys' table (tests/integration/docs reads it, as config.c's). */
static const struct {
	const char *name;
	int (*parse)(struct sbx_publish_config *p, const char *k, json_t *v, sbx_error_t *err);
} publish_keys[] = {
	{ "publish_address", parse_address },
	{ "publish_port_range", parse_range },
	{ "publish_max_connections", parse_max },
};

int sbx_publish_config_parse_key(struct sbx_publish_config *p, const char *k, json_t *v, sbx_error_t *err)
{
	for (size_t i = 0; i < sizeof(publish_keys) / sizeof(publish_keys[0]); i++) {
		if (strcmp(k, publish_keys[i].name) == 0)
			return publish_keys[i].parse(p, k, v, err) < 0 ? -1 : 1;
	}
	return 0;
}

const char *sbx_publish_config_key(size_t i)
{
	return i < sizeof(publish_keys) / sizeof(publish_keys[0]) ? publish_keys[i].name : NULL;
}

int sbx_publish_config_print(const struct sbx_publish_config *p, json_t *obj)
{
	json_t *range = json_pack("[I, I]", (json_int_t)p->port_lo, (json_int_t)p->port_hi);
	if (range == NULL || json_object_set_new(obj, "publish_address", json_string(p->address)) < 0 ||
	    json_object_set_new(obj, "publish_port_range", range) < 0 ||
	    json_object_set_new(obj, "publish_max_connections", json_integer(p->max_connections)) < 0)
		return -1;
	return 0;
}
