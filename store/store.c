/* store.c - see store.h. */
#include "store.h"
#include "store_int.h"
#include "compact.h"
#include "common/array.h"
#include "snapshot.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/hash.h"
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An audit row stands for every refusal with its key (audit_key(): the
 * path, operation, reason, mode and versions, not the process): how many
 * (times) and the last one's time; the first one's is at_ns. Rows made
 * before have no key and stay one each. INT is the engine's 64-bit
 * integer, BYTES its byte string. */
#define AUDIT_SAME_SQL(INT, BYTES)                                       \
	"ALTER TABLE audit ADD COLUMN times " INT " NOT NULL DEFAULT 1;" \
	"ALTER TABLE audit ADD COLUMN last_ns " INT ";"                  \
	"ALTER TABLE audit ADD COLUMN same_key " BYTES ";"               \
	"CREATE UNIQUE INDEX audit_same ON audit (\"user\", thread, same_key);"

/* What refers to a content (blobs, by SHA-256): a read mark (the text
 * read, for a refusal's diff), a snapshot's file, a pre-image, an audit
 * row's two versions. Each indexed where it is not NULL, so that a
 * content's referrers are a few lookups (store_blobs_collect());
 * blob_puts holds until when a content put is left alone, referred to or
 * not (a scan's texts go before its snapshot: store_blobs_put_for()). */
#define BLOB_REFS_SQL                                                                      \
	"CREATE INDEX marks_by_hash ON marks (hash) WHERE hash IS NOT NULL;"               \
	"CREATE INDEX snapshot_files_by_sha256 ON snapshot_files (sha256)"                 \
	" WHERE sha256 IS NOT NULL;"                                                       \
	"CREATE INDEX journal_by_sha256 ON journal (sha256) WHERE sha256 IS NOT NULL;"     \
	"CREATE INDEX audit_by_base ON audit (base_sha256) WHERE base_sha256 IS NOT NULL;" \
	"CREATE INDEX audit_by_cur ON audit (cur_sha256) WHERE cur_sha256 IS NOT NULL;"

/* Migrations: entry N takes the schema from version N to N + 1. Never edit
 * one that has shipped; append a new one. */
static const char *const lite_migrations[STORE_SCHEMA_VERSION] = {
	/* 0 -> 1: read marks and the gate's audit log. */
	"CREATE TABLE marks ("
	"  user TEXT NOT NULL, thread TEXT NOT NULL, path TEXT NOT NULL,"
	"  ino INTEGER NOT NULL, size INTEGER NOT NULL,"
	"  mtime_ns INTEGER NOT NULL, ctime_ns INTEGER NOT NULL,"
	"  at_ns INTEGER NOT NULL, hash BLOB,"
	"  PRIMARY KEY (user, thread, path)) WITHOUT ROWID;"
	"CREATE TABLE audit ("
	"  id INTEGER PRIMARY KEY, at_ns INTEGER NOT NULL,"
	"  user TEXT NOT NULL, thread TEXT NOT NULL, path TEXT NOT NULL,"
	"  op TEXT NOT NULL, pid INTEGER NOT NULL, comm TEXT NOT NULL,"
	"  reason TEXT NOT NULL, mode TEXT NOT NULL, allowed INTEGER NOT NULL);"
	"CREATE INDEX audit_by_thread ON audit (user, thread, id);",
	/* 1 -> 2: snapshots of a thread's workspace and outputs. */
	"CREATE TABLE snapshots ("
	"  id INTEGER PRIMARY KEY, user TEXT NOT NULL, thread TEXT NOT NULL,"
	"  at_ns INTEGER NOT NULL, files INTEGER NOT NULL,"
	"  truncated INTEGER NOT NULL, max_files INTEGER NOT NULL);"
	"CREATE INDEX snapshots_by_thread ON snapshots (user, thread, id);"
	"CREATE TABLE snapshot_files ("
	"  snapshot INTEGER NOT NULL REFERENCES snapshots (id) ON DELETE CASCADE,"
	"  seq INTEGER NOT NULL,"
	"  path TEXT NOT NULL, root TEXT NOT NULL, symlink INTEGER NOT NULL,"
	"  target TEXT, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,"
	"  sha256 BLOB, sensitive INTEGER NOT NULL, binary INTEGER NOT NULL,"
	"  large INTEGER NOT NULL,"
	"  PRIMARY KEY (snapshot, path)) WITHOUT ROWID;",
	/* 2 -> 3: runs, and file contents by SHA-256 for their diffs. */
	"CREATE TABLE blobs (sha256 BLOB PRIMARY KEY, data BLOB NOT NULL) WITHOUT ROWID;"
	"CREATE TABLE runs ("
	"  id INTEGER PRIMARY KEY, user TEXT NOT NULL, thread TEXT NOT NULL,"
	"  begun_ns INTEGER NOT NULL, ended_ns INTEGER,"
	"  before_snapshot INTEGER NOT NULL REFERENCES snapshots (id),"
	"  after_snapshot INTEGER REFERENCES snapshots (id),"
	"  summary TEXT, receipt TEXT);"
	"CREATE INDEX runs_by_thread ON runs (user, thread, id);",
	/* 3 -> 4: the change journal of the views. */
	"CREATE TABLE journal ("
	"  id INTEGER PRIMARY KEY, user TEXT NOT NULL, thread TEXT NOT NULL,"
	"  at_ns INTEGER NOT NULL, op TEXT NOT NULL, path TEXT NOT NULL,"
	"  path2 TEXT, pid INTEGER NOT NULL, comm TEXT NOT NULL);"
	"CREATE INDEX journal_by_thread ON journal (user, thread, at_ns);",
	/* 4 -> 5: pre-images (op "preimage"): what a file was before the
	 * view first changed it during a run, as a snapshot records it. */
	"ALTER TABLE journal ADD COLUMN symlink INTEGER;"
	"ALTER TABLE journal ADD COLUMN target TEXT;"
	"ALTER TABLE journal ADD COLUMN size INTEGER;"
	"ALTER TABLE journal ADD COLUMN mtime_ns INTEGER;"
	"ALTER TABLE journal ADD COLUMN sha256 BLOB;"
	"ALTER TABLE journal ADD COLUMN sensitive INTEGER;"
	"ALTER TABLE journal ADD COLUMN binary INTEGER;"
	"ALTER TABLE journal ADD COLUMN large INTEGER;",
	/* 5 -> 6: what a refusal missed: the version read (base) and the
	 * one found (cur); contents in blobs by SHA-256 where kept. */
	"ALTER TABLE audit ADD COLUMN base_size INTEGER;"
	"ALTER TABLE audit ADD COLUMN base_mtime_ns INTEGER;"
	"ALTER TABLE audit ADD COLUMN base_sha256 BLOB;"
	"ALTER TABLE audit ADD COLUMN cur_size INTEGER;"
	"ALTER TABLE audit ADD COLUMN cur_mtime_ns INTEGER;"
	"ALTER TABLE audit ADD COLUMN cur_sha256 BLOB;",
	/* 6 -> 7: the paths presented during a run (sbx present), once per
	 * tool; receipts take the reference's shape. A receipt of before has
	 * nothing presented (nothing could be): {"run", "produced_outputs",
	 * "verdict"|"verification_skipped"} becomes what run end records now
	 * for a run with no presentation. */
	"CREATE TABLE presentations ("
	"  id INTEGER PRIMARY KEY,"
	"  run INTEGER NOT NULL REFERENCES runs (id),"
	"  at_ns INTEGER NOT NULL, tool TEXT NOT NULL, path TEXT NOT NULL,"
	"  UNIQUE (run, tool, path));"
	"UPDATE runs SET receipt = CASE"
	"  WHEN json_extract(receipt, '$.verification_skipped') IS NOT NULL THEN"
	"    json_object('presented', 0, 'paths', json_array(), 'by_tool', json_object(),"
	"                'verification_skipped', json_extract(receipt, '$.verification_skipped'))"
	"  WHEN json_array_length(receipt, '$.produced_outputs') > 0 THEN"
	"    json_object('presented', 0, 'paths', json_array(), 'by_tool', json_object(),"
	"                'verification', json_object('source', 'outputs_changed',"
	"                    'requirement', 'present_files_matches_produced_output'),"
	"                'produced_paths', json_extract(receipt, '$.produced_outputs'),"
	"                'presented_paths', json_array(), 'matched_paths', json_array(),"
	"                'stage', 'not_started', 'satisfied', json('false'))"
	"  ELSE json_object('presented', 0, 'paths', json_array(), 'by_tool', json_object())"
	"  END"
	" WHERE receipt IS NOT NULL AND json_valid(receipt)"
	"  AND json_type(receipt, '$.presented') IS NULL;",
	/* 7 -> 8: undo (op "keep": the object a view kept of PATH before it
	 * replaced or removed it, in the run's directory of pre-images, or
	 * the attributes it had); what made a run (0 an agent, 1 sbx run
	 * undo, 2 sbx restore); the run an undo undid; runs whose pre-images
	 * were dropped. */
	"ALTER TABLE journal ADD COLUMN object TEXT;"
	"ALTER TABLE journal ADD COLUMN meta BLOB;"
	"ALTER TABLE runs ADD COLUMN kind INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE runs ADD COLUMN undoes INTEGER REFERENCES runs (id);"
	"ALTER TABLE runs ADD COLUMN kept INTEGER NOT NULL DEFAULT 0;"
	"CREATE INDEX journal_by_thread_id ON journal (user, thread, id);"
	"CREATE INDEX runs_by_undone ON runs (undoes);",
	/* 8 -> 9: the bytes an ended run's pre-images take, once measured
	 * (NULL: not yet, or changed since), so retention need not measure
	 * every held run after each run. */
	"ALTER TABLE runs ADD COLUMN held_bytes INTEGER;",
	/* 9 -> 10: an undo that took back every change of the run it undid
	 * (no conflict left or forced, no step failed): the two together
	 * changed nothing, and a restore goes past both (sbx restore). */
	"ALTER TABLE runs ADD COLUMN clean INTEGER NOT NULL DEFAULT 0;",
	/* 10 -> 11: leases (lease.h): which host owns a thread, until when,
	 * with which fencing token; the deployment's capacity limits. */
	"CREATE TABLE leases ("
	"  \"user\" TEXT NOT NULL, thread TEXT NOT NULL, host TEXT NOT NULL,"
	"  token INTEGER NOT NULL, pid INTEGER NOT NULL, acquired_ns INTEGER NOT NULL,"
	"  renewed_ns INTEGER NOT NULL, expires_ns INTEGER NOT NULL,"
	"  PRIMARY KEY (\"user\", thread));"
	"CREATE INDEX leases_by_host ON leases (host, expires_ns);"
	"CREATE TABLE limits (name TEXT PRIMARY KEY, value INTEGER NOT NULL,"
	"  host TEXT NOT NULL, at_ns INTEGER NOT NULL);",
	/* 11 -> 12: how many views of the holding host share a lease: the
	 * last one's unmount gives it back, not the first one's. A snapshot
	 * file's inode and settled ctime (0: not settled): the next scan
	 * need not read it again while they stay (snapshot.h). */
	"ALTER TABLE leases ADD COLUMN holders INTEGER NOT NULL DEFAULT 1;"
	"ALTER TABLE snapshot_files ADD COLUMN ino INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE snapshot_files ADD COLUMN ctime_ns INTEGER NOT NULL DEFAULT 0;",
	/* 12 -> 13: a snapshot kept as its differences from another, whole
	 * one (BASE): its rows are the files that differ, each at its place
	 * (seq), and those gone; a run's end scan, against its first. */
	"ALTER TABLE snapshots ADD COLUMN base INTEGER;"
	"ALTER TABLE snapshot_files ADD COLUMN gone INTEGER NOT NULL DEFAULT 0;",
	/* 13 -> 14: the same refusal repeated is one audit row (AUDIT_SAME). */
	AUDIT_SAME_SQL("INTEGER", "BLOB"),
	/* 14 -> 15: contents nothing refers to are collected (BLOB_REFS). */
	"CREATE TABLE blob_puts (sha256 BLOB PRIMARY KEY, until_ns INTEGER NOT NULL)"
	" WITHOUT ROWID;" BLOB_REFS_SQL,
};

