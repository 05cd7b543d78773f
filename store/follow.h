/* follow.h - following a thread's change journal as it grows: what
 * `sbx watch` prints and the broker's watch op streams (docs/changes.md,
 * "Watching changes live").
 *
 * The view daemons' writers (writer.h) commit the journal in small
 * transactions. On SQLite each commit writes HOME/sbx.db-wal (WAL mode):
 * a follower sleeps on inotify until that file (or sbx.db itself) is
 * written, then reads the rows after its cursor. The watch is on the
 * home directory, for those two names, so it outlives the WAL file being
 * deleted and created again (a checkpoint when the last connection
 * closes), with nothing to re-establish and no window in between. On
 * PostgreSQL the follower LISTENs: each commit of journal rows sends a
 * notification (a trigger of the schema's), whichever host made it.
 * Either way it never polls the tree, and an idle follower wakes once
 * per fallback timeout of its caller's choosing.
 *
 * Only changes are followed: create, modify, delete, rename, exchange,
 * chmod, symlink, link, mkdir, rmdir (store.h). The journal's internal
 * rows (a run's "capture" and "preimage", and any other op) are skipped:
 * a whitelist, so that a new kind of internal row is never shown by
 * mistake.
 *
 * The cursor of an event is its journal row's id: ids only grow, so a
 * follower started after cursor C (follow_open's SINCE) gets every event
 * after C exactly once, across restarts of the views and of the follower.
 *
 * A struct follow owns a store connection (and on SQLite an inotify fd):
 * use it from one thread at a time. A caller that multiplexes (the broker)
 * polls follow_fd() with follow_timeout(), then calls follow_wait(F, 0)
 * and follow_read().
 */
#ifndef SBX_FOLLOW_H
#define SBX_FOLLOW_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct follow;

/* One change, as follow_read() gives it (strings valid during the call). */
struct follow_event {
	int64_t cursor; /* the journal row's id */
	int64_t at_ns;	/* CLOCK_REALTIME */
	const char *op, *path;
	const char *path2; /* rename, exchange: the other name; else NULL */
	pid_t pid;
	const char *comm;
	int64_t run; /* the thread's run open at AT_NS, or 0 */
};

/* Follows USER's THREAD in HOME's store (opened, created if missing)
 * from after cursor SINCE, or from the journal's current end if SINCE is
 * negative. On failure returns -errno with a reason in ERR. */
int follow_open(const char *home, const char *user, const char *thread, int64_t since,
		struct follow **out, char *err, size_t errlen);
void follow_close(struct follow *f);

/* The cursor: the last event given out, else where it started. */
int64_t follow_cursor(const struct follow *f);

/* Readable (POLLIN) when the store may have changed. */
int follow_fd(const struct follow *f);

/* How long a poll(2) may wait for follow_fd(): TIMEOUT_MS (-1: forever),
 * or less while a second read after a change is due (follow_wait), 0
 * while one is due already (a notification came during a read). */
int follow_timeout(const struct follow *f, int timeout_ms);

/* Waits at most TIMEOUT_MS (0: only looks) for the store to change.
 * Returns 1 if a read is due (a write seen, or the second read after it:
 * a commit becomes visible a moment after its last write), 0 if not,
 * -EINTR if a signal came, or -errno. */
int follow_wait(struct follow *f, int timeout_ms);

/* Calls FN for the events after the cursor, oldest first, at most LIMIT
 * (> 0), and moves the cursor past each. Returns how many FN took: LIMIT
 * means more may be waiting. FN returns 0 to go on, or a negative value
 * to stop before that event (given again by the next read), which is
 * returned; -errno if the store fails. */
int follow_read(struct follow *f, int limit, int (*fn)(void *arg, const struct follow_event *e),
		void *arg);

#endif
