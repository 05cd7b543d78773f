/* follow.c - see follow.h. */
#include "follow.h"
#include "store.h"
#include "common/home.h"
#include "common/clock.h"
#include "common/log.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

/* The second read after a write: SQLite writes a commit's frames to the
 * WAL, then publishes the commit in the wal-index (the -shm file, through
 * mmap: no inotify event). A read woken by the last frame's write can
 * come just before that and see nothing; this one sees it. */
#define RECHECK_MS 10

struct follow {
	struct store *store;
	char *user, *thread;
	int inotify;	    /* -1: none could be had; the caller's timeout only */
	bool listens;	    /* PostgreSQL: the store's notifications wake it */
	bool heard;	    /* one came while rows were read: the fd will not say so */
	int64_t cursor;	    /* the last event given out, or where it started */
	int64_t scanned;    /* the journal is read up to this id (any thread) */
	int64_t recheck_ms; /* CLOCK_MONOTONIC: a read is due then; 0: none */
};

/* The ops follow.h lists; every other row is the journal's own. */
static bool shown(const char *op)
{
	static const char *const ops[] = {
		"create", "modify",  "delete", "rename", "exchange",
		"chmod",  "symlink", "link",   "mkdir",	 "rmdir",
	};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(op, ops[i]))
			return true;
	return false;
}

static int watch_files(struct follow *f, const char *home, char *err, size_t errlen);

int follow_open(const char *home, const char *user, const char *thread, int64_t since,
		struct follow **out, char *err, size_t errlen)
{
	struct follow *f = calloc(1, sizeof(*f));
	int r;

	*out = NULL;
	if (f)
		f->inotify = -1;
	if (!f || !(f->user = strdup(user)) || !(f->thread = strdup(thread))) {
		snprintf(err, errlen, "out of memory");
		follow_close(f);
		return -ENOMEM;
	}
	if ((r = store_open(home, &f->store, err, errlen)) < 0) {
		follow_close(f);
		return r;
	}
	/* Listened to or watched before the end is read: a commit after the
	 * read is then always heard of. */
	r = store_journal_listen(f->store);
	if (r >= 0)
		f->listens = true;
	else if (r != -ENOTSUP) {
		snprintf(err, errlen, "cannot listen for the journal: %s", strerror(-r));
		follow_close(f);
		return r;
	} else if ((r = watch_files(f, home, err, errlen)) < 0) {
		follow_close(f);
		return r;
	}
	if (since < 0 && (r = store_journal_last_id(f->store, &since)) < 0) {
		snprintf(err, errlen, "cannot read the journal: %s", strerror(-r));
		follow_close(f);
		return r;
	}
	f->cursor = f->scanned = since;
	*out = f;
	return 0;
}

/* SQLite: the home's entries are the database's files and a few
 * directories, whose own contents are not reported here. */
static int watch_files(struct follow *f, const char *home, char *err, size_t errlen)
{
	int r;

	f->inotify = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	r = f->inotify < 0 ? -errno : 0;
	if (r == 0 && inotify_add_watch(f->inotify, home, IN_MODIFY | IN_CREATE | IN_MOVED_TO) < 0)
		r = -errno;
	if (r == -EMFILE || r == -ENFILE || r == -ENOMEM || r == -ENOSPC) {
		/* Out of instances or watches (fs.inotify.max_user_*):
		 * slower, not broken. */
		log_warn("follow: cannot watch %s (%s): new changes show within the fallback"
			 " timeout only",
			 home, strerror(-r));
		if (f->inotify >= 0)
			close(f->inotify);
		f->inotify = -1;
	} else if (r < 0) {
		snprintf(err, errlen, "cannot watch %s: %s", home, strerror(-r));
		return r;
	}
	return 0;
}

void follow_close(struct follow *f)
{
	if (!f)
		return;
	if (f->inotify >= 0)
		close(f->inotify);
	store_close(f->store);
	free(f->user);
	free(f->thread);
	free(f);
}

int64_t follow_cursor(const struct follow *f)
{
	return f->cursor;
}

int follow_fd(const struct follow *f)
{
	/* The store's connection's, which may be a new one. */
	return f->listens ? store_journal_listen(f->store) : f->inotify;
}

int follow_timeout(const struct follow *f, int timeout_ms)
{
	if (f->heard)
		return 0;
	if (!f->recheck_ms)
		return timeout_ms;
	int64_t left = f->recheck_ms - now_ms();
	if (left <= 0)
		return 0;
	return timeout_ms >= 0 && timeout_ms < left ? timeout_ms : (int)left;
}

/* Reads the inotify events waiting: 1 if one is about the database's
 * files (or some were lost: an overflow), 0 if none is, or -errno. */
static int drain(struct follow *f)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int changed = 0;

	for (;;) {
		ssize_t n = read(f->inotify, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return changed;
		if (n <= 0)
			return n < 0 ? -errno : changed;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			if ((ev->mask & IN_Q_OVERFLOW) ||
			    (ev->len && (!strcmp(ev->name, HOME_STORE) ||
					 !strcmp(ev->name, HOME_STORE "-wal"))))
				changed = 1;
			p += sizeof(*ev) + ev->len;
		}
	}
}

int follow_wait(struct follow *f, int timeout_ms)
{
	struct pollfd p = { follow_fd(f), POLLIN, 0 };
	int n, r;

	if (f->heard) {
		f->heard = false;
		return 1;
	}
	if ((n = poll(&p, 1, follow_timeout(f, timeout_ms))) < 0)
		return -errno;
	/* A notification comes after its commit: nothing to read again. */
	if (f->listens)
		return n > 0 ? store_journal_heard(f->store) : 0;
	r = n > 0 ? drain(f) : 0;
	if (r < 0)
		return r;
	if (r > 0) {
		f->recheck_ms = now_ms() + RECHECK_MS;
		return 1;
	}
	if (f->recheck_ms && now_ms() >= f->recheck_ms) {
		f->recheck_ms = 0;
		return 1;
	}
	return 0;
}

struct read_ctx {
	struct follow *f;
	int (*fn)(void *arg, const struct follow_event *e);
	void *arg;
	int given;
};

static int on_row(void *arg, const struct store_event *e, int64_t id, int64_t run)
{
	struct read_ctx *c = arg;

	if (shown(e->op)) {
		struct follow_event ev = {
			.cursor = id,
			.at_ns = e->at_ns,
			.op = e->op,
			.path = e->path,
			.path2 = e->path2,
			.pid = e->pid,
			.comm = e->comm,
			.run = run,
		};
		int r = c->fn(c->arg, &ev);
		if (r)
			return r < 0 ? r : -EINVAL;
		c->given++;
		c->f->cursor = id;
	}
	c->f->scanned = id;
	return 0;
}

int follow_read(struct follow *f, int limit, int (*fn)(void *arg, const struct follow_event *e),
		void *arg)
{
	struct read_ctx c = { f, fn, arg, 0 };

	/* Internal rows count against a batch of the store's but are not
	 * given out: read on until LIMIT events or the end. */
	while (c.given < limit) {
		int want = limit - c.given;
		int64_t scanned;
		int n = store_journal_after(f->store, f->user, f->thread, f->scanned, want,
					    &scanned, on_row, &c);
		if (n < 0)
			return n;
		f->scanned = scanned;
		if (n < want)
			break;
	}
	/* A notification that came while the rows were read was taken in
	 * by the connection: its fd will not tell of it. */
	if (f->listens && store_journal_heard(f->store) > 0)
		f->heard = true;
	return c.given;
}