/* PostgreSQL's: its first step makes the schema of version 10 whole (the
 * engine came then; versions 1 to 9 have no step of their own); each
 * later version gets a step in both lists. */
static const char *const pg_migrations[STORE_SCHEMA_VERSION] = {
	"CREATE TABLE marks ("
	"  \"user\" TEXT NOT NULL, thread TEXT NOT NULL, path TEXT NOT NULL,"
	"  ino BIGINT NOT NULL, size BIGINT NOT NULL,"
	"  mtime_ns BIGINT NOT NULL, ctime_ns BIGINT NOT NULL,"
	"  at_ns BIGINT NOT NULL, hash BYTEA,"
	"  PRIMARY KEY (\"user\", thread, path));"
	"CREATE TABLE audit ("
	"  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, at_ns BIGINT NOT NULL,"
	"  \"user\" TEXT NOT NULL, thread TEXT NOT NULL, path TEXT NOT NULL,"
	"  op TEXT NOT NULL, pid INTEGER NOT NULL, comm TEXT NOT NULL,"
	"  reason TEXT NOT NULL, mode TEXT NOT NULL, allowed INTEGER NOT NULL,"
	"  base_size BIGINT, base_mtime_ns BIGINT, base_sha256 BYTEA,"
	"  cur_size BIGINT, cur_mtime_ns BIGINT, cur_sha256 BYTEA);"
	"CREATE INDEX audit_by_thread ON audit (\"user\", thread, id);"
	"CREATE TABLE snapshots ("
	"  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
	"  \"user\" TEXT NOT NULL, thread TEXT NOT NULL,"
	"  at_ns BIGINT NOT NULL, files BIGINT NOT NULL,"
	"  truncated INTEGER NOT NULL, max_files BIGINT NOT NULL);"
	"CREATE INDEX snapshots_by_thread ON snapshots (\"user\", thread, id);"
	"CREATE TABLE snapshot_files ("
	"  snapshot BIGINT NOT NULL REFERENCES snapshots (id) ON DELETE CASCADE,"
	"  seq BIGINT NOT NULL,"
	"  path TEXT NOT NULL, root TEXT NOT NULL, symlink INTEGER NOT NULL,"
	"  target TEXT, size BIGINT NOT NULL, mtime_ns BIGINT NOT NULL,"
	"  sha256 BYTEA, sensitive INTEGER NOT NULL, \"binary\" INTEGER NOT NULL,"
	"  large INTEGER NOT NULL,"
	"  PRIMARY KEY (snapshot, path));"
	"CREATE TABLE blobs (sha256 BYTEA PRIMARY KEY, data BYTEA NOT NULL);"
	"CREATE TABLE runs ("
	"  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
	"  \"user\" TEXT NOT NULL, thread TEXT NOT NULL,"
	"  begun_ns BIGINT NOT NULL, ended_ns BIGINT,"
	"  before_snapshot BIGINT NOT NULL REFERENCES snapshots (id),"
	"  after_snapshot BIGINT REFERENCES snapshots (id),"
	"  summary TEXT, receipt TEXT,"
	"  kind INTEGER NOT NULL DEFAULT 0, undoes BIGINT REFERENCES runs (id),"
	"  kept INTEGER NOT NULL DEFAULT 0, held_bytes BIGINT,"
	"  clean INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX runs_by_thread ON runs (\"user\", thread, id);"
	"CREATE INDEX runs_by_undone ON runs (undoes);"
	"CREATE TABLE journal ("
	"  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
	"  \"user\" TEXT NOT NULL, thread TEXT NOT NULL,"
	"  at_ns BIGINT NOT NULL, op TEXT NOT NULL, path TEXT NOT NULL,"
	"  path2 TEXT, pid INTEGER NOT NULL, comm TEXT NOT NULL,"
	"  symlink INTEGER, target TEXT, size BIGINT, mtime_ns BIGINT, sha256 BYTEA,"
	"  sensitive INTEGER, \"binary\" INTEGER, large INTEGER,"
	"  object TEXT, meta BYTEA);"
	"CREATE INDEX journal_by_thread ON journal (\"user\", thread, at_ns);"
	"CREATE INDEX journal_by_thread_id ON journal (\"user\", thread, id);"
	"CREATE TABLE presentations ("
	"  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
	"  run BIGINT NOT NULL REFERENCES runs (id),"
	"  at_ns BIGINT NOT NULL, tool TEXT NOT NULL, path TEXT NOT NULL,"
	"  UNIQUE (run, tool, path));"
	/* Followers LISTEN: a commit of journal rows wakes them (one
	 * notification a transaction: the server folds the same ones). */
	"CREATE FUNCTION sbx_journal_grew() RETURNS trigger LANGUAGE plpgsql AS"
	"  $$BEGIN PERFORM pg_notify('" STORE_JOURNAL_CHANNEL "', ''); RETURN NULL; END$$;"
	"CREATE TRIGGER journal_grew AFTER INSERT ON journal"
	"  FOR EACH STATEMENT EXECUTE FUNCTION sbx_journal_grew();",
	[10] = "CREATE TABLE leases ("
	       "  \"user\" TEXT NOT NULL, thread TEXT NOT NULL, host TEXT NOT NULL,"
	       "  token BIGINT NOT NULL, pid INTEGER NOT NULL, acquired_ns BIGINT NOT NULL,"
	       "  renewed_ns BIGINT NOT NULL, expires_ns BIGINT NOT NULL,"
	       "  PRIMARY KEY (\"user\", thread));"
	       "CREATE INDEX leases_by_host ON leases (host, expires_ns);"
	       "CREATE TABLE limits (name TEXT PRIMARY KEY, value BIGINT NOT NULL,"
	       "  host TEXT NOT NULL, at_ns BIGINT NOT NULL);",
	[11] = "ALTER TABLE leases ADD COLUMN holders INTEGER NOT NULL DEFAULT 1;"
	       "ALTER TABLE snapshot_files ADD COLUMN ino BIGINT NOT NULL DEFAULT 0;"
	       "ALTER TABLE snapshot_files ADD COLUMN ctime_ns BIGINT NOT NULL DEFAULT 0;",
	[12] = "ALTER TABLE snapshots ADD COLUMN base BIGINT;"
	       "ALTER TABLE snapshot_files ADD COLUMN gone INTEGER NOT NULL DEFAULT 0;",
	[13] = AUDIT_SAME_SQL("BIGINT", "BYTEA"),
	[14] = "CREATE TABLE blob_puts (sha256 BYTEA PRIMARY KEY, until_ns BIGINT NOT NULL);" BLOB_REFS_SQL,
};

/* ROW 2^k times, comma-separated: a statement's rows or parameters. */
#define ROWS_1(r) r
#define ROWS_2(r) r ", " r
#define ROWS_4(r) ROWS_2(r) ", " ROWS_2(r)
#define ROWS_8(r) ROWS_4(r) ", " ROWS_4(r)
#define ROWS_16(r) ROWS_8(r) ", " ROWS_8(r)
#define ROWS_32(r) ROWS_16(r) ", " ROWS_16(r)
#define ROWS_64(r) ROWS_32(r) ", " ROWS_32(r)
#define ROWS_128(r) ROWS_64(r) ", " ROWS_64(r)
/* Many rows are written 64 a statement (2^BATCH_LOG2), the rest in
 * statements of 32, 16, ... 1 (at most six): a round trip each on
 * PostgreSQL, and fewer steps on SQLite (its default limit of
 * parameters, 32,766, is far above a snapshot's 960 or a journal's
 * 1,152). The statements
 * FIRST (of one row) to FIRST + BATCH_LOG2, for HEAD ROW... TAIL: */
#define BATCH_LOG2 6
#define BATCHED_SQL(first, head, row, tail)                                         \
	[first] = head ROWS_1(row) tail, [first + 1] = head ROWS_2(row) tail,       \
	[first + 2] = head ROWS_4(row) tail, [first + 3] = head ROWS_8(row) tail,   \
	[first + 4] = head ROWS_16(row) tail, [first + 5] = head ROWS_32(row) tail, \
	[first + 6] = head ROWS_64(row) tail
#define SNAP_FILES_INSERT                                                               \
	"INSERT INTO snapshot_files (snapshot, seq, path, root, symlink, target, size," \
	" mtime_ns, sha256, sensitive, \"binary\", large, ino, ctime_ns, gone) VALUES "
#define SNAP_ROW "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
#define SNAP_ROW_PARAMS 15
#define JOURNAL_INSERT                                                              \
	"INSERT INTO journal (\"user\", thread, at_ns, op, path, path2, pid, comm," \
	" symlink, target, size, mtime_ns, sha256, sensitive, \"binary\", large,"   \
	" object, meta) VALUES "
#define JOURNAL_ROW "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
#define JOURNAL_ROW_PARAMS 18
#define BLOB_BATCH 128 /* contents asked for in one request */
/* A run's columns but its texts (summary, receipt), which come after
 * them where they are wanted: a summary may be megabytes. */
#define RUN_COLUMNS                                                                        \
	"id, \"user\", thread, begun_ns, ended_ns, before_snapshot, after_snapshot, kind," \
	" undoes, kept, held_bytes, clean"
#define RUN_TEXTS 12 /* the column of the summary, where it is read */

enum stmt_id {
	ST_MARK_PUT,
	ST_MARK_DROP,
	ST_MARK_HASH,
	ST_BLOB_FORGET,
	ST_MARKS_EACH,
	ST_AUDIT_ADD,
	ST_AUDIT_EACH,
	ST_SNAP_ADD,
	ST_SNAP_FILES_1, /* then those of 2, 4, ... 64 rows, in order */
	ST_SNAP_FILES_2,
	ST_SNAP_FILES_4,
	ST_SNAP_FILES_8,
	ST_SNAP_FILES_16,
	ST_SNAP_FILES_32,
	ST_SNAP_FILES_64,
	ST_SNAP_GET,
	ST_SNAP_FILES,
	ST_BLOBS_PUT_1, /* then those of 2, 4, ... 64 */
	ST_BLOBS_PUT_2,
	ST_BLOBS_PUT_4,
	ST_BLOBS_PUT_8,
	ST_BLOBS_PUT_16,
	ST_BLOBS_PUT_32,
	ST_BLOBS_PUT_64,
	ST_BLOB_PUTS_1, /* then those of 2, 4, ... 64 */
	ST_BLOB_PUTS_2,
	ST_BLOB_PUTS_4,
	ST_BLOB_PUTS_8,
	ST_BLOB_PUTS_16,
	ST_BLOB_PUTS_32,
	ST_BLOB_PUTS_64,
	ST_BLOB_GET,
	ST_BLOBS_GET,
	ST_BLOB_PUTS_OLD,
	ST_BLOBS_AFTER,
	ST_BLOBS_COLLECT,
	ST_RUN_ADD,
	ST_RUN_GET,
	ST_RUN_END,
	ST_JOURNAL_ADD_1, /* then those of 2, 4, ... 64 */
	ST_JOURNAL_ADD_2,
	ST_JOURNAL_ADD_4,
	ST_JOURNAL_ADD_8,
	ST_JOURNAL_ADD_16,
	ST_JOURNAL_ADD_32,
	ST_JOURNAL_ADD_64,
	ST_JOURNAL_EACH,
	ST_JOURNAL_KEEP_FROM,
	ST_JOURNAL_RECENT,
	ST_JOURNAL_WINDOW,
	ST_JOURNAL_DROP_1, /* then those of 2, 4, ... 64 */
	ST_JOURNAL_DROP_2,
	ST_JOURNAL_DROP_4,
	ST_JOURNAL_DROP_8,
	ST_JOURNAL_DROP_16,
	ST_JOURNAL_DROP_32,
	ST_JOURNAL_DROP_64,
	ST_RUN_OPEN,
	ST_RUN_STATE,
	ST_RUN_UNDONE_BY,
	ST_RUN_KEEP,
	ST_RUN_HELD,
	ST_RUN_CLEAN,
	ST_RUNS_EACH,
	ST_RUNS_EACH_TEXTS,
	ST_JOURNAL_LAST,
	ST_JOURNAL_AFTER,
	ST_PRESENT_ADD,
	ST_PRESENTED_EACH,
	ST_COUNT
};

