/* writer.c - see writer.h. */
#include "writer.h"
#include "origins.h"
#include "snapshot.h"
#include "common/clock.h"
#include "common/hash.h"
#include "common/log.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How long the thread lets rows gather after the first one arrives: 3
 * ms, so that a change made alone is in the store (and in `sbx watch`)
 * within milliseconds; 20 ms while rows come in bulk (the last batch
 * held BULK_ROWS or more). A transaction writes each page it changed
 * once, however many of its rows changed it (a directory's marks, the
 * journal's tail): copying 8,000 files in (cp -a of /usr/include) cost
 * the thread 470-510 ms of CPU at 3 ms, 225-300 ms at 20. */
#define GATHER_NS (3 * 1000 * 1000)
#define GATHER_BULK_NS (20 * 1000 * 1000)
#define BULK_ROWS 8
/* Pre-images waiting to be read hold an fd each; beyond this many the
 * caller reads its own (store_writer_preimage_fd()). */
#define MAX_PENDING_FDS 256
/* After this many rows that may leave a content unreferred to (a mark
 * moved on or dropped, a content put), the thread takes a step of the
 * contents' sweep (store_blobs_collect()) of COLLECT_STEP: four looked at
 * for each such row, so the sweep goes round faster than they come. */
#define COLLECT_EVERY 256
#define COLLECT_STEP 1024
/* A pre-image's text may be put a batch before its row: it is held that
 * long. A read mark's text is queued with its mark, in one batch, and
 * needs no hold (store_writer_mark_hash()). */
#define WRITER_BLOB_HOLD_NS (1LL * 1000000000)
/* After this many journal rows, the thread compacts the thread's journal
 * (store_journal_compact()): the rows since the last time, less those
 * it never touches. */
#define COMPACT_EVERY 4096

enum row_kind {
	ROW_NONE,
	ROW_MARK_PUT,
	ROW_MARK_HASH,
	ROW_MARK_DROP,
	ROW_AUDIT,
	ROW_EVENT,
	ROW_BLOB,
	ROW_ORIGIN
};

struct row {
	struct row *next;
	enum row_kind kind;
	/* ROW_EVENT: a pre-image to read; ROW_ORIGIN: the content copied,
	 * to hash; or -1 */
	int fd;
	bool keeps_text; /* ROW_MARK_HASH: its text is the batch's row before */
	union {
		struct store_mark mark; /* strings point into text[] */
		struct store_audit audit;
		struct store_origin origin; /* path points into text[] */
		struct {
			struct store_event event;
			struct snap_file pre; /* event.pre points here */
		};
		struct {
			uint8_t sha256[SHA256_BYTES];
			size_t len;	 /* bytes in text[] */
			int64_t hold_ns; /* store_blobs_put_for() */
		} blob;
	};
	char text[];
};

struct store_writer {
	struct store *store;
	char *user, *thread;
	pthread_t thread_id;
	pthread_mutex_t lock;
	pthread_cond_t wake, done;
	struct row *head, **tail;
	uint64_t queued, written; /* rows, for store_writer_sync() */
	unsigned syncing;	  /* callers waiting in store_writer_sync() */
	unsigned fds;		  /* rows holding a pre-image fd */
	bool stopping;
	bool fenced;		/* the store refused its rows: they are dropped */
	bool failed;		/* a row could not be written: every later one is dropped */
	int64_t rest_ms;	/* idle this long, the connection goes (0: never) */
	unsigned since_collect; /* rows that may leave a content unreferred to */
	struct store_sweep sweep;
	unsigned since_compact; /* journal rows */
	int64_t compacted;	/* the id up to which the journal was compacted */
	void (*on_fenced)(void *arg, const char *why);
	void *on_fenced_arg;
	void (*on_failed)(void *arg, const char *why);
	void *on_failed_arg;
};

static int write_row(struct store_writer *w, const struct row *r)
{
	switch (r->kind) {
	case ROW_NONE:
		break;
	case ROW_MARK_PUT:
		return store_mark_put(w->store, w->user, w->thread, &r->mark);
	case ROW_MARK_HASH:
		return store_mark_hash(w->store, w->user, w->thread, &r->mark, r->keeps_text);
	case ROW_MARK_DROP:
		return store_mark_drop(w->store, w->user, w->thread, r->mark.path, r->mark.ino);
	case ROW_AUDIT:
		return store_audit_add(w->store, &r->audit);
	case ROW_EVENT:
		return store_journal_add(w->store, w->user, w->thread, &r->event);
	case ROW_ORIGIN: {
		int e = store_origin_put(w->store, w->user, w->thread, &r->origin);
		return e < 0 ? e : 0;
	}
	case ROW_BLOB: {
		struct store_blob b = { .data = r->text, .len = r->blob.len };
		memcpy(b.sha256, r->blob.sha256, SHA256_BYTES);
		return store_blobs_put_for(w->store, &b, 1, r->blob.hold_ns);
	}
	}
	return 0;
}

static struct row *row_new(struct store_writer *w, enum row_kind kind, size_t text);

/* The content of a pre-image read by the thread: a blob row, put before
 * the pre-image's own row (*LINK). */
struct blob_link {
	struct store_writer *w;
	struct row **link;
};

static int keep_blob(void *arg, const struct snap_file *f, const uint8_t *data, size_t len)
{
	struct blob_link *b = arg;
	struct row *r = row_new(b->w, ROW_BLOB, len);

	if (!r)
		return 0; /* the pre-image without its text */
	memcpy(r->blob.sha256, f->sha256, SHA256_BYTES);
	r->blob.len = len;
	r->blob.hold_ns = 0; /* its row is in the same batch */
	memcpy(r->text, data, len);
	r->next = *b->link;
	*b->link = r;
	b->link = &r->next;
	return 0;
}

/* Hashes the content copied up of origin row R (its fd), keeping its
 * text as a pre-image's is kept (*B): the base a three-way merge needs. */
static void read_origin(struct row *r, struct blob_link *b)
{
	char vpath[PATH_MAX];
	struct snap_file f = { 0 };
	struct stat st;

	/* The virtual path, for what snapshot_describe() never reads (a
	 * sensitive file's content). */
	snprintf(vpath, sizeof(vpath), "/mnt/user-data/workspace/%s", r->origin.path);
	if (fstat(r->fd, &st) == 0 &&
	    snapshot_describe(r->fd, &st, vpath, NULL, keep_blob, b, &f) == 0 && f.hashed) {
		r->origin.hashed = true;
		memcpy(r->origin.sha256, f.sha256, SHA256_BYTES);
	}
	snap_file_free(&f);
}

/* Reads the pre-images and origins of BATCH whose files were handed over
 * as fds, so that writing the batch (perhaps twice) needs no fd. */
static void read_preimages(struct store_writer *w, struct row **batch)
{
	unsigned closed = 0;

	for (struct row **link = batch; *link; link = &(*link)->next) {
		struct row *r = *link;
		struct stat st;

		if (r->fd < 0)
			continue;
		struct blob_link b = { w, link };
		if (r->kind == ROW_ORIGIN) {
			read_origin(r, &b);
			close(r->fd);
			r->fd = -1;
			closed++;
			link = b.link;
			continue;
		}
		int e = fstat(r->fd, &st) < 0 ? -errno
					      : snapshot_describe(r->fd, &st, r->event.path, NULL,
								  keep_blob, &b, &r->pre);
		close(r->fd);
		r->fd = -1;
		closed++;
		link = b.link; /* past the blob rows put before it */
		if (e < 0) {
			r->kind = ROW_NONE; /* it vanished: no pre-image */
			continue;
		}
		free(r->pre.path); /* the event's own path is the same */
		r->pre.path = (char *)r->event.path;
		r->event.pre = &r->pre;
	}
	if (closed) {
		pthread_mutex_lock(&w->lock);
		w->fds -= closed;
		pthread_mutex_unlock(&w->lock);
	}
}

/* Counts BATCH's rows that may leave a content nothing refers to, and
 * its journal rows; once there are enough, compacts the journal or takes
 * a step of the contents' sweep, on this thread, between batches, never
 * on a request's path. */
static void tidy(struct store_writer *w, const struct row *batch)
{
	int r;

	for (const struct row *row = batch; row; row = row->next) {
		w->since_collect += row->kind == ROW_MARK_PUT || row->kind == ROW_MARK_HASH ||
				    row->kind == ROW_MARK_DROP || row->kind == ROW_BLOB;
		w->since_compact += row->kind == ROW_EVENT;
	}
	if (w->failed || w->fenced)
		return;
	if (w->since_compact >= COMPACT_EVERY) {
		w->since_compact = 0;
		r = store_journal_compact(w->store, w->user, w->thread, realtime_ns(),
					  &w->compacted);
		if (r < 0)
			log_warn("store: the journal was not compacted: %s", strerror(-r));
	}
	if (w->since_collect >= COLLECT_EVERY) {
		w->since_collect = 0;
		r = store_blobs_collect(w->store, realtime_ns(), &w->sweep, COLLECT_STEP);
		if (r < 0)
			log_warn("store: contents not collected: %s", strerror(-r));
	}
}

static void free_rows(struct row *batch)
{
	while (batch) {
		struct row *next = batch->next;
		free(batch);
		batch = next;
	}
}

/* Events written by one call, at most (statements of 64 rows). */
#define EVENTS_AT_ONCE 256

/* Writes BATCH's rows in their order, each run of events in statements
 * of many rows (on PostgreSQL a statement is a round trip, and a row
 * alone costs the server a statement's work); -errno if one failed. */
static int write_rows(struct store_writer *w, struct row *batch)
{
	const struct store_event *events[EVENTS_AT_ONCE];
	size_t n = 0;
	int r = 0, e;

	for (struct row *row = batch; row; row = row->next) {
		if (row->kind == ROW_EVENT)
			events[n++] = &row->event;
		if (row->kind == ROW_EVENT && n < EVENTS_AT_ONCE && row->next)
			continue;
		if (n && (e = store_journal_add_many(w->store, w->user, w->thread, events, n)) < 0)
			r = e;
		n = 0;
		if (row->kind != ROW_EVENT && (e = write_row(w, row)) < 0)
			r = e;
	}
	return r;
}

/* Rows of BATCH were not written, for WHY: the record is broken from
 * here on (a journal with a hole cannot be undone through), so the view
 * is told to take no more changes, and every later row is dropped. */
static void write_failed(struct store_writer *w, const struct row *batch, int lost, int why)
{
	char msg[512];
	int shown = 0;

	for (const struct row *r = batch; r && shown < 20; r = r->next)
		if (r->kind == ROW_EVENT && ++shown)
			log_error("store: not recorded: %s %s", r->event.op, r->event.path);
	snprintf(msg, sizeof(msg),
		 "the store cannot record the view's changes (%d row%s of a batch not written: %s)",
		 lost, lost == 1 ? "" : "s", strerror(-why));
	log_error("%s", msg);
	w->failed = true;
	pthread_mutex_lock(&w->lock);
	void (*fn)(void *, const char *) = w->on_failed;
	void *arg = w->on_failed_arg;
	pthread_mutex_unlock(&w->lock);
	if (fn)
		fn(arg, msg);
}

/* Writes BATCH in one transaction (row by row if that fails, so one bad
 * row does not lose the others) and frees it. */
static void write_batch(struct store_writer *w, struct row *batch)
{
	read_preimages(w, &batch);
	if (w->failed) {
		free_rows(batch); /* said once, by write_failed() */
		return;
	}
	int begun = w->fenced ? -ESTALE : store_begin(w->store);
	if (begun == -ESTALE) {
		size_t n = 0;
		for (struct row *r = batch; r; r = r->next)
			n++;
		if (!w->fenced) {
			w->fenced = true;
			log_error("store: the thread's lease is no longer this view's: its rows"
				  " are refused (%zu in this batch), and every later one",
				  n);
			pthread_mutex_lock(&w->lock);
			void (*fn)(void *, const char *) = w->on_fenced;
			void *arg = w->on_fenced_arg;
			pthread_mutex_unlock(&w->lock);
			if (fn)
				fn(arg, "the store refused the view's rows: another host holds"
					" the thread's lease");
		}
		free_rows(batch);
		return;
	}
	int r = begun;
	bool txn = begun == 0;
	if (txn && (r = write_rows(w, batch)) == 0)
		r = store_commit(w->store);
	/* A statement of many rows that failed took its good rows with it:
	 * they are tried again one by one, outside a transaction. */
	if (r < 0) {
		int lost = 0, e;
		if (txn)
			store_rollback(w->store);
		log_warn("store: a batch of rows was not written (%s); retrying one by one",
			 strerror(-r));
		for (struct row *row = batch; row; row = row->next)
			if ((e = write_row(w, row)) < 0 && ++lost)
				r = e;
		if (lost)
			write_failed(w, batch, lost, r);
	}
	tidy(w, batch);
	free_rows(batch);
}

/* Waits (W locked) for a row or the stop; once idle for rest_ms, lets
 * the store's connection go (store_rest()) until the next batch. */
static void wait_for_rows(struct store_writer *w, bool *rested)
{
	while (!w->head && !w->stopping) {
		if (*rested || !w->rest_ms) {
			pthread_cond_wait(&w->wake, &w->lock);
			continue;
		}
		struct timespec until = deadline_in(CLOCK_REALTIME, w->rest_ms * 1000000);
		if (pthread_cond_timedwait(&w->wake, &w->lock, &until) == ETIMEDOUT && !w->head &&
		    !w->stopping) {
			pthread_mutex_unlock(&w->lock);
			store_rest(w->store);
			pthread_mutex_lock(&w->lock);
			*rested = true;
		}
	}
}

static void *writer_main(void *arg)
{
	struct store_writer *w = arg;
	bool rested = false;
	uint64_t last_batch = 0; /* rows */

	pthread_setname_np(pthread_self(), "sbxfs-store");

	pthread_mutex_lock(&w->lock);
	for (;;) {
		wait_for_rows(w, &rested);
		if (!w->head)
			break;
		rested = false;
		if (!w->stopping && !w->syncing) {
			struct timespec until = deadline_in(CLOCK_REALTIME, last_batch >= BULK_ROWS
										    ? GATHER_BULK_NS
										    : GATHER_NS);

			/* Woken early only by store_writer_sync() or _stop(). */
			while (!w->stopping && !w->syncing &&
			       pthread_cond_timedwait(&w->wake, &w->lock, &until) == 0)
				;
		}
		struct row *batch = w->head;
		uint64_t n = w->queued;
		last_batch = n - w->written;
		w->head = NULL;
		w->tail = &w->head;
		pthread_mutex_unlock(&w->lock);
		write_batch(w, batch);
		pthread_mutex_lock(&w->lock);
		w->written = n;
		pthread_cond_broadcast(&w->done);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

struct store_writer *store_writer_start(struct store *s, const char *user, const char *thread)
{
	struct store_writer *w = calloc(1, sizeof(*w));

	if (!w || !(w->user = strdup(user)) || !(w->thread = strdup(thread)))
		goto fail;
	w->store = s;
	w->tail = &w->head;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	pthread_cond_init(&w->done, NULL);
	if (pthread_create(&w->thread_id, NULL, writer_main, w) != 0) {
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->wake);
		pthread_cond_destroy(&w->done);
		goto fail;
	}
	return w;
fail:
	if (w) {
		free(w->user);
		free(w->thread);
		free(w);
	}
	store_close(s);
	return NULL;
}

void store_writer_rest_after(struct store_writer *w, int64_t ms)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->rest_ms = ms;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
}

void store_writer_stop(struct store_writer *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread_id, NULL);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->wake);
	pthread_cond_destroy(&w->done);
	store_close(w->store);
	free(w->user);
	free(w->thread);
	free(w);
}

