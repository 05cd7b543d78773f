/* writer.h - the view daemon's store writer: rows queued from request
 * handlers, written by one thread in batches.
 *
 * Handlers only copy a row into a queue (no SQLite, no disk I/O on the
 * FUSE request path). The thread wakes on the first row, waits a few
 * milliseconds for more, and writes whatever has gathered in one
 * transaction (group commit). A batch that fails is tried again row by
 * row; a row that still cannot be written (a damaged store, a disk full,
 * a server gone) fails the writer closed: the record has a hole from
 * there on, so the log names each change not recorded, the view is told
 * to take no more changes (store_writer_on_failed()), and every later
 * row is dropped.
 *
 * The writer owns the store connection it is given.
 */
#ifndef SBX_WRITER_H
#define SBX_WRITER_H

#include "store.h"
#include "common/hash.h"

struct store_writer;

/* Starts the thread for the rows of USER's THREAD. Returns NULL (S
 * closed) on failure. */
struct store_writer *store_writer_start(struct store *s, const char *user, const char *thread);
/* Once the queue has been empty for MS (0: never, the default), the
 * thread lets the store's connection go until its next batch
 * (store_rest(): a PostgreSQL server process an idle view need not hold). */
void store_writer_rest_after(struct store_writer *w, int64_t ms);
/* Writes what is queued, stops the thread, closes the store. */
void store_writer_stop(struct store_writer *w);

/* Each queues a row, copying every string, and never blocks on the
 * database. */
void store_writer_mark_put(struct store_writer *w, const struct store_mark *m);
/* Queues store_mark_hash() of M (hashed), with the text of the content
 * (TEXT, LEN; none if NULL) in the same batch: the text needs no hold, and
 * the sweep takes it if the mark has moved on. */
void store_writer_mark_hash(struct store_writer *w, const struct store_mark *m, const void *text,
			    size_t len);
/* Queues store_mark_drop() of PATH (INO not 0: only a mark of that inode). */
void store_writer_mark_drop(struct store_writer *w, const char *path, uint64_t ino);
void store_writer_audit(struct store_writer *w, const struct store_audit *a);
void store_writer_event(struct store_writer *w, const struct store_event *e);
/* Queues "preimage" event E whose description the thread reads from FD
 * (a readable regular file; the thread closes it): the caller does not
 * wait for the read. Returns 0, or -EBUSY (too many such fds wait already;
 * FD is still the caller's) or -ENOMEM. */
int store_writer_preimage_fd(struct store_writer *w, const struct store_event *e, int fd);
struct store_origin;
/* Queues origin O (origins.h); with FD (a readable regular file, >= 0:
 * the content copied up, which nothing changes), the thread hashes it
 * into O's sha256 and keeps its text, and closes FD. Returns 0, or
 * -EBUSY (too many fds wait already) or -ENOMEM, FD still the
 * caller's. */
int store_writer_origin(struct store_writer *w, const struct store_origin *o, int fd);
/* File content kept by SHA-256 (store_blob_put()), for a pre-image. */
void store_writer_blob(struct store_writer *w, const uint8_t sha256[SHA256_BYTES], const void *data,
		       size_t len);
struct snap_file;
/* The same as a snapshot_keep callback (ARG: the writer): the text of a
 * file snapshot_describe() hashed. Returns 0. */
int store_writer_keep_text(void *writer, const struct snap_file *f, const uint8_t *data,
			   size_t len);

/* FN(ARG, WHY) is called (once, from the writer's thread) when the store
 * refuses a batch for its fence (lease.h: another host took the thread
 * over); that batch and every later row are dropped. */
void store_writer_on_fenced(struct store_writer *w, void (*fn)(void *arg, const char *why),
			    void *arg);

/* FN(ARG, WHY) is called (once, from the writer's thread) when rows
 * could not be written: WHY says how many and the store's error. */
void store_writer_on_failed(struct store_writer *w, void (*fn)(void *arg, const char *why),
			    void *arg);

/* Waits until every row queued before the call is written (tests, and
 * sbxfs before it reports an unmount). */
void store_writer_sync(struct store_writer *w);

#endif