/* A content that nothing refers to (BLOB_REFS_SQL) and no put holds. */
#define BLOB_UNREFERRED                                                                  \
	" AND NOT EXISTS (SELECT 1 FROM blob_puts p WHERE p.sha256 = blobs.sha256)"      \
	" AND NOT EXISTS (SELECT 1 FROM marks m WHERE m.hash = blobs.sha256)"            \
	" AND NOT EXISTS (SELECT 1 FROM snapshot_files f WHERE f.sha256 = blobs.sha256)" \
	" AND NOT EXISTS (SELECT 1 FROM journal j WHERE j.sha256 = blobs.sha256)"        \
	" AND NOT EXISTS (SELECT 1 FROM audit a WHERE a.base_sha256 = blobs.sha256)"     \
	" AND NOT EXISTS (SELECT 1 FROM audit a WHERE a.cur_sha256 = blobs.sha256)"

/* One SQL for both engines (db.h): "user" and "binary" are keywords of
 * PostgreSQL's, quoted; ids come back by RETURNING. */
static const char *const stmt_sql[ST_COUNT] = {
	[ST_MARK_PUT] =
		"INSERT INTO marks (\"user\", thread, path, ino,"
		" size, mtime_ns, ctime_ns, at_ns, hash)"
		" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
		" ON CONFLICT (\"user\", thread, path) DO UPDATE SET ino = excluded.ino,"
		" size = excluded.size, mtime_ns = excluded.mtime_ns,"
		" ctime_ns = excluded.ctime_ns, at_ns = excluded.at_ns, hash = excluded.hash",
	[ST_MARK_DROP] = "DELETE FROM marks WHERE \"user\" = ? AND thread = ? AND path = ?",
	[ST_MARK_HASH] = "SELECT hash FROM marks WHERE \"user\" = ? AND thread = ? AND path = ?",
	[ST_MARKS_EACH] = "SELECT path, ino, size, mtime_ns, ctime_ns, at_ns, hash"
			  " FROM marks WHERE \"user\" = ? AND thread = ?",
	/* A refusal seen before counts in its row: the first one's
	 * process and time stay, the last one's time is added. */
	[ST_AUDIT_ADD] = "INSERT INTO audit (at_ns, \"user\", thread, path, op, pid,"
			 " comm, reason, mode, allowed, base_size, base_mtime_ns,"
			 " base_sha256, cur_size, cur_mtime_ns, cur_sha256, same_key, last_ns)"
			 " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
			 " ON CONFLICT (\"user\", thread, same_key) DO UPDATE SET"
			 " times = audit.times + 1,"
			 " last_ns = CASE WHEN excluded.last_ns > audit.last_ns"
			 "  THEN excluded.last_ns ELSE audit.last_ns END",
	[ST_AUDIT_EACH] = "SELECT id, at_ns, path, op, pid, comm, reason, mode,"
			  " allowed, base_size, base_mtime_ns, base_sha256,"
			  " cur_size, cur_mtime_ns, cur_sha256, times, last_ns"
			  " FROM audit WHERE \"user\" = ? AND thread = ? ORDER BY id",
	[ST_SNAP_ADD] = "INSERT INTO snapshots (\"user\", thread, at_ns, files,"
			" truncated, max_files, base) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
	BATCHED_SQL(ST_SNAP_FILES_1, SNAP_FILES_INSERT, SNAP_ROW, ""),
	[ST_SNAP_GET] = "SELECT truncated, max_files, base, files FROM snapshots WHERE id = ?",
	[ST_SNAP_FILES] =
		"SELECT path, root, symlink, target, size, mtime_ns, sha256,"
		" sensitive, \"binary\", large, ino, ctime_ns, seq, gone FROM snapshot_files"
		" WHERE snapshot = ?",
	BATCHED_SQL(ST_BLOBS_PUT_1, "INSERT INTO blobs (sha256, data) VALUES ", "(?, ?)",
		    " ON CONFLICT DO NOTHING"),
	BATCHED_SQL(ST_BLOB_PUTS_1, "INSERT INTO blob_puts (sha256, until_ns) VALUES ", "(?, ?)",
		    " ON CONFLICT (sha256) DO UPDATE SET until_ns = CASE"
		    " WHEN excluded.until_ns > blob_puts.until_ns THEN excluded.until_ns"
		    " ELSE blob_puts.until_ns END"),
	[ST_BLOB_GET] = "SELECT data FROM blobs WHERE sha256 = ?",
	[ST_BLOB_PUTS_OLD] = "DELETE FROM blob_puts WHERE until_ns < ?",
	/* The end of a sweep's step: the N-th content after the last one
	 * (none: the step goes to the end). */
	[ST_BLOBS_AFTER] = "SELECT sha256 FROM blobs WHERE sha256 > ?"
			   " ORDER BY sha256 LIMIT 1 OFFSET ?",
	[ST_BLOBS_COLLECT] = "DELETE FROM blobs WHERE sha256 > ? AND sha256 <= ?" BLOB_UNREFERRED,
	[ST_BLOB_FORGET] = "DELETE FROM blobs WHERE sha256 = ?" BLOB_UNREFERRED,
	[ST_BLOBS_GET] = "SELECT sha256, data FROM blobs WHERE sha256 IN (" ROWS_128("?") ")",
	[ST_RUN_ADD] = "INSERT INTO runs (\"user\", thread, begun_ns, before_snapshot, kind,"
		       " undoes) VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
	[ST_RUN_GET] = "SELECT " RUN_COLUMNS ", summary, receipt FROM runs WHERE id = ?",
	[ST_RUN_END] = "UPDATE runs SET ended_ns = ?, after_snapshot = ?, summary = ?,"
		       " receipt = ? WHERE id = ? AND ended_ns IS NULL",
	BATCHED_SQL(ST_JOURNAL_ADD_1, JOURNAL_INSERT, JOURNAL_ROW, ""),
	[ST_JOURNAL_EACH] = "SELECT at_ns, op, path, path2, pid, comm, symlink, target,"
			    " size, mtime_ns, sha256, sensitive, \"binary\", large, object, meta"
			    " FROM journal"
			    " WHERE \"user\" = ? AND thread = ? AND at_ns >= ? AND at_ns <= ?"
			    " ORDER BY id",
	/* What compaction leaves: the thread's last rows (by
	 * journal_by_thread_id), those of its last seconds (by
	 * journal_by_thread). */
	[ST_JOURNAL_KEEP_FROM] = "SELECT id FROM journal WHERE \"user\" = ? AND thread = ?"
				 " ORDER BY id DESC LIMIT 1 OFFSET ?",
	[ST_JOURNAL_RECENT] = "SELECT min(id) FROM journal WHERE \"user\" = ? AND thread = ?"
			      " AND at_ns >= ?",
	[ST_JOURNAL_WINDOW] = "SELECT id, at_ns, op, path, path2 FROM journal"
			      " WHERE \"user\" = ? AND thread = ? AND id > ? AND id <= ?"
			      " ORDER BY id DESC LIMIT ?",
	BATCHED_SQL(ST_JOURNAL_DROP_1, "DELETE FROM journal WHERE id IN (", "?", ")"),
	[ST_RUN_OPEN] = "SELECT begun_ns FROM runs WHERE \"user\" = ? AND thread = ?"
			" AND ended_ns IS NULL ORDER BY begun_ns DESC LIMIT 1",
	[ST_RUN_STATE] = "SELECT CASE WHEN ended_ns IS NULL THEN 0 ELSE 1 END FROM runs"
			 " WHERE id = ?",
	[ST_RUN_UNDONE_BY] = "SELECT id FROM runs WHERE undoes = ? ORDER BY id DESC LIMIT 1",
	[ST_RUN_KEEP] = "UPDATE runs SET kept = 1 WHERE id = ?",
	[ST_RUN_HELD] = "UPDATE runs SET held_bytes = ? WHERE id = ?",
	[ST_RUN_CLEAN] = "UPDATE runs SET clean = ? WHERE id = ?",
	[ST_RUNS_EACH] = "SELECT " RUN_COLUMNS " FROM runs WHERE \"user\" = ? AND thread = ?"
			 " ORDER BY id",
	[ST_RUNS_EACH_TEXTS] = "SELECT " RUN_COLUMNS ", summary, receipt FROM runs"
			       " WHERE \"user\" = ? AND thread = ? ORDER BY id",
	[ST_JOURNAL_LAST] = "SELECT max(id) FROM journal",
	/* By journal_by_thread_id (user, thread, id): the id range is what
	 * was written since the last call, a few rows. The run is the
	 * thread's latest begun at or before the row and not ended before
	 * it (runs_by_thread, newest first). */
	[ST_JOURNAL_AFTER] = "SELECT j.at_ns, j.op, j.path, j.path2, j.pid, j.comm, j.symlink,"
			     " j.target, j.size, j.mtime_ns, j.sha256, j.sensitive, j.\"binary\","
			     " j.large, j.object, j.meta, j.id,"
			     " (SELECT r.id FROM runs r WHERE r.\"user\" = j.\"user\""
			     "  AND r.thread = j.thread AND r.begun_ns <= j.at_ns"
			     "  AND (r.ended_ns IS NULL OR r.ended_ns >= j.at_ns)"
			     "  ORDER BY r.id DESC LIMIT 1)"
			     " FROM journal j WHERE j.\"user\" = ? AND j.thread = ?"
			     " AND j.id > ? AND j.id <= ? ORDER BY j.id LIMIT ?",
	[ST_PRESENT_ADD] = "INSERT INTO presentations (run, at_ns, tool, path)"
			   " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
	[ST_PRESENTED_EACH] = "SELECT tool, path FROM presentations WHERE run = ? ORDER BY id",
};

struct store {
	struct db *db;
	struct db_stmt *stmt[ST_COUNT];
	int stmt_err;		   /* why stmt() last returned NULL (-errno) */
	struct lease_fence *fence; /* lease.h, store_fence() */
};

struct db *store_db(struct store *s)
{
	return s->db;
}

struct lease_fence *store_get_fence(struct store *s)
{
	return s->fence;
}

void store_set_fence(struct store *s, struct lease_fence *f)
{
	lease_fence_free(s->fence);
	s->fence = f;
}

static int fail(struct store *s, int r, const char *what)
{
	log_warn("store: %s: %s", what, db_errmsg(s->db));
	return r < 0 ? r : -EIO;
}

/* The cached statement ID, reset and ready for binding; NULL if it
 * cannot be prepared, stmt_failed() saying why. */
static struct db_stmt *stmt(struct store *s, enum stmt_id id)
{
	int r;

	if (!s->stmt[id] && (r = db_prepare(s->db, stmt_sql[id], &s->stmt[id])) < 0) {
		log_warn("store: cannot prepare '%s': %s", stmt_sql[id], db_errmsg(s->db));
		s->stmt_err = r;
		return NULL;
	}
	db_reset(s->stmt[id]);
	return s->stmt[id];
}

/* Why stmt() last returned NULL: the engine's error (the connection
 * lost, a table missing), not always memory; never 0. */
