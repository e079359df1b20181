/* The guest's end of a channel in the unit tests: frames written to and
 * read from one end of a socketpair whose other end is the host's chan. */
#ifndef SBX_TESTS_FAKE_GUEST_H
#define SBX_TESTS_FAKE_GUEST_H

#include <stddef.h>
#include <stdint.h>

#include "proto/proto_msg.h"
#include "proto/proto_reader.h"

struct guest {
	int fd;
	struct proto_reader rd;
	uint8_t buf[4096];
	size_t have, off;
};

/* Takes fd (closed by guest_free). */
void guest_init(struct guest *g, int fd);
void guest_free(struct guest *g);

/* The next frame from the host, waiting up to 10 s; 0, or -1 when none
 * came, the host closed or the frame did not decode. */
int guest_recv(struct guest *g, struct proto_msg *m);

/* Writes bytes [from, to) of m's frame (to 0: to its end); 0 or -1. */
int guest_send_part(struct guest *g, const struct proto_msg *m, size_t from, size_t to);

/* Writes m's whole frame; 0 or -1. */
int guest_send(struct guest *g, const struct proto_msg *m);

#endif
