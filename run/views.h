/* views.h - telling the mounted views of a thread about its runs.
 *
 * A view records pre-images only while it knows a run is open, and a
 * run's end must find in the store what every view has journaled. Each
 * call into a view is made in a child process with a deadline: a view
 * whose daemon is stopped holds every call into its mount. A view that
 * does not answer is named in a warning (common/log.h), with what that
 * means for the run; nothing here fails.
 */
#ifndef SBX_RUN_VIEWS_H
#define SBX_RUN_VIEWS_H

#include <stdint.h>

struct store;

/* Calls FN with the mount point of each view of USER's THREAD in HOME
 * mounted here (common/viewreg.h: views of other homes are never
 * called into); returns how many there are. */
int views_each(const char *home, const char *user, const char *thread,
	       void (*fn)(const char *mountpoint, void *arg), void *arg);
/* Tells them the run begun at SINCE is open (0: none). */
void views_tell_run(const char *home, const char *user, const char *thread, int64_t since);
/* Tells them about the runs open now, as the store S says. */
void views_update(struct store *s, const char *home, const char *user, const char *thread);
/* Waits until what each of them has journaled is in the store (the
 * end of a run). */
void views_sync(const char *home, const char *user, const char *thread);
/* Has them drop what the kernel caches of the thread's files, after
 * changes made outside them that their host watch may not see (an undo
 * writing a file back through another name); returns once they have. */
void views_refresh(const char *home, const char *user, const char *thread);

#endif