static int stmt_failed(const struct store *s)
{
	return s->stmt_err < 0 ? s->stmt_err : -EIO;
}

/* Statement ID with its first two parameters bound to USER and THREAD,
 * as most are. */
static struct db_stmt *thread_stmt(struct store *s, enum stmt_id id, const char *user,
				   const char *thread)
{
	struct db_stmt *st = stmt(s, id);

	if (st) {
		db_bind_text(st, 1, user);
		db_bind_text(st, 2, thread);
	}
	return st;
}

static void stmt_done(struct db_stmt **st)
{
	if (*st)
		db_reset(*st);
}

#define _stmt_ _cleanup_(stmt_done) struct db_stmt *

/* A fenced store's write made alone is made in a turn of its own, which
 * checks the fence first (store_begin()): *OWN says whether it took one,
 * for write_done() to end. */
static int write_turn(struct store *s, bool *own)
{
	*own = s->fence && !db_in_transaction(s->db);
	return *own ? store_begin(s) : 0;
}

static int write_done(struct store *s, bool own, int r)
{
	if (own && r >= 0)
		r = store_commit(s);
	if (own && r < 0)
		store_rollback(s);
	return r;
}

/* Runs statement ST, a write, to completion. */
static int exec_stmt(struct store *s, struct db_stmt *st, const char *what)
{
	bool own;
	int r;

	if (!st)
		return stmt_failed(s);
	if ((r = write_turn(s, &own)) < 0)
		return r;
	while ((r = db_step(st)) > 0)
		;
	return write_done(s, own, r < 0 ? fail(s, r, what) : 0);
}

/* Runs statement ST for its one row: 0 with the row to read, -ENOENT if
 * there is none. */
static int one_row(struct store *s, struct db_stmt *st, const char *what)
{
	int r;

	if (!st)
		return stmt_failed(s);
	r = db_step(st);
	return r > 0 ? 0 : r == 0 ? -ENOENT : fail(s, r, what);
}

/* Runs the INSERT ... RETURNING id ST: the new row's id in *ID. */
static int insert_id(struct store *s, struct db_stmt *st, const char *what, int64_t *id)
{
	bool own;
	int r = st ? write_turn(s, &own) : stmt_failed(s);

	if (r < 0)
		return r;
	if ((r = one_row(s, st, what)) == 0) {
		*id = db_col_int64(st, 0);
		while ((r = db_step(st)) > 0) /* to its end, before a commit */
			;
		r = r < 0 ? fail(s, r, what) : 0;
	} else if (r == -ENOENT) {
		r = fail(s, -EIO, what);
	}
	return write_done(s, own, r);
}

int store_journal_listen(struct store *s)
{
	return db_listen(s->db, STORE_JOURNAL_CHANNEL);
}

int store_journal_heard(struct store *s)
{
	return db_heard(s->db);
}

int store_schema_version(struct store *s)
{
	return db_version(s->db);
}

int store_begin(struct store *s)
{
	int r = db_begin_write(s->db);

	if (r < 0)
		return fail(s, r, "begin");
	if (s->fence && (r = lease_fence_check(s, s->fence)) < 0)
		db_rollback(s->db);
	return r;
}

int store_commit(struct store *s)
{
	int r = db_commit(s->db);

	return r < 0 ? fail(s, r, "commit") : 0;
}

void store_rollback(struct store *s)
{
	db_rollback(s->db);
}

/* Takes the schema from version *V one step towards TARGET, in a
 * writer's turn; *V becomes the version after it. */
static int migrate_step(struct store *s, const char *const *steps, int target, int *v)
{
	int r = store_begin(s);

	if (r < 0)
		return r;
	/* Read again in the turn: another process may have taken the
	 * schema forward since (a second host's first command). */
	if ((r = *v = store_schema_version(s)) < 0 || *v >= target) {
		store_rollback(s);
		return r < 0 ? r : 0;
	}
	/* A step may take several versions at once (PostgreSQL's first
	 * makes the schema of its time whole): those it covers have none. */
	int to = *v + 1;
	while (to < target && !steps[to])
		to++;
	if ((r = db_exec(s->db, steps[*v])) < 0 || (r = db_set_version(s->db, to)) < 0 ||
	    (r = store_commit(s)) < 0) {
		store_rollback(s);
		return r;
	}
	*v = to;
	return 0;
}

/* Brings the schema to version TARGET, one transaction per step so a
 * failure leaves a consistent earlier version. */
static int migrate(struct store *s, int target, char *err, size_t errlen)
{
	const char *const *steps = db_engine(s->db) == DB_SQLITE ? lite_migrations : pg_migrations;
	int v = store_schema_version(s), r;

	if (v < 0) {
		snprintf(err, errlen, "cannot read the schema version: %s", db_errmsg(s->db));
		return -EIO;
	}
	while (v < target) {
		int from = v;
		if ((r = migrate_step(s, steps, target, &v)) < 0) {
			snprintf(err, errlen, "cannot migrate the schema from version %d: %s", from,
				 db_errmsg(s->db));
			return r;
		}
	}
	/* After the steps: each read the version again, and a newer sbx may
	 * have taken the schema past this one's meanwhile. */
	if (v > STORE_SCHEMA_VERSION) {
		snprintf(
			err, errlen,
			"the database has schema version %d; this sbx knows up to %d (a newer sbx wrote it)",
			v, STORE_SCHEMA_VERSION);
		return -EPROTO;
	}
	return 0;
}

static int open_at(enum db_engine engine, const char *target, int version, struct store **out,
		   char *err, size_t errlen)
{
	struct store *s = calloc(1, sizeof(*s));
	int r;

	*out = NULL;
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = db_open(engine, target, &s->db, err, errlen);
	if (r == 0)
		r = migrate(s, version, err, errlen);
	if (r < 0) {
		store_close(s);
		return r;
	}
	*out = s;
	return 0;
}

int store_probe(const char *target, int *version, bool *postgres, char *err, size_t errlen)
{
	struct db *db;
	int r;

	*postgres = store_target_is_postgres(target);
	if (!*postgres && access(target, F_OK) < 0) {
		*version = 0; /* not made yet: opening would make it */
		return errno == ENOENT ? 0 : -errno;
	}
	if ((r = db_open(*postgres ? DB_POSTGRES : DB_SQLITE, target, &db, err, errlen)) < 0)
		return r;
	if ((r = *version = db_version(db)) < 0)
		snprintf(err, errlen, "cannot read the schema version: %s", db_errmsg(db));
	db_close(db);
	return r < 0 ? r : 0;
}

int store_open_target(const char *target, struct store **out, char *err, size_t errlen)
{
	return open_at(store_target_is_postgres(target) ? DB_POSTGRES : DB_SQLITE, target,
		       STORE_SCHEMA_VERSION, out, err, errlen);
}

int store_open_path(const char *path, struct store **out, char *err, size_t errlen)
{
	return open_at(DB_SQLITE, path, STORE_SCHEMA_VERSION, out, err, errlen);
}

int store_open_version(const char *path, int version, struct store **out, char *err, size_t errlen)
{
	return open_at(DB_SQLITE, path, version, out, err, errlen);
}

int store_open(const char *home, struct store **out, char *err, size_t errlen)
{
	char target[STORE_TARGET_MAX];
	int r = store_where(home, target, sizeof(target), err, errlen);

	*out = NULL;
	return r < 0 ? r : store_open_target(target, out, err, errlen);
}

int store_open_existing(const char *home, struct store **out, char *err, size_t errlen)
{
	char target[STORE_TARGET_MAX];
	int r = store_where(home, target, sizeof(target), err, errlen);

	*out = NULL;
	if (r == 0 && !store_target_is_postgres(target) && access(target, F_OK) < 0 &&
	    errno == ENOENT)
		return -ENOENT;
	return r < 0 ? r : store_open_target(target, out, err, errlen);
}

void store_close(struct store *s)
{
	if (!s)
		return;
	for (int i = 0; i < ST_COUNT; i++)
		db_finalize(s->stmt[i]);
	lease_fence_free(s->fence);
	db_close(s->db);
	free(s);
}

void store_rest(struct store *s)
{
	db_rest(s->db);
}

/* Column I into the SHA-256 OUT if it holds one: whether it did. */
static bool col_sha256(struct db_stmt *st, int i, uint8_t out[SHA256_BYTES])
{
	size_t len;
	const void *p = db_col_blob(st, i, &len);

	if (len != SHA256_BYTES)
		return false;
	memcpy(out, p, SHA256_BYTES);
	return true;
}

/* The hash of PATH's mark into OUT: 1, or 0 if it has none (or no mark). */
static int mark_hash(struct store *s, const char *user, const char *thread, const char *path,
		     uint8_t out[SHA256_BYTES])
{
	_stmt_ st = thread_stmt(s, ST_MARK_HASH, user, thread);
	int r;

	if (!st)
		return stmt_failed(s);
	db_bind_text(st, 3, path);
	if ((r = one_row(s, st, "read a read mark")) < 0)
		return r == -ENOENT ? 0 : r;
	return col_sha256(st, 0, out);
}

/* Deletes content SHA256 if nothing refers to it and no put holds it. */
static int blob_forget(struct store *s, const uint8_t sha256[SHA256_BYTES])
{
	_stmt_ st = stmt(s, ST_BLOB_FORGET);

	if (!st)
		return stmt_failed(s);
	db_bind_blob(st, 1, sha256, SHA256_BYTES);
	return exec_stmt(s, st, "collect a read text");
}

/* Runs mark statement ST (bound) in a transaction with the collection
 * of the text PATH's mark referred to before, if the new mark (HASH, or
 * none) does not: a file the host rewrites and the view reads in a loop
 * keeps one text, not one a read until the sweep comes round. */
static int mark_change(struct store *s, const char *user, const char *thread, const char *path,
		       struct db_stmt *st, const uint8_t *hash, const char *what)
{
	uint8_t old[SHA256_BYTES];
	bool own;
	int r = write_turn(s, &own), had = 0;

	if (r == 0)
		r = had = mark_hash(s, user, thread, path, old);
	if (r >= 0)
		r = exec_stmt(s, st, what);
	if (r == 0 && had > 0 && (!hash || memcmp(hash, old, SHA256_BYTES)))
		r = blob_forget(s, old);
	return write_done(s, own, r);
}

int store_mark_put(struct store *s, const char *user, const char *thread,
		   const struct store_mark *m)
{
	_stmt_ st = thread_stmt(s, ST_MARK_PUT, user, thread);

	if (!st)
		return stmt_failed(s);
	db_bind_text(st, 3, m->path);
	db_bind_int64(st, 4, (int64_t)m->ino);
	db_bind_int64(st, 5, m->size);
	db_bind_int64(st, 6, m->mtime_ns);
	db_bind_int64(st, 7, m->ctime_ns);
	db_bind_int64(st, 8, m->at_ns);
	if (m->hashed)
		db_bind_blob(st, 9, m->hash, sizeof(m->hash));
	return mark_change(s, user, thread, m->path, st, m->hashed ? m->hash : NULL,
			   "record a read mark");
}

int store_mark_drop(struct store *s, const char *user, const char *thread, const char *path)
{
	_stmt_ st = thread_stmt(s, ST_MARK_DROP, user, thread);

	if (!st)
		return stmt_failed(s);
	db_bind_text(st, 3, path);
	return mark_change(s, user, thread, path, st, NULL, "drop a read mark");
}

/* Steps a SELECT, calling ROW for each row; stops at ROW's first non-zero
 * return. */
/* Rows go in statements of 2^k of them (ST_SNAP_FILES_1 + k, ...): the
 * largest there are of the LEFT to put, at most 2^BATCH_LOG2. */
static unsigned batch_log2(size_t left)
{
	unsigned k = 0;

	while (k < BATCH_LOG2 && (size_t)2 << k <= left)
		k++;
	return k;
}

