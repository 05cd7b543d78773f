/* project_run.h - the runs of a person's project (docs/try.md, "An apply
 * is a run"): what sbx try apply writes to a project, and the undo of
 * that, are runs as any other (sbx runs, sbx changes, sbx run undo, sbx
 * run keep), of the project's record.
 *
 * A project is no thread: its files are the person's, on a filesystem
 * the home may not share. Its record is a thread of the applying user
 * whose directory holds PROJECT_RECORD (common/home.h) and each run's
 * directory of pre-images, as any thread's; for the snapshots that
 * describe a run, its workspace is the project (thread_roots_open()).
 * A pre-image is a copy (no rename crosses filesystems), and every
 * change puts a whole object at its path with one rename.
 *
 * A run logs each change in its directory (the file "changes") before it
 * makes it, the pre-image kept first, and marks it done or failed after:
 * a run killed in the middle is completed by the next look at it (the
 * next apply to the project, or its undo), its one change in flight
 * judged by what the path holds. At its end the log becomes the run's
 * journal, in the views' words ("keep" then "modify"; "create";
 * "symlink"; "keep" then "delete"; "mkdir"; "keep" then "rmdir" or
 * "chmod"), and the run ends as an undo does: its summary made of the
 * paths it named (run/own.h).
 *
 * The undo of a project run (project_undo(), which run_undo() calls for
 * one) is a project run of its own whose changes are the steps back, so
 * that its undo redoes. A path the run left that changed since is a
 * conflict, as for any run's undo.
 */
#ifndef SBX_RUN_PROJECT_RUN_H
#define SBX_RUN_PROJECT_RUN_H

#include "common/error.h"
#include "store/store.h"

#include <jansson.h>
#include <stdio.h>

/* The record thread of PROJECT (an absolute path) for USER in the home
 * HOMEFD, into THREAD (SIZE bytes, THREAD_ID_MAX + 1 or more):
 * "applied-", the project directory's name, "-" and 16 hex digits of
 * the SHA-256 of its path; made if missing. Returns 0 or -errno. */
int project_record(int homefd, const char *user, const char *project, char *thread, size_t size);

/* A change of a project path, as the journal names it. */
enum project_op {
	PROJECT_CREATE,	 /* a file made where nothing was */
	PROJECT_SYMLINK, /* a symlink made where nothing was */
	PROJECT_MODIFY,	 /* a file or symlink replaced (kept first) */
	PROJECT_DELETE,	 /* a file or symlink removed (kept first) */
	PROJECT_MKDIR,
	PROJECT_RMDIR, /* an empty directory removed (its attributes kept) */
	PROJECT_CHMOD, /* a directory's mode set (its attributes kept) */
};

struct project_run;

/* Begins a run of KIND (RUN_APPLY, or RUN_UNDO of run UNDOES) of USER's
 * project record THREAD of HOME, in store S, whose changes will be to
 * the N PATHS below the project (its first snapshot describes them);
 * OVERLAY (or NULL): the overlay whose origins its changes, and its
 * undo's, move (store/origins.h). A run of the record that an apply
 * killed left open is ended first; one an undo left is refused
 * (-EBUSY: its undo completes it). Returns 0 with *OUT, or -errno (E). */
int project_run_begin(struct store *s, const char *home, const char *user, const char *thread,
		      enum run_kind kind, int64_t undoes, const char *overlay,
		      const char *const *paths, size_t n, struct project_run **out,
		      struct error *e);

/* Before PR changes PATH (below the project) by OP: keeps what OP
 * replaces or removes, and logs the change. SRC: the step of the run
 * being undone that it takes back (-1: none). Returns 0, or -errno:
 * PATH is not to be changed then. */
int project_run_will(struct project_run *pr, enum project_op op, const char *path, long src);
/* After: R is 0 (the change was made) or -errno (it was not). */
void project_run_did(struct project_run *pr, int r);

/* Ends PR (freed): the project synced, its journal recorded, the run
 * ended (its summary in *SUMMARY, a new reference or NULL, as
 * run_finish()) and the record's retention applied. The run as it ended
 * in *RUN (store_run_free() it). Returns 0 or -errno (E). */
int project_run_end(struct project_run *pr, struct store_run *run, json_t **summary,
		    struct error *e);
/* Gives PR up without ending it (it stays open: the next look ends it). */
void project_run_free(struct project_run *pr);

struct undo_options;
struct undo_result;
struct undo_conflict;
struct undo_counts;

/* Undoes RUN, a run of a project's record, in HOME as O says, into RES
 * (res->project holds the steps: undo_result_free() frees them). RESUME:
 * the undo of RUN begun before that stopped short, to complete (0:
 * none). Returns as run_undo() does. */
int project_undo(struct store *s, const char *home, const struct store_run *run, int64_t resume,
		 const struct undo_options *o, struct undo_result *res, struct error *e);

struct project_undo;
/* The conflicts, what the steps would do, what they did: as undo_plan's. */
const struct undo_conflict *project_undo_conflict_at(const struct project_undo *pu, size_t i);
void project_undo_print(const struct project_undo *pu, FILE *f);
void project_undo_counts(const struct project_undo *pu, struct undo_counts *c);
void project_undo_free(struct project_undo *pu);

#endif
