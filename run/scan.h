/* scan.h - the scans at a run's ends, shared by the run's life cycle
 * (lifecycle.c) and the runs the sbx command makes itself (own.c); not
 * for callers outside run/.
 *
 * A scan's file contents go to the store a batch at a time (never
 * holding the store's write lock long), or, for the end scan, stay in
 * memory up to TEXTS_MAX bytes: they serve that run's diffs only, and
 * the store records the summary. Progress is shown on a terminal
 * (common/progress.h).
 */
#ifndef SBX_RUN_SCAN_H
#define SBX_RUN_SCAN_H

#include "lookup.h"
#include "common/error.h"
#include "common/hash.h"
#include "common/progress.h"
#include "store/snapshot.h"
#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define TEXTS_MAX (64u << 20)

struct text {
	uint8_t sha256[SHA256_BYTES];
	char *data; /* NUL-terminated */
	size_t len;
};

struct scan {
	struct store *store;
	struct scan_progress progress;
	struct store_blob *pending; /* contents to put in the store: copies */
	size_t npending, pcap, pbytes;
	bool in_memory;
	struct text *texts;
	size_t ntexts, cap, bytes;
	bool sorted;
};

/* The texts a snapshot of the sbx command's own run read, kept for the
 * run's end in the same process (struct scan, in memory). */
struct run_texts {
	struct scan scan;
	struct ident { /* each file the snapshot described, by identity */
		dev_t dev;
		ino_t ino;
		int64_t size, mtime_ns;
		size_t at; /* its index in the snapshot */
	} * ids;
	size_t nids, idcap;
	char **names; /* every path the snapshot looked at */
	size_t nnames;
};
void run_texts_free(struct run_texts *t);

/* A snapshot_keep: keeps a file's text in SC (ARG), in memory or for the
 * store. */
int keep_blob(void *arg, const struct snap_file *f, const uint8_t *data, size_t len);
/* A summary_content: a file's content for a diff, from SC's texts (ARG),
 * else the store. */
int load_blob(void *arg, const struct snap_file *f, char **data, size_t *len);
/* The scan's end, R its result so far: what SC kept waiting is put in
 * the store if R is 0. Returns R, or the store's error. */
int scan_end(struct scan *sc, int r);
void scan_free(struct scan *sc);

/* Fetches at once the texts the diffs will want from the store: those of
 * BEFORE whose content AFTER no longer has (changed, deleted). Others
 * are fetched one at a time if a diff asks (load_blob()). */
int prefetch_texts(struct scan *sc, const struct snapshot *before, const struct snapshot *after);

/* Snapshots the thread in ROOTS with at most MAX files into the store
 * (its id in *ID; with ID NULL it is only in SNAP), contents kept by SC; files unchanged since KNOWN
 * (snapshot KNOWN_ID, or NULL) not read, and the snapshot kept as its
 * differences from it. 0, or -errno (E). */
int scan_take(struct scan *sc, const struct thread_roots *roots, const char *user,
	      const char *thread, size_t max, int64_t known_id, const struct snapshot *known,
	      struct snapshot *snap, int64_t *id, struct error *e);

/* How a check made before found virtual PATH (the undo's, undo_plan_seen()):
 * 1 there (its attributes in ST), 0 absent, -ENOENT if it did not look. */
typedef int (*scan_seen)(const void *arg, const char *path, struct stat *st);

/* A snapshot of the paths NAMES (N, sorted, each once) as they are now,
 * texts kept by SC: a scan of just those (what an undo or a restore
 * changes). A file KNOWN (with KNOWN_SNAP) described, unchanged (renamed
 * or not), is not read again; COLLECT (may be NULL) records the identity
 * of each file described; SEEN (may be NULL) with SEEN_ARG says how a
 * check found each path. */
int scan_paths(struct scan *sc, const struct thread_roots *roots, char *const *names, size_t n,
	       struct snapshot *snap, const struct run_texts *known,
	       const struct snapshot *known_snap, struct run_texts *collect, scan_seen seen,
	       const void *seen_arg);

/* A list of paths being gathered: NAMES (N of CAP), each malloc'd. */
struct gathered {
	char **names;
	size_t n, cap;
	const char *from, *to; /* a directory's names at TO are added at FROM too */
};
int gather(struct gathered *g, const char *path);
/* Sorts the N paths of V and drops the repeated ones (freed); returns
 * how many are left. */
size_t names_settle(char **v, size_t n);
void run_names_free(char **names, size_t n);

#endif