/* Writes N rows in statements of many (FIRST + batch_log2() of those
 * left), BIND(ARG, ST, J, I) binding row I as the J-th of its statement. */
static int exec_batched(struct store *s, enum stmt_id first, size_t n,
			void (*bind)(void *arg, struct db_stmt *st, int j, size_t i), void *arg,
			const char *what)
{
	int r = 0;

	for (size_t i = 0; i < n && r == 0;) {
		unsigned k = batch_log2(n - i);
		_stmt_ st = stmt(s, first + k);

		if (!st)
			return stmt_failed(s);
		for (int j = 0; j < 1 << k; j++, i++)
			bind(arg, st, j, i);
		r = exec_stmt(s, st, what);
	}
	return r;
}

static int each_row(struct store *s, struct db_stmt *st, const char *what,
		    int (*row)(struct db_stmt *st, void *ctx), void *ctx)
{
	int rc, r;

	while ((rc = db_step(st)) > 0)
		if ((r = row(st, ctx)) != 0)
			return r;
	return rc < 0 ? fail(s, rc, what) : 0;
}

static const char *col_text(struct db_stmt *st, int i)
{
	return db_col_text(st, i);
}

static int sha256_cmp(const void *a, const void *b)
{
	return memcmp(a, b, SHA256_BYTES);
}

struct marks_ctx {
	int (*fn)(void *arg, const struct store_mark *m);
	void *arg;
};

static int mark_row(struct db_stmt *st, void *ctx)
{
	struct marks_ctx *c = ctx;
	struct store_mark m = {
		.path = col_text(st, 0),
		.ino = (uint64_t)db_col_int64(st, 1),
		.size = db_col_int64(st, 2),
		.mtime_ns = db_col_int64(st, 3),
		.ctime_ns = db_col_int64(st, 4),
		.at_ns = db_col_int64(st, 5),
	};

	m.hashed = col_sha256(st, 6, m.hash);
	return c->fn(c->arg, &m);
}

int store_marks_each(struct store *s, const char *user, const char *thread,
		     int (*fn)(void *arg, const struct store_mark *m), void *arg)
{
	_stmt_ st = thread_stmt(s, ST_MARKS_EACH, user, thread);
	struct marks_ctx c = { fn, arg };

	if (!st)
		return stmt_failed(s);
	return each_row(s, st, "read the read marks", mark_row, &c);
}

/* A version is three columns: size, mtime_ns, sha256 (NULL if unknown). */
static void bind_version(struct db_stmt *st, int col, const struct store_version *v)
{
	if (!v->known)
		return;
	db_bind_int64(st, col, v->size);
	db_bind_int64(st, col + 1, v->mtime_ns);
	if (v->hashed)
		db_bind_blob(st, col + 2, v->sha256, sizeof(v->sha256));
}

static struct store_version col_version(struct db_stmt *st, int col)
{
	struct store_version v = { .known = !db_col_null(st, col) };

	v.size = db_col_int64(st, col);
	v.mtime_ns = db_col_int64(st, col + 1);
	v.hashed = col_sha256(st, col + 2, v.sha256);
	return v;
}

/* Folds version V into the key being hashed in CTX. */
static void key_version(EVP_MD_CTX *ctx, const struct store_version *v)
{
	int64_t n[2] = { v->known ? v->size : -1, v->known ? v->mtime_ns : -1 };
	uint8_t none[SHA256_BYTES] = { 0 };

	EVP_DigestUpdate(ctx, n, sizeof(n));
	EVP_DigestUpdate(ctx, v->known && v->hashed ? v->sha256 : none, SHA256_BYTES);
}

/* What makes two refusals of a thread the same one, as a SHA-256 in KEY:
 * the path, operation, reason, mode and the versions, not the process (a
 * shell loop is a new one each time, and a process may name itself
 * anything: the count would not be bounded). */
static int audit_key(const struct store_audit *a, uint8_t key[SHA256_BYTES])
{
	const char *const text[] = { a->path, a->op, a->reason, a->mode };
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	uint8_t allowed = a->allowed;
	int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;

	for (size_t i = 0; ok && i < sizeof(text) / sizeof(*text); i++)
		ok = EVP_DigestUpdate(ctx, text[i], strlen(text[i]) + 1) == 1;
	if (ok) {
		EVP_DigestUpdate(ctx, &allowed, 1);
		key_version(ctx, &a->base);
		key_version(ctx, &a->current);
		ok = EVP_DigestFinal_ex(ctx, key, NULL) == 1;
	}
	EVP_MD_CTX_free(ctx);
	return ok ? 0 : -ENOMEM;
}

int store_audit_add(struct store *s, const struct store_audit *a)
{
	_stmt_ st = stmt(s, ST_AUDIT_ADD);
	uint8_t key[SHA256_BYTES];
	int r;

	if (!st)
		return stmt_failed(s);
	if ((r = audit_key(a, key)) < 0)
		return r;
	db_bind_int64(st, 1, a->at_ns);
	db_bind_text(st, 2, a->user);
	db_bind_text(st, 3, a->thread);
	db_bind_text(st, 4, a->path);
	db_bind_text(st, 5, a->op);
	db_bind_int64(st, 6, (int)a->pid);
	db_bind_text(st, 7, a->comm);
	db_bind_text(st, 8, a->reason);
	db_bind_text(st, 9, a->mode);
	db_bind_int64(st, 10, a->allowed);
	bind_version(st, 11, &a->base);
	bind_version(st, 14, &a->current);
	db_bind_blob(st, 17, key, sizeof(key));
	db_bind_int64(st, 18, a->at_ns);
	return exec_stmt(s, st, "record an audit row");
}

struct audit_ctx {
	const char *user, *thread;
	int (*fn)(void *arg, const struct store_audit *a);
	void *arg;
};

static int audit_row(struct db_stmt *st, void *ctx)
{
	struct audit_ctx *c = ctx;
	struct store_audit a = {
		.id = db_col_int64(st, 0),
		.at_ns = db_col_int64(st, 1),
		.user = c->user,
		.thread = c->thread,
		.path = col_text(st, 2),
		.op = col_text(st, 3),
		.pid = (pid_t)db_col_int64(st, 4),
		.comm = col_text(st, 5),
		.reason = col_text(st, 6),
		.mode = col_text(st, 7),
		.allowed = db_col_int64(st, 8) != 0,
		.base = col_version(st, 9),
		.current = col_version(st, 12),
		.times = db_col_int64(st, 15),
	};

	a.last_ns = db_col_null(st, 16) ? a.at_ns : db_col_int64(st, 16);
	return c->fn(c->arg, &a);
}

int store_audit_each(struct store *s, const char *user, const char *thread,
		     int (*fn)(void *arg, const struct store_audit *a), void *arg)
{
	_stmt_ st = thread_stmt(s, ST_AUDIT_EACH, user, thread);
	struct audit_ctx c = { user, thread, fn, arg };

	if (!st)
		return stmt_failed(s);
	return each_row(s, st, "read the audit log", audit_row, &c);
}

/* A file's description (struct snap_file but its path and root) is eight
 * columns in the same order wherever it is stored: symlink, target, size,
 * mtime_ns, sha256, sensitive, binary, large. */
static void bind_file(struct db_stmt *st, int col, const struct snap_file *f)
{
	db_bind_int64(st, col, f->symlink);
	if (f->target)
		db_bind_text(st, col + 1, f->target);
	db_bind_int64(st, col + 2, f->size);
	db_bind_int64(st, col + 3, f->mtime_ns);
	if (f->hashed)
		db_bind_blob(st, col + 4, f->sha256, sizeof(f->sha256));
	db_bind_int64(st, col + 5, f->sensitive);
	db_bind_int64(st, col + 6, f->binary);
	db_bind_int64(st, col + 7, f->large);
}

/* Reads them back into F (target strdup'd; -ENOMEM). */
static int col_file(struct db_stmt *st, int col, struct snap_file *f)
{
	f->symlink = db_col_int64(st, col) != 0;
	if (!db_col_null(st, col + 1) && !(f->target = strdup(col_text(st, col + 1))))
		return -ENOMEM;
	f->size = db_col_int64(st, col + 2);
	f->mtime_ns = db_col_int64(st, col + 3);
	f->hashed = col_sha256(st, col + 4, f->sha256);
	f->sensitive = db_col_int64(st, col + 5) != 0;
	f->binary = db_col_int64(st, col + 6) != 0;
	f->large = db_col_int64(st, col + 7) != 0;
	return f->symlink && !f->target ? -ENOMEM : 0;
}

static const char *root_name(const char *root)
{
	return !strncmp(root, "outputs", 7) ? "outputs" : "workspace";
}

/* A row of a snapshot's files: F at place SEQ, or F of the base gone. */
struct snap_row {
	const struct snap_file *f;
	int64_t seq;
	bool gone;
};

static int path_ptr_cmp(const void *a, const void *b)
{
	return strcmp((*(const struct snap_file *const *)a)->path,
		      (*(const struct snap_file *const *)b)->path);
}

/* The file of SORTED (N, by path) named PATH, or NULL. */
static const struct snap_file *by_path(const struct snap_file *const *sorted, size_t n,
				       const char *path)
{
	struct snap_file key = { .path = (char *)path }, *k = &key;
	const struct snap_file *const *hit = bsearch(&k, sorted, n, sizeof(*sorted), path_ptr_cmp);

	return hit ? *hit : NULL;
}

/* What a row of F stores: its inode and ctime only if settled. */
static int64_t stored_ino(const struct snap_file *f)
{
	return f->settled ? (int64_t)f->ino : 0;
}

static int64_t stored_ctime(const struct snap_file *f)
{
	return f->settled ? f->ctime_ns : 0;
}

struct snap_rows_bind {
	const struct snap_row *rows;
	int64_t id; /* the snapshot's */
};

static void bind_snap_row(void *arg, struct db_stmt *st, int j, size_t i)
{
	const struct snap_rows_bind *b = arg;
	const struct snap_file *f = b->rows[i].f;
	int at = j * SNAP_ROW_PARAMS;

	db_bind_int64(st, at + 1, b->id);
	db_bind_int64(st, at + 2, b->rows[i].seq);
	db_bind_text(st, at + 3, f->path);
	db_bind_text(st, at + 4, f->root);
	bind_file(st, at + 5, f);
	db_bind_int64(st, at + 13, stored_ino(f));
	db_bind_int64(st, at + 14, stored_ctime(f));
	db_bind_int64(st, at + 15, b->rows[i].gone);
}

/* Whether F's row would store what B's does (all but its place). */
static bool snap_row_same(const struct snap_file *f, const struct snap_file *b)
{
	return !strcmp(root_name(f->root), root_name(b->root)) && f->symlink == b->symlink &&
	       !strcmp(f->target ? f->target : "", b->target ? b->target : "") &&
	       (f->target != NULL) == (b->target != NULL) && f->size == b->size &&
	       f->mtime_ns == b->mtime_ns && f->hashed == b->hashed &&
	       (!f->hashed || !memcmp(f->sha256, b->sha256, SHA256_BYTES)) &&
	       f->sensitive == b->sensitive && f->binary == b->binary && f->large == b->large &&
	       stored_ino(f) == stored_ino(b) && stored_ctime(f) == stored_ctime(b);
}

/* The rows that keep SNAP: all its files, or against BASE (whole) those
 * that differ from it and those of it gone. *ROWS is malloc'd. */
static int snap_rows(const struct snapshot *snap, const struct snapshot *base,
		     struct snap_row **rows, size_t *n)
{
	_cleanup_(freep) const struct snap_file **sorted = NULL;
	_cleanup_(freep) bool *kept = NULL;
	size_t nb = base ? base->n : 0;

