/* The identity processes run as: an OCI `User` string resolved against the
 * sandbox's own /etc/passwd and /etc/group.  The init is static, so there
 * is no NSS: the files are parsed here, as plain text that the image
 * controls (hostile: lines are length-capped, malformed ones skipped).
 *
 * Rules (proto.h CONFIG):
 *   ""            root: uid 0, gid 0 (a passwd entry for uid 0 still gives
 *                 HOME and group membership)
 *   "name"        the passwd entry of that name (required): its uid, gid,
 *                 home
 *   "uid"         the first passwd entry with that uid when there is one;
 *                 else gid 0 and HOME "/"
 *   "u:group"     as above for u, then gid from the group: a number is
 *                 taken as is, a name must exist in /etc/group
 * Supplementary groups: every /etc/group entry whose member list holds the
 * user's passwd name (none for a uid without an entry).  An empty or
 * relative home field means "/". */
#ifndef SBX_GUEST_USER_RESOLVE_H
#define SBX_GUEST_USER_RESOLVE_H

#include <stddef.h>
#include <sys/types.h>

#include "common/error.h"

#define USER_MAX_LINE 4096u          /* longer passwd/group lines are skipped */
#define USER_MAX_GROUPS 256u         /* supplementary groups of one user */
#define USER_MAX_FILE (4u << 20)     /* /etc/passwd, /etc/group */

struct guest_user {
	uid_t uid;
	gid_t gid;
	gid_t *groups; /* supplementary, without duplicates */
	size_t ngroups;
	char *home;    /* never NULL after a successful resolve */
};

/* Resolves `spec` over the contents of /etc/passwd and /etc/group (NULL or
 * empty when the file is absent).  Fails with a message naming the user or
 * group that does not exist, or the malformed spec. */
int user_resolve(const char *spec, const char *passwd, size_t passwd_len, const char *group, size_t group_len,
		 struct guest_user *u, sbx_error_t *err);
void guest_user_free(struct guest_user *u);

#endif
