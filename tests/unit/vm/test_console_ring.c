#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "vm/console_ring.h"

static struct console_ring ring;
static char out[CONSOLE_RING_SIZE + 1];

TEST(short_output_whole)
{
	console_ring_init(&ring);
	console_ring_append(&ring, "a\r\nb\n", 5);
	console_ring_tail(&ring, out, 4096, 32);
	CHECK_STR(out, "a\nb\n");
}

TEST(last_lines_only)
{
	console_ring_init(&ring);
	char line[32];
	for (int i = 0; i < 100; i++) {
		int n = snprintf(line, sizeof(line), "line %d\n", i);
		console_ring_append(&ring, line, (size_t)n);
	}
	console_ring_tail(&ring, out, 4096, 3);
	CHECK_STR(out, "line 97\nline 98\nline 99\n");
}

TEST(byte_cap_cuts_at_line_start)
{
	console_ring_init(&ring);
	console_ring_append(&ring, "aaaaaaaaaa\nbbbb\ncc\n", 19);
	console_ring_tail(&ring, out, 10, 32);
	CHECK_STR(out, "bbbb\ncc\n");
}

TEST(wraps_and_keeps_newest)
{
	console_ring_init(&ring);
	char big[CONSOLE_RING_SIZE];
	memset(big, 'x', sizeof(big));
	console_ring_append(&ring, big, sizeof(big));
	console_ring_append(&ring, "\nEND\n", 5);
	CHECK_INT(ring.count, CONSOLE_RING_SIZE);
	console_ring_tail(&ring, out, 4096, 32);
	CHECK_STR(out, "END\n");
	/* One append larger than the ring keeps its own end. */
	char huge[CONSOLE_RING_SIZE * 2];
	memset(huge, 'y', sizeof(huge));
	memcpy(huge + sizeof(huge) - 4, "\nZZ\n", 4);
	console_ring_append(&ring, huge, sizeof(huge));
	console_ring_tail(&ring, out, 4096, 32);
	CHECK_STR(out, "ZZ\n");
}

TEST(control_bytes_masked)
{
	console_ring_init(&ring);
	console_ring_append(&ring, "\x1b[31mred\x07\tok\n", 13);
	console_ring_tail(&ring, out, 4096, 32);
	CHECK_STR(out, "?[31mred?\tok\n");
}
