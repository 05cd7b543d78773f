/* gate.h - read-before-write: read marks and the decisions they drive.
 *
 * A read mark says "this thread has read version V of this file", where a
 * version is (inode, size, mtime_ns, ctime_ns) of the backing file. The
 * view sets a mark when content is read through it (READ, a read fault of
 * an mmap, the source of copy_file_range) and, in enforce and audit modes,
 * moves it to whatever its own writes produced. A change to the content
 * of an existing, non-empty regular file is allowed only while its mark is
 * current: the version in the mark equals the file's version at decision
 * time. Where only metadata differs (a rewrite with identical bytes on the
 * host), a content hash taken after the read settles it.
 *
 * Marks are keyed by backing identity (st_dev, st_ino), so they survive the
 * kernel forgetting an inode and follow renames. Each one is persisted by
 * virtual path through the store writer; a daemon started later loads them
 * and uses one only if the file's version still matches it.
 *
 * A file's gate lock (one of a fixed set of striped mutexes) makes a
 * decision and the change it authorizes atomic with respect to every other
 * change through the view, so two handles racing with a stale mark cannot
 * both win. Hold at most one gate lock at a time.
 *
 * Every function accepts a NULL gate (mode off) and then does nothing.
 */
#ifndef SBX_GATE_H
#define SBX_GATE_H

#include "store/store.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct store;
struct store_writer;

enum gate_mode {
	GATE_ENFORCE, /* refuse; own writes move the mark */
	GATE_STRICT,  /* refuse; every change needs a read of the version */
	GATE_AUDIT,   /* allow, but record what enforce would refuse */
	GATE_OFF,
};

/* Parses "enforce", "strict", "audit" or "off". Returns 0 or -EINVAL. */
int gate_mode_parse(const char *s, enum gate_mode *out);
const char *gate_mode_name(enum gate_mode mode);

struct gate;

/* A gate in MODE (not GATE_OFF); UNLINK also gates unlink and rmdir.
 * Rows go to W (may be NULL: marks live in memory only). */
struct gate *gate_new(enum gate_mode mode, bool unlink, struct store_writer *w);
void gate_free(struct gate *g);
/* Sends rows to W from now on (after gate_load(), which uses W's store
 * connection before W's thread starts). */
void gate_set_writer(struct gate *g, struct store_writer *w);
/* Loads the marks an earlier daemon recorded for USER's THREAD, before the
 * writer that owns S starts. Returns the number loaded or -errno. */
int gate_load(struct gate *g, struct store *s, const char *user, const char *thread);

enum gate_mode gate_mode(const struct gate *g);
bool gate_unlink(const struct gate *g);
/* True while marks loaded by gate_load() may still be claimed: callers
 * then pass virtual paths to gate_check(). */
bool gate_wants_path(const struct gate *g);

/* Reads: ST is the file's version right before content was read and
 * AFTER right after. gate_read_is_news() is the cheap test (no mark, or a
 * different one); gate_note_read() then sets the mark if the two agree,
 * and queues a content hash of small files read through the readable
 * FD. PATH is the file's virtual path. */
bool gate_read_is_news(struct gate *g, const struct stat *st);
void gate_note_read(struct gate *g, const struct stat *st, const struct stat *after, int fd,
		    const char *path);

enum gate_verdict {
	GATE_OK,
	GATE_NEVER_READ, /* no mark */
	GATE_CHANGED,	 /* the file changed since the mark's read */
};

/* A change through the view to one file, from gate_lock() to
 * gate_unlock(). */
struct gate_ticket {
	struct gate *g;
	pthread_mutex_t *lock;
	dev_t dev;
	ino_t ino;
	bool was_current;	   /* the mark matched ST at gate_lock() */
	bool fed;		   /* gate_note_written() took the change's bytes */
	enum gate_verdict verdict; /* of gate_check() */
	int64_t read_at_ns;	   /* GATE_CHANGED: when it was read */
	struct store_version base; /* GATE_CHANGED: the version read */
};