void store_writer_sync(struct store_writer *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	uint64_t target = w->queued;
	w->syncing++;
	pthread_cond_signal(&w->wake);
	while (w->written < target)
		pthread_cond_wait(&w->done, &w->lock);
	w->syncing--;
	pthread_mutex_unlock(&w->lock);
}

/* Copies S into the row's text area at *AT; returns the copy. */
static const char *put_text(struct row *r, size_t *at, const char *s)
{
	char *dst = r->text + *at;
	size_t n = strlen(s) + 1;

	memcpy(dst, s, n);
	*at += n;
	return dst;
}

/* Queues the N rows chained from FIRST to LAST: in one batch. */
static void enqueue_rows(struct store_writer *w, struct row *first, struct row *last, unsigned n)
{
	pthread_mutex_lock(&w->lock);
	/* Only the first row of a batch wakes the thread: the rows that
	 * follow while it gathers must not cut the gathering short. */
	bool wake = !w->head;
	last->next = NULL;
	*w->tail = first;
	w->tail = &last->next;
	w->queued += n;
	if (wake)
		pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
}

static void enqueue(struct store_writer *w, struct row *r)
{
	enqueue_rows(w, r, r, 1);
}

static struct row *row_new(struct store_writer *w, enum row_kind kind, size_t text)
{
	struct row *r = w ? malloc(sizeof(*r) + text) : NULL;

