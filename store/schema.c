/* schema.c - the store's schema (store_int.h, store_migrate()): each
 * engine's list of migrations and how a store is taken through them.
 * The only DDL; the statements of each kind of record are its file's. */
#include "store.h"
#include "store_int.h"

#include <errno.h>
#include <stdio.h>

/* An audit row stands for every refusal with its key (audit.c: the
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
 * read, for a refusal's diff; since version 18 MARK_TEXT_SQL's column),
 * a snapshot's file, a pre-image, an audit row's two versions, and since
 * version 17 an origin (ORIGINS_SQL). Each indexed where it is not NULL,
 * so that a content's referrers are a few lookups (store_blobs_collect());
 * blob_puts holds how long a content put is left alone, referred to or
 * not (a scan's texts go before its snapshot: store_blobs_put_for()). */
#define BLOB_REFS_SQL                                                                      \
	"CREATE INDEX marks_by_hash ON marks (hash) WHERE hash IS NOT NULL;"               \
	"CREATE INDEX snapshot_files_by_sha256 ON snapshot_files (sha256)"                 \
	" WHERE sha256 IS NOT NULL;"                                                       \
	"CREATE INDEX journal_by_sha256 ON journal (sha256) WHERE sha256 IS NOT NULL;"     \
	"CREATE INDEX audit_by_base ON audit (base_sha256) WHERE base_sha256 IS NOT NULL;" \
	"CREATE INDEX audit_by_cur ON audit (cur_sha256) WHERE cur_sha256 IS NOT NULL;"

/* An overlay's origins (origins.h): the project's object at each path
 * the agent first touched. INT and BYTES as in AUDIT_SAME_SQL. */
#define ORIGINS_SQL(INT, BYTES)                                                     \
	"CREATE TABLE origins ("                                                    \
	"  \"user\" TEXT NOT NULL, thread TEXT NOT NULL, path TEXT NOT NULL,"       \
	"  kind INTEGER NOT NULL, mode INTEGER NOT NULL, dev " INT " NOT NULL,"     \
	"  ino " INT " NOT NULL, size " INT " NOT NULL, mtime_ns " INT " NOT NULL," \
	"  ctime_ns " INT " NOT NULL, sha256 " BYTES ", at_ns " INT " NOT NULL,"    \
	"  PRIMARY KEY (\"user\", thread, path));"                                  \
	"CREATE INDEX origins_by_sha256 ON origins (sha256) WHERE sha256 IS NOT NULL;"

/* A read mark's text (text_sha256: the hash of the version read, where
 * its text is kept), apart from the hash every hashed mark has: the
 * contents' index then holds the few marks with a text, not every file
 * the thread wrote (an index of hashes takes a page write at a random
 * place per mark put or dropped: two thirds of the store's writes while
 * a tree is untarred or removed). BYTES as in AUDIT_SAME_SQL. */
#define MARK_TEXT_SQL(BYTES)                                                            \
	"ALTER TABLE marks ADD COLUMN text_sha256 " BYTES ";"                           \
	"UPDATE marks SET text_sha256 = hash WHERE hash IN (SELECT sha256 FROM blobs);" \
	"DROP INDEX marks_by_hash;"                                                     \
	"CREATE INDEX marks_by_text ON marks (text_sha256) WHERE text_sha256 IS NOT NULL;"

/* The AIO provisioner's sandboxes, the deployment's (sandboxes.h), and
 * where each host's sbx serve is reached. INT as in AUDIT_SAME_SQL. */
#define SANDBOXES_SQL(INT)                                                     \
	"CREATE TABLE sandboxes ("                                             \
	"  id TEXT PRIMARY KEY, \"user\" TEXT NOT NULL, thread TEXT NOT NULL," \
	"  \"key\" TEXT NOT NULL, generation TEXT NOT NULL,"                   \
	"  max_shell_sessions " INT " NOT NULL, created_ns " INT " NOT NULL);" \
	"CREATE INDEX sandboxes_by_thread ON sandboxes (\"user\", thread);"    \
	"CREATE TABLE serve_urls (host TEXT PRIMARY KEY, url TEXT NOT NULL,"   \
	"  pid " INT " NOT NULL, at_ns " INT " NOT NULL);"

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
	/* 7 -> 8: undo (op "keep": the file a view kept of PATH before it
	 * replaced or removed it, in the run's directory of pre-images, or
	 * the attributes it had); what made a run (0 an agent, 1 sbx run
	 * undo, 2 sbx restore); the run an undo undid; runs whose kept files
	 * were dropped. */
	"ALTER TABLE journal ADD COLUMN object TEXT;"
	"ALTER TABLE journal ADD COLUMN meta BLOB;"
	"ALTER TABLE runs ADD COLUMN kind INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE runs ADD COLUMN undoes INTEGER REFERENCES runs (id);"
	"ALTER TABLE runs ADD COLUMN kept INTEGER NOT NULL DEFAULT 0;"
	"CREATE INDEX journal_by_thread_id ON journal (user, thread, id);"
	"CREATE INDEX runs_by_undone ON runs (undoes);",
	/* 8 -> 9: the bytes an ended run's kept files take, once measured
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
	/* 15 -> 16: the provisioner's sandboxes (SANDBOXES). */
	SANDBOXES_SQL("INTEGER"),
	/* 16 -> 17: an overlay's origins (ORIGINS). */
	ORIGINS_SQL("INTEGER", "BLOB"),
	/* 17 -> 18: a read mark's text apart from its hash (MARK_TEXT). */
	MARK_TEXT_SQL("BLOB"),
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
	 * notification per transaction: the server folds the same ones). */
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
	[15] = SANDBOXES_SQL("BIGINT"),
	[16] = ORIGINS_SQL("BIGINT", "BYTEA"),
	[17] = MARK_TEXT_SQL("BYTEA"),
};

int store_schema_version(struct store *s)
{
	return db_version(store_db(s));
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
	if ((r = db_exec(store_db(s), steps[*v])) < 0 ||
	    (r = db_set_version(store_db(s), to)) < 0 || (r = store_commit(s)) < 0) {
		store_rollback(s);
		return r;
	}
	*v = to;
	return 0;
}

/* Brings the schema to version TARGET, one transaction per step so a
 * failure leaves a consistent earlier version. */
int store_migrate(struct store *s, int target, char *err, size_t errlen)
{
	const char *const *steps = db_engine(store_db(s)) == DB_SQLITE ? lite_migrations
								       : pg_migrations;
	int v = store_schema_version(s), r;

	if (v < 0) {
		snprintf(err, errlen, "cannot read the schema version: %s", db_errmsg(store_db(s)));
		return -EIO;
	}
	while (v < target) {
		int from = v;
		if ((r = migrate_step(s, steps, target, &v)) < 0) {
			snprintf(err, errlen, "cannot migrate the schema from version %d: %s", from,
				 db_errmsg(store_db(s)));
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
