/* The lead of a restored VM's console log: the template's console file,
 * bounded and made printable, or a line saying it is not available. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "vm/console_ring.h"
#include "vm/template_console.h"

#define KEY "1a2b3c4d5e6f7a8b9c0d"

static char dir[] = "/tmp/sbx-tplcon-XXXXXX";
static char file[256];

static void put(const char *data, size_t len)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0) {
		ssize_t w = write(fd, data, len);
		(void)w;
		close(fd);
	}
}

static void setup(void)
{
	if (file[0] == '\0' && mkdtemp(dir) != NULL)
		snprintf(file, sizeof(file), "%s/" TEMPLATE_CONSOLE_FILE, dir);
	unlink(file);
}

TEST(console_between_markers)
{
	setup();
	put("kernel\r\ninit: up\n", 17);
	char *lead = template_console_lead(dir, KEY);
	CHECK_STR(lead, "--- the console of template 1a2b3c4d5e6f's boot, up to its save (at most its last 16384 "
			"bytes) ---\nkernel\ninit: up\n--- the end of the template's console: this VM was restored "
			"from it ---\n");
	free(lead);
}

TEST(control_bytes_printed_and_last_line_ended)
{
	setup();
	put("\x1b[2Jx\x7f\x00y", 8);
	char *lead = template_console_lead(dir, KEY);
	CHECK(lead != NULL);
	CHECK(strstr(lead, "---\n?[2Jx??y\n--- the end") != NULL);
	free(lead);
}

TEST(bounded_to_the_ring)
{
	setup();
	size_t len = CONSOLE_RING_SIZE * 4;
	char *big = malloc(len);
	CHECK(big != NULL);
	memset(big, 'z', len);
	for (size_t i = 99; i < len; i += 100)
		big[i] = '\n';
	put(big, len);
	free(big);
	char *lead = template_console_lead(dir, KEY);
	CHECK(lead != NULL);
	CHECK(strlen(lead) <= CONSOLE_RING_SIZE + 256);
	free(lead);
}

TEST(missing_file_says_so)
{
	setup();
	char *lead = template_console_lead(dir, KEY);
	CHECK_STR(lead, "--- the console of template 1a2b3c4d5e6f's boot is not available (a template made by an "
			"earlier version) ---\n");
	free(lead);
}

TEST(link_not_followed)
{
	setup();
	CHECK(symlink("/etc/passwd", file) == 0);
	char *lead = template_console_lead(dir, KEY);
	CHECK(lead != NULL);
	CHECK(strstr(lead, "is not available: ") != NULL);
	CHECK(strstr(lead, "root:") == NULL);
	free(lead);
	unlink(file);
	rmdir(dir);
}