	if (!r) {
		if (w)
			log_warn("store: out of memory; a row is not recorded");
		return NULL;
	}
	r->kind = kind;
	r->fd = -1;
	r->keeps_text = false;
	return r;
}

static struct row *mark_row(struct store_writer *w, enum row_kind kind, const struct store_mark *m)
{
	struct row *r = row_new(w, kind, strlen(m->path) + 1);
	size_t at = 0;

	if (!r)
		return NULL;
	r->mark = *m;
	r->mark.path = put_text(r, &at, m->path);
	return r;
}

/* A content row: held for HOLD_NS once written (store_blobs_put_for()). */
static struct row *blob_row(struct store_writer *w, const uint8_t sha256[SHA256_BYTES],
			    const void *data, size_t len, int64_t hold_ns)
{
	struct row *r = row_new(w, ROW_BLOB, len);

	if (!r)
		return NULL;
	memcpy(r->blob.sha256, sha256, SHA256_BYTES);
	r->blob.len = len;
	r->blob.hold_ns = hold_ns;
	memcpy(r->text, data, len);
	return r;
}

void store_writer_mark_put(struct store_writer *w, const struct store_mark *m)
{
	struct row *r = mark_row(w, ROW_MARK_PUT, m);

	if (r)
		enqueue(w, r);
}

