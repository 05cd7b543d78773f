/* store.h - the store: a home's records (read marks, audit rows,
 * snapshots and file contents, runs and presentations, the journal;
 * leases in lease.h), in the SQLite file $SBX_HOME/sbx.db or in a
 * PostgreSQL database the hosts of a deployment share (store_where()).
 *
 * Shared by every view daemon of the home, the broker and the sbx command,
 * at the same time: short write transactions, each a writer's turn taken
 * up front, so a writer waits for it instead of failing halfway (SQLite:
 * WAL mode, a busy timeout, BEGIN IMMEDIATE; PostgreSQL: an advisory
 * lock). The schema is versioned (STORE_SCHEMA_VERSION) and migrated
 * forward on open; a database newer than this program is refused.
 *
 * A struct store is one connection: use it from one thread at a time. The
 * view daemon gives its connection to a writer thread (writer.h) so that
 * the store is never used on the FUSE request path.
 *
 * Functions return 0 (or a count) on success and -errno on failure, with a
 * one-line reason in the log.
 */
#ifndef SBX_STORE_H
#define SBX_STORE_H

#include "common/config.h"
#include "common/hash.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The environment variable that names the store of every program of a
 * home (--store sets it, so that the programs they start agree). */
#define STORE_ENV "SBX_STORE"
#define STORE_SCHEMA_VERSION 18

struct store;

/* Where HOME's records are kept (docs/configuration.md, "The store"):
 * $SBX_STORE if it is set and not empty, else `store` in HOME/sbx.conf
 * (config_load_top()), else the SQLite file HOME/sbx.db; "sqlite" in
 * either also means that file. Writes into TARGET (SIZE bytes) the
 * file's path or the PostgreSQL URI or keyword string. Returns -EINVAL
 * (with ERR saying where) for a value that is neither
 * (store_target_ok(), config.h, says which values are a store's). */
int store_where(const char *home, char *target, size_t size, char *err, size_t errlen);
/* store_open() of a store that exists: -ENOENT (ERR untouched) where
 * HOME's is an SQLite file not made yet, rather than making it. */
int store_open_existing(const char *home, struct store **out, char *err, size_t errlen);
/* Connects to TARGET without changing it: its schema version in
 * *VERSION (0: none yet), which engine in *POSTGRES. -errno and ERR if
 * it cannot be reached. */
int store_probe(const char *target, int *version, bool *postgres, char *err, size_t errlen);
/* TARGET as it may be shown (logs, sbx store check): a password in it
 * (user:PASSWORD@ in a URI, password=... in a keyword string) as "***". */
void store_target_shown(const char *target, char *out, size_t size);
/* TARGET without its password, for a command to be given (pg_dump):
 * libpq then finds it in ~/.pgpass or $PGPASSWORD. */
void store_target_public(const char *target, char *out, size_t size);

/* Checks the store at TARGET without changing it (sbx store check): on
 * SQLite every page, b-tree, index, constraint and reference
 * (integrity_check, foreign_key_check); on PostgreSQL every btree index
 * and table page where the database has amcheck. PROBLEM(ARG, LINE) is
 * called for each problem found; CHECKED says what was checked (on
 * PostgreSQL without amcheck: what was not). Returns the number of
 * problems, or -errno with ERR if the store could not be checked. */
int store_check(const char *target, void (*problem)(void *arg, const char *line), void *arg,
		char *checked, size_t checkedlen, char *err, size_t errlen);

/* A consistent copy of the SQLite store at TARGET in the new file FILE
 * (sbx store backup), made while its programs write: SQLite's online
 * backup, one read transaction for every page. Made beside FILE under a
 * name of its own and put in place whole (FILE is never a half copy); an
 * existing FILE is replaced only with FORCE (else -EEXIST). -ENOTSUP for
 * a PostgreSQL store (pg_dump copies it), -ENOENT where no store is
 * made yet; -errno with ERR. */
int store_backup(const char *target, const char *file, bool force, char *err, size_t errlen);

/* Opens the store of HOME (store_where()), creating its schema if
 * missing and migrating it to the current one. On failure returns
 * -errno and writes a reason to ERR. */
int store_open(const char *home, struct store **out, char *err, size_t errlen);
/* The same for a database file PATH (tests). */
int store_open_path(const char *path, struct store **out, char *err, size_t errlen);
/* The same for TARGET: a PostgreSQL server, or the path of an SQLite
 * file. */
int store_open_target(const char *target, struct store **out, char *err, size_t errlen);
/* The same, migrating only up to schema VERSION (tests of migrations). */
int store_open_version(const char *path, int version, struct store **out, char *err, size_t errlen);
void store_close(struct store *s);
/* Lets S's connection go while it has nothing to do (db.h, db_rest()):
 * on PostgreSQL the next call connects again. */
void store_rest(struct store *s);

