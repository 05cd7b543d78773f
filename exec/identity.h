/* identity.h - who a sandbox's processes are on the host.
 *
 * A root broker runs each sandbox - one (user, thread) pair - as a host
 * uid and gid of its own from [broker] sandbox_uid_base and
 * sandbox_uid_count (docs/security-model.md): never 0, never an id that
 * /etc/passwd or /etc/group names, never one that another broker on this
 * host holds. The broker holds a lock file per uid (in /run/sbxfs/uids,
 * else HOME/run/uids) for as long as it knows the sandbox; the first uid
 * tried is picked by a hash of (home, user, thread), so a sandbox keeps
 * its uid across restarts unless another took it meanwhile.
 *
 * A broker run by any other user runs its sandboxes as that user: it has
 * no other id to give.
 *
 * Inside, a user namespace shows every sandbox's identity as uid and gid
 * SANDBOX_UID ("agent"), and the view shows the files of the broker's
 * user as the sandbox's own (sbxfs --map-owner).
 */
#ifndef SBX_IDENTITY_H
#define SBX_IDENTITY_H

#include <stddef.h>
#include <sys/types.h>

#define SANDBOX_UID 1000
#define SANDBOX_USER "agent"
#define SANDBOX_HOME "/tmp" /* its home: its private tmpfs */

struct identity {
	uid_t uid;
	gid_t gid;
	int lock; /* held while the uid is ours; -1: none */
};

/* Picks the host identity of USER's THREAD under HOME into ID. Returns 0,
 * or -errno with a one-line reason in ERR (-EAGAIN: every uid of the
 * range is taken). */
int identity_take(const char *home, const char *user, const char *thread, uid_t base,
		  unsigned count, struct identity *id, char *err, size_t errlen);
/* Lets the uid go (ID may be unset: uid (uid_t)-1). */
void identity_release(struct identity *id);

/* True if ID is a sandbox identity of its own (a root broker's), not the
 * broker's user. */
static inline int identity_separate(const struct identity *id)
{
	return id->lock >= 0;
}

#endif
