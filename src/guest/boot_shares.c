/* virtio-fs shares (see boot_shares.h). */
#include "guest/boot_shares.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "common/cleanup.h"

/* mkdir -p: each component of an absolute path. */
static int make_dirs(const char *path, sbx_error_t *err)
{
	cleanup_free char *p = strdup(path);
	if (p == NULL)
		return sbx_error_errno(err, ENOMEM, "share path");
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return sbx_error_errno(err, errno, "mkdir %s", p);
		if (c == '\0')
			return 0;
		*s = c;
	}
}

int boot_mount_shares(const struct proto_config *c, sbx_error_t *err)
{
	for (uint32_t i = 0; i < c->n_shares; i++) {
		const struct proto_share *s = &c->shares[i];
		unsigned long flags = MS_NOSUID | MS_NODEV | ((s->flags & PROTO_SHARE_RO) ? MS_RDONLY : 0);
		if (make_dirs(s->path, err) < 0)
			return sbx_error_prefix(err, "share %s", s->tag);
		if (mount(s->tag, s->path, "virtiofs", flags, NULL) < 0)
			return sbx_error_errno(err, errno, "mount share %s (virtiofs) on %s", s->tag, s->path);
	}
	return 0;
}