void store_writer_mark_hash(struct store_writer *w, const struct store_mark *m, const void *text,
			    size_t len)
{
	struct row *r = mark_row(w, ROW_MARK_HASH, m);
	struct row *t = r && text ? blob_row(w, m->hash, text, len, 0) : NULL;

	if (!t) {
		if (r)
			enqueue(w, r); /* the hash without its text */
		return;
	}
	r->keeps_text = true;
	t->next = r;
	enqueue_rows(w, t, r, 2);
}

void store_writer_mark_drop(struct store_writer *w, const char *path, uint64_t ino)
{
	struct store_mark m = { .path = path, .ino = ino };
	struct row *r = mark_row(w, ROW_MARK_DROP, &m);

	if (r)
		enqueue(w, r);
}

void store_writer_audit(struct store_writer *w, const struct store_audit *a)
{
	const char *const *fields[] = { &a->path, &a->op, &a->comm, &a->reason, &a->mode };
	size_t text = 0, at = 0;
	struct row *r;

	for (size_t i = 0; i < sizeof(fields) / sizeof(*fields); i++)
		text += strlen(*fields[i]) + 1;
	r = row_new(w, ROW_AUDIT, text);
	if (!r)
		return;
	r->audit = *a;
	r->audit.user = w->user;
	r->audit.thread = w->thread;
	r->audit.path = put_text(r, &at, a->path);
	r->audit.op = put_text(r, &at, a->op);
	r->audit.comm = put_text(r, &at, a->comm);
	r->audit.reason = put_text(r, &at, a->reason);
	r->audit.mode = put_text(r, &at, a->mode);
	enqueue(w, r);
}