/* The schema version of the open database. */
int store_schema_version(struct store *s);

/* Wraps several changes in one transaction. */
int store_begin(struct store *s);
int store_commit(struct store *s);
void store_rollback(struct store *s);

/* A read mark: the version of PATH (a virtual path, "/mnt/user-data/...")
 * that the thread has read. */
struct store_mark {
	const char *path;
	uint64_t ino;
	int64_t size, mtime_ns, ctime_ns;
	int64_t at_ns; /* when it was read (CLOCK_REALTIME) */
	bool hashed;
	uint8_t hash[SHA256_BYTES]; /* SHA-256 of that version's content */
};

int store_mark_put(struct store *s, const char *user, const char *thread,
		   const struct store_mark *m);
/* Adds M->hash to PATH's mark if the mark is still M, recorded without a
 * hash (same inode, size, times and time of reading): a hash computed
 * after the path moved on to another file, or to a later read, is
 * dropped instead of replacing the newer mark. With TEXT, the mark keeps
 * the content of that hash (put before, store_blobs_put_for()) as its
 * text: the only way a mark keeps one. A put keeps the text while the
 * hash stays the same, and lets it go otherwise. */
int store_mark_hash(struct store *s, const char *user, const char *thread,
		    const struct store_mark *m, bool text);
/* Drops PATH's mark; with INO not 0, only a mark of that inode. */
int store_mark_drop(struct store *s, const char *user, const char *thread, const char *path,
		    uint64_t ino);
/* Calls FN for every mark of the thread; stops at FN's first non-zero
 * return, which becomes the result. */
int store_marks_each(struct store *s, const char *user, const char *thread,
		     int (*fn)(void *arg, const struct store_mark *m), void *arg);

/* A version of a file as an audit row tells it: KNOWN if the row has it;
 * the content's SHA-256 if HASHED (the blobs table may hold that
 * content). */
struct store_version {
	bool known, hashed;
	int64_t size, mtime_ns;
	uint8_t sha256[SHA256_BYTES];
};

/* One audit row: a modification the gate refused, or would have refused
 * (ALLOWED, in audit mode). The same refusal again (the same path,
 * operation, reason, mode and versions, whichever process) is not another
 * row: its row counts it (TIMES) and keeps the latest's time (LAST_NS);
 * AT_NS, PID and COMM stay the first's. */
struct store_audit {
	int64_t id; /* set by the store */
	int64_t at_ns;
	int64_t times, last_ns; /* set by the store */
	const char *user, *thread, *path, *op, *comm, *reason, *mode;
	pid_t pid;
	bool allowed;
	/* A file changed since it was read: the version the thread read and
	 * the one it would have replaced. */
	struct store_version base, current;
};

int store_audit_add(struct store *s, const struct store_audit *a);
/* Calls FN for each audit row of the thread, oldest first (by its first
 * refusal). */
int store_audit_each(struct store *s, const char *user, const char *thread,
		     int (*fn)(void *arg, const struct store_audit *a), void *arg);

struct snap_file;

/* One change the view made under workspace or outputs: op is "create"
 * (also of a device), "link" (PATH made another name of an existing file:
 * a hard link), "mkdir", "symlink", "modify",
 * "chmod" (any attribute set), "xattr" (an extended attribute set or
 * removed), "delete", "rmdir", "rename" (PATH to PATH2) or "exchange"
 * (PATH and PATH2 swapped). While a run is open, the view also records
 * "capture" (it records pre-images from then on), "preimage": PRE
 * describes PATH just before the view first changed it, and "keep": what
 * undo needs to put PATH back as it was just before the next event,
 * OBJECT (the file or symlink itself, or a copy, by its name in the
 * run's directory of pre-images) or META (attributes, fileops.h: of a
 * directory about to be removed, or of a file about to get others). */
struct store_event {
	int64_t at_ns;
	const char *op, *path, *path2;
	pid_t pid;
	const char *comm;
	const struct snap_file *pre; /* "preimage" only */
	const char *object;	     /* "keep" only, or NULL */
	const uint8_t *meta;	     /* "keep" only, or NULL */
	size_t meta_len;
};

int store_journal_add(struct store *s, const char *user, const char *thread,
		      const struct store_event *e);
/* The N events V[0..N-1], in their order (ids growing with it), in
 * statements of up to 64 rows: a round trip each on PostgreSQL. */
int store_journal_add_many(struct store *s, const char *user, const char *thread,
			   const struct store_event *const *v, size_t n);
/* Calls FN for the thread's events from FROM_NS to TO_NS, oldest first. */
int store_journal_each(struct store *s, const char *user, const char *thread, int64_t from_ns,
		       int64_t to_ns, int (*fn)(void *arg, const struct store_event *e), void *arg);

