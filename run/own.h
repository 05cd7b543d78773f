/* own.h - the runs the sbx command makes itself: an undo of a run, a
 * restore (and an apply to a project, run/project_run.h). Such a run's changes are the steps undoing a journal's events
 * (run/undo_plan.h): its first snapshot describes every path those events
 * name, its own journal is made from the steps it took (itself
 * undoable), and its end (run_finish()) looks at those paths alone. */
#ifndef SBX_RUN_OWN_H
#define SBX_RUN_OWN_H

#include "lookup.h"
#include "runlog.h"
#include "common/error.h"
#include "store/store.h"

#include <jansson.h>

struct undo_plan;
struct run_texts;

/* Begins a run of KIND (an undo of run UNDOES, a restore) of USER's
 * THREAD whose changes will be the steps undoing LOG's events: its first
 * snapshot describes every path LOG names (those the steps may change;
 * as undo_plan_check() of SEEN found them, where it looked: SEEN may be
 * NULL), and its directory of pre-images under the home HOMEFD is made.
 * The run goes into U (store_run_free() it), the texts its snapshot read
 * into *TEXTS (run_texts_free() them; they are for run_finish()).
 * Returns 0 or -errno. */
int run_begin_own(struct store *s, int homefd, const char *user, const char *thread,
		  enum run_kind kind, int64_t undoes, const struct runlog *log,
		  const struct thread_roots *roots, const struct undo_plan *seen,
		  struct store_run *u, struct run_texts **texts);
/* The same for a run whose changes will be to the N virtual paths NAMES
 * (malloc'd, sorted, each once: taken, and freed with *TEXTS or on
 * failure), which its first snapshot describes. */
int run_begin_paths(struct store *s, int homefd, const char *user, const char *thread,
		    enum run_kind kind, int64_t undoes, const struct thread_roots *roots,
		    char **names, size_t n, const struct undo_plan *seen, struct store_run *u,
		    struct run_texts **texts);
/* Whether the journal of run U, made by COMM, is recorded already (its
 * "capture" at U's start): 1, 0, or -errno. */
int run_journal_recorded(struct store *s, const struct store_run *u, const char *comm);
/* Records the journal of such a run U from the steps RW took (once: a
 * second attempt after a crash may find it recorded already). */
int run_record_own(struct store *s, struct undo_plan *rw, const struct store_run *u);

/* Takes the steps of RW as the run U (begun by run_begin_own(), or a
 * first attempt's to complete), in U's directory of pre-images, after
 * PREPARE (may be NULL) with that directory; records U's journal and ends
 * it (run_finish(): TEXTS as there, its summary in *SUMMARY). Returns how
 * many steps failed (each said by undo_plan_apply() for COMMAND), or -errno
 * (E). */
int run_own_steps(struct store *s, const char *home, int homefd, struct store_run *u,
		  struct undo_plan *rw, struct run_texts *texts, int (*prepare)(void *arg, int dir),
		  void *arg, const char *command, json_t **summary, struct error *e);

#endif