	*n = 0;
	*rows = malloc((snap->n + nb + 1) * sizeof(**rows));
	if (!*rows)
		return -ENOMEM;
	if (base) {
		sorted = malloc((nb + 1) * sizeof(*sorted));
		kept = calloc(nb + 1, sizeof(*kept));
		if (!sorted || !kept)
			return -ENOMEM;
		for (size_t i = 0; i < nb; i++)
			sorted[i] = &base->files[i];
		qsort(sorted, nb, sizeof(*sorted), path_ptr_cmp);
	}
	for (size_t i = 0; i < snap->n; i++) {
		const struct snap_file *f = &snap->files[i];
		const struct snap_file *b = base ? by_path(sorted, nb, f->path) : NULL;
		if (b)
			kept[b - base->files] = true;
		if (!b || !snap_row_same(f, b))
			(*rows)[(*n)++] = (struct snap_row){ f, (int64_t)i, false };
	}
	for (size_t i = 0; i < nb; i++)
		if (!kept[i])
			(*rows)[(*n)++] = (struct snap_row){ &base->files[i], -1, true };
	return 0;
}

int store_snapshot_save_since(struct store *s, const char *user, const char *thread,
			      const struct snapshot *snap, size_t max_files, int64_t at_ns,
			      int64_t base_id, const struct snapshot *base, int64_t *id)
{
	_cleanup_(freep) struct snap_row *rows = NULL;
	size_t n;
	/* A base is whole: loading one never takes more than two. */
	if (!base || base->base)
		base_id = 0, base = NULL;
	int r = snap_rows(snap, base, &rows, &n);

	if (r < 0 || (r = store_begin(s)) < 0)
		return r;
	{
		_stmt_ st = thread_stmt(s, ST_SNAP_ADD, user, thread);
		if (!st) {
			store_rollback(s);
			return stmt_failed(s);
		}
		db_bind_int64(st, 3, at_ns);
		db_bind_int64(st, 4, (int64_t)snap->n);
		db_bind_int64(st, 5, snap->truncated);
		db_bind_int64(st, 6, (int64_t)max_files);
		if (base_id)
			db_bind_int64(st, 7, base_id);
		else
			db_bind_null(st, 7);
		r = insert_id(s, st, "record a snapshot", id);
	}
	if (r == 0) {
		struct snap_rows_bind b = { rows, *id };
		r = exec_batched(s, ST_SNAP_FILES_1, n, bind_snap_row, &b,
				 "record a snapshot's files");
	}
	if (r == 0)
		r = store_commit(s);
	if (r < 0)
		store_rollback(s);
	return r;
}

int store_snapshot_save(struct store *s, const char *user, const char *thread,
			const struct snapshot *snap, size_t max_files, int64_t at_ns, int64_t *id)
{
	return store_snapshot_save_since(s, user, thread, snap, max_files, at_ns, 0, NULL, id);
}

/* Where a row read goes: its place (seq), or gone (of a snapshot kept
 * against a base). */
struct snap_place {
	int64_t seq;
	bool gone;
};

/* A snapshot's rows as read: into SNAP, and their places. */
struct snap_read {
	struct snapshot *snap;
	struct snap_place *at;
	size_t cap;
};

static int snap_file_row(struct db_stmt *st, void *ctx)
{
	struct snap_read *rd = ctx;
	struct snapshot *snap = rd->snap;
	size_t i = snap->n;

	if (array_grow(rd->at, i, rd->cap) < 0)
		return -ENOMEM;
	rd->at[i] = (struct snap_place){ db_col_int64(st, 12), db_col_int64(st, 13) != 0 };
	struct snap_file *f = snapshot_append(snap);
	if (!f)
		return -ENOMEM;
	f->path = strdup(col_text(st, 0));
	f->root = root_name(col_text(st, 1));
	f->ino = (uint64_t)db_col_int64(st, 10);
	f->ctime_ns = db_col_int64(st, 11);
	f->settled = f->ctime_ns != 0;
	if (!f->path || col_file(st, 2, f) < 0) {
		snap_file_free(f);
		snap->n--;
		return -ENOMEM;
	}
	return 0;
}

/* Moves the whole snapshot of N files into OUT from BASE (whole, or
 * empty for a snapshot kept whole) and DIFF (its rows, read into RD, in
 * any order): DIFF's files at their places, BASE's others in their order
 * in the rest (a scan's order is the same for the files both have). */
static int snap_merge(struct snapshot *base, struct snapshot *diff, const struct snap_read *rd,
		      size_t n, struct snapshot *out)
{
	_cleanup_(freep) const struct snap_file **sorted = malloc((diff->n + 1) * sizeof(*sorted));
	_cleanup_(freep) bool *taken = calloc(n + 1, sizeof(*taken));
	_cleanup_(freep) bool *differs = calloc(base->n + 1, sizeof(*differs));

	if (!sorted || !taken || !differs || !(out->files = calloc(n + 1, sizeof(*out->files))))
		return -ENOMEM;
	out->cap = n + 1;
	out->n = n; /* its places empty until filled: freed alike on an error */
	for (size_t i = 0; i < diff->n && base->n; i++)
		sorted[i] = &diff->files[i];
	if (base->n)
		qsort(sorted, diff->n, sizeof(*sorted), path_ptr_cmp);
	for (size_t i = 0; i < base->n; i++) /* changed or gone: DIFF says */
		differs[i] = by_path(sorted, diff->n, base->files[i].path) != NULL;
	for (size_t i = 0; i < diff->n; i++) {
		int64_t seq = rd->at[i].seq;
		if (rd->at[i].gone)
			continue;
		if (seq < 0 || (size_t)seq >= n || taken[seq])
			return -EIO;
		out->files[seq] = diff->files[i];
		taken[seq] = true;
		memset(&diff->files[i], 0, sizeof(diff->files[i])); /* moved */
	}
	size_t at = 0;
	for (size_t i = 0; i < base->n; i++) {
		if (differs[i])
			continue;
		while (at < n && taken[at])
			at++;
		if (at == n)
			return -EIO;
		out->files[at] = base->files[i];
		taken[at] = true;
		memset(&base->files[i], 0, sizeof(base->files[i]));
	}
	for (size_t i = 0; i < n; i++)
		if (!taken[i])
			return -EIO;
	return 0;
}

/* Reads snapshot ID into OUT (memset already): whole, or against its
 * base, which DEPTH allows to be read (one level: a base is whole). */
static int snap_load(struct store *s, int64_t id, struct snapshot *out, int depth)
{
	struct snapshot base = { 0 }, rows = { 0 };
	struct snap_read rd = { .snap = &rows };
	size_t n = 0;
	int r;

	{
		_stmt_ st = stmt(s, ST_SNAP_GET);
		if (!st)
			return stmt_failed(s);
		db_bind_int64(st, 1, id);
		if ((r = one_row(s, st, "read a snapshot")) < 0)
			return r;
		out->truncated = db_col_int64(st, 0) != 0;
		out->max_files = (size_t)db_col_int64(st, 1);
		out->base = db_col_null(st, 2) ? 0 : db_col_int64(st, 2);
		n = (size_t)db_col_int64(st, 3);
	}
	if (out->base) {
		if (depth > 0 || (r = snap_load(s, out->base, &base, depth + 1)) < 0) {
			log_error("store: snapshot %lld: its base %lld cannot be read: %s",
				  (long long)id, (long long)out->base,
				  depth > 0 ? "it is not whole" : strerror(-r));
			snapshot_free(&base);
			return depth > 0 ? -EIO : r;
		}
	}
	_stmt_ st = stmt(s, ST_SNAP_FILES);
	r = st ? 0 : stmt_failed(s);
	if (r == 0) {
		db_bind_int64(st, 1, id);
		r = each_row(s, st, "read a snapshot", snap_file_row, &rd);
	}
	/* Each row to its place: no sort on the server. */
	if (r >= 0 && (r = snap_merge(&base, &rows, &rd, n, out)) == -EIO)
		log_error("store: snapshot %lld does not fit %s%lld", (long long)id,
			  out->base ? "its base " : "its count of files, ",
			  (long long)(out->base ? out->base : (int64_t)n));
	snapshot_free(&base);
	snapshot_free(&rows);
	free(rd.at);
	return r < 0 ? r : 0;
}

int store_snapshot_load(struct store *s, int64_t id, struct snapshot *out)
{
	memset(out, 0, sizeof(*out));
	int r = snap_load(s, id, out, 0);

	if (r < 0)
		snapshot_free(out);
	return r;
}

static void bind_blob_row(void *arg, struct db_stmt *st, int j, size_t i)
{
	const struct store_blob *v = arg;

	db_bind_blob(st, 2 * j + 1, v[i].sha256, SHA256_BYTES);
	db_bind_blob(st, 2 * j + 2, v[i].len ? v[i].data : "", v[i].len);
}

struct blob_puts_bind {
	const uint8_t (*sha256s)[SHA256_BYTES];
	int64_t until_ns;
};

static void bind_blob_put(void *arg, struct db_stmt *st, int j, size_t i)
{
	const struct blob_puts_bind *b = arg;

	db_bind_blob(st, 2 * j + 1, b->sha256s[i], SHA256_BYTES);
	db_bind_int64(st, 2 * j + 2, b->until_ns);
}

/* Records that the N contents V are left alone for HOLD_NS from now,
 * each once (an upsert may not touch a row twice in one statement). */
static int blob_puts(struct store *s, const struct store_blob *v, size_t n, int64_t hold_ns)
{
	_cleanup_(freep) uint8_t(*sha)[SHA256_BYTES] = malloc((n + 1) * SHA256_BYTES);
	size_t m = 0;

	if (!sha)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		memcpy(sha[i], v[i].sha256, SHA256_BYTES);
	qsort(sha, n, SHA256_BYTES, sha256_cmp);
	for (size_t i = 0; i < n; i++)
		if (!m || memcmp(sha[m - 1], sha[i], SHA256_BYTES))
			memcpy(sha[m++], sha[i], SHA256_BYTES);
	struct blob_puts_bind b = { (const uint8_t(*)[SHA256_BYTES])sha, realtime_ns() + hold_ns };
	return exec_batched(s, ST_BLOB_PUTS_1, m, bind_blob_put, &b,
			    "record when contents were put");
}

int store_blobs_put(struct store *s, const struct store_blob *v, size_t n)
{
	return store_blobs_put_for(s, v, n, STORE_BLOB_HOLD_NS);
}

int store_blobs_put_for(struct store *s, const struct store_blob *v, size_t n, int64_t hold_ns)
{
	bool own;
	int r = write_turn(s, &own);

	if (r == 0)
		r = exec_batched(s, ST_BLOBS_PUT_1, n, bind_blob_row, (void *)v,
				 "record files' contents");
	if (r == 0 && hold_ns > 0)
		r = blob_puts(s, v, n, hold_ns);
	return write_done(s, own, r);
}

/* The content after AFTER (LEN bytes: 0 for the first) that ends a step
 * of N into END; false if fewer than N are left (the step goes to the
 * end). */
static int sweep_end(struct store *s, const uint8_t *after, size_t len, size_t n,
		     uint8_t end[SHA256_BYTES])
{
	_stmt_ st = stmt(s, ST_BLOBS_AFTER);
	int r;

	if (!st)
		return stmt_failed(s);
	db_bind_blob(st, 1, len ? (const void *)after : "", len);
	db_bind_int64(st, 2, (int64_t)n - 1);
	if ((r = one_row(s, st, "read the contents")) < 0)
		return r == -ENOENT ? 0 : r;
	return col_sha256(st, 0, end) ? 1 : -EIO;
}