/* Compaction never touches a thread's last STORE_JOURNAL_KEEP_ROWS rows
 * nor those of its last STORE_JOURNAL_KEEP_NS (a watcher that close to
 * the end misses nothing); one call reads STORE_JOURNAL_COMPACT_MAX rows
 * at most. */
#define STORE_JOURNAL_KEEP_ROWS 10000
#define STORE_JOURNAL_KEEP_NS (1LL * 1000000000)
#define STORE_JOURNAL_COMPACT_MAX 65536
/* Drops USER's THREAD's journal rows that no run, undo or restore needs
 * (compact.h: churn and repeats made while no run was open) among those
 * after *UPTO and before what compaction never touches at NOW_NS (at
 * most STORE_JOURNAL_COMPACT_MAX, the latest), in a writer's turn;
 * *UPTO moves past them. Returns how many it dropped, or -errno. */
int store_journal_compact(struct store *s, const char *user, const char *thread, int64_t now_ns,
			  int64_t *upto);

/* store_journal_listen() returns a descriptor that polls readable when
 * the journal may have grown (PostgreSQL: a notification at each commit
 * of journal rows), or -ENOTSUP (SQLite: watch its files instead,
 * follow.c); store_journal_heard() says what came: 1 if the journal
 * grew, 0 if not, or -errno. */
#define STORE_JOURNAL_CHANNEL "sbx_journal"
int store_journal_listen(struct store *s);
int store_journal_heard(struct store *s);

/* The id of the journal's last row, of any thread, in *ID (0 if it has
 * none). Rows are numbered in the order they are written, across the
 * home's threads, and never renumbered: an id is a cursor (follow.h). */
int store_journal_last_id(struct store *s, int64_t *id);
/* Calls FN for USER's THREAD's rows among the journal's rows with an id
 * above AFTER_ID, up to its last row, oldest first, at most LIMIT (> 0)
 * of them; with each, its id and the id of the thread's run open at its
 * time (0: none). *SCANNED receives the id up to which the journal was
 * read: the last row's (of any thread) if fewer than LIMIT matched, else
 * the LIMIT-th match's. A follower's next call starts there, so it never
 * reads another thread's rows twice. FN returns 0 to go on, or a
 * negative value to stop, which is returned. Returns the number of rows
 * given to FN, or -errno. */
int store_journal_after(struct store *s, const char *user, const char *thread, int64_t after_id,
			int limit, int64_t *scanned,
			int (*fn)(void *arg, const struct store_event *e, int64_t id, int64_t run),
			void *arg);

struct snapshot;

/* Records SNAP (taken with MAX_FILES at AT_NS) for USER's THREAD in one
 * transaction; *ID receives its id. */
int store_snapshot_save(struct store *s, const char *user, const char *thread,
			const struct snapshot *snap, size_t max_files, int64_t at_ns, int64_t *id);
/* The same, kept as its differences from BASE, snapshot BASE_ID as
 * loaded: the files that differ, each at its place, and those gone
 * (whole if BASE is NULL or itself kept so: a load reads two at most).
 * A run's end scan is mostly its first. */
int store_snapshot_save_since(struct store *s, const char *user, const char *thread,
			      const struct snapshot *snap, size_t max_files, int64_t at_ns,
			      int64_t base_id, const struct snapshot *base, int64_t *id);
/* Reads snapshot ID back into OUT (snapshot_free() it), whole however
 * it is kept; -ENOENT if there is none, -EIO if it does not fit its
 * base. */
int store_snapshot_load(struct store *s, int64_t id, struct snapshot *out);

/* File contents by SHA-256, kept once (for the diffs of runs).
 * store_blob_get() returns a malloc'd, NUL-terminated copy, or -ENOENT. */
int store_blob_put(struct store *s, const uint8_t sha256[SHA256_BYTES], const void *data,
		   size_t len);
/* The same for N contents (the same one twice is kept once), up to 64 to a
 * statement: a round trip per statement on PostgreSQL, not per content. */
struct store_blob {
	uint8_t sha256[SHA256_BYTES];
	const void *data;
	size_t len;
};
int store_blobs_put(struct store *s, const struct store_blob *v, size_t n);
int store_blob_get(struct store *s, const uint8_t sha256[SHA256_BYTES], char **data, size_t *len);
/* Calls FN with the content of each of the N SHA256S the store has (in
 * no order; those it has not are skipped), asking for a batch at a time:
 * one round trip per batch, not per blob. Stops at FN's first non-zero
 * return, which becomes the result. */
int store_blobs_each(struct store *s, const uint8_t (*sha256s)[SHA256_BYTES], size_t n,
		     int (*fn)(void *arg, const uint8_t *sha256, const void *data, size_t len),
		     void *arg);

/* A content put is not collected for this long, referred to or not: a
 * scan puts its texts before the snapshot that refers to them. */