/* A row for event E, every string copied into it; NULL if out of memory. */
static struct row *event_row(struct store_writer *w, const struct store_event *e)
{
	const char *target = e->pre ? e->pre->target : NULL;
	size_t at = 0, text = strlen(e->op) + strlen(e->path) + strlen(e->comm) + 3 +
			      (e->path2 ? strlen(e->path2) + 1 : 0) +
			      (target ? strlen(target) + 1 : 0) +
			      (e->object ? strlen(e->object) + 1 : 0) + (e->meta ? e->meta_len : 0);
	struct row *r = row_new(w, ROW_EVENT, text);

	if (!r)
		return NULL;
	r->event = *e;
	r->event.op = put_text(r, &at, e->op);
	r->event.path = put_text(r, &at, e->path);
	r->event.path2 = e->path2 ? put_text(r, &at, e->path2) : NULL;
	r->event.comm = put_text(r, &at, e->comm);
	r->event.object = e->object ? put_text(r, &at, e->object) : NULL;
	if (e->meta) {
		/* Bytes, not a string: copied by length. */
		memcpy(r->text + at, e->meta, e->meta_len);
		r->event.meta = (const uint8_t *)r->text + at;
		at += e->meta_len;
	}
	if (e->pre) {
		r->pre = *e->pre;
		r->pre.path = (char *)r->event.path;
		r->pre.target = target ? (char *)put_text(r, &at, target) : NULL;
		r->event.pre = &r->pre;
	}
	return r;
}