static int blobs_collect(struct store *s, int64_t now_ns, struct store_sweep *sw, size_t n)
{
	/* Past every SHA-256: 33 bytes compare above any 32. */
	static const uint8_t last[SHA256_BYTES + 1] = {
		[0 ... SHA256_BYTES] = 0xff,
	};
	uint8_t end[SHA256_BYTES];
	int r, more;

	{
		_stmt_ st = stmt(s, ST_BLOB_PUTS_OLD);
		if (!st)
			return stmt_failed(s);
		db_bind_int64(st, 1, now_ns);
		if ((r = exec_stmt(s, st, "forget when contents were put")) < 0)
			return r;
	}
	if ((more = sweep_end(s, sw->after, sw->len, n, end)) < 0)
		return more;
	_stmt_ st = stmt(s, ST_BLOBS_COLLECT);
	if (!st)
		return stmt_failed(s);
	db_bind_blob(st, 1, sw->len ? (const void *)sw->after : "", sw->len);
	db_bind_blob(st, 2, more ? end : last, more ? SHA256_BYTES : sizeof(last));
	if ((r = exec_stmt(s, st, "collect contents")) < 0)
		return r;
	memcpy(sw->after, end, SHA256_BYTES);
	sw->len = more ? SHA256_BYTES : 0; /* at the end: the next starts again */
	return (int)db_changes(st);
}

int store_blobs_collect(struct store *s, int64_t now_ns, struct store_sweep *sw, size_t n)
{
	bool own = !db_in_transaction(s->db);
	int r = own ? store_begin(s) : 0;

	if (r == 0)
		r = blobs_collect(s, now_ns, sw, n ? n : 1);
	if (own && r >= 0) {
		int c = store_commit(s);
		r = c < 0 ? c : r;
	}
	if (own && r < 0)
		store_rollback(s);
	return r;
}

int store_blob_put(struct store *s, const uint8_t sha256[SHA256_BYTES], const void *data,
		   size_t len)
{
	struct store_blob one = { .data = data, .len = len };

	memcpy(one.sha256, sha256, SHA256_BYTES);
	return store_blobs_put(s, &one, 1);
}

int store_blob_get(struct store *s, const uint8_t sha256[SHA256_BYTES], char **data, size_t *len)
{
	_stmt_ st = stmt(s, ST_BLOB_GET);
	int r;

	if (!st)
		return stmt_failed(s);
	db_bind_blob(st, 1, sha256, 32);
	if ((r = one_row(s, st, "read a file's content")) < 0)
		return r;
	const void *p = db_col_blob(st, 0, len);
	*data = malloc(*len + 1);
	if (!*data)
		return -ENOMEM;
	if (*len)
		memcpy(*data, p, *len);
	(*data)[*len] = '\0';
	return 0;
}

int store_blobs_each(struct store *s, const uint8_t (*sha256s)[SHA256_BYTES], size_t n,
		     int (*fn)(void *arg, const uint8_t *sha256, const void *data, size_t len),
		     void *arg)
{
	int r = 0;

	for (size_t i = 0; i < n && r == 0; i += BLOB_BATCH) {
		_stmt_ st = stmt(s, ST_BLOBS_GET);
		int rc = 0;

		if (!st)
			return stmt_failed(s);
		/* A short last batch asks for its last one again: IN takes
		 * it once. */
		for (size_t j = 0; j < BLOB_BATCH; j++)
			db_bind_blob(st, (int)j + 1, sha256s[i + j < n ? i + j : n - 1],
				     SHA256_BYTES);
		while (r == 0 && (rc = db_step(st)) > 0) {
			uint8_t sha[SHA256_BYTES];
			size_t len;
			const void *p = db_col_blob(st, 1, &len);
			if (col_sha256(st, 0, sha))
				r = fn(arg, sha, p, len);
		}
		if (r == 0 && rc < 0)
			r = fail(s, rc, "read files' contents");
	}
	return r;
}

int store_run_begin(struct store *s, const char *user, const char *thread, int64_t before_snapshot,
		    int64_t at_ns, int64_t *id)
{
	return store_run_begin_as(s, user, thread, before_snapshot, at_ns, RUN_AGENT, 0, id);
}

int store_run_begin_as(struct store *s, const char *user, const char *thread,
		       int64_t before_snapshot, int64_t at_ns, enum run_kind kind, int64_t undoes,
		       int64_t *id)
{
	_stmt_ st = thread_stmt(s, ST_RUN_ADD, user, thread);

	if (!st)
		return stmt_failed(s);
	db_bind_int64(st, 3, at_ns);
	db_bind_int64(st, 4, before_snapshot);
	db_bind_int64(st, 5, (int)kind);
	if (undoes)
		db_bind_int64(st, 6, undoes);
	return insert_id(s, st, "record a run", id);
}

static char *dup_col(struct db_stmt *st, int i)
{
	return db_col_null(st, i) ? NULL : strdup(col_text(st, i));
}

/* The run in ST's row (RUN_COLUMNS, then its texts if TEXTS) into OUT. */
static int run_row(struct db_stmt *st, bool texts, struct store_run *out)
{
	memset(out, 0, sizeof(*out));
	out->id = db_col_int64(st, 0);
	out->user = dup_col(st, 1);
	out->thread = dup_col(st, 2);
	out->begun_ns = db_col_int64(st, 3);
	out->ended = !db_col_null(st, 4);
	out->ended_ns = db_col_int64(st, 4);
	out->before_snapshot = db_col_int64(st, 5);
	out->after_snapshot = db_col_int64(st, 6);
	out->kind = (enum run_kind)db_col_int64(st, 7);
	out->undoes = db_col_int64(st, 8);
	out->kept = db_col_int64(st, 9) != 0;
	out->held_bytes = db_col_null(st, 10) ? -1 : db_col_int64(st, 10);
	out->clean = db_col_int64(st, 11) != 0;
	if (texts) {
		out->summary = dup_col(st, RUN_TEXTS);
		out->receipt = dup_col(st, RUN_TEXTS + 1);
	}
	if (!out->user || !out->thread) {
		store_run_free(out);
		return -ENOMEM;
	}
	return 0;
}

int store_run_get(struct store *s, int64_t id, struct store_run *out)
{
	_stmt_ st = stmt(s, ST_RUN_GET);
	int rc;

	memset(out, 0, sizeof(*out));
	if (!st)
		return stmt_failed(s);
	db_bind_int64(st, 1, id);
	if ((rc = one_row(s, st, "read a run")) < 0)
		return rc;
	return run_row(st, true, out);
}

void store_run_free(struct store_run *r)
{
	free(r->user);
	free(r->thread);
	free(r->summary);
	free(r->receipt);
	memset(r, 0, sizeof(*r));
}

int store_run_end(struct store *s, int64_t id, int64_t after_snapshot, int64_t at_ns,
		  const char *summary, const char *receipt)
{
	_stmt_ st = stmt(s, ST_RUN_END);
	int r;

	if (!st)
		return stmt_failed(s);
	db_bind_int64(st, 1, at_ns);
	db_bind_int64(st, 2, after_snapshot);
	if (summary)
		db_bind_text(st, 3, summary);
	db_bind_text(st, 4, receipt);
	db_bind_int64(st, 5, id);
	r = exec_stmt(s, st, "record the end of a run");
	if (r == 0 && db_changes(st) != 1)
		r = -EALREADY;
	return r;
}

struct events_bind {
	const char *user, *thread;
	const struct store_event *const *v;
};

/* Binds event I as the J-th row of ST. */
static void bind_event(void *arg, struct db_stmt *st, int j, size_t i)
{
	const struct events_bind *b = arg;
	const struct store_event *e = b->v[i];
	int at = j * JOURNAL_ROW_PARAMS;

	db_bind_text(st, at + 1, b->user);
	db_bind_text(st, at + 2, b->thread);
	db_bind_int64(st, at + 3, e->at_ns);
	db_bind_text(st, at + 4, e->op);
	db_bind_text(st, at + 5, e->path);
	if (e->path2)
		db_bind_text(st, at + 6, e->path2);
	db_bind_int64(st, at + 7, (int)e->pid);
	db_bind_text(st, at + 8, e->comm);
	if (e->pre)
		bind_file(st, at + 9, e->pre);
	if (e->object)
		db_bind_text(st, at + 17, e->object);
	if (e->meta)
		db_bind_blob(st, at + 18, e->meta, (int)e->meta_len);
}

static int journal_add(struct store *s, const char *user, const char *thread,
		       const struct store_event *const *v, size_t n)
{
	struct events_bind b = { user, thread, v };

	return exec_batched(s, ST_JOURNAL_ADD_1, n, bind_event, &b, "record journal rows");
}

int store_journal_add_many(struct store *s, const char *user, const char *thread,
			   const struct store_event *const *v, size_t n)
{
	/* A row's id is taken in a writer's turn (db_begin_write), so that
	 * ids are committed in their order: a follower reading up to the
	 * last id never skips one that commits later. */
	if (db_in_transaction(s->db))
		return journal_add(s, user, thread, v, n);
	int r = store_begin(s);
	if (r == 0)
		r = journal_add(s, user, thread, v, n);
	if (r == 0)
		r = store_commit(s);
	if (r < 0)
		store_rollback(s);
	return r;
}

int store_journal_add(struct store *s, const char *user, const char *thread,
		      const struct store_event *e)
{
	return store_journal_add_many(s, user, thread, &e, 1);
}

struct journal_ctx {
	int (*fn)(void *arg, const struct store_event *e);
	void *arg;
};

/* The event of row ST (ST_JOURNAL_EACH's columns, which
 * ST_JOURNAL_AFTER's begin with) to FN, a pre-image with it. */
static int event_of(struct db_stmt *st, int (*fn)(void *arg, const struct store_event *e),
		    void *arg)
{
	struct snap_file pre = { 0 };
	size_t meta_len;
	struct store_event e = {
		.at_ns = db_col_int64(st, 0),
		.op = col_text(st, 1),
		.path = col_text(st, 2),
		.path2 = db_col_null(st, 3) ? NULL : col_text(st, 3),
		.pid = (pid_t)db_col_int64(st, 4),
		.comm = col_text(st, 5),
		.object = db_col_null(st, 14) ? NULL : col_text(st, 14),
		.meta = db_col_blob(st, 15, &meta_len),
	};
	e.meta_len = meta_len;
	int r = 0;

	if (!strcmp(e.op, "preimage")) {
		pre.path = (char *)e.path;
		pre.root = root_name(e.path + (strncmp(e.path, "/mnt/user-data/", 15) ? 0 : 15));
		e.pre = &pre;
		r = col_file(st, 6, &pre);
	}
	if (r == 0)
		r = fn(arg, &e);
	free(pre.target);
	return r;
}

static int journal_row(struct db_stmt *st, void *ctx)
{
	struct journal_ctx *c = ctx;

	return event_of(st, c->fn, c->arg);
}

int store_run_open_since(struct store *s, const char *user, const char *thread, int64_t *begun_ns)
{
	_stmt_ st = thread_stmt(s, ST_RUN_OPEN, user, thread);
	int r;

	if (!st)
		return stmt_failed(s);
	r = db_step(st);
	if (r > 0) {
		*begun_ns = db_col_int64(st, 0);
		return 1;
	}
	return r == 0 ? 0 : fail(s, r, "look for an open run");
}

int store_journal_each(struct store *s, const char *user, const char *thread, int64_t from_ns,
		       int64_t to_ns, int (*fn)(void *arg, const struct store_event *e), void *arg)
{
	_stmt_ st = thread_stmt(s, ST_JOURNAL_EACH, user, thread);
	struct journal_ctx c = { fn, arg };

	if (!st)
		return stmt_failed(s);
	db_bind_int64(st, 3, from_ns);
	db_bind_int64(st, 4, to_ns);
	return each_row(s, st, "read the journal", journal_row, &c);
}

/* 0 if run RUN is open, -EALREADY if it has ended, -ENOENT if there is
 * no such run. */
