/* runend.h - what the commands that make runs share: telling the mounted
 * views, snapshots, ending a run with its summary and receipt, and the
 * retention of pre-images (run begin and end, undo, restore). */
#ifndef SBX_RUNEND_H
#define SBX_RUNEND_H

#include "args.h"
#include "lookup.h"
#include "rewind.h"
#include "runlog.h"
#include "store/store.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Calls FN with the mount point of each view of USER's THREAD in HOME
 * mounted here; returns how many there are. */
int views_each(const char *home, const char *user, const char *thread,
	       void (*fn)(const char *mountpoint, void *arg), void *arg);
/* Tells them the run begun at SINCE is open (0: none). */
void views_tell_run(const char *home, const char *user, const char *thread, int64_t since);
/* Tells them about the runs open now, as the store says. */
void views_update(struct store *s, const char *home, const char *user, const char *thread);

/* Snapshots the thread (at most MAX files, a scan with progress on a
 * terminal) into the store: its id in *ID. Errors are said. */
int run_snapshot(struct store *s, const struct thread_roots *roots, const char *user,
		 const char *thread, size_t max, int64_t *id);
void run_names_free(char **names, size_t n);

/* The texts the first snapshot of a run the sbx command makes itself
 * read (run_begin_own), for its end in the same process. */
struct run_texts;
void run_texts_free(struct run_texts *t);

/* Ends RUN (open) of store S in HOME: snapshots again, compares,
 * completed by the views' journal (a run the sbx command made itself, an
 * undo or a restore, looks at the paths its journal and first snapshot
 * name, no others), records the summary and receipt, and prints the
 * summary as FORMAT if PRINT, or gives it in *DOCUMENT (unless NULL:
 * what sbx run end --format json prints, a new reference). TEXTS (may
 * be NULL; emptied): what its first snapshot read, for the diffs;
 * without them (a second attempt after a crash) those come from the
 * store, where kept. Returns 0, or -errno (said on stderr). */
int run_finish(struct store *s, const char *home, struct store_run *run, enum format format,
	       bool print, struct run_texts *texts, json_t **document);

/* sbx run begin in store S, open already: begins a run of USER's THREAD
 * of HOME (a first snapshot of at most MAX files, 0: SNAPSHOT_MAX_FILES),
 * its id in *ID; the
 * views are told. 0, or -errno (said): -ENOENT if the thread is unknown,
 * -EBUSY if another host holds it. */
int run_begin_in(struct store *s, const char *home, const char *user, const char *thread,
		 size_t max, int64_t *id);
/* sbx run end in S: ends run ID (run_finish(), printed as FORMAT, or its
 * document in *DOCUMENT if that is not NULL), then the retention of its
 * thread's pre-images. 0, or -errno (said): -ENOENT if there is no such
 * run, -EALREADY if it has ended, -EBUSY if another host holds its
 * thread. */
int run_end_in(struct store *s, const char *home, int64_t id, enum format format,
	       json_t **document);

/* Prints a summary as recorded (JSON text, NULL if there is none) of run
 * R as FORMAT; 0, or 1 after an error (said). */
int run_print_summary(const struct store_run *r, const char *summary, enum format format);

/* Drops the pre-images of USER's THREAD that [undo] in HOME's sbx.conf
 * no longer keeps (docs/changes.md, "Retention"), said for COMMAND. */
void run_retain(struct store *s, const char *home, const char *user, const char *thread,
		const char *command);

/* Begins a run of KIND the sbx command makes itself (an undo of run
 * UNDOES, a restore) of USER's THREAD, whose changes will be the steps
 * undoing LOG's events: its first snapshot describes every path LOG
 * names (those the steps may change; as rewind_check() of SEEN found
 * them, where it looked: SEEN may be NULL), its directory of pre-images
 * is made. The run in U (store_run_free() it), the texts its snapshot read
 * in *TEXTS (run_texts_free() them; for run_finish()). */
int run_begin_own(struct store *s, int homefd, const char *user, const char *thread,
		  enum run_kind kind, int64_t undoes, const struct runlog *log,
		  const struct thread_roots *roots, const struct rewind *seen, struct store_run *u,
		  struct run_texts **texts);
/* Records the journal of such a run U from the steps RW took (once: a
 * second attempt after a crash may find it recorded already). */
int run_record_own(struct store *s, struct rewind *rw, const struct store_run *u);

/* Takes the steps of RW as the run U (begun by run_begin_own(), or a
 * first attempt's to complete), in U's directory of pre-images, after
 * PREPARE (may be NULL) with that directory; records U's journal and ends
 * it (run_finish(), TEXTS and FORMAT as there). Returns how many steps
 * failed (each said), or -errno (said, for COMMAND). */
int run_own_steps(struct store *s, const char *home, int homefd, struct store_run *u,
		  struct rewind *rw, enum format format, struct run_texts *texts,
		  int (*prepare)(void *arg, int dir), void *arg, const char *command);

#endif