#define STORE_BLOB_HOLD_NS (600LL * 1000000000)
/* store_blobs_put(), holding them for HOLD_NS instead (0: not at all,
 * for a content whose referrer is written in the same transaction): the
 * view's writer may put a pre-image's text a batch before its row.
 * A read mark that moves on from a content, or is dropped, collects it
 * at once if nothing else refers to it and no put holds it. */
int store_blobs_put_for(struct store *s, const struct store_blob *v, size_t n, int64_t hold_ns);
/* A sweep's place among the contents: zeroed, it starts at the first. */
struct store_sweep {
	uint8_t after[SHA256_BYTES];
	size_t len; /* 0: from the first */
};
/* Deletes, among the N contents after SW's place (then moved past them,
 * back to the first at the end), those nothing refers to (a read mark, a
 * snapshot's file, a pre-image, an audit row) and not held at NOW_NS
 * (store_blobs_put_for()): a step of a sweep that goes round.
 * In a transaction of its own unless one is open. Returns how many it
 * deleted, or -errno. */
int store_blobs_collect(struct store *s, int64_t now_ns, struct store_sweep *sw, size_t n);

/* What made a run: an agent's (sbx run begin), or the sbx command's own
 * changes (sbx run undo, sbx restore, sbx try apply: a run of a project,
 * run/project_run.h), whose journal names every path they changed. */
enum run_kind { RUN_AGENT, RUN_UNDO, RUN_RESTORE, RUN_APPLY };

/* A run: the snapshot taken when it began, and when it ended, the snapshot
 * then, its summary (JSON, NULL when no change could be established) and
 * its delivery receipt (JSON). */
struct store_run {
	int64_t id;
	char *user, *thread;
	int64_t begun_ns, ended_ns;
	bool ended;
	int64_t before_snapshot, after_snapshot;
	char *summary, *receipt;
	enum run_kind kind;
	int64_t undoes;	    /* RUN_UNDO: the run it undid */
	bool kept;	    /* its kept files were dropped: it cannot be undone */
	int64_t held_bytes; /* what they take, as last measured (-1: unknown) */
	bool clean;	    /* RUN_UNDO: it took back every change of UNDOES */
};

/* The start of the latest run of USER's THREAD that has not ended, in
 * *BEGUN_NS: returns 1, or 0 if every run has ended. */
int store_run_open_since(struct store *s, const char *user, const char *thread, int64_t *begun_ns);

int store_run_begin(struct store *s, const char *user, const char *thread, int64_t before_snapshot,
		    int64_t at_ns, int64_t *id);
/* The same for a run of KIND; one that undoes run UNDOES (RUN_UNDO). */
int store_run_begin_as(struct store *s, const char *user, const char *thread,
		       int64_t before_snapshot, int64_t at_ns, enum run_kind kind, int64_t undoes,
		       int64_t *id);
/* The latest run that undoes RUN, in *UNDO: returns 1, or 0 if none. */
int store_run_undone_by(struct store *s, int64_t run, int64_t *undo);
/* Marks RUN as one whose kept files were dropped. */
int store_run_keep(struct store *s, int64_t run);
/* Records whether undo RUN took back every change of the run it undoes:
 * no conflict left alone or forced, no step failed. */
int store_run_clean(struct store *s, int64_t run, bool clean);
/* Records what RUN's kept files take (BYTES), or that it is not known
 * (-1: they changed). */
int store_run_held(struct store *s, int64_t run, int64_t bytes);
/* Calls FN for each run of USER's THREAD, oldest first; stops at FN's
 * first non-zero return, which becomes the result. The runs are read in
 * one query; their summaries and receipts only if TEXTS (else NULL). */
int store_runs_each(struct store *s, const char *user, const char *thread, bool texts,
		    int (*fn)(void *arg, const struct store_run *r), void *arg);
/* -ENOENT if there is no run ID. */
int store_run_get(struct store *s, int64_t id, struct store_run *out);
void store_run_free(struct store_run *r);
/* -EALREADY if the run has ended already. */
int store_run_end(struct store *s, int64_t id, int64_t after_snapshot, int64_t at_ns,
		  const char *summary, const char *receipt);

/* Records that TOOL presented PATHS (N, as receipt_path() makes them)
 * during the open run RUN, once per tool and path (a path presented
 * again keeps its first time), all or none. -ENOENT if there is no run
 * RUN, -EALREADY if it has ended: run end reads the presentations and
 * ends the run in one transaction, so a presentation either counts in
 * the receipt or is refused. */
int store_present(struct store *s, int64_t run, const char *tool, const char *const *paths,
		  size_t n, int64_t at_ns);
/* Calls FN for each presentation of run RUN, in the order they were
 * made; stops at FN's first non-zero return, which becomes the result. */
int store_presented_each(struct store *s, int64_t run,
			 int (*fn)(void *arg, const char *tool, const char *path), void *arg);

#endif
