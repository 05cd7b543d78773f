/* summary.h - what changed between two snapshots of a thread.
 *
 * The reference rules (shared/reference/reference-behaviour.md, 5.2):
 * paths in sorted order; a file is unchanged if both hashes are known and
 * equal, else if size and mtime are equal; statuses created, modified,
 * deleted and symlink_created (a path that became a symlink); a text diff
 * unless one side is a symlink, sensitive, binary or large (in that order
 * of precedence), within 256 KiB per input and 1 MiB in total (then
 * diff_truncated); at most 200 files listed, counts over all of them.
 * Where a snapshot was truncated, a path missing from it proves nothing:
 * it is not reported created or deleted. An entry marked absent (what the
 * views' journal knows) proves the path did not exist. The summary is
 * truncated when any limit was hit, the listing limit too.
 */
#ifndef SBX_SUMMARY_H
#define SBX_SUMMARY_H

#include "lineage.h"
#include "snapshot.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct summary_limits {
	size_t max_files;		/* listed (200) */
	size_t max_scanned_files;	/* per snapshot (2,000) */
	size_t max_file_bytes_for_diff; /* per input (256 KiB) */
	size_t max_total_diff_bytes;	/* all diffs (1 MiB) */
};

#define SUMMARY_LIMITS_DEFAULT                                   \
	{                                                        \
		200, SNAPSHOT_MAX_FILES, 256 * 1024, 1024 * 1024 \
	}

/* A text diff of two versions, and why there is none. */
struct summary_diff {
	char *text;		 /* "" when unavailable */
	size_t len;		 /* may hold NUL characters */
	bool truncated;		 /* over the total budget */
	const char *unavailable; /* why there is no diff, or NULL */
	bool content_missing;	 /* a version's text could not be read
					 * back (the reference: no reason) */
	int additions, deletions;
};

/* One change, as the reference sees it: a rename is a deletion of the old
 * path and a creation of the new one (a modification where the new path
 * held a file, which the rename replaced), each with its own diff. What
 * the journal adds is ours: which two entries one rename connects (with
 * the diff from the old content to the new; the old path is no deletion
 * where a file is there again at the end) and who made the change. */
struct change {
	const char *path, *root;  /* point into the snapshots */
	const char *status;	  /* "created", "modified", ... */
	const char *renamed_from; /* made by a rename: the old path */
	const char *renamed_to;	  /* deleted by a rename: the new path */
	pid_t by_pid;		  /* who, from the journal (0: unknown) */
	const char *by_comm;
	const struct snap_file *before, *after; /* NULL where absent */
	const struct snap_file *origin;		/* renamed_from's version before */
	struct summary_diff diff;		/* before -> after (the reference's) */
	struct summary_diff moved;		/* origin -> after (renamed_from) */
};

struct summary {
	struct change *changes; /* every change, listed ones first */
	size_t n, listed;
	size_t created, modified, deleted, symlink_created;
	size_t renamed;			/* changes linked to their old names */
	size_t renamed_replaced;	/* of them, whose old name is not deleted
				  * (a file is there again) */
	size_t renamed_modified;	/* of them, "modified": over a file or
				  * symlink the new name held */
	size_t renamed_symlink_created; /* of them, "symlink_created" */
	long additions, deletions;
	bool truncated; /* the reference's rule: a snapshot
					 * or a diff cut short, a large file,
					 * or more than max_files changes */
	bool complete;	/* every change is counted: neither
					 * snapshot was cut short */
	struct summary_limits limits;
};

/* Fetches the content of F (from BEFORE or AFTER) into *DATA (malloc'd,
 * *LEN bytes). Returns 0, or -errno if it is not available. */
typedef int (*summary_content)(void *arg, const struct snap_file *f, char **data, size_t *len);

/* Compares BEFORE with AFTER into OUT. Where LINEAGE (the run's changes
 * of names, or NULL) says that the file or symlink at a path created,
 * modified or made a symlink had another name when the run began, one
 * BEFORE has, the change is linked to that name (renamed_from), with a
 * diff of its own (moved, within a budget of its own, so that the
 * reference's diffs stay exactly the reference's); and that name's
 * deletion, if it is deleted, is linked back (renamed_to). Returns 0 or
 * -ENOMEM. */
int summary_compare(const struct snapshot *before, const struct snapshot *after,
		    const struct summary_limits *limits, const struct lineage *lineage,
		    summary_content content, void *arg, struct summary *out);
void summary_free(struct summary *s);

/* True if the summary establishes any change (a summary is recorded only
 * then). */
bool summary_has_changes(const struct summary *s);

#endif