static int run_state(struct store *s, int64_t run)
{
	_stmt_ st = stmt(s, ST_RUN_STATE);
	int rc;

	if (!st)
		return stmt_failed(s);
	db_bind_int64(st, 1, run);
	if ((rc = one_row(s, st, "read a run")) < 0)
		return rc;
	return db_col_int64(st, 0) ? -EALREADY : 0;
}

int store_present(struct store *s, int64_t run, const char *tool, const char *const *paths,
		  size_t n, int64_t at_ns)
{
	int r = store_begin(s);

	/* The run's state is read inside the write transaction: run end
	 * holds the same lock from reading the presentations to ending. */
	if (r == 0)
		r = run_state(s, run);
	for (size_t i = 0; r == 0 && i < n; i++) {
		_stmt_ st = stmt(s, ST_PRESENT_ADD);
		if (!st) {
			r = stmt_failed(s);
			break;
		}
		db_bind_int64(st, 1, run);
		db_bind_int64(st, 2, at_ns);
		db_bind_text(st, 3, tool);
		db_bind_text(st, 4, paths[i]);
		r = exec_stmt(s, st, "record a presentation");
	}
	if (r == 0)
		r = store_commit(s);
	if (r < 0)
		store_rollback(s);
	return r;
}

struct presented_ctx {
	int (*fn)(void *arg, const char *tool, const char *path);
	void *arg;
};

static int presented_row(struct db_stmt *st, void *ctx)
{
	struct presented_ctx *c = ctx;

	return c->fn(c->arg, col_text(st, 0), col_text(st, 1));
}

int store_presented_each(struct store *s, int64_t run,
			 int (*fn)(void *arg, const char *tool, const char *path), void *arg)
{
	_stmt_ st = stmt(s, ST_PRESENTED_EACH);
	struct presented_ctx c = { fn, arg };

	if (!st)
		return stmt_failed(s);
	db_bind_int64(st, 1, run);
	return each_row(s, st, "read the presentations", presented_row, &c);
}

int store_run_undone_by(struct store *s, int64_t run, int64_t *undo)
{
	_stmt_ st = stmt(s, ST_RUN_UNDONE_BY);
	int rc;

	if (!st)
		return stmt_failed(s);
	db_bind_int64(st, 1, run);
	rc = db_step(st);
	if (rc > 0) {
		*undo = db_col_int64(st, 0);
		return 1;
	}
	return rc == 0 ? 0 : fail(s, rc, "look for the undo of a run");
}

int store_run_keep(struct store *s, int64_t run)
{
	_stmt_ st = stmt(s, ST_RUN_KEEP);

	if (!st)
		return stmt_failed(s);
	db_bind_int64(st, 1, run);
	return exec_stmt(s, st, "mark a run kept");
}

int store_run_held(struct store *s, int64_t run, int64_t bytes)
{
	_stmt_ st = stmt(s, ST_RUN_HELD);

	if (!st)
		return stmt_failed(s);
	if (bytes < 0)
		db_bind_null(st, 1);
	else
		db_bind_int64(st, 1, bytes);
	db_bind_int64(st, 2, run);
	return exec_stmt(s, st, "record what a run holds");
}

int store_run_clean(struct store *s, int64_t run, bool clean)
{
	_stmt_ st = stmt(s, ST_RUN_CLEAN);

	if (!st)
		return stmt_failed(s);
	db_bind_int64(st, 1, clean);
	db_bind_int64(st, 2, run);
	return exec_stmt(s, st, "record whether an undo was whole");
}

struct runs_ctx {
	struct store_run *v;
	size_t n, cap;
	bool texts;
};

static int runs_row(struct db_stmt *st, void *ctx)
{
	struct runs_ctx *c = ctx;

	if (array_grow(c->v, c->n, c->cap) < 0)
		return -ENOMEM;
	int r = run_row(st, c->texts, &c->v[c->n]);
	if (r == 0)
		c->n++;
	return r;
}

int store_runs_each(struct store *s, const char *user, const char *thread, bool texts,
		    int (*fn)(void *arg, const struct store_run *r), void *arg)
{
	struct runs_ctx c = { .texts = texts };
	int r;

	{
		_stmt_ st = thread_stmt(s, texts ? ST_RUNS_EACH_TEXTS : ST_RUNS_EACH, user, thread);
		if (!st)
			return stmt_failed(s);
		r = each_row(s, st, "list the runs", runs_row, &c);
	}
	/* FN is called once the listing is done: it may use the store. */
	for (size_t i = 0; r == 0 && i < c.n; i++)
		r = fn(arg, &c.v[i]);
	for (size_t i = 0; i < c.n; i++)
		store_run_free(&c.v[i]);
	free(c.v);
	return r;
}

int store_journal_last_id(struct store *s, int64_t *id)
{
	_stmt_ st = stmt(s, ST_JOURNAL_LAST);
	int rc;

	if (!st)
		return stmt_failed(s);
	if ((rc = one_row(s, st, "read the journal's end")) < 0)
		return rc;
	*id = db_col_int64(st, 0); /* NULL (no row): 0 */
	return 0;
}

struct after_ctx {
	int (*fn)(void *arg, const struct store_event *e, int64_t id, int64_t run);
	void *arg;
	int64_t last; /* the id of the last row given to FN */
	int64_t run;  /* its run */
	int n;
};

/* Hands an event to the watcher's FN with the row's id and run. */
static int after_event(void *ctx, const struct store_event *e)
{
	struct after_ctx *c = ctx;

	return c->fn(c->arg, e, c->last, c->run);
}

static int after_row(struct db_stmt *st, void *ctx)
{
	struct after_ctx *c = ctx;

	c->last = db_col_int64(st, 16);
	c->run = db_col_int64(st, 17);
	c->n++;
	return event_of(st, after_event, c);
}

int store_journal_after(struct store *s, const char *user, const char *thread, int64_t after_id,
			int limit, int64_t *scanned,
			int (*fn)(void *arg, const struct store_event *e, int64_t id, int64_t run),
			void *arg)
{
	struct after_ctx c = { fn, arg, after_id, 0, 0 };
	int64_t end;
	/* The end first: every row up to it is committed (one writer at a
	 * time takes the next id), so the read below misses none of them
	 * and the next one can start after END. */
	int r = store_journal_last_id(s, &end);

	if (r < 0)
		return r;
	_stmt_ st = thread_stmt(s, ST_JOURNAL_AFTER, user, thread);
	if (!st)
		return stmt_failed(s);
	db_bind_int64(st, 3, after_id);
	db_bind_int64(st, 4, end);
	db_bind_int64(st, 5, limit);
	r = each_row(s, st, "read the journal", after_row, &c);
	if (r != 0)
		return r;
	*scanned = c.n < limit ? (end > after_id ? end : after_id) : c.last;
	return c.n;
}

/* ---- journal compaction (compact.h has the rules) ------------------------ */

struct spans {
	struct run_span *v;
	size_t n, cap;
};

static int span_row(void *arg, const struct store_run *run)
{
	struct spans *sp = arg;

	if (array_grow(sp->v, sp->n, sp->cap) < 0)
		return -ENOMEM;
	sp->v[sp->n++] = (struct run_span){ run->begun_ns, run->ended ? run->ended_ns : INT64_MAX };
	return 0;
}

struct window {
	struct compact_row *v;
	size_t n, cap;
};

static void window_free(struct window *w)
{
	for (size_t i = 0; i < w->n; i++) {
		free(w->v[i].op);
		free(w->v[i].path);
		free(w->v[i].path2);
	}
	free(w->v);
}

static int window_row(struct db_stmt *st, void *ctx)
{
	struct window *w = ctx;

	if (array_grow(w->v, w->n, w->cap) < 0)
		return -ENOMEM;
	struct compact_row *r = &w->v[w->n++];
	*r = (struct compact_row){ .id = db_col_int64(st, 0), .at_ns = db_col_int64(st, 1) };
	r->op = strdup(col_text(st, 2));
	r->path = strdup(col_text(st, 3));
	r->path2 = db_col_null(st, 4) ? NULL : strdup(col_text(st, 4));
	return r->op && r->path && (r->path2 || db_col_null(st, 4)) ? 0 : -ENOMEM;
}

/* The id of the one row of thread statement ID (parameter 3: ARG) in
 * *OUT: 1, or 0 if it has none (or NULL). */
static int thread_id_of(struct store *s, enum stmt_id id, const char *user, const char *thread,
			int64_t arg, int64_t *out)
{
	_stmt_ st = thread_stmt(s, id, user, thread);
	int r;

	if (!st)
		return stmt_failed(s);
	db_bind_int64(st, 3, arg);
	if ((r = one_row(s, st, "read the journal")) < 0)
		return r == -ENOENT ? 0 : r;
	if (db_col_null(st, 0))
		return 0;
	*out = db_col_int64(st, 0);
	return 1;
}

/* The id up to which USER's THREAD's rows may be compacted at NOW_NS
 * into *TO: 1, or 0 if none may. */
static int journal_horizon(struct store *s, const char *user, const char *thread, int64_t now_ns,
			   int64_t *to)
{
	int64_t recent;
	int r = thread_id_of(s, ST_JOURNAL_KEEP_FROM, user, thread, STORE_JOURNAL_KEEP_ROWS, to);

	if (r <= 0)
		return r;
	if ((r = thread_id_of(s, ST_JOURNAL_RECENT, user, thread, now_ns - STORE_JOURNAL_KEEP_NS,
			      &recent)) < 0)
		return r;
	if (r && recent <= *to)
		*to = recent - 1;
	return 1;
}

static void bind_drop(void *arg, struct db_stmt *st, int j, size_t i)
{
	db_bind_int64(st, j + 1, ((const int64_t *)arg)[i]);
}

static int journal_compact(struct store *s, const char *user, const char *thread, int64_t now_ns,
			   int64_t *upto)
{
	struct spans runs = { 0 };
	struct window w = { 0 };
	_cleanup_(freep) int64_t *drop = NULL;
	int64_t to;
	int r = journal_horizon(s, user, thread, now_ns, &to), n = 0;

	if (r <= 0 || to <= *upto)
		return r < 0 ? r : 0;
	if ((r = store_runs_each(s, user, thread, false, span_row, &runs)) < 0)
		goto out;
	{
		_stmt_ st = thread_stmt(s, ST_JOURNAL_WINDOW, user, thread);
		if (!st) {
			r = stmt_failed(s);
			goto out;
		}
		db_bind_int64(st, 3, *upto);
		db_bind_int64(st, 4, to);
		db_bind_int64(st, 5, STORE_JOURNAL_COMPACT_MAX);
		if ((r = each_row(s, st, "read the journal", window_row, &w)) < 0)
			goto out;
	}
	for (size_t i = 0; i < w.n / 2; i++) { /* read newest first: in order */
		struct compact_row t = w.v[i];
		w.v[i] = w.v[w.n - 1 - i];
		w.v[w.n - 1 - i] = t;
	}
	if ((r = journal_churn(w.v, w.n, runs.v, runs.n)) <= 0)
		goto out;
	if (!(drop = malloc((size_t)r * sizeof(*drop)))) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < w.n; i++)
		if (w.v[i].drop)
			drop[n++] = w.v[i].id;
	r = exec_batched(s, ST_JOURNAL_DROP_1, (size_t)n, bind_drop, drop, "drop journal rows");
	r = r < 0 ? r : n;
out:
	if (r >= 0)
		*upto = to;
	free(runs.v);
	window_free(&w);
	return r;
}

int store_journal_compact(struct store *s, const char *user, const char *thread, int64_t now_ns,
			  int64_t *upto)
{
	/* In a writer's turn: a run begun meanwhile is seen, or begins
	 * after every row this drops. */
	int r = store_begin(s);

	if (r < 0)
		return r;
	if ((r = journal_compact(s, user, thread, now_ns, upto)) >= 0) {
		int c = store_commit(s);
		r = c < 0 ? c : r;
	}
	if (r < 0)
		store_rollback(s);
	return r;
}
