/* undo.h - taking a run back: sbx run undo, and the broker's run_undo.
 *
 * run_undo() is the whole of it, after the run's lookup: an open run is
 * ended first (its summary says what the undo undoes); the run's journal
 * is read back (run/runlog.h) and turned into steps (run/undo_plan.h); the
 * changes no view saw are counted (the host's: they stay); the paths
 * changed after the run are conflicts, refused unless PARTIAL (they are
 * left) or FORCE (they are undone too); then the undo, a run of its own
 * (run/own.h), takes the steps, and its summary is recorded. An undo
 * that stopped short (a crash) is completed by the next call with the
 * same steps. Nothing is printed: the result says what happened.
 *
 * A run of a project's record (an apply, sbx try apply) is undone by
 * run/project_run.h's steps instead: the same checks and result.
 */
#ifndef SBX_RUN_UNDO_H
#define SBX_RUN_UNDO_H

#include "runlog.h"
#include "undo_plan.h"
#include "common/error.h"
#include "store/store.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct undo_options {
	bool dry_run; /* check and plan only */
	bool partial; /* conflicts are left as they are */
	bool force;   /* conflicts are undone too */
};

/* How many of the paths no view saw a result names. */
#define UNDO_UNSEEN_NAMED 20

struct project_undo;

struct undo_result {
	struct runlog log;		       /* the run's journal, read back: RW's events */
	struct undo_plan *rw;		       /* the steps: conflicts, the plan (dry run) */
	int conflicts;			       /* paths changed after the run */
	size_t unseen;			       /* changes no view saw: they stay */
	char *unseen_paths[UNDO_UNSEEN_NAMED]; /* the first of them */
	bool nothing;			       /* the run made no change through a view */
	bool resumed;			       /* an undo that stopped short, completed */
	struct store_run undo;		       /* the undo's run (id 0: none began) */
	struct project_undo *project;	       /* a project's run's: its steps (RW unused) */
	json_t *summary;		       /* its summary, as recorded */
	int failed;			       /* steps that failed (logged) */
};

/* Undoes run ID of store S in HOME (its store, open, fenced for
 * writing) as O says, into RES (undo_result_free() it, whatever is
 * returned). Returns 0: the undo ran, or had nothing to do, or (a dry
 * run) was checked: RES says how it went; or -errno with E: -EALREADY
 * (undone already: E names the undo, and the run that would redo it),
 * -ESTALE (its kept files were dropped), -EEXIST (conflicts, neither
 * PARTIAL nor FORCE: RES lists them; nothing was undone), -EINPROGRESS
 * (a dry run of an undo that stopped short), or what failed. */
int run_undo(struct store *s, const char *home, int64_t id, const struct undo_options *o,
	     struct undo_result *res, struct error *e);
void undo_result_free(struct undo_result *res);

/* RES's conflict I (of res->conflicts), what its steps would do (a dry
 * run), what they did: whichever run it undid. */
const struct undo_conflict *undo_result_conflict(const struct undo_result *res, size_t i);
void undo_result_print(const struct undo_result *res, FILE *f);
void undo_result_counts(const struct undo_result *res, struct undo_counts *c);

#endif
