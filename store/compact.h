/* compact.h - which of a thread's journal rows nothing needs any more: the
 * rules of journal compaction (store_journal_compact() does the storage).
 *
 * Only rows made while no run of the thread was open are ever dropped: a
 * run's window is what its end, its undo and sbx restore read. Among
 * those, within one stretch between two runs:
 *
 * - a path made (create, symlink, link; mkdir) and removed again (delete;
 *   rmdir) with nothing else naming it in between but changes of its
 *   content or attributes: absent before and after, it was pure churn,
 *   and every row of it goes (a directory only if nothing below it was
 *   named meanwhile);
 * - a change of content or attributes (modify, chmod, xattr) of a path
 *   whose previous row was the same change of it: the earlier one goes
 *   (sbx restore refuses a change made with no run open either way; sbx
 *   log shows the last one).
 *
 * A rename, an exchange or any other row that names a path ends what is
 * pending for it (and for the directories above it).
 */
#ifndef SBX_COMPACT_H
#define SBX_COMPACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct compact_row {
	int64_t id, at_ns;
	char *op, *path, *path2; /* path2 NULL if none */
	bool drop;		 /* set by journal_churn() */
};

/* A run's window: from BEGUN_NS to ENDED_NS (open: INT64_MAX). */
struct run_span {
	int64_t begun_ns, ended_ns;
};

/* Sets DROP on the rows of ROWS (N, in id order) that the rules above
 * say nothing needs, given the thread's RUNS (NRUNS, in the order they
 * began). Returns how many, or -ENOMEM. */
int journal_churn(struct compact_row *rows, size_t n, const struct run_span *runs, size_t nruns);

#endif
