/* own.c - the runs the sbx command makes itself (own.h). */
#include "own.h"
#include "views.h"
#include "lifecycle.h"
#include "scan.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/home.h"
#include "common/walk.h"
#include "run/undo_plan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How the undo's check found PATH (undo_plan_seen()), for scan_paths(). */
static int seen_by(const void *arg, const char *path, struct stat *st)
{
	return undo_plan_seen(arg, path, st);
}

/* Takes a snapshot of exactly the paths NAMES (N, sorted, each once), at
 * AT, into the store: its id in *ID, the texts it read in *TEXTS. */
static int snapshot_paths(struct store *s, const struct thread_roots *roots, const char *user,
			  const char *thread, char *const *names, size_t n, int64_t at,
			  const struct undo_plan *seen, int64_t *id, struct run_texts **texts)
{
	struct run_texts *t = calloc(1, sizeof(*t));
	struct snapshot snap;
	int r;

	if (!t)
		return -ENOMEM;
	t->scan = (struct scan){ .store = s, .in_memory = true };
	r = scan_paths(&t->scan, roots, names, n, &snap, NULL, NULL, t, seen_by, seen);
	if (r == 0) {
		r = store_snapshot_save(s, user, thread, &snap, n, at, id);
		snapshot_free(&snap);
	}
	if (r < 0) {
		run_texts_free(t);
		t = NULL;
	}
	*texts = t;
	return r;
}

/* The command name their journal rows carry, by kind. */
static const char *own_comm(const struct store_run *u)
{
	return u->kind == RUN_RESTORE ? "sbx-restore" : "sbx-undo";
}

struct journal_to {
	struct store *s;
	const struct store_run *run;
};

static int put_event(void *arg, const struct store_event *e)
{
	struct journal_to *t = arg;

	return store_journal_add(t->s, t->run->user, t->run->thread, e);
}

struct recorded {
	const char *comm;
	bool found;
};

static int find_recorded(void *arg, const struct store_event *e)
{
	struct recorded *rec = arg;

	if (!strcmp(e->op, "capture") && !strcmp(e->comm, rec->comm))
		rec->found = true;
	return 0;
}

int run_journal_recorded(struct store *s, const struct store_run *u, const char *comm)
{
	struct recorded rec = { comm, false };
	int r = store_journal_each(s, u->user, u->thread, u->begun_ns, u->begun_ns, find_recorded,
				   &rec);

	return r < 0 ? r : rec.found;
}

int run_record_own(struct store *s, struct undo_plan *rw, const struct store_run *u)
{
	struct journal_to t = { s, u };
	int r = run_journal_recorded(s, u, own_comm(u));

	if (r != 0)
		return r < 0 ? r : 0;
	if ((r = store_begin(s)) < 0)
		return r;
	r = undo_plan_events(rw, u->begun_ns, getpid(), own_comm(u), put_event, &t);
	if (r == 0)
		r = store_commit(s);
	else
		store_rollback(s);
	return r;
}

/* Adds the files and symlinks below directory DFD (whose virtual path is
 * PATH) and the same names below G->from. */
static int gather_below(struct gathered *g, int dfd, const char *path);

struct below {
	struct gathered *g;
	const char *path;
};

static int gather_entry(void *arg, int dirfd, const char *name, const struct stat *st)
{
	struct below *b = arg;
	char path[PATH_MAX], other[PATH_MAX];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", b->path, name) >= sizeof(path))
		return 0;
	if (S_ISDIR(st->st_mode)) {
		int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		return fd < 0 ? 0 : gather_below(b->g, fd, path);
	}
	int r = gather(b->g, path);
	if (r == 0 && runlog_rebase(path, b->g->to, b->g->from, other))
		r = gather(b->g, other);
	return r;
}

static int gather_below(struct gathered *g, int dfd, const char *path)
{
	struct below b = { g, path };
	int r = dir_each(dfd, gather_entry, &b);

	return r == -ENOENT || r == -ENOTDIR ? 0 : r;
}

/* LOG's names, and, below each directory one of its renames moved, the
 * names the directory holds now, under both of the rename's names: an
 * undo moves them back, and its summary must describe them. Sorted, each
 * once. */
