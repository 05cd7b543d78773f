/* provider.h - the broker's views: mounted on demand, shared by leases,
 * parked when the last lease goes, unmounted when idle too long.
 *
 * A thread's view is mounted at $SBX_HOME/run/views/USER/THREAD: every
 * view, lock and session is keyed by the full (user, thread) pair. The
 * sandbox id, the first 8 hex digits of sha256(thread id), is only the
 * reference-compatible name of the sandbox: two threads whose ids collide
 * share nothing. Mounting and unmounting hold a lock file,
 * $SBX_HOME/run/locks/USER/THREAD (flock), so two processes never mount
 * one view twice. A view knows its sandbox's host identity (identity.h):
 * a root broker mounts it for that uid (allow_other, --map-owner), with
 * the disk quota of [limits]. acquire(owner)
 * is idempotent per owner, and may give the sandbox a max_shell_sessions
 * of its own, kept until the view is unmounted; release(owner) drops
 * that owner's lease; a
 * view with no lease, no command running and no shell session is parked
 * (kept mounted, warm) and unmounted after idle_timeout seconds. A mount left behind by
 * a broker that died is found at start-up and detached.
 *
 * All functions are thread-safe.
 */
#ifndef SBX_PROVIDER_H
#define SBX_PROVIDER_H

#include "identity.h"
#include "common/config.h"

#include <limits.h>

#include <stdbool.h>
#include <stddef.h>

#define SANDBOX_ID_LEN 8

struct provider;

/* Views of HOME, mounted with the extra mounts of C (which must outlive
 * the provider). Detaches stale mounts under HOME/run/views. */
struct provider *provider_new(const char *home, const struct config *c);
/* Unmounts every view it mounted. */
void provider_free(struct provider *p);

/* The sandbox id of THREAD (SANDBOX_ID_LEN hex digits and a NUL). */
void sandbox_id(const char *thread, char id[SANDBOX_ID_LEN + 1]);

/* Mounts USER's THREAD if needed and gives OWNER a lease on it. A
 * *MAX_SESSIONS above 0 becomes the sandbox's max_shell_sessions until
 * its view is unmounted; *MAX_SESSIONS then gets the sandbox's (0: it
 * has none of its own). MOUNT gets the mount point, ID the sandbox id.
 * Returns 0 or -errno with a reason in ERR. */
int provider_acquire(struct provider *p, const char *user, const char *thread, const char *owner,
		     unsigned *max_sessions, char *mount, size_t size, char id[SANDBOX_ID_LEN + 1],
		     char *err, size_t errlen);
/* Drops OWNER's lease: 1 if the view is now parked, 0 if others hold
 * it, -ENOENT if OWNER holds none. */
int provider_release(struct provider *p, const char *user, const char *thread, const char *owner);

/* Where a command of a sandbox runs. */
struct sandbox_view {
	char mount[PATH_MAX];
	char id[SANDBOX_ID_LEN + 1];
	struct identity ident;	     /* a copy: the provider holds the lock */
	unsigned max_shell_sessions; /* its own (an acquire's); 0: none */
};

/* A command is about to run in USER's THREAD's view (mounted if needed,
 * never unmounted while the command runs), and has ended. */
int provider_use(struct provider *p, const char *user, const char *thread, struct sandbox_view *out,
		 char *err, size_t errlen);
void provider_unuse(struct provider *p, const char *user, const char *thread);

/* provider_use() without the mount: the view as it will be (its mount
 * point, identity and limit), kept from the idle unmount until
 * provider_unuse(), for a caller about to mount it (provider_acquire())
 * and meanwhile to prepare what will run in it. */
int provider_reserve(struct provider *p, const char *user, const char *thread,
		     struct sandbox_view *out, char *err, size_t errlen);

/* Unmounts views parked for longer than the idle timeout, but those
 * BUSY(ARG, USER, THREAD) says sandboxes still bind (shell sessions):
 * unmounted, a view would live on in their mount namespaces. */
void provider_tick(struct provider *p,
		   bool (*busy)(void *arg, const char *user, const char *thread), void *arg);

/* Calls FN for each view the provider knows. */
void provider_each(struct provider *p,
		   void (*fn)(void *arg, const char *user, const char *thread, const char *id,
			      const char *mount, uid_t uid, size_t leases, size_t running,
			      bool mounted),
		   void *arg);

#endif
