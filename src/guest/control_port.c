/* Control port discovery (see control_port.h). */
#include "guest/control_port.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"

#define PORTS_DIR "/sys/class/virtio-ports"

static int name_is_control(const char *port)
{
	char path[256], name[64];
	snprintf(path, sizeof(path), PORTS_DIR "/%s/name", port);
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, name, sizeof(name) - 1);
	if (n <= 0)
		return 0;
	name[n] = '\0';
	name[strcspn(name, "\n")] = '\0';
	return strcmp(name, "control") == 0;
}

static int scan(sbx_error_t *err)
{
	cleanup_dir DIR *d = opendir(PORTS_DIR);
	if (d == NULL)
		return sbx_error_errno(err, errno, "open " PORTS_DIR);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || strlen(e->d_name) > 32 || !name_is_control(e->d_name))
			continue;
		char dev[64];
		snprintf(dev, sizeof(dev), "/dev/%s", e->d_name);
		int fd = open(dev, O_RDWR | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			return sbx_error_errno(err, errno, "open %s", dev);
		return fd;
	}
	return sbx_error_set(err, ENOENT, "no virtio port named \"control\"");
}

int control_port_open(sbx_error_t *err)
{
	/* Ports are announced by the host asynchronously: allow ~2 s. */
	for (int i = 0;; i++) {
		int fd = scan(err);
		if (fd >= 0 || i == 40)
			return fd;
		sbx_error_free(err);
		usleep(50000);
	}
}