static int own_names(const struct runlog *log, const struct thread_roots *roots,
		     const struct undo_plan *seen, char ***out, size_t *n)
{
	struct gathered g = { 0 };
	struct parent_cache dir = PARENT_CACHE_INIT;
	int r = runlog_names(log, &g.names, &g.n);

	g.cap = g.n;
	for (size_t i = 0; i < log->n && r == 0; i++) {
		const struct store_event *e = &log->events[i];
		if (!e->path2 || (strcmp(e->op, "rename") && strcmp(e->op, "exchange")))
			continue;
		for (int side = 0; side < 2 && r == 0; side++) {
			g.to = side ? e->path : e->path2;
			g.from = side ? e->path2 : e->path;
			const char *leaf;
			struct stat st;
			int was = undo_plan_seen(seen, g.to, &st);
			if (was == 0 || (was == 1 && !S_ISDIR(st.st_mode)))
				continue; /* no directory, as the undo's check found it */
			int pfd = runlog_parent_cached(&dir, roots->ws, roots->out, g.to, &leaf);
			int fd = pfd < 0 ? -1
					 : openat(pfd, leaf,
						  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0)
				r = gather_below(&g, fd, g.to);
		}
	}
	parent_cache_drop(&dir);
	if (r < 0) {
		run_names_free(g.names, g.n);
		return r;
	}
	*out = g.names;
	*n = names_settle(g.names, g.n);
	return 0;
}

int run_begin_paths(struct store *s, int homefd, const char *user, const char *thread,
		    enum run_kind kind, int64_t undoes, const struct thread_roots *roots,
		    char **names, size_t n, const struct undo_plan *seen, struct store_run *u,
		    struct run_texts **texts)
{
	int64_t snap, id, begun = realtime_ns();
	int r = snapshot_paths(s, roots, user, thread, names, n, begun, seen, &snap, texts);

	if (r == 0) {
		(*texts)->names = names; /* for the end: its paths */
		(*texts)->nnames = n;
	} else {
		run_names_free(names, n);
	}
	if (r == 0)
		r = store_run_begin_as(s, user, thread, snap, begun, kind, undoes, &id);
	if (r == 0)
		r = store_run_get(s, id, u);
	if (r == 0) {
		int dir = home_undo_dir(homefd, user, thread, begun, true);
		r = dir < 0 ? dir : 0;
		closep(&dir);
	}
	return r;
}

int run_begin_own(struct store *s, int homefd, const char *user, const char *thread,
		  enum run_kind kind, int64_t undoes, const struct runlog *log,
		  const struct thread_roots *roots, const struct undo_plan *seen,
		  struct store_run *u, struct run_texts **texts)
{
	char **names;
	size_t n;
	int r = own_names(log, roots, seen, &names, &n);

	return r < 0 ? r
		     : run_begin_paths(s, homefd, user, thread, kind, undoes, roots, names, n, seen,
				       u, texts);
}

int run_own_steps(struct store *s, const char *home, int homefd, struct store_run *u,
		  struct undo_plan *rw, struct run_texts *texts, int (*prepare)(void *arg, int dir),
		  void *arg, const char *command, json_t **summary, struct error *e)
{
	/* Made if missing: a first attempt may have been killed before it
	 * made it. */
	_cleanup_(closep) int to = home_undo_dir(homefd, u->user, u->thread, u->begun_ns, true);
	_cleanup_(closep) int log_fd = -1;
	int r = to < 0 ? to : prepare ? prepare(arg, to) : 0;

	if (r == 0 &&
	    (log_fd = openat(to, "steps", O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
			     0600)) < 0)
		r = -errno;
	*summary = NULL;
	if (r < 0)
		return error_set(e, r, "cannot begin: %s", strerror(-r));
	int failed = undo_plan_apply(rw, to, log_fd, command);
	if (failed < 0)
		return error_set(e, failed, "its log: %s", strerror(-failed));
	/* Before the command returns, the views show what the steps wrote. */
	views_refresh(home, u->user, u->thread);
	if ((r = run_record_own(s, rw, u)) < 0)
		return error_set(e, r, "cannot record its journal: %s", strerror(-r));
	r = run_finish(s, home, u, texts, summary, e);
	return r < 0 ? r : failed;
}
