/* undo_plan.h - undoing a run (sbx run undo; docs/changes.md, "Undo").
 *
 * A run's journal is walked backwards, each event undone by one step on
 * the thread's directories, each step one atomic call or two (a rename, a
 * link then a rename, a mkdir): a file's content comes back from the
 * object the view kept before changing it ("keep" events), created paths
 * go (into the undo's own directory of pre-images, so a redo can bring
 * them back), renames are reversed, directories made again.
 *
 * A path that more steps than one change is changed through a shadow, a
 * name in the undo's directory that those steps change instead, which
 * then goes to the path in one call (undo_plan.c, "shadows"); a directory
 * the run renamed goes back through one whole, with what changed in it
 * (one it exchanged with another and changed inside through a shadow
 * too, a copy of it shown at its path meanwhile).
 *
 * Every step is logged before it is taken: a second undo after a crash
 * reads the log, completes the step it was in and goes on, so every path
 * is at any moment as before the undo or as after it (but for the
 * exception docs/changes.md names). The undo's own
 * journal (what it replaced, removed, renamed: itself undoable) is made
 * from that log once the steps are done.
 *
 * Paths are resolved below the thread's roots without following a
 * symlink: what an agent planted there cannot redirect a step.
 */
#ifndef SBX_RUN_UNDO_PLAN_H
#define SBX_RUN_UNDO_PLAN_H

#include "run/runlog.h"

#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>

struct undo_plan;

/* What undoing run TARGET (its events: LOG) would clobber: a path the run
 * left one way that is another way now. */
struct undo_conflict {
	const char *path;
	const char *what; /* "changed", "removed", "created" after the run */
};

/* Prepares undoing the events of LOG (a run that ended at ENDED_NS) on
 * the roots WS and OUT (directory fds, OUT may be -1), with the objects
 * the views kept in directory FROM (-1 if there is none). The fds stay
 * the caller's. */
int undo_plan_new(const struct runlog *log, int64_t ended_ns, int ws, int out, int from,
		  struct undo_plan **out_rw);
void undo_plan_free(struct undo_plan *rw);

/* Objects are also looked up in directory FD (the caller's), at most
 * UNDO_SOURCES of them: steps over several runs. */
#define UNDO_SOURCES 64
int undo_plan_add_source(struct undo_plan *rw, int fd);
/* The steps copy objects instead of moving them: the runs keep their
 * pre-images (sbx restore). */
void undo_plan_copy(struct undo_plan *rw);

/* Whether OBJECT is in one of the directories of objects. */
bool undo_plan_has_object(const struct undo_plan *rw, const char *object);

/* Finds the conflicts; returns how many (see undo_plan_conflict_at). */
int undo_plan_check(struct undo_plan *rw);
const struct undo_conflict *undo_plan_conflict_at(const struct undo_plan *rw, size_t i);

/* How undo_plan_check() found virtual PATH, until undo_plan_apply() begins (so
 * that what describes the thread before the steps need not look again):
 * 1 there (its attributes in ST), 0 absent, -ENOENT if it did not look
 * (RW may be NULL). */
int undo_plan_seen(const struct undo_plan *rw, const char *path, struct stat *st);

/* Skips every step on a conflicting path (sbx run undo --partial). */
void undo_plan_skip_conflicts(struct undo_plan *rw);
/* Skips the step of event SEQ; whether it is skipped. */
void undo_plan_skip(struct undo_plan *rw, size_t seq);
bool undo_plan_skipped(const struct undo_plan *rw, size_t seq);

/* How many events have a step (0: the run changed nothing through a
 * view that undo could take back). */
size_t undo_plan_steps(const struct undo_plan *rw);

/* Writes what the steps would do to F, one line each; changes nothing. */
void undo_plan_print(struct undo_plan *rw, FILE *f);

/* Takes the steps, keeping what they replace or remove in directory TO
 * and logging each in the file LOG_FD (opened for appending, empty on a
 * first attempt; on a second one, what the first logged is read and
 * completed). Returns the number of steps that failed (each a warning in
 * the log, common/log.h, as "COMMAND: ...": COMMAND is the run's word,
 * "run undo" or "restore"), or -errno if the log cannot be read or
 * written. */
int undo_plan_apply(struct undo_plan *rw, int to, int log_fd, const char *command);

/* How many steps restored content, removed, renamed, made a directory or
 * set attributes (after undo_plan_apply). */
struct undo_counts {
	size_t restored, removed, renamed, made, attrs, failed;
};
void undo_plan_counts(const struct undo_plan *rw, struct undo_counts *c);

/* The undo's own events, from its steps (after undo_plan_apply), for the
 * store: FN is called with each, in order (a "capture" first, at
 * BEGUN_NS, then per step its "keep" and its change: what undoing the
 * undo needs), with PID and COMM as the caller. */
int undo_plan_events(struct undo_plan *rw, int64_t begun_ns, pid_t pid, const char *comm,
		     int (*fn)(void *arg, const struct store_event *e), void *arg);

/* The bytes that USER's THREAD's run begun at BEGUN_NS holds in its
 * directory of pre-images under the home HOMEFD, or -errno (-ENOENT: it
 * has none). */
int64_t kept_bytes(int homefd, const char *user, const char *thread, int64_t begun_ns);

/* Removes that directory with what it holds (0 if there is none). */
int kept_drop(int homefd, const char *user, const char *thread, int64_t begun_ns);

/* Whether a run can be undone, and what it holds for that. */
struct undo_state {
	const char *undo;   /* "undoable", "undone", "kept", "none" (no pre-images) */
	int64_t undone_by;  /* "undone": by that run */
	int64_t bytes_held; /* in its directory of pre-images */
};
int undo_state_get(struct store *s, int homefd, const struct store_run *run, struct undo_state *st);

/* The retention of USER's THREAD's pre-images: an ended run's are dropped
 * once it ended more than MAX_AGE_NS ago (0: never for its age), then the
 * oldest ended runs' until all of the thread's hold at most BUDGET bytes
 * (0: no bound). Each run dropped is marked kept and said as a warning
 * in the log, "COMMAND: run N can no longer be undone..." (COMMAND: the
 * operation that ended a run and so retains, "run end", "run undo"...).
 * Returns how many were dropped, or -errno. */
int kept_retain(struct store *s, int homefd, const char *user, const char *thread,
		int64_t max_age_ns, int64_t budget, int64_t now_ns, const char *command);

#endif
