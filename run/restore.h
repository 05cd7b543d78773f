/* restore.h - one path as it was before a run, or at a moment: sbx
 * restore (docs/changes.md, "Restoring one path").
 *
 * The journal's changes of the path since then are undone by the undo's
 * steps (run/undo_plan.h), copying the kept files (the runs keep their
 * pre-images), as a run of its own: a restore is undoable. A change that
 * cannot be taken back (its pre-image is gone, it was made while no run
 * was open, or the run open at that moment had changed the path before
 * it) refuses the whole restore, and each such change is listed. Nothing
 * is printed: the result says what happened.
 */
#ifndef SBX_RUN_RESTORE_H
#define SBX_RUN_RESTORE_H

#include "runlog.h"
#include "windows.h"
#include "common/error.h"
#include "store/store.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct restore_options {
	const char *path; /* virtual: /mnt/user-data/... */
	int64_t before;	  /* a run: as before it began; 0: AT_NS */
	int64_t at_ns;	  /* a moment */
	bool dry_run;	  /* check and plan only */
};

/* A change that cannot be taken back. */
struct restore_gap {
	char *path, *comm, *why;
	const char *op; /* the journal's word; "change" for a kept file */
	int64_t at_ns;
	pid_t pid;
};

struct restore_result {
	bool nothing;		  /* the journal has no change of the path since then */
	struct restore_gap *gaps; /* the changes that cannot be taken back:
				   * nothing was changed (-ENODATA) */
	size_t ngaps, gcap;
	struct undo_plan *rw; /* the steps: the plan (dry run) */
	struct runlog all, sub, within;
	struct windows w;
	struct store_run restore; /* the restore's run, as it ended (id 0: none) */
	json_t *summary;	  /* its summary, as recorded */
	int failed;		  /* steps that failed (said by the steps) */
};

/* True if P is a path a thread's journal can name: below
 * /mnt/user-data/workspace or /mnt/user-data/outputs, with no empty, "."
 * or ".." component, shorter than PATH_MAX. */
bool restore_path_ok(const char *p);

/* Restores O's path of USER's THREAD of HOME (store S, open) into RES
 * (restore_result_free() it, whatever is returned). Returns 0: restored,
 * or nothing to do, or (a dry run) checked; or -errno with E: -ENOENT
 * (no such run of the thread: O->before), -ENODATA (RES lists the
 * changes that cannot be taken back), -EBUSY (another host holds the
 * thread), -EINVAL (not a path restore_path_ok() takes), or what
 * failed. */
int run_restore(struct store *s, const char *home, const char *user, const char *thread,
		const struct restore_options *o, struct restore_result *res, struct error *e);
void restore_result_free(struct restore_result *res);

#endif
