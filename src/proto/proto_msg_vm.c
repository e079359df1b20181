/* The stream-0 messages beyond the boot handshake (proto.h): WARM_UP
 * (a parked VM's warm-up argv) and RESUMED (the host's clock and entropy
 * after a resume). */
#include "proto/proto_msg_vm.h"

#include <string.h>

int proto_warm_up_check(char *const *argv, sbx_error_t *err)
{
	size_t n = 0;
	for (; argv != NULL && argv[n] != NULL; n++) {
		if (n >= PROTO_MAX_WARM_UP_ARGS)
			return sbx_error_set(err, 0, "more than %u arguments", PROTO_MAX_WARM_UP_ARGS);
		if (strlen(argv[n]) > PROTO_MAX_WARM_UP_ARG)
			return sbx_error_set(err, 0, "argument %zu longer than %u bytes", n, PROTO_MAX_WARM_UP_ARG);
	}
	if (n > 0 && argv[0][0] == '\0')
		return sbx_error_set(err, 0, "empty argv[0]");
	return 0;
}

int proto_warm_up_decode(struct proto_rbuf *r, char ***argv, sbx_error_t *err)
{
	/* Peek the count: a long vector is refused before it is read. */
	uint32_t n;
	struct proto_rbuf peek = *r;
	if (proto_get_u32(&peek, &n, err) < 0)
		return sbx_error_prefix(err, "argv");
	if (n > PROTO_MAX_WARM_UP_ARGS)
		return sbx_error_set(err, 0, "argv of %u entries, at most %u", n, PROTO_MAX_WARM_UP_ARGS);
	if (proto_get_strv(r, argv, err) < 0)
		return sbx_error_prefix(err, "argv");
	return proto_warm_up_check(*argv, err);
}


int proto_resumed_decode(struct proto_rbuf *r, struct proto_resumed *m, sbx_error_t *err)
{
	if (proto_get_u64(r, &m->realtime_ns, err) < 0)
		return -1;
	if (proto_get_blob(r, &m->entropy, &m->entropy_len, PROTO_MAX_ENTROPY, err) < 0)
		return sbx_error_prefix(err, "entropy");
	/* Too little to reseed from would leave the restored CRNG state in use. */
	if (m->entropy_len < PROTO_MIN_RESUMED_ENTROPY)
		return sbx_error_set(err, 0, "entropy of %zu bytes, at least %u", m->entropy_len,
				     PROTO_MIN_RESUMED_ENTROPY);
	return 0;
}

int proto_resumed_encode(struct proto_wbuf *b, const struct proto_resumed *m, sbx_error_t *err)
{
	if (m->entropy_len < PROTO_MIN_RESUMED_ENTROPY || m->entropy_len > PROTO_MAX_ENTROPY)
		return sbx_error_set(err, 0, "entropy of %zu bytes, must be %u..%u", m->entropy_len,
				     PROTO_MIN_RESUMED_ENTROPY, PROTO_MAX_ENTROPY);
	proto_put_u64(b, m->realtime_ns);
	proto_put_u32(b, (uint32_t)m->entropy_len);
	proto_put_bytes(b, m->entropy, m->entropy_len);
	return 0;
}
