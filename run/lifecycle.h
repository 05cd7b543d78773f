/* lifecycle.h - a run's life: its beginning (the views told, a first
 * snapshot) and its end (a second snapshot compared with the first,
 * completed by the views' journal; the summary and the receipt recorded
 * in one transaction with the run's end), in a store open already.
 *
 * The sbx command's run begin and run end and the broker's run_begin
 * and run_end requests call these. Each returns 0 or -errno, with E
 * saying what failed; what failed to be told to a view is a warning
 * (run/views.h). Printing the summary is the caller's
 * (run/documents.h's run_document(), cli/report.h).
 */
#ifndef SBX_RUN_LIFECYCLE_H
#define SBX_RUN_LIFECYCLE_H

#include "common/error.h"
#include "store/store.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The texts the first snapshot of a run the sbx command makes itself
 * read (run/own.h, run/scan.h), for its end in the same process. */
struct run_texts;

/* Begins a run of USER's THREAD of HOME in store S (a first snapshot of
 * at most MAX files, 0: SNAPSHOT_MAX_FILES), its id in *ID; the views
 * are told. -ENOENT if the thread is unknown, -EBUSY if another host
 * holds it. */
int run_begin_in(struct store *s, const char *home, const char *user, const char *thread,
		 size_t max, int64_t *id, struct error *e);

/* Ends RUN (open) of store S in HOME: snapshots again, compares,
 * completed by the views' journal (a run the sbx command made itself, an
 * undo or a restore, looks at the paths its journal and first snapshot
 * name, no others), records the summary and receipt, and gives the
 * summary in *SUMMARY (a new reference; NULL if the run changed
 * nothing). TEXTS (may be NULL; emptied): what its first snapshot read,
 * for the diffs; without them (a second attempt after a crash) those
 * come from the store, where kept. A receipt that says outputs were
 * produced and none presented is a warning. */
int run_finish(struct store *s, const char *home, struct store_run *run, struct run_texts *texts,
	       json_t **summary, struct error *e);

/* The summary run ID (open) of store S in HOME would have if it ended
 * now, in *SUMMARY (a new reference; NULL if it changed nothing), as
 * run_finish() makes it; nothing is recorded. -ENOENT if there is no
 * such run, -EALREADY if it has ended. */
int run_preview(struct store *s, const char *home, int64_t id, json_t **summary, struct error *e);

/* Ends run ID of store S (run_finish(): the run as it was read in *RUN,
 * store_run_free() it, its summary in *SUMMARY), then the retention of
 * its thread's kept files (run/retain.h). -ENOENT if there is no such
 * run, -EALREADY if it has ended, -EBUSY if another host holds its
 * thread; *RUN is set only on success. */
int run_end_in(struct store *s, const char *home, int64_t id, struct store_run *run,
	       json_t **summary, struct error *e);

#endif