/* Takes the gate lock of the file whose current attributes are ST. */
void gate_lock(struct gate *g, struct gate_ticket *t, const struct stat *st);
/* Decides a content change (overwrite, truncate, replace) of the locked
 * file, whose attributes are still ST. FD is any fd of the file (the hash
 * fallback reopens it read-only); PATH its virtual path or NULL. An empty
 * file, a symlink or a special file always passes: nothing can be lost. A
 * directory (rmdir with --rbw-unlink) passes if it was ever listed or made
 * through the view. */
enum gate_verdict gate_check(struct gate_ticket *t, const struct stat *st, int fd,
			     const char *path);
/* Ends the change. AFTER: the attributes it left (NULL if it failed or the
 * file is gone from that name); they may be another file's, a stage that
 * took the change. CONTENT: it changed content (the mark moves to AFTER
 * in enforce and audit modes, and if that left the file empty, O_TRUNC
 * or a save's new stage, its written hash starts as for a new file);
 * otherwise it changed metadata only, and a mark current before it stays
 * current. */
void gate_unlock(struct gate_ticket *t, const struct stat *after, bool content);

/* Records a new file made by the view as read (enforce and audit). An
 * empty regular file also starts its written hash: while each write
 * through the view lands where the last one ended, gate_note_written()
 * streams its bytes into a SHA-256 (up to 16 KiB), and gate_persist()
 * keeps it as the version's hash without reading the file back. Any
 * other content change (one not fed, or made after the file changed
 * elsewhere) ends it, and so does a write past 16 KiB. */
void gate_note_created(struct gate *g, const struct stat *st);
/* With T locked for a write of SIZE bytes at OFF: true if they would feed
 * the file's written hash, so the caller should have them in memory. */
bool gate_hashes_write(const struct gate_ticket *t, off_t off, size_t size);
/* The N bytes at BUF were written at OFF, before gate_unlock(T). */
void gate_note_written(struct gate_ticket *t, off_t off, const void *buf, size_t n);

/* Records that the directory ST was listed through the view (--rbw-unlink:
 * rmdir needs it). */
void gate_note_listed(struct gate *g, const struct stat *st);

/* True if the file's mark changed since it was last stored; then
 * gate_persist() writes it to the store under PATH (after a writer's
 * close, an fsync, a rename), with the hash of the version if the
 * thread wrote that version itself (up to SNAPSHOT_HASH_MAX, no text
 * kept): a later host change of its times only is then compared by
 * content. The hash is the written hash if it covers the version, else
 * read in the background through FD (any fd of the file; -1: none). The
 * written hash ends here either way. A file with no name left (ST's
 * st_nlink 0) is not stored, and its mark stays dirty; one whose last
 * name goes while this runs (FD tells) has its row taken back out.
 * Directory marks stay in memory. */
bool gate_dirty(struct gate *g, const struct stat *st);
void gate_persist(struct gate *g, const struct stat *st, int fd, const char *path);
/* Forgets the stored mark of PATH (the name is gone). */
void gate_forget_path(struct gate *g, const char *path);

/* Writes the refusal (or, in audit mode, the would-be refusal) in T to the
 * log and the audit table; for GATE_CHANGED with what changed: the
 * version read and the current one (attributes ST, FD any fd of it), and
 * the current one's text to the store, so "sbx audit --diff" can show the
 * change (the text of the version read went there when it was read). */
void gate_report(struct gate *g, const struct gate_ticket *t, const struct stat *st, int fd,
		 const char *path, const char *op, pid_t pid, const char *comm);
/* Records a refusal the gate did not decide (a save over a file changed
 * on the host while open): to the audit table only; the caller logs. */
void gate_record_refusal(struct gate *g, const char *path, const char *op, const char *reason,
			 pid_t pid, const char *comm);
/* "never read" or "changed since it was read at 2026-11-30T08:12:03Z". */
void gate_reason(const struct gate_ticket *t, char *buf, size_t size);

/* Waits until queued content hashes are taken (the sync control:
 * journal_control). NULL: returns at once. */
void gate_settle(struct gate *g);

#endif
