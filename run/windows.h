/* windows.h - the runs of a thread as windows of time, for a restore and
 * sbx log: which run was open when an event was journaled, where that
 * run keeps its pre-images, and which runs an undo took back whole.
 * A run and the whole undo of it changed nothing together, and the
 * files the run kept went back into place with the undo, so a restore
 * goes past both rather than through them. */
#ifndef SBX_RUN_WINDOWS_H
#define SBX_RUN_WINDOWS_H

#include "runlog.h"
#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct run_window {
	int64_t id, begun_ns, ended_ns; /* ended_ns 0: open */
	int dir;			/* its directory of pre-images, or -1 */
	int64_t undoes;			/* a whole undo (store_run.clean): its run */
	bool cancelled;			/* it and its whole undo changed nothing */
};

struct windows {
	struct run_window *v;
	size_t n, cap;
};

/* Reads the runs of USER's THREAD in S into W (empty), oldest first,
 * each with its directory of pre-images under the home HOMEFD opened
 * (-1 once kept, or where there is none). 0 or -errno. */
int windows_load(struct store *s, int homefd, const char *user, const char *thread,
		 struct windows *w);
void windows_free(struct windows *w);

/* Pairs off, among the runs begun from FROM_NS on, each with the whole
 * undo that took it back, oldest first (a run, its undo, the redo: the
 * redo stays): both are marked cancelled. */
void windows_cancel(struct windows *w, int64_t from_ns);

/* The run open at AT_NS (the latest begun by then), or NULL. */
const struct run_window *window_at(const struct windows *w, int64_t at_ns);

/* Puts into SUB the events of ALL that name virtual PATH or what is below
 * it, but for those of the runs W cancelled (shallow copies: ALL owns
 * their strings; free SUB's array alone). Returns 0 or -ENOMEM. */
int windows_events_of(const struct windows *w, const struct runlog *all, const char *path,
		      struct runlog *sub);

#endif
