/* runlog.h - what the views' journal says about a run.
 *
 * The scans at a run's ends see everything, up to their file limit. The
 * journal adds what a scan cannot see, and where a scan stopped short,
 * what it missed of the views' own changes:
 *
 *   - renames: where each file was when the run began, followed
 *     through renames of it and of the directories above it, exchanges,
 *     and names freed and used again (store/lineage.h); and which
 *     process made each change;
 *   - from the "capture" event on (the view was told a run is open), what
 *     each path was before the run: the pre-image recorded before the
 *     view first changed, removed or replaced it, or "absent" where the
 *     view created it. Paths are followed back through renames (also of
 *     directories above them) to the name they had when the run began,
 *     and the first word on a path wins;
 *   - where the views left each path they touched, so the end scan's
 *     picture can be completed by looking at those paths alone.
 */
#ifndef SBX_RUNLOG_H
#define SBX_RUNLOG_H

#include "store/snapshot.h"
#include "store/store.h"
#include "store/summary.h"

#include <limits.h>
#include <stdbool.h>

struct runlog {
	struct store_event *events; /* copies, oldest first */
	size_t n, cap;
	size_t made; /* files and symlinks the views created */
};

/* Reads the events of USER's THREAD from FROM_NS to TO_NS. */
int runlog_load(struct store *s, const char *user, const char *thread, int64_t from_ns,
		int64_t to_ns, struct runlog *j);
void runlog_free(struct runlog *j);

/* Completes BEFORE with what the journal knows each path was when the run
 * began, and, if AFTER was truncated, AFTER with the current state of
 * every path the views touched (read from the roots WS and OUT, directory
 * fds or -1; KEEP gets the text of each file read, as in a scan). */
int runlog_complete(const struct runlog *j, struct snapshot *before, struct snapshot *after, int ws,
		    int out, snapshot_keep keep, void *arg);

/* Where each file was when the run began, from J's changes of names, for
 * summary_compare(): *OUT (lineage_free() it), a file made and renamed
 * over a name continuing only what BEFORE (completed: runlog_complete())
 * has there. 0 or -ENOMEM. */
int runlog_lineage(const struct runlog *j, const struct snapshot *before, struct lineage **out);

/* Names the process behind each change the views made (the latest one):
 * of a path no event names, that of a change made in place through
 * another name of its file (hard links), read from the roots WS and OUT;
 * changes made on the host keep by_pid 0. */
void runlog_attribute(const struct runlog *j, int ws, int out, struct summary *s);

/* The files with several names the views changed in place (content,
 * mode, xattrs): such a change is journaled under one of the names, and
 * the scans see it under each. Known by the names the journal gives,
 * followed through later renames of them and of the directories above
 * them to where they are at the run's end, read from the roots at the
 * first question. */
struct runlog_links {
	struct runlog_link *v;
	size_t n;
	bool read;
};

/* The latest event of J (its index) that changed the file at virtual
 * PATH below the roots WS and OUT, under any of its names, if PATH has
 * others; SIZE_MAX if none did. */
size_t runlog_linked_event(const struct runlog *j, struct runlog_links *l, int ws, int out,
			   const char *path);
void runlog_links_free(struct runlog_links *l);

/* The directory that holds virtual PATH ("/mnt/user-data/workspace/...")
 * below the roots WS and OUT (directory fds, or -1), resolved without
 * following a symlink or leaving the root: an O_PATH fd (the caller's),
 * PATH's last component in *LEAF ("." for a root itself); -ENOENT if
 * there is none. */
int runlog_parent(int ws, int out, const char *path, const char **leaf);
/* The directory DIR (a relative path) below directory DIRFD, resolved as
 * there: an O_PATH fd (the caller's), or -ENOENT. */
int runlog_dir_beneath(int dirfd, const char *dir);

/* runlog_parent() for paths taken in an order that keeps a directory's
 * together (sorted, say), while nothing changes them: the directory of
 * the last one stays open (or known missing) for those that follow. The
 * fd returned is the cache's; -errno as there. */
struct parent_cache {
	char dir[PATH_MAX]; /* the virtual path of FD's directory, LEN bytes */
	size_t len;	    /* 0: FD serves no other path */
	int fd;		    /* -1: none */
};
#define PARENT_CACHE_INIT \
	{                 \
		.fd = -1  \
	}
int runlog_parent_cached(struct parent_cache *c, int ws, int out, const char *path,
			 const char **leaf);
void parent_cache_drop(struct parent_cache *c);

/* Reads virtual PATH from the roots WS and OUT into F (as a scan would,
 * KEEP with ARG getting its text): 0, -ENOENT if no file or symlink is
 * there, other -errno if it cannot be told. No symlink is followed. */
int runlog_describe(int ws, int out, const char *path, snapshot_keep keep, void *arg,
		    struct snap_file *f);

/* Every path J's events name (the scans' exclusions included), sorted,
 * each once: *NAMES (N of them, each malloc'd, the array too). */
int runlog_names(const struct runlog *j, char ***names, size_t *n);

/* True if virtual path P is ROOT or below it. */
bool runlog_below(const char *p, const char *root);

/* If P is Q or below it: true, with P's Q replaced by R in OUT. */
bool runlog_rebase(const char *p, const char *q, const char *r, char out[PATH_MAX]);

#endif
