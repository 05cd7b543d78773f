/* runmarks.h - what the view has done for the open run to each object it
 * changed: its pre-image taken, its content (or a directory's attributes)
 * kept, made or renamed by the run (journal.h). Held by object, not by the
 * view's inode: the kernel forgets inodes it no longer caches (memory
 * pressure), and the inode the view makes when it finds the object again
 * starts blank. Without this, the next change of a file the run made would
 * keep its attributes as if it were older than the run (which undo,
 * removing the file, could not put back), and a file changed again would
 * be copied again. The inode's fields (imaged, kept) stay a lock-free
 * cache of it.
 *
 * An object is its (st_dev, st_ino) and its birth time where known: a
 * number freed and given to a new object names another object. The marks
 * are for one run: a call for another run begins anew.
 *
 * Thread-safe: one mutex. When memory runs out, a mark is not taken: the
 * caller does what it does for an unmarked object (keeps it again), never
 * less.
 */
#ifndef SBX_RUNMARKS_H
#define SBX_RUNMARKS_H

#include "store/snapshot.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

enum {
	RUNMARK_IMAGED = 1,  /* its pre-image is in the journal */
	RUNMARK_KEPT = 2,    /* what it was when the run began is kept, or
			      * the run made it */
	RUNMARK_MADE = 4,    /* the run made it through the view */
	RUNMARK_RENAMED = 8, /* the run renamed it through the view */
};

struct runmark_object {
	dev_t dev;
	ino_t ino;
	bool born_known;
	struct timespec born;
};

struct runmarks;

struct runmarks *runmarks_new(void);
void runmarks_free(struct runmarks *m);

/* Whether object O had every mark of MARKS for RUN; with SET, it has them
 * from now on. */
bool runmarks_test(struct runmarks *m, int64_t run, const struct runmark_object *o, unsigned marks,
		   bool set);

/* The pre-image of a file with other names, as the journal recorded it
 * before the run first changed it: a later pre-image taken under another
 * of its names (that name renamed over or removed) must say the same, not
 * what the run made of it through the first. Both are about object O and
 * RUN. SET keeps a copy of IMAGE's attributes (no path, no target: a
 * regular file), or nothing if memory runs out; GET copies them into
 * *IMAGE and returns true if there are any. */
void runmarks_set_image(struct runmarks *m, int64_t run, const struct runmark_object *o,
			const struct snap_file *image);
bool runmarks_get_image(struct runmarks *m, int64_t run, const struct runmark_object *o,
			struct snap_file *image);

#endif