void store_writer_event(struct store_writer *w, const struct store_event *e)
{
	struct row *r = event_row(w, e);

	if (r)
		enqueue(w, r);
}

/* Takes a place for a row holding an fd: true, or false if
 * MAX_PENDING_FDS rows hold one already. */
static bool fd_room(struct store_writer *w, int delta)
{
	pthread_mutex_lock(&w->lock);
	bool room = delta < 0 || w->fds < MAX_PENDING_FDS;
	if (room)
		w->fds += delta;
	pthread_mutex_unlock(&w->lock);
	return room;
}

/* Queues R (NULL: out of memory) with FD, for which fd_room() was
 * taken. Returns 0, or -ENOMEM (FD still the caller's). */
static int enqueue_with_fd(struct store_writer *w, struct row *r, int fd)
{
	if (!r) {
		fd_room(w, -1);
		return -ENOMEM;
	}
	r->fd = fd;
	enqueue(w, r);
	return 0;
}

int store_writer_preimage_fd(struct store_writer *w, const struct store_event *e, int fd)
{
	struct store_event bare = *e;

	bare.pre = NULL; /* the thread reads it from FD */
	if (!fd_room(w, 1))
		return -EBUSY;
	return enqueue_with_fd(w, event_row(w, &bare), fd);
}

/* A row for origin O, its path copied into it; NULL if out of memory. */
static struct row *origin_row(struct store_writer *w, const struct store_origin *o)
{
	struct row *r = row_new(w, ROW_ORIGIN, strlen(o->path) + 1);
	size_t at = 0;

	if (!r)
		return NULL;
	r->origin = *o;
	r->origin.path = put_text(r, &at, o->path);
	return r;
}

int store_writer_origin(struct store_writer *w, const struct store_origin *o, int fd)
{
	if (fd < 0) {
		struct row *r = origin_row(w, o);
		if (!r)
			return -ENOMEM;
		enqueue(w, r);
		return 0;
	}
	if (!fd_room(w, 1))
		return -EBUSY;
	return enqueue_with_fd(w, origin_row(w, o), fd);
}

void store_writer_blob(struct store_writer *w, const uint8_t sha256[SHA256_BYTES], const void *data,
		       size_t len)
{
	struct row *r = blob_row(w, sha256, data, len, WRITER_BLOB_HOLD_NS);

	if (r)
		enqueue(w, r);
}

int store_writer_keep_text(void *writer, const struct snap_file *f, const uint8_t *data, size_t len)
{
	store_writer_blob(writer, f->sha256, data, len);
	return 0;
}

void store_writer_on_failed(struct store_writer *w, void (*fn)(void *arg, const char *why),
			    void *arg)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->on_failed = fn;
	w->on_failed_arg = arg;
	pthread_mutex_unlock(&w->lock);
}

void store_writer_on_fenced(struct store_writer *w, void (*fn)(void *arg, const char *why),
			    void *arg)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->on_fenced = fn;
	w->on_fenced_arg = arg;
	pthread_mutex_unlock(&w->lock);
}
