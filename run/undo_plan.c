/* undo_plan.c - the undo's plan and its steps, shadows included
 * (undo_plan.h). */
#include "undo_plan_int.h"
#include "common/log.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/fileops.h"
#include "common/home.h"
#include "common/quote.h"
#include "common/units.h"
#include "common/walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- shadows -------------------------------------------------------------- *
 *
 * A path that the steps change more than once (write c; rm c: c's saved
 * version put back, then its old one over it) would show, between two of
 * them, what it held at neither end of the undo. From the first of those
 * steps to the last (its window, which no step on what is at a directory
 * above it crosses), the steps change its shadow instead, a name in the
 * undo's directory that begins as the path is (the file there linked, an
 * empty directory copied, or nothing), and the paths below it are below
 * the shadow; then the path gets what the shadow holds in one call (its
 * publication). Until then it is as before the undo, from then on as
 * after it. So a directory the run renamed goes back whole, with what it
 * holds as before the run: into the shadow of its old name, its files
 * put back there, then to that name (echo more >> e/k; mv e e2); or, the
 * steps below it first (mv d e; rm e/f), into the shadow of the name it
 * leaves, then out of it to its old name (SHADOW_TRANSIT). Where the
 * path is at its end already when the window begins, the directory with
 * entries there is exchanged for that end, whole, and the window's steps
 * change it where no view looks (SHADOW_SWAPPED: mv -T d/a d/e; rm
 * d/e/x, and mv d e; mkdir d; mkdir d/x). Where a step of the window
 * exchanges what is at the path with what is at another name, with
 * steps below it before or after, no whole move will do: while the
 * directory that those steps change is where no view looks, one of the
 * two names must show what the other shows (or the directory as it is
 * at one end), so the directory at the path is copied with all it holds,
 * the path shows the copy, and the steps change the directory itself in
 * the shadow, the exchange going through it (SHADOW_COPIED: exchange f
 * d/e; mkdir f/a, where the old f had an a, and its redo). Each
 * beginning and publication is logged before it is made, so a second
 * attempt knows where every shadow is. */
enum shadow_state {
	SHADOW_UNBEGUN,
	SHADOW_REAL,	/* the steps change the path itself: a directory with
			* entries was there (not SHADOW_MOVED), or none above it */
	SHADOW_ABSENT,	/* begun with nothing at the path */
	SHADOW_LINKED,	/* begun with the file there linked as the shadow */
	SHADOW_DIR,	/* begun with the empty directory there copied */
	SHADOW_MOVED,	/* begun with a directory with entries there, which the
			* window's first step renames away (to AWAY): the path
			* keeps it until published, then it goes there */
	SHADOW_TRANSIT, /* begun with the directory there moved into the
			 * shadow: steps below it, then the window's last step
			 * renames it away (mv d e; rm e/f) */
	SHADOW_SWAPPED, /* begun with the directory there exchanged for what
			 * the path is at the window's end (shadow_swap_in()):
			 * the shadow holds it, the steps change it there, the
			 * window's last step is logged only */
	SHADOW_COPIED,	/* begun with the directory with entries there copied
			 * whole as the shadow's name, then exchanged with the
			 * copy: the path shows the copy, the shadow holds the
			 * directory, the steps change it there; published by an
			 * exchange, the copy removed (shadow_copy_in()) */
	SHADOW_PUBLISHED,
};

/* What the steps of a window do, as the plan sees it (shadow_windows()):
 * how its shadow may begin. */
enum shadow_shape {
	SHAPE_PLAIN,
	SHAPE_TRANSIT,	 /* steps below the path, then one that renames the
			  * directory there away (LEAVE) */
	SHAPE_REMADE,	 /* the same, then the last makes it a directory
			  * again: mv -T d/a d/e; rm d/e/x, d/e empty before */
	SHAPE_ARRIVES,	 /* steps below the path and one that takes what is
			  * there, then the last renames a directory onto it
			  * from FROM, which no other step names: mv d e;
			  * mkdir d; mkdir d/x */
	SHAPE_EXCHANGED, /* steps below the path, and one that exchanges it
			  * with another name, before them, after them or
			  * both, the only one that changes what is at it:
			  * exchange f d/e; mkdir f/a, and its redo */
};

struct shadow {
	char *path;
	size_t first, last;	 /* the positions (RW->order) of the window's ends */
	enum shadow_state state; /* and how it began: */
	enum shadow_state begun; /* SHADOW_REAL to SHADOW_SWAPPED */
	uint64_t ino;		 /* what was at the path (SHADOW_LINKED: the file
				  * linked, which the path names too until published:
				  * its count has one more) */
	const char *away;	 /* the other name of a window that begins with a
				  * rename back of a directory at the path, if nothing
				  * else in the window touches it, or NULL */
	enum shadow_shape shape;
	size_t leave;	  /* SHAPE_TRANSIT, SHAPE_REMADE: the rename's event */
	bool paired;	  /* and another's step may take it (step_over()) */
	const char *from; /* SHAPE_ARRIVES: the name of what comes */
	uint64_t target;  /* published: what the path got (0: nothing) */
	bool again;	  /* its line ends the log: what it logged is made again */
	char name[32];	  /* in the undo's directory */
};

static const char *shadow_leaf(const struct shadow *s)
{
	return s->name;
}

static bool shadow_is_active(const struct shadow *s)
{
	return s->state == SHADOW_ABSENT || s->state == SHADOW_LINKED || s->state == SHADOW_DIR ||
	       s->state == SHADOW_MOVED || s->state == SHADOW_TRANSIT ||
	       s->state == SHADOW_SWAPPED || s->state == SHADOW_COPIED;
}

static void shadows_free(struct undo_plan *rw)
{
	for (size_t i = 0; i < rw->nshadows; i++)
		free(rw->shadows[i].path);
	free(rw->shadows);
	free(rw->by_first);
	free(rw->by_last);
	rw->shadows = NULL;
	rw->by_first = rw->by_last = NULL;
	rw->nshadows = 0;
}

/* The shadow of PATH in its window, or NULL. */
static const struct shadow *shadow_active(const struct undo_plan *rw, const char *path)
{
	size_t lo = 0, hi = rw->nshadows;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(rw->shadows[mid].path, path) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < rw->nshadows && !strcmp(rw->shadows[lo].path, path); lo++)
		if (shadow_is_active(&rw->shadows[lo]))
			return &rw->shadows[lo];
	return NULL;
}

/* The directory that holds virtual PATH now (an fd, the caller's; PATH's
 * last component there in *LEAF), seen through the shadows in their
 * window: PATH's own (if SELF), or that of a directory above it, which
 * holds what is below it. -ENOENT if there is none. */
static int shadow_parent(const struct undo_plan *rw, const char *path, bool self, const char **leaf)
{
	const struct shadow *s = self ? shadow_active(rw, path) : NULL;
	char up[PATH_MAX], dir[PATH_MAX];
	size_t len = strlen(path);

	if (s) {
		*leaf = shadow_leaf(s);
		int fd = fcntl(rw->to, F_DUPFD_CLOEXEC, 0);
		return fd < 0 ? -errno : fd;
	}
	if (!rw->nshadows || len >= sizeof(up))
		return runlog_parent(rw->ws, rw->out, path, leaf);
	memcpy(up, path, len + 1);
	for (char *slash; (slash = strrchr(up, '/')) && slash > up;) {
		*slash = '\0';
		if (!(s = shadow_active(rw, up)))
			continue;
		const char *rel = path + (slash - up) + 1, *last = strrchr(rel, '/');
		*leaf = last ? last + 1 : rel;
		if ((size_t)snprintf(dir, sizeof(dir), "%s/%.*s", shadow_leaf(s),
				     last ? (int)(last - rel) : 0, rel) >= sizeof(dir))
			return -ENAMETOOLONG;
		return runlog_dir_beneath(rw->to, dir);
	}
	return runlog_parent(rw->ws, rw->out, path, leaf);
}

/* What is at virtual PATH for a look-up of another name of a file
 * (name_stat(), step_relink()): its directory (an fd, the caller's; LEAF
 * in it) and attributes (ST), or -errno (-ENOENT: nothing). As
 * shadow_parent() finds it; or where nothing is there, a path below the
 * name that the directory of a SHADOW_MOVED shadow goes to (AWAY) is in
 * that directory: the window's first step renamed it there, though it
 * stays at the shadow's path until published (in such a window nothing
 * is at AWAY itself). */
static int name_find(const struct undo_plan *rw, const char *path, const char **leaf,
		     struct stat *st)
{
	int fd = shadow_parent(rw, path, true, leaf);
	char dir[PATH_MAX];

	if (fd >= 0 && fstatat(fd, *leaf, st, AT_SYMLINK_NOFOLLOW) == 0)
		return fd;
	int r = fd < 0 ? fd : -errno;
	closep(&fd);
	for (size_t i = 0; r == -ENOENT && i < rw->nshadows; i++) {
		const struct shadow *s = &rw->shadows[i];
		size_t n = s->away ? strlen(s->away) : 0;
		if (s->state != SHADOW_MOVED || strncmp(path, s->away, n) || path[n] != '/')
			continue;
		const char *rel = path + n + 1, *last = strrchr(rel, '/'), *up;
		_cleanup_(closep) int pfd = shadow_parent(rw, s->path, false, &up);
		if (pfd < 0 || (size_t)snprintf(dir, sizeof(dir), "%s/%.*s", up,
						last ? (int)(last - rel) : 0, rel) >= sizeof(dir))
			break;
		*leaf = last ? last + 1 : rel;
		if ((fd = runlog_dir_beneath(pfd, dir)) < 0)
			return fd;
		if (fstatat(fd, *leaf, st, AT_SYMLINK_NOFOLLOW) == 0)
			return fd;
		r = -errno;
		closep(&fd);
		break;
	}
	return r;
}

void shadows_each(struct undo_plan *rw,
		  void (*fn)(void *arg, int dfd, const char *leaf, const char *path), void *arg)
{
	for (size_t i = 0; i < rw->nshadows; i++) {
		const struct shadow *s = &rw->shadows[i];
		const char *leaf;
		if (!shadow_is_active(s))
			continue;
		fn(arg, rw->to, s->name, s->path);
		if (s->state != SHADOW_MOVED || !s->away)
			continue;
		_cleanup_(closep) int fd = shadow_parent(rw, s->path, false, &leaf);
		if (fd >= 0)
			fn(arg, fd, leaf, s->away);
	}
}

bool op_is(const struct store_event *e, const char *op)
{
	return !strcmp(e->op, op);
}

static void dirs_forget(struct undo_plan *rw);

void seen_forget(struct undo_plan *rw)
{
	for (size_t i = 0; i < rw->nseen; i++)
		free(rw->seen[i].path);
	free(rw->seen);
	rw->seen = NULL;
	rw->nseen = 0;
}

int undo_plan_new(const struct runlog *log, int64_t ended_ns, int ws, int out, int from,
		  struct undo_plan **out_rw)
{
	struct undo_plan *rw = calloc(1, sizeof(*rw));

	if (!rw || !(rw->skip = calloc(log->n ? log->n : 1, sizeof(*rw->skip))) ||
	    !(rw->done = calloc(log->n ? log->n : 1, sizeof(*rw->done)))) {
		if (rw)
			free(rw->skip);
		free(rw);
		return -ENOMEM;
	}
	rw->dirs[0].fd = rw->dirs[1].fd = rw->to = -1;
	rw->log = log;
	rw->ended_ns = ended_ns;
	rw->ws = ws;
	rw->out = out;
	rw->from = from;
	*out_rw = rw;
	return 0;
}

void undo_plan_free(struct undo_plan *rw)
{
	if (!rw)
		return;
	for (size_t i = 0; i < rw->nconflicts; i++)
		free((char *)rw->conflicts[i].path);
	free(rw->conflicts);
	for (size_t i = 0; i < rw->nsteps; i++) {
		free(rw->steps[i].meta);
		free(rw->steps[i].path);
		free(rw->steps[i].link);
	}
	free(rw->steps);
	free(rw->done);
	free(rw->over);
	for (size_t i = 0; rw->early && i < rw->log->n; i++)
		free(rw->early[i]);
	free(rw->early);
	free(rw->order);
	free(rw->pos);
	for (size_t i = 0; i < rw->ntouched; i++)
		free(rw->touched[i].path);
	free(rw->touched);
	dirs_forget(rw);
	seen_forget(rw);
	shadows_free(rw);
	free(rw->held);
	names_free(rw->names);
	free(rw->skip);
	free(rw);
}

int undo_plan_add_source(struct undo_plan *rw, int fd)
{
	if (rw->nmore == UNDO_SOURCES)
		return -E2BIG;
	rw->more[rw->nmore++] = fd;
	return 0;
}

void undo_plan_copy(struct undo_plan *rw)
{
	rw->copy = true;
}

/* The directory holding OBJECT (its attributes in ST), or -1. */
int source_of(const struct undo_plan *rw, const char *object, struct stat *st)
{
	if (rw->from >= 0 && fstatat(rw->from, object, st, AT_SYMLINK_NOFOLLOW) == 0)
		return rw->from;
	for (size_t i = 0; i < rw->nmore; i++)
		if (fstatat(rw->more[i], object, st, AT_SYMLINK_NOFOLLOW) == 0)
			return rw->more[i];
	return -1;
}

/* ---- the steps ------------------------------------------------------------ */

/* The start of every object name an undo gives (a view's are
 * STAMP-SEQ). */
#define UNDO_OBJECT "undo-"

/* A fresh name for an object kept by the undo: one random number for a
 * run of steps, counted on from there (another attempt draws another);
 * for a copy of a name taken from a file with others, that file's inode
 * INO after it (0: none), which the redo looks for (step_relink()). */
static int object_name_of(struct undo_plan *rw, char name[40], uint64_t ino)
{
	if (!rw->next_name &&
	    getrandom(&rw->next_name, sizeof(rw->next_name), 0) != sizeof(rw->next_name))
		return -EIO;
	if (ino)
		snprintf(name, 40, UNDO_OBJECT "%016" PRIx64 "-%" PRIx64, rw->next_name++, ino);
	else
		snprintf(name, 40, UNDO_OBJECT "%016" PRIx64, rw->next_name++);
	return 0;
}

static int object_name(struct undo_plan *rw, char name[40])
{
	return object_name_of(rw, name, 0);
}

/* The inode an undo's object OBJECT names (object_name_of()), or 0. */
static uint64_t object_ino(const char *object)
{
	size_t n = strlen(UNDO_OBJECT) + 16;
	char *end;

	if (strncmp(object, UNDO_OBJECT, strlen(UNDO_OBJECT)) || strlen(object) <= n + 1 ||
	    object[n] != '-')
		return 0;
	uint64_t ino = strtoull(object + n + 1, &end, 16);
	return *end ? 0 : ino;
}

/* Forgets the cached directories: a step moved or removed one. */
static void dirs_forget(struct undo_plan *rw)
{
	rw->dir_moves++;
	for (int i = 0; i < 2; i++) {
		closep(&rw->dirs[i].fd);
		rw->dirs[i].path[0] = '\0';
	}
	rw->last_touched[0] = '\0';
}

static const struct shadow *shadow_active(const struct undo_plan *rw, const char *path);

int place_open(struct undo_plan *rw, const char *path, struct place *p)
{
	const char *slash = strrchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : 0;
	const struct shadow *s = shadow_active(rw, path);

	p->shadow = s != NULL;
	if (s) {
		p->dfd = rw->to;
		p->leaf = shadow_leaf(s);
		return 0;
	}
	/* A root itself is "." of its fd: never cached, as the parent of
	 * both roots is one name. */
	if (!strcmp(path, "/mnt/user-data/workspace") || !strcmp(path, "/mnt/user-data/outputs")) {
		p->dfd = !strcmp(path, "/mnt/user-data/workspace") ? rw->ws : rw->out;
		p->leaf = ".";
		return p->dfd < 0 ? -ENOENT : 0;
	}
	p->leaf = slash ? slash + 1 : path;
	for (int i = 0; i < 2; i++)
		if (rw->dirs[i].fd >= 0 && strlen(rw->dirs[i].path) == len &&
		    !strncmp(rw->dirs[i].path, path, len)) {
			rw->dirs[i].used = ++rw->uses;
			p->dfd = rw->dirs[i].fd;
			return 0;
		}
	int fd = shadow_parent(rw, path, false, &p->leaf);
	if (fd < 0)
		return fd;
	/* The one used longer ago goes: the other may be a live place's. */
	int k = rw->dirs[0].used <= rw->dirs[1].used ? 0 : 1;
	closep(&rw->dirs[k].fd);
	rw->dirs[k].fd = p->dfd = fd;
	rw->dirs[k].used = ++rw->uses;
	snprintf(rw->dirs[k].path, sizeof(rw->dirs[k].path), "%.*s", (int)len, path);
	return 0;
}

/* fstatat() of what is at P: true if something is (ST its attributes,
 * its link count without the links shadows added), else false (errno). */
static bool place_stat(const struct undo_plan *rw, const struct place *p, struct stat *st)
{
	if (fstatat(p->dfd, p->leaf, st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	for (size_t i = 0; i < rw->nshadows; i++)
		if (rw->shadows[i].state == SHADOW_LINKED && rw->shadows[i].ino == st->st_ino &&
		    st->st_nlink > 1)
			st->st_nlink--;
	return true;
}

static void place_close(struct place *p)
{
	p->dfd = -1; /* the cache's */
}

#define _place_ _cleanup_(place_close) struct place

static int neg(void)
{
	return errno ? -errno : -EIO;
}

/* A step begins: logged before anything is done, unless it is the one a
 * first attempt was in (WAS), which resumes as logged. */
static int begin(struct undo_plan *rw, int log_fd, struct logged *l, const struct logged *was)
{
	if (was) {
		*l = *was;
		return 0;
	}
	l->at_ns = realtime_ns();
	return log_step(rw, log_fd, l);
}

/* Where directory DIR, inode INO, would go in RW's list of touched ones
 * (sorted by name, then inode: one name may be two directories in turn);
 * true if it is there. */
static bool touched_at(const struct undo_plan *rw, const char *dir, uint64_t ino, size_t *at)
{
	size_t lo = 0, hi = rw->ntouched;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct touched *t = &rw->touched[mid];
		int c = strcmp(t->path, dir);
		if (!c)
			c = t->ino < ino ? -1 : t->ino > ino;
		if (!c) {
			*at = mid;
			return true;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return false;
}

static int touched_add(struct undo_plan *rw, const char *dir, uint64_t ino)
{
	size_t at;

	if (touched_at(rw, dir, ino, &at))
		return 0;
	if (array_grow(rw->touched, rw->ntouched, rw->tcap) < 0)
		return -ENOMEM;
	char *copy = strdup(dir);
	if (!copy)
		return -ENOMEM;
	memmove(rw->touched + at + 1, rw->touched + at, (rw->ntouched - at) * sizeof(*rw->touched));
	rw->touched[at] = (struct touched){ copy, ino };
	rw->ntouched++;
	return 0;
}

/* Before the undo first changes an entry of the directory holding virtual
 * PATH: logs that directory's attributes (STEP_DIR), so that its times go
 * back to them at the end (the run's own word on them wins) and the
 * undo's undo finds them. */
static int touch_dir(struct undo_plan *rw, int log_fd, size_t seq, const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct logged l = { .seq = seq, .kind = STEP_DIR, .at_ns = realtime_ns() };
	struct place p;
	struct meta m;
	size_t at;
	int r;

	if (!slash || (size_t)(slash - path) >= sizeof(dir))
		return 0;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	/* The directory of the last step, not moved since (dirs_forget()):
	 * the same one, touched already. */
	if (!strcmp(dir, "/mnt/user-data") || !strcmp(dir, rw->last_touched))
		return 0;
	struct stat st;
	if ((r = place_open(rw, dir, &p)) < 0)
		return r;
	if (fstatat(p.dfd, p.leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return neg();
	l.ino = st.st_ino;
	if (!touched_at(rw, dir, l.ino, &at)) {
		if ((r = meta_read(p.dfd, p.leaf, &m)) < 0)
			return r;
		r = meta_encode(&m, &l.meta, &l.meta_len);
		meta_free(&m);
		l.path = dir;
		if (r == 0)
			r = log_step(rw, log_fd, &l);
		free(l.meta);
		if (r == 0)
			r = touched_add(rw, dir, l.ino);
	}
	if (r == 0)
		memcpy(rw->last_touched, dir, sizeof(dir));
	return r;
}

/* begin() for a step that replaces the attributes of what is at P (may
 * be NULL: nothing is there): those are logged, for the undo's undo. */
static int begin_keeping(struct undo_plan *rw, int log_fd, struct logged *l,
			 const struct logged *was, const struct place *p)
{
	struct meta cur;
	int r = 0;

	if (!was && p && (r = meta_read(p->dfd, p->leaf, &cur)) == 0) {
		r = meta_encode(&cur, &l->meta, &l->meta_len);
		meta_free(&cur);
	}
	if (r == 0)
		r = begin(rw, log_fd, l, was);
	if (!was) {
		free(l->meta);
		l->meta = NULL;
	}
	return r;
}

/* The kept file OBJECT (in directory FROM) written back into the file at
 * P, which has other names: a rename over it would leave them the run's
 * version. What is there is copied into TO first, for the undo's undo.
 * Not atomic for P (a crash mid-copy leaves it part written; the second
 * attempt writes it whole). */
static int step_in_place(struct undo_plan *rw, int to, int log_fd, size_t seq,
			 const struct place *p, int from, const char *object,
			 const struct logged *was)
{
	struct logged l = { .seq = seq, .kind = STEP_INPLACE };
	struct stat st;
	struct meta m;
	int r;

	if (!was && (r = object_name(rw, l.object)) < 0)
		return r;
	if ((r = begin(rw, log_fd, &l, was)) < 0)
		return r;
	if (fstatat(to, l.object, &st, AT_SYMLINK_NOFOLLOW) < 0 &&
	    (r = copy_object(p->dfd, p->leaf, to, l.object)) < 0)
		return r;
	_cleanup_(closep) int rfd = openat(from, object, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_(closep) int wfd =
		openat(p->dfd, p->leaf, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (rfd < 0 || wfd < 0)
		return neg();
	if ((r = file_copy_content(wfd, rfd)) < 0 || (r = meta_read(from, object, &m)) < 0)
		return r;
	r = meta_apply(p->dfd, p->leaf, &m);
	meta_free(&m);
	return r < 0 ? r : 1;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* What NAME is, for step_relink(): a virtual path, or (no slash first)
 * an object in the undo's directory. Returns its directory (the caller's;
 * LEAF in it, its attributes in ST), or -errno. */
static int relink_source(const struct undo_plan *rw, const char *name, const char **leaf,
			 struct stat *st)
{
	if (name[0] == '/')
		return name_find(rw, name, leaf, st);
	if (strchr(name, '/'))
		return -EINVAL;
	*leaf = name;
	if (fstatat(rw->to, name, st, AT_SYMLINK_NOFOLLOW) < 0)
		return neg();
	int fd = fcntl(rw->to, F_DUPFD_CLOEXEC, 0);
	return fd < 0 ? -errno : fd;
}

/* True if the file O may be the one that an undo's copy (attributes SRC)
 * was a name of, as the steps before this one put it back: a file of the
 * same size and mode (and inode INO, unless 0). */
static bool relink_fits(const struct stat *o, uint64_t ino, const struct stat *src)
{
	return S_ISREG(o->st_mode) && (!ino || o->st_ino == ino) && o->st_size == src->st_size &&
	       o->st_mode == src->st_mode;
}

/* The object of this undo that is the file inode INO (attributes as SRC):
 * a step before this one moved it into the undo's directory whole. */
static const char *own_object(const struct undo_plan *rw, uint64_t ino, const struct stat *src)
{
	struct stat o;

	for (size_t i = rw->nsteps; ino && i-- > 0;)
		if (rw->steps[i].object[0] &&
		    fstatat(rw->to, rw->steps[i].object, &o, AT_SYMLINK_NOFOLLOW) == 0 &&
		    relink_fits(&o, ino, src))
			return rw->steps[i].object;
	return NULL;
}

/* An undo took the name at P from a file with other names (keeping a
 * copy, OBJECT, attributes SRC): P becomes a name of that file again, as
 * the steps before this one put back what the undo found. The file is
 * at LINK, the other name the undo found (a path); or, where it found
 * none in the thread, it is the one of this undo's own objects whose
 * inode is INO, which OBJECT's name gives: the undo put a name of the
 * file back after its take (the run had removed it: mkdir a/e && ln f/a
 * a/e/a && mv f/a c && rm c, then f and a/e exchanged), and this undo,
 * its mirror, took that name into its directory before. Logged with the
 * name linked, a path or an object. 0 if neither is that file (nothing
 * done: the copy goes back instead). */
static int step_relink(struct undo_plan *rw, int log_fd, size_t seq, const struct place *p,
		       const char *link, uint64_t ino, const struct stat *src,
		       const struct logged *was)
{
	struct logged l = { .seq = seq, .kind = STEP_PUT, .put = PUT_FILE };
	struct stat o, cur;
	const char *leaf = NULL;
	int dfd = -1, r;

	if (was) {
		if ((dfd = relink_source(rw, was->link, &leaf, &o)) >= 0 && !S_ISREG(o.st_mode))
			closep(&dfd);
		if (dfd < 0)
			return -ENOENT;
	} else {
		if (link && (dfd = relink_source(rw, link, &leaf, &o)) >= 0 &&
		    !relink_fits(&o, 0, src))
			closep(&dfd);
		if (dfd < 0 && (link = own_object(rw, ino, src)) &&
		    (dfd = relink_source(rw, link, &leaf, &o)) >= 0 && !relink_fits(&o, ino, src))
			closep(&dfd);
		if (dfd < 0)
			return 0;
	}
	_cleanup_(closep) int fd = dfd;
	l.link = (char *)(was ? was->link : link);
	if (was && fstatat(p->dfd, p->leaf, &cur, AT_SYMLINK_NOFOLLOW) == 0 && same_file(&cur, &o))
		return 1; /* a first attempt linked it */
	if ((r = begin(rw, log_fd, &l, was)) < 0)
		return r;
	return linkat(fd, leaf, p->dfd, p->leaf, 0) < 0 ? neg() : 1;
}

/* The object the run kept (OBJECT in its directory) back at PATH: over
 * what is there (kept in TO), or on a free name; as a name of the file
 * at LINK (not NULL: the run was an undo that took PATH from it), if
 * that is still the file. */
static int step_keep_object(struct undo_plan *rw, int to, int log_fd, size_t seq, const char *path,
			    const char *object, const char *link, const struct logged *was)
{
	struct logged l = { .seq = seq };
	struct stat src, cur;
	_place_ p = { -1, NULL, false };
	char copy[40];
	int r, from;

	if ((r = touch_dir(rw, log_fd, seq, path)) < 0 || (r = place_open(rw, path, &p)) < 0)
		return r;
	if ((from = source_of(rw, object, &src)) < 0)
		return was ? 0 : -ENOENT; /* a first attempt moved it here */
	bool there = place_stat(rw, &p, &cur);
	if (there && cur.st_dev == src.st_dev && cur.st_ino == src.st_ino) {
		/* Kept before a change that did not happen (it failed). */
		if (!rw->copy)
			unlinkat(from, object, 0);
		return 0;
	}
	if (there && S_ISDIR(cur.st_mode))
		return -EISDIR;
	uint64_t ino = object_ino(object);
	if (((link && strcmp(link, path)) || ino) && S_ISREG(src.st_mode) &&
	    (was ? was->kind == STEP_PUT && was->link : !there) &&
	    (r = step_relink(rw, log_fd, seq, &p, link && strcmp(link, path) ? link : NULL, ino,
			     &src, was)) != 0)
		return r;
	/* A second attempt goes on as the first began (after its link, the
	 * file has two names: that is no reason to change course). What an
	 * undo kept (a redo's) says itself whether it was written in place
	 * (LINK is PATH): a file it replaced by a rename may have other
	 * names now, the redo's links. */
	bool inplace = !strncmp(object, UNDO_OBJECT, strlen(UNDO_OBJECT))
			       ? link && !strcmp(link, path)
			       : cur.st_nlink > 1;
	if (was ? was->kind == STEP_INPLACE
		: there && S_ISREG(cur.st_mode) && inplace && S_ISREG(src.st_mode))
		return step_in_place(rw, to, log_fd, seq, &p, from, object, was);
	l.kind = there ? STEP_RESTORE : STEP_PUT;
	l.put = S_ISLNK(src.st_mode) ? PUT_SYMLINK : PUT_FILE;
	if (!was && there && (r = object_name(rw, l.object)) < 0)
		return r;
	/* A copy, made where the views never look, is what moves. */
	if (rw->copy &&
	    ((r = object_name(rw, copy)) < 0 || (r = copy_object(from, object, to, copy)) < 0))
		return r;
	if (rw->copy) {
		from = to;
		object = copy;
	}
	if ((r = begin(rw, log_fd, &l, was)) < 0)
		return r;
	if (l.kind == STEP_PUT)
		return renameat2(from, object, p.dfd, p.leaf, RENAME_NOREPLACE) < 0 ? neg() : 1;
	if (linkat(p.dfd, p.leaf, to, l.object, 0) < 0 && !(was && errno == EEXIST))
		return neg();
	return renameat(from, object, p.dfd, p.leaf) < 0 ? neg() : 1;
}

/* Attributes the run kept (META) back on PATH, or the directory it
 * removed made again. */
static int step_keep_meta(struct undo_plan *rw, int log_fd, size_t seq, const char *path,
			  const uint8_t *blob, size_t len, const struct logged *was)
{
	struct logged l = { .seq = seq };
	struct meta m;
	struct stat st;
	_place_ p = { -1, NULL, false };
	int r;

	if ((r = touch_dir(rw, log_fd, seq, path)) < 0 || (r = place_open(rw, path, &p)) < 0)
		return r;
	if ((r = meta_decode(blob, len, &m)) < 0)
		return r;
	bool there = fstatat(p.dfd, p.leaf, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (!there && !S_ISDIR(m.mode)) {
		meta_free(&m);
		return -ENOENT;
	}
	l.kind = there ? STEP_ATTR : STEP_MKDIR;
	l.ino = there ? st.st_ino : 0; /* a new directory's: any */
	r = begin_keeping(rw, log_fd, &l, was, there ? &p : NULL);
	if (r == 0 && !there && mkdirat(p.dfd, p.leaf, 0700) < 0 && errno != EEXIST)
		r = neg();
	if (r == 0)
		r = meta_apply(p.dfd, p.leaf, &m);
	meta_free(&m);
	return r < 0 ? r : 1;
}

/* The name LEAF (in DFD) of a file that has others goes: a rename would
 * keep it a name of the file they name (its link count would stay), so
 * a copy is kept as OBJECT in TO, for the undo's undo, and the name is
 * unlinked. The copy is made under a name of its own and renamed, so
 * that OBJECT is whole or absent; a second attempt makes it again. */
static int take_linked(int dfd, const char *leaf, int to, const char *object)
{
	char part[48];
	int r;

	snprintf(part, sizeof(part), "%s.part", object);
	unlinkat(to, part, 0);
	if ((r = copy_object(dfd, leaf, to, part)) < 0)
		return r;
	if (renameat(to, part, to, object) < 0 || unlinkat(dfd, leaf, 0) < 0)
		return neg();
	return 1;
}

/* Another name, now, of the file at P (virtual PATH, attributes ST),
 * which has others: an entry of its directory, or a path an event of the
 * run names (undo_names.c). NULL if none is there (or out of memory): a
 * redo then puts back a copy, a file of its own (docs/changes.md). */
static char *other_name(struct undo_plan *rw, const struct place *p, const char *path,
			const struct stat *st)
{
	const char *leaf = p->leaf;
	/* A shadow's directory is the path's (where its own name, until
	 * published, is none of the others). */
	_cleanup_(closep) int real = p->shadow ? shadow_parent(rw, path, false, &leaf) : -1;
	int fd = p->shadow && real < 0 ? -1
				       : openat(p->shadow ? real : p->dfd, ".",
						O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_(closedirp) DIR *d = fd < 0 ? NULL : fdopendir(fd);
	size_t dir = strlen(path) - strlen(leaf);
	char name[PATH_MAX];
	struct dirent *de;
	struct stat o;

	if (fd >= 0 && !d)
		close(fd);
	/* A name in its shadow's window is what the shadow holds, not what
	 * is there still (mv f d/b; ln d/b b; mv b f: f's file is at f until
	 * its shadow is published, but b came from it: d/b is the name). */
	while (d && (de = readdir(d)))
		if (de->d_ino == st->st_ino && strcmp(de->d_name, leaf) &&
		    fstatat(dirfd(d), de->d_name, &o, AT_SYMLINK_NOFOLLOW) == 0 &&
		    same_file(&o, st) &&
		    (size_t)snprintf(name, sizeof(name), "%.*s%s", (int)dir, path, de->d_name) <
			    sizeof(name) &&
		    !shadow_active(rw, name))
			return strdup(name);
	return names_other(rw, path, st);
}

int name_stat(const struct undo_plan *rw, const char *path, struct stat *st)
{
	const char *leaf;
	_cleanup_(closep) int dfd = name_find(rw, path, &leaf, st);

	return dfd >= 0 ? 1 : dfd == -ENOENT ? 0 : dfd;
}

nlink_t held_links(const struct undo_plan *rw, uint64_t ino)
{
	nlink_t n = 0;

	for (size_t i = 0; i < rw->nheld; i++)
		n += rw->held[i] == ino;
	return n;
}

/* A take (or step_swap(), a file the run made) moved a name of inode INO
 * (a file with others) into the undo's directory whole. A name the run linked to it whose other names all went
 * there so goes there whole too, not by a copy (echo x > d/b; ln d/b
 * d/a; mv d e: e/b, taken early, then e/a): its redo gives both back as
 * one file. Returns 1 (out of memory, a later take copies: a redo then
 * puts back two files, as where no other name is found). */
static int held_add(struct undo_plan *rw, uint64_t ino)
{
	if (array_grow(rw->held, rw->nheld, rw->hcap) == 0)
		rw->held[rw->nheld++] = ino;
	return 1;
}

/* What the run made at PATH goes: into TO, or a directory removed. */
static int step_take(struct undo_plan *rw, int to, int log_fd, size_t seq, const char *path,
		     const struct logged *was)
{
	struct logged l = { .seq = seq };
	struct stat st;
	_place_ p = { -1, NULL, false };
	int r;

	if ((r = touch_dir(rw, log_fd, seq, path)) < 0 && r != -ENOENT)
		return r;
	if ((r = place_open(rw, path, &p)) < 0)
		return r == -ENOENT ? 0 : r;
	if (!place_stat(rw, &p, &st))
		return errno == ENOENT ? 0 : neg(); /* gone already */
	/* A name the run gave a file that has others (a link) is copied,
	 * then unlinked: a first attempt that logged it (INO) and stopped
	 * before the unlink left it there. A name it put back, a redo's, is
	 * the file itself again, kept as the view keeps a removed one: its
	 * undo puts back the same file, its link seen meanwhile. */
	struct stat kept;
	bool linked = !S_ISDIR(st.st_mode) && st.st_nlink - held_links(rw, st.st_ino) > 1 &&
		      op_is(&rw->log->events[seq], "link");
	if (was && was->kind == STEP_TAKE && (!was->ino || st.st_ino != was->ino) &&
	    fstatat(to, was->object, &kept, AT_SYMLINK_NOFOLLOW) == 0)
		return 1;
	if (S_ISDIR(st.st_mode)) {
		l.kind = STEP_RMDIR;
		l.path = rw->early[seq];
		r = begin_keeping(rw, log_fd, &l, was, &p);
		if (r == 0 && unlinkat(p.dfd, p.leaf, AT_REMOVEDIR) < 0)
			r = neg();
		dirs_forget(rw);
		return r < 0 ? r : 1;
	}
	l.kind = STEP_TAKE;
	l.path = rw->early[seq];
	l.ino = linked ? st.st_ino : 0;
	/* For the redo, which makes it a name of that file again. */
	_cleanup_(freep) char *link = linked && !was ? other_name(rw, &p, path, &st) : NULL;
	l.link = link;
	if ((!was && (r = object_name_of(rw, l.object, l.ino)) < 0) ||
	    (r = begin(rw, log_fd, &l, was)) < 0)
		return r;
	if (l.ino) /* as logged: a second attempt goes on the same way */
		return take_linked(p.dfd, p.leaf, to, l.object);
	if (renameat2(p.dfd, p.leaf, to, l.object, RENAME_NOREPLACE) < 0)
		return neg();
	return !S_ISDIR(st.st_mode) && st.st_nlink > 1 ? held_add(rw, st.st_ino) : 1;
}

/* The two places of a move FROM -> TO, their directories' attributes
 * logged first (touch_dir()); whether each holds something (its
 * attributes in SA, SB). */
static int places_of_move(struct undo_plan *rw, int log_fd, size_t seq, const char *from,
			  const char *to, struct place *a, struct place *b, struct stat *sa,
			  struct stat *sb, bool *at_from, bool *at_to)
{
	int r;

	if ((r = touch_dir(rw, log_fd, seq, from)) < 0 ||
	    (r = touch_dir(rw, log_fd, seq, to)) < 0 || (r = place_open(rw, from, a)) < 0 ||
	    (r = place_open(rw, to, b)) < 0)
		return r;
	*at_from = place_stat(rw, a, sa);
	*at_to = place_stat(rw, b, sb);
	return 0;
}

/* A rename FROM -> TO reversed; or an exchange (SWAP) done again. */
static int step_move(struct undo_plan *rw, int log_fd, size_t seq, const char *from, const char *to,
		     bool swap, const struct logged *was)
{
	struct logged l = { .seq = seq, .kind = swap ? STEP_EXCHANGE : STEP_MOVE };
	_place_ a = { -1, NULL, false };
	_place_ b = { -1, NULL, false };
	struct stat sa, sb;
	int r;

	bool at_from, at_to;
	if ((r = places_of_move(rw, log_fd, seq, from, to, &a, &b, &sa, &sb, &at_from, &at_to)) < 0)
		return r;
	if (was && (swap ? at_from && sa.st_ino == was->ino : at_from && !at_to))
		return 1; /* a first attempt took it */
	if (!at_to)
		return -ENOENT;
	if (swap && !at_from)
		return -ENOENT;
	if (!swap && at_from)
		return -EEXIST;
	l.ino = sb.st_ino;
	if ((r = begin(rw, log_fd, &l, was)) < 0)
		return r;
	r = renameat2(b.dfd, b.leaf, a.dfd, a.leaf, swap ? RENAME_EXCHANGE : RENAME_NOREPLACE) < 0
		    ? neg()
		    : 1;
	/* A directory moved: the cached ones may be below it. */
	if (S_ISDIR(sb.st_mode) || (swap && S_ISDIR(sa.st_mode)))
		dirs_forget(rw);
	return r;
}

/* True if event E moves, removes or makes a directory above NAME: before
 * it, NAME was something else, or could not be (rm -r d/e after mv d/e/b
 * a: the rename cannot go back before d/e is made again). */
static bool moves_above(const struct store_event *e, const char *name)
{
	size_t n = strlen(e->path), n2 = e->path2 ? strlen(e->path2) : 0;
	bool above = !strncmp(name, e->path, n) && name[n] == '/';

	if (op_is(e, "rmdir") || op_is(e, "mkdir"))
		return above;
	return e->path2 && (op_is(e, "rename") || op_is(e, "exchange")) &&
	       (above || (!strncmp(name, e->path2, n2) && name[n2] == '/'));
}

/* The nearest event before SEQ that names NAME (a run's own rows left
 * aside, and with CONTENT, changes of its content or attributes), or
 * SIZE_MAX; at most 64 back, and never past a move of a directory
 * above NAME. */
static size_t last_on(const struct undo_plan *rw, size_t seq, const char *name, bool content)
{
	for (size_t j = seq, n = 0; j-- > 0 && n < 64; n++) {
		const struct store_event *e = &rw->log->events[j];
		if (moves_above(e, name))
			return SIZE_MAX;
		/* A keep's other name (an undo's take of a link) is not
		 * changed by it. */
		if (op_is(e, "preimage") || op_is(e, "capture") ||
		    (strcmp(e->path, name) &&
		     (!e->path2 || strcmp(e->path2, name) || op_is(e, "keep"))))
			continue;
		if (content && (op_is(e, "modify") || op_is(e, "chmod") || op_is(e, "xattr") ||
				(op_is(e, "keep") && !e->object)))
			continue;
		return j;
	}
	return SIZE_MAX;
}

/* The event that kept the file rename event SEQ replaced at its target:
 * the nearest event on that name, if it is a "keep" of it with an
 * object; SIZE_MAX otherwise. */
static size_t victim_keep(const struct undo_plan *rw, size_t seq)
{
	const char *to = rw->log->events[seq].path2;
	size_t j = last_on(rw, seq, to, false);
	const struct store_event *e = j == SIZE_MAX ? NULL : &rw->log->events[j];

	return e && op_is(e, "keep") && e->object && !strcmp(e->path, to) ? j : SIZE_MAX;
}

/* The event that made FROM, the name rename event SEQ moves: the
 * nearest one on that name before it if it is its "create" (changes of
 * its content or attributes may come between); SIZE_MAX otherwise. */
static size_t maker(const struct undo_plan *rw, size_t seq)
{
	size_t j = last_on(rw, seq, rw->log->events[seq].path, true);
	const struct store_event *e = j == SIZE_MAX ? NULL : &rw->log->events[j];

	return e && op_is(e, "create") && !e->path2 ? j : SIZE_MAX;
}

/* A rename FROM -> TO over a file the run kept (OBJECT) reversed in one
 * step for TO: the kept file is exchanged back over TO, then the renamed
 * one, now in the objects' directory, goes back to FROM, or (DROP: the
 * run made it) into the undo's directory TO_DIR. TO is never absent, and
 * a FROM the run made never comes back. */
static int step_swap(struct undo_plan *rw, int to_dir, int log_fd, size_t seq, const char *from,
		     const char *to, const char *object, bool drop, const struct logged *was)
{
	struct logged l = { .seq = seq, .kind = drop ? STEP_SWAP_KEEP : STEP_SWAP };
	_place_ a = { -1, NULL, false };
	_place_ b = { -1, NULL, false };
	struct stat src, sa, sb;
	char copy[40];
	int r, dir;

	bool at_from, at_to;
	if ((r = places_of_move(rw, log_fd, seq, from, to, &a, &b, &sa, &sb, &at_from, &at_to)) < 0)
		return r;
	if (was && at_to && sb.st_ino == was->ino) {
		/* Exchanged by a first attempt: the renamed file waits in the
		 * objects' directory, unless it went on already. */
		if (drop)
			return (dir = source_of(rw, object, &src)) < 0 ? 1
			       : renameat2(dir, object, to_dir, was->object, RENAME_NOREPLACE) < 0
				       ? neg()
				       : 1;
		if (at_from || (dir = source_of(rw, was->object, &src)) < 0)
			return 1;
		return renameat2(dir, was->object, a.dfd, a.leaf, RENAME_NOREPLACE) < 0 ? neg() : 1;
	}
	if ((dir = source_of(rw, object, &src)) < 0)
		return -ENOENT;
	if (!at_to)
		return -ENOENT;
	if (at_from)
		return -EEXIST;
	if (S_ISDIR(sb.st_mode))
		return -EISDIR;
	if (rw->copy) {
		if ((r = object_name(rw, copy)) < 0 ||
		    (r = copy_object(dir, object, to_dir, copy)) < 0 ||
		    fstatat(to_dir, copy, &src, AT_SYMLINK_NOFOLLOW) < 0)
			return r < 0 ? r : neg();
		dir = to_dir;
		object = copy;
	}
	l.ino = src.st_ino;
	if (!drop)
		snprintf(l.object, sizeof(l.object), "%s", object);
	else if (!was && (r = object_name(rw, l.object)) < 0)
		return r;
	if ((r = begin(rw, log_fd, &l, was)) < 0)
		return r;
	if (renameat2(dir, object, b.dfd, b.leaf, RENAME_EXCHANGE) < 0)
		return neg();
	if (drop && renameat2(dir, object, to_dir, l.object, RENAME_NOREPLACE) < 0)
		return neg();
	if (drop) /* what was at TO, whole */
		return !S_ISDIR(sb.st_mode) && sb.st_nlink > 1 ? held_add(rw, sb.st_ino) : 1;
	return renameat2(dir, object, a.dfd, a.leaf, RENAME_NOREPLACE) < 0 ? neg() : 1;
}

/* What the run made at PATH (event SEQ) goes, and the rename that freed
 * the name before (event R: PATH -> FROM) is reversed, in one step: what
 * is at PATH is linked into TO, then FROM is renamed over it, so neither
 * name is ever at neither end (mv f f.bak; echo new > f: f is never
 * absent). Where that cannot be (a directory at either name, or a file
 * with other names, whose link would be seen), the two steps go apart. */
static int step_over(struct undo_plan *rw, int to, int log_fd, size_t seq, size_t r_seq,
		     const struct logged *was)
{
	const char *path = rw->log->events[seq].path, *from = rw->log->events[r_seq].path2;
	struct logged l = { .seq = seq, .kind = STEP_OVER, .path = (char *)from };
	_place_ a = { -1, NULL, false };
	_place_ b = { -1, NULL, false };
	struct stat sa, sb;
	bool at_from, at_path;
	int r;

	if ((r = places_of_move(rw, log_fd, seq, from, path, &a, &b, &sa, &sb, &at_from,
				&at_path)) < 0)
		return r;
	if (was && was->kind == STEP_OVER && at_path && sb.st_ino == was->ino)
		return 1; /* a first attempt took it */
	if (!was && (!at_from || !at_path || S_ISDIR(sa.st_mode) || S_ISDIR(sb.st_mode) ||
		     sb.st_nlink > 1)) {
		rw->over[seq] = SIZE_MAX;
		rw->done[r_seq] = false;
		return step_take(rw, to, log_fd, seq, path, NULL);
	}
	if (!at_from)
		return -ENOENT;
	l.ino = sa.st_ino;
	if ((!was && (r = object_name(rw, l.object)) < 0) || (r = begin(rw, log_fd, &l, was)) < 0)
		return r;
	if (linkat(b.dfd, b.leaf, to, l.object, 0) < 0 && !(was && errno == EEXIST))
		return neg();
	return renameat(a.dfd, a.leaf, b.dfd, b.leaf) < 0 ? neg() : 1;
}

/* A rename FROM -> PATH (event R_SEQ) whose file the run then replaced or
 * removed at PATH, keeping it (event SEQ: mv a b; echo new > b), reversed
 * in one step with the keep's: what is at PATH is linked into TO, then
 * the file the rename replaced there (its keep) renamed over it (or,
 * none, what is there moved into TO), then the kept file renamed to
 * FROM. Each name changes once, so that none is ever at neither end
 * (taken apart, PATH would hold FROM's file in between). Where that
 * cannot be (a directory or a file with other names at PATH, whose
 * content goes back in place), the two steps go apart. Each call of a
 * second attempt is taken again unless its source is gone or (a copy)
 * its target is there. */
static int step_move_kept(struct undo_plan *rw, int to, int log_fd, size_t seq, size_t r_seq,
			  const struct logged *was)
{
	const struct store_event *e = &rw->log->events[seq];
	const char *from = rw->log->events[r_seq].path, *object = e->object;
	size_t v = victim_keep(rw, r_seq);
	const char *old = v == SIZE_MAX ? NULL : rw->log->events[v].object;
	struct logged l = { .seq = seq, .kind = STEP_MOVE_KEPT, .path = (char *)from };
	_place_ a = { -1, NULL, false };
	_place_ b = { -1, NULL, false };
	struct stat sa, sb, src, so;
	bool at_from, at_path;
	char copy[40], old_copy[40];
	int r;

	if ((r = places_of_move(rw, log_fd, seq, from, e->path, &a, &b, &sa, &sb, &at_from,
				&at_path)) < 0)
		return r;
	int dir = source_of(rw, object, &src), odir = old ? source_of(rw, old, &so) : -1;
	if (!was &&
	    (dir < 0 || (old && odir < 0) || at_from ||
	     (at_path && (S_ISDIR(sb.st_mode) || sb.st_nlink > 1 || same_file(&sb, &src))))) {
		rw->over[seq] = SIZE_MAX;
		rw->done[r_seq] = false;
		return step_keep_object(rw, to, log_fd, seq, e->path, object, e->path2, NULL);
	}
	if (!was) {
		l.ino = old ? so.st_ino : 0;
		if (at_path && (r = object_name(rw, l.object)) < 0)
			return r;
	}
	/* A copy, made where the views never look, is what moves. */
	if (rw->copy && odir >= 0) {
		if ((r = object_name(rw, old_copy)) < 0 ||
		    (r = copy_object(odir, old, to, old_copy)) < 0)
			return r;
		odir = to;
		old = old_copy;
	}
	if (rw->copy && dir >= 0) {
		if ((r = object_name(rw, copy)) < 0 || (r = copy_object(dir, object, to, copy)) < 0)
			return r;
		dir = to;
		object = copy;
	}
	if ((r = begin(rw, log_fd, &l, was)) < 0)
		return r;
	if (l.ino && odir >= 0) {
		if (l.object[0] && linkat(b.dfd, b.leaf, to, l.object, 0) < 0 &&
		    !(was && errno == EEXIST))
			return neg();
		if (renameat2(odir, old, b.dfd, b.leaf, l.object[0] ? 0 : RENAME_NOREPLACE) < 0) {
			if (!was || errno != EEXIST)
				return neg();
			unlinkat(odir, old, 0); /* a copy, put there by a first attempt */
		}
	} else if (!l.ino && l.object[0] && at_path &&
		   renameat2(b.dfd, b.leaf, to, l.object, RENAME_NOREPLACE) < 0)
		return neg();
	if (dir >= 0 && renameat2(dir, object, a.dfd, a.leaf, RENAME_NOREPLACE) < 0) {
		if (!was || errno != EEXIST)
			return neg();
		unlinkat(dir, object, 0); /* the same */
	}
	return 1;
}

/* The rename the keep event I of a replaced or removed file undoes too
 * (step_move_kept()): the nearest event on its name before it, past
 * changes of its content, if that renamed a file the run did not make
 * onto that name, from a name no event names since. SIZE_MAX if none. */
static size_t renamed_then_kept(const struct undo_plan *rw, size_t i)
{
	const struct store_event *e = &rw->log->events[i];
	size_t r = i;

	if (!op_is(e, "keep") || !e->object || e->path2)
		return SIZE_MAX; /* path2: an undo's keep, which says how it goes back */
	do
		r = last_on(rw, r, e->path, false);
	while (r != SIZE_MAX && op_is(&rw->log->events[r], "modify"));
	const struct store_event *re = r == SIZE_MAX ? NULL : &rw->log->events[r];
	if (!re || !op_is(re, "rename") || !re->path2 || strcmp(re->path2, e->path) ||
	    last_on(rw, i, re->path, false) != r || maker(rw, r) != SIZE_MAX)
		return SIZE_MAX;
	/* Nor where a link an undo took in between names the file there as
	 * its other one (a redo: its step links the name to what is at PATH
	 * before the rename goes back; in one with it, PATH is free then). */
	for (size_t j = r + 1; j < i; j++) {
		const struct store_event *k = &rw->log->events[j];
		if (op_is(k, "keep") && k->path2 && !strcmp(k->path2, e->path))
			return SIZE_MAX;
	}
	return r;
}

/* True if a first attempt logged a step for event I other than one of
 * kind KIND: it took I's step apart from the pair that KIND joins. */
static bool taken_apart(const struct undo_plan *rw, size_t i, enum step_kind kind)
{
	for (size_t k = 0; k < rw->nsteps; k++)
		if (rw->steps[k].seq == i && rw->steps[k].kind != kind &&
		    rw->steps[k].kind != STEP_FAIL && rw->steps[k].kind != STEP_DIR &&
		    rw->steps[k].kind != STEP_SHADOW && rw->steps[k].kind != STEP_PUBLISH)
			return true;
	return false;
}

/* The rename whose step may go in one with that of event I, a removal
 * of what the run made (step_over()): the nearest event on its name
 * before it, if that renamed what was there away; SIZE_MAX if none. A
 * directory's removal goes alone. */
static size_t rename_before(const struct undo_plan *rw, size_t i)
{
	const struct store_event *e = &rw->log->events[i];
	size_t r = e->path2 || op_is(e, "mkdir") ? SIZE_MAX : last_on(rw, i, e->path, false);
	const struct store_event *re = r == SIZE_MAX ? NULL : &rw->log->events[r];

	return re && op_is(re, "rename") && re->path2 && !strcmp(re->path, e->path) ? r : SIZE_MAX;
}

/* Pairs each step that removes what the run made (not taken early) with
 * the rename that freed its name just before (RW->over), where nothing
 * in between names either name and the rename is onto a free one; the
 * rename's own step is then not taken. A first attempt that took the
 * removal or the rename alone (the pair could not be: the removal may
 * have found nothing to log) is followed. */
static int overs_pair(struct undo_plan *rw)
{
	const struct runlog *log = rw->log;

	if (!rw->over && !(rw->over = malloc((log->n ? log->n : 1) * sizeof(*rw->over))))
		return -ENOMEM;
	for (size_t i = 0; i < log->n; i++)
		rw->over[i] = SIZE_MAX;
	for (size_t i = 0; i < log->n; i++) {
		const struct store_event *e = &log->events[i];
		if (e->path2 || rw->skip[i] || rw->done[i] || (rw->early && rw->early[i]) ||
		    !(op_is(e, "create") || op_is(e, "link") || op_is(e, "symlink")))
			continue;
		size_t r = rename_before(rw, i);
		if (r == SIZE_MAX || rw->skip[r] || rw->done[r] ||
		    last_on(rw, i, log->events[r].path2, false) != r ||
		    victim_keep(rw, r) != SIZE_MAX || taken_apart(rw, i, STEP_OVER) ||
		    taken_apart(rw, r, STEP_OVER))
			continue;
		rw->over[i] = r;
		rw->done[r] = true;
	}
	/* And each keep of a file the run renamed, then replaced or removed
	 * at its new name, with that rename (step_move_kept()). */
	for (size_t i = 0; i < log->n; i++) {
		size_t r = rw->skip[i] || rw->done[i] ? SIZE_MAX : renamed_then_kept(rw, i);
		size_t v = r == SIZE_MAX ? SIZE_MAX : victim_keep(rw, r);
		if (r == SIZE_MAX || rw->skip[r] || rw->done[r] || (v != SIZE_MAX && rw->skip[v]) ||
		    taken_apart(rw, i, STEP_MOVE_KEPT) || taken_apart(rw, r, STEP_MOVE_KEPT))
			continue;
		rw->over[i] = r;
		rw->done[r] = true;
	}
	return 0;
}

/* The rename back of the directory at the path of shadow S (SHADOW_MOVED:
 * event SEQ's step), logged: the publication of the shadow makes it. */
static int step_moved(struct undo_plan *rw, int log_fd, size_t seq, const struct shadow *s,
		      const struct logged *was)
{
	const struct store_event *e = &rw->log->events[seq];
	struct logged l = { .seq = seq, .kind = STEP_MOVE, .ino = s->ino };
	int r;

	if ((r = touch_dir(rw, log_fd, seq, e->path)) < 0 ||
	    (r = touch_dir(rw, log_fd, seq, e->path2)) < 0 || (r = begin(rw, log_fd, &l, was)) < 0)
		return r;
	return 1;
}

/* The last step of the window of SHADOW_SWAPPED S (event SEQ), which its
 * beginning took: logged as what it is, the rename back onto the path or
 * the directory made again there. */
static int step_swapped(struct undo_plan *rw, int log_fd, size_t seq, const struct shadow *s,
			const struct logged *was)
{
	struct logged l = { .seq = seq, .kind = s->from ? STEP_MOVE : STEP_MKDIR };
	int r = begin(rw, log_fd, &l, was);

	return r < 0 ? r : 1;
}

/* Undoes event SEQ; WAS: the step a first attempt logged for it last.
 * Returns 1 if a step was taken, 0 if there was nothing to do. */
static int step(struct undo_plan *rw, int to, int log_fd, size_t seq, const struct logged *was)
{
	const struct store_event *e = &rw->log->events[seq];
	const struct shadow *s = e->path2 ? shadow_active(rw, e->path2) : NULL;
	const struct shadow *swapped = rw->nshadows ? shadow_active(rw, e->path) : NULL;

	if (s && s->state == SHADOW_MOVED && rw->order[s->first] == seq)
		return step_moved(rw, log_fd, seq, s, was);
	if (swapped && swapped->state == SHADOW_SWAPPED && rw->order[swapped->last] == seq)
		return step_swapped(rw, log_fd, seq, swapped, was);
	if (op_is(e, "rename") && e->path2) {
		size_t victim = victim_keep(rw, seq), made = maker(rw, seq);
		if (victim != SIZE_MAX && rw->done[victim])
			return step_swap(rw, to, log_fd, seq, e->path, e->path2,
					 rw->log->events[victim].object,
					 made != SIZE_MAX && rw->done[made], was);
	}
	if (op_is(e, "keep") && e->object && rw->over[seq] != SIZE_MAX)
		return step_move_kept(rw, to, log_fd, seq, rw->over[seq], was);
	if (op_is(e, "keep") && e->object)
		return step_keep_object(rw, to, log_fd, seq, e->path, e->object, e->path2, was);
	if (op_is(e, "keep") && e->meta)
		return step_keep_meta(rw, log_fd, seq, e->path, e->meta, e->meta_len, was);
	if (rw->over[seq] != SIZE_MAX)
		return step_over(rw, to, log_fd, seq, rw->over[seq], was);
	if (op_is(e, "create") || op_is(e, "link") || op_is(e, "mkdir") || op_is(e, "symlink"))
		return step_take(rw, to, log_fd, seq, rw->early[seq] ? rw->early[seq] : e->path,
				 was);
	if ((op_is(e, "rename") || op_is(e, "exchange")) && e->path2)
		return step_move(rw, log_fd, seq, e->path, e->path2, op_is(e, "exchange"), was);
	return 0; /* its keep, if any, undoes it */
}

/* The directories whose attributes came back get their times again,
 * last: the steps after theirs (a file put back by a rename, where the
 * run had written in place) moved them. In the order of the log, so the
 * earliest word of the run on each wins. */
/* Gives the directory that step SEQ found at PATH (inode INO, 0: any)
 * the times of BLOB, where the undo's later steps (the renames of the
 * events before SEQ, reversed) left it. */
static void times_back(struct undo_plan *rw, const struct moves *undone, size_t seq,
		       const char *path, uint64_t ino, const uint8_t *blob, size_t len)
{
	char where[PATH_MAX];
	struct place p;
	struct stat st;
	struct meta m;

	if (meta_decode(blob, len, &m) < 0)
		return;
	struct timespec ts[2] = {
		{ .tv_sec = m.atime_ns / 1000000000, .tv_nsec = m.atime_ns % 1000000000 },
		{ .tv_sec = m.mtime_ns / 1000000000, .tv_nsec = m.mtime_ns % 1000000000 },
	};
	if (final_name(undone, rw->pos[seq], path, true, where) && S_ISDIR(m.mode) &&
	    place_open(rw, where, &p) == 0 &&
	    fstatat(p.dfd, p.leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
	    (!ino || st.st_ino == ino))
		utimensat(p.dfd, p.leaf, ts, AT_SYMLINK_NOFOLLOW);
	meta_free(&m);
}

static void dir_times(struct undo_plan *rw)
{
	struct moves undone;

	if (moves_undone(rw, &undone) < 0)
		return;
	/* The directories the run left alone get the times they had before
	 * the undo, those it changed the ones it kept, after. */
	for (size_t i = 0; i < rw->nsteps; i++) {
		const struct logged *l = &rw->steps[i];
		if (l->kind == STEP_DIR && l->meta)
			times_back(rw, &undone, l->seq, l->path, l->ino, l->meta, l->meta_len);
	}
	for (size_t i = 0; i < rw->nsteps; i++) {
		const struct logged *l = &rw->steps[i];
		const struct store_event *e = &rw->log->events[l->seq];
		if ((l->kind == STEP_ATTR || l->kind == STEP_MKDIR) && !step_failed(rw, i) &&
		    e->meta)
			times_back(rw, &undone, l->seq, e->path, l->ino, e->meta, e->meta_len);
	}
	moves_free(&undone);
}

static const char *describe(const struct store_event *e)
{
	if (op_is(e, "keep"))
		return e->object ? "put back" : "restore the directory or the attributes of";
	if (op_is(e, "create") || op_is(e, "link") || op_is(e, "symlink"))
		return "remove";
	if (op_is(e, "mkdir"))
		return "remove the directory";
	if (op_is(e, "rename"))
		return "rename back";
	if (op_is(e, "exchange"))
		return "exchange back";
	return NULL;
}

/* A final name of an event, for steps_order(). */
struct named {
	char *name;
	size_t at;
};

static int named_cmp(const void *a, const void *b)
{
	return strcmp(((const struct named *)a)->name, ((const struct named *)b)->name);
}

/* True if an event but AT names NAME or below it at the end (V sorted),
 * other than one taken early (EARLY: per event, its path or NULL). */
static bool named_by_another(const struct named *v, size_t n, const char *name, size_t at,
			     char *const *early)
{
	size_t lo = 0, hi = n, len = strlen(name);

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(v[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && !strncmp(v[lo].name, name, len); lo++)
		if ((v[lo].name[len] == '\0' || v[lo].name[len] == '/') && v[lo].at != at &&
		    !early[v[lo].at])
			return true;
		else if (v[lo].name[len] > '/')
			break; /* past NAME/... in the order of names */
	return false;
}

/* The events a step takes early (RW->early), at their names at the end:
 * a file, symlink or directory the run made in a directory it then moved
 * (mkdir e/new; mv e e2), and no other step names (writes and chmods of
 * what the run made have none) but those taken early themselves: a
 * directory with what the run made in it (mkdir e/new; echo > e/new/f),
 * which comes later in the log, so its step goes first. */
static int steps_early(struct undo_plan *rw, const struct moves *moves, size_t *last)
{
	const struct runlog *log = rw->log;
	struct named *v = calloc(2 * log->n + 1, sizeof(*v));
	char name[PATH_MAX];
	size_t n = 0;
	int r = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < log->n && r == 0; i++) {
		const struct store_event *e = &log->events[i];
		bool gone = op_is(e, "delete") || op_is(e, "rmdir") || op_is(e, "rename");
		if (op_is(e, "modify") || op_is(e, "chmod") || op_is(e, "capture") ||
		    op_is(e, "preimage"))
			continue; /* no step of its own: its keep's, if any */
		for (int k = 0; k < (e->path2 ? 2 : 1) && r == 0; k++) {
			final_name(moves, i, k ? e->path2 : e->path, k || !gone, name);
			if (!(v[n].name = strdup(name)))
				r = -ENOMEM;
			else
				v[n++].at = i;
		}
	}
	if (n)
		qsort(v, n, sizeof(*v), named_cmp);
	/* Latest first: what is in a directory is decided before it. */
	for (size_t i = log->n; i-- > 0 && r == 0;) {
		const struct store_event *e = &log->events[i];
		if (e->path2 || rw->skip[i] || rw->done[i] ||
		    !(op_is(e, "create") || op_is(e, "link") || op_is(e, "mkdir") ||
		      op_is(e, "symlink")))
			continue;
		if (!final_name_at(moves, i, e->path, true, name, &last[i]) ||
		    last[i] == SIZE_MAX || rw->skip[last[i]] ||
		    named_by_another(v, n, name, i, rw->early)) {
			last[i] = SIZE_MAX;
			continue;
		}
		if (!(rw->early[i] = strdup(name)))
			r = -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	return r;
}

/* The order of the steps (RW->order, RW->pos): the log's, backwards, but
 * a step taken early goes just before the step that undoes the last move
 * of a directory above it, so that what the run made there never shows
 * under a name it had at neither end (e/new while the undo runs). */
static int steps_order(struct undo_plan *rw)
{
	const struct runlog *log = rw->log;
	size_t n = log->n, k = 0, *last;
	struct moves moves = { 0 };
	int r;

	if (rw->order)
		return 0; /* set already */
	last = calloc(n + 1, sizeof(*last));
	rw->order = calloc(n + 1, sizeof(*rw->order));
	rw->pos = calloc(n + 1, sizeof(*rw->pos));
	rw->early = calloc(n + 1, sizeof(*rw->early));
	if (!last || !rw->order || !rw->pos || !rw->early) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		last[i] = SIZE_MAX;
	if ((r = moves_index(log, &moves)) == 0 && moves.n)
		r = steps_early(rw, &moves, last);
	moves_free(&moves);
	/* Each move's early steps, latest first (LAST becomes the head of a
	 * list per move, NEXT its links: RW->pos until it is set). */
	size_t *head = last, *next = rw->pos;
	for (size_t i = 0; i < n; i++)
		next[i] = SIZE_MAX;
	for (size_t j = 0; j < n && r == 0; j++)
		if (rw->early[j]) {
			size_t m = last[j];
			last[j] = SIZE_MAX;
			next[j] = head[m];
			head[m] = j;
		}
	for (size_t i = n; i-- > 0 && r == 0;) {
		for (size_t j = head[i]; j != SIZE_MAX; j = next[j])
			rw->order[k++] = j;
		if (!rw->early[i])
			rw->order[k++] = i;
	}
	for (size_t p = 0; p < k; p++)
		rw->pos[rw->order[p]] = p;
out:
	free(last);
	if (r < 0) { /* none: a next call starts again */
		for (size_t i = 0; rw->early && i < n; i++)
			free(rw->early[i]);
		free(rw->early);
		free(rw->order);
		rw->early = NULL;
		rw->order = NULL;
	}
	return r;
}
/* ---- shadows: their windows, beginnings and publications ------------------- */

/* A name the step at position POS may change: what is there (CONTENT),
 * or only its attributes; a directory's attributes (META: the directory
 * is made again if missing, which changes nothing below it). */
struct touch {
	const char *name;
	size_t pos;
	bool content, meta;
};

static int touch_cmp(const void *a, const void *b)
{
	const struct touch *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Whether the attributes BLOB (LEN bytes) are a directory's. */
static bool meta_is_dir(const uint8_t *blob, size_t len)
{
	struct meta m;

	if (meta_decode(blob, len, &m) < 0)
		return false;
	bool dir = S_ISDIR(m.mode);
	meta_free(&m);
	return dir;
}

/* The names the step of event I may change, at most 3 into NAMES (and
 * whether their content, into CONTENT); how many. A step that may go in
 * one with another (step_over(), step_move_kept()) names the other's
 * names too, taken together or apart: the same on every attempt. */
static size_t step_names(const struct undo_plan *rw, size_t i, const char *names[3],
			 bool content[3])
{
	const struct store_event *e = &rw->log->events[i];
	size_t n = 0, r;

	content[0] = content[1] = content[2] = true;
	if (rw->skip[i])
		return 0;
	if ((op_is(e, "rename") || op_is(e, "exchange")) && e->path2) {
		names[n++] = e->path;
		names[n++] = e->path2;
	} else if (op_is(e, "keep") && e->object) {
		if (rw->done[i]) /* the rename's step_swap() */
			return 0;
		names[n++] = e->path;
		if ((r = renamed_then_kept(rw, i)) != SIZE_MAX)
			names[n++] = rw->log->events[r].path;
	} else if (op_is(e, "keep") && e->meta) {
		names[n] = e->path; /* a directory may be made again */
		content[n++] = meta_is_dir(e->meta, e->meta_len);
	} else if ((op_is(e, "create") || op_is(e, "link") || op_is(e, "mkdir") ||
		    op_is(e, "symlink")) &&
		   !rw->done[i]) {
		names[n++] = rw->early && rw->early[i] ? rw->early[i] : e->path;
		if ((r = rename_before(rw, i)) != SIZE_MAX)
			names[n++] = rw->log->events[r].path2;
	}
	return n;
}

/* The first of V's N touches (sorted) of NAME or after it. */
static size_t touch_lower(const struct touch *v, size_t n, const char *name)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(v[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A window of a name's steps, from position FIRST to LAST, and what its
 * shadow may begin as (struct shadow). */
struct window {
	size_t first, last;
	enum shadow_shape shape;
	const char *away, *from;
	size_t leave;
	bool paired;
};

static int shadow_add(struct undo_plan *rw, size_t *cap, const char *path, const struct window *win)
{
	struct shadow *s;

	if (array_grow(rw->shadows, rw->nshadows, *cap) < 0)
		return -ENOMEM;
	s = &rw->shadows[rw->nshadows];
	*s = (struct shadow){ .path = strdup(path),
			      .first = win->first,
			      .last = win->last,
			      .away = win->away,
			      .shape = win->shape,
			      .leave = win->leave,
			      .paired = win->paired,
			      .from = win->from };
	if (!s->path)
		return -ENOMEM;
	snprintf(s->name, sizeof(s->name), "shadow-%zu", rw->nshadows++);
	return 0;
}

/* True if no touch of V (N, sorted) at a position from LO up to HI (not
 * included) is of NAME, of a path below it, or of what is at a directory
 * above it. */
static bool untouched(const struct touch *v, size_t n, const char *name, size_t lo, size_t hi)
{
	char up[PATH_MAX];
	size_t len = strlen(name), k;

	if (len + 2 > sizeof(up))
		return false;
	for (k = touch_lower(v, n, name); k < n && !strcmp(v[k].name, name); k++)
		if (v[k].pos >= lo && v[k].pos < hi)
			return false;
	snprintf(up, sizeof(up), "%s/", name);
	for (k = touch_lower(v, n, up); k < n && !strncmp(v[k].name, up, len + 1); k++)
		if (v[k].pos >= lo && v[k].pos < hi)
			return false;
	up[len] = '\0';
	for (char *slash; (slash = strrchr(up, '/')) && slash > up;) {
		*slash = '\0';
		for (k = touch_lower(v, n, up); k < n && !strcmp(v[k].name, up); k++)
			if (v[k].content && !v[k].meta && v[k].pos >= lo && v[k].pos < hi)
				return false;
	}
	return true;
}

/* The other name of rename event I, if its step renames what is at
 * NAME there (step_move()), and nothing else from position A to B
 * touches it (a shadow of NAME may then leave a directory at NAME until
 * published, and rename it there then: SHADOW_MOVED); else NULL. */
static const char *away_of(const struct undo_plan *rw, const struct touch *v, size_t n, size_t i,
			   const char *name, size_t a, size_t b)
{
	const struct store_event *e = &rw->log->events[i];

	return op_is(e, "rename") && e->path2 && !strcmp(e->path2, name) &&
			       untouched(v, n, e->path, a + 1, b + 1)
		       ? e->path
		       : NULL;
}

static bool moves_back(const struct undo_plan *rw, size_t i);

/* What a window of a name sees: one of its own touches (OWN, META as
 * the touch's), one of a path below it, or a change of what is at a
 * directory above it, which ends the window. */
struct seen_touch {
	size_t pos;
	enum { SEEN_OWN, SEEN_BELOW, SEEN_ABOVE } what;
	bool meta;
};

static int seen_cmp_pos(const void *a, const void *b)
{
	const struct seen_touch *x = a, *y = b;

	return x->pos < y->pos ? -1 : x->pos > y->pos ? 1 : (int)y->what - (int)x->what;
}

/* The touches that the windows of the name of V[G..END) (V's N, sorted)
 * see, by position, into *W (grown, *CAP): how many, or -ENOMEM. */
static ssize_t touches_seen(const struct touch *v, size_t n, size_t g, size_t end,
			    struct seen_touch **w, size_t *cap)
{
	const char *name = v[g].name;
	size_t len = strlen(name), m = 0;
	char up[PATH_MAX];

	if (len + 2 > sizeof(up))
		return 0;
#define SEEN_ADD(p, k, mt)                                         \
	do {                                                       \
		if (array_grow(*w, m, *cap) < 0)                   \
			return -ENOMEM;                            \
		(*w)[m++] = (struct seen_touch){ (p), (k), (mt) }; \
	} while (0)
	for (size_t k = g; k < end; k++)
		if (v[k].content)
			SEEN_ADD(v[k].pos, SEEN_OWN, v[k].meta);
	snprintf(up, sizeof(up), "%s/", name);
	for (size_t k = touch_lower(v, n, up); k < n && !strncmp(v[k].name, up, len + 1); k++)
		SEEN_ADD(v[k].pos, SEEN_BELOW, false);
	up[len] = '\0';
	for (char *slash; (slash = strrchr(up, '/')) && slash > up;) {
		*slash = '\0';
		for (size_t k = touch_lower(v, n, up); k < n && !strcmp(v[k].name, up); k++)
			if (v[k].content && !v[k].meta)
				SEEN_ADD(v[k].pos, SEEN_ABOVE, false);
	}
#undef SEEN_ADD
	if (m)
		qsort(*w, m, sizeof(**w), seen_cmp_pos);
	return (ssize_t)m;
}

/* True if the step of event I may rename what is at NAME away (a rename
 * onto NAME reversed). */
static bool leaves(const struct undo_plan *rw, size_t i, const char *name)
{
	const struct store_event *e = &rw->log->events[i];

	return op_is(e, "rename") && e->path2 && !strcmp(e->path2, name);
}

/* The first of W's M touches from K on that is not one below the name
 * (nor, if META, one of its own attributes). */
static size_t skip_below(const struct seen_touch *w, size_t m, size_t k, bool meta)
{
	while (k < m && (w[k].what == SEEN_BELOW || (meta && w[k].what == SEEN_OWN && w[k].meta)))
		k++;
	return k;
}

/* True if the touch W[K] (of M) ends a window: there is none, or it is
 * one of what is at a directory above the name. */
static bool window_ends(const struct seen_touch *w, size_t m, size_t k)
{
	return k >= m || w[k].what == SEEN_ABOVE;
}

/* After steps below NAME (a window's leads), its own touch W[K] (of M):
 * if the steps from there rename the directory at NAME away (the first of
 * them but for its attributes, or a step that goes in one with that
 * rename, step_over(), then the rename) and touch it no more, or only to
 * make it a directory again, the end of a transit window (its index in
 * W), its shape and rename into WIN; else SIZE_MAX. */
static size_t transit_end(const struct undo_plan *rw, const char *name, const struct seen_touch *w,
			  size_t m, size_t k, struct window *win)
{
	size_t go = skip_below(w, m, k, true), i, j;

	if (go >= m || w[go].what != SEEN_OWN)
		return SIZE_MAX;
	i = rw->order[w[go].pos];
	win->paired = !leaves(rw, i, name);
	if (win->paired) {
		size_t r = rename_before(rw, i);
		j = skip_below(w, m, go + 1, false);
		if (r == SIZE_MAX || !leaves(rw, r, name) || j >= m || w[j].what != SEEN_OWN ||
		    rw->order[w[j].pos] != r)
			return SIZE_MAX;
		go = j;
		i = r;
	}
	win->leave = i;
	j = skip_below(w, m, go + 1, false);
	if (window_ends(w, m, j)) {
		win->shape = SHAPE_TRANSIT;
		return go;
	}
	if (w[j].what == SEEN_OWN && w[j].meta &&
	    window_ends(w, m, skip_below(w, m, j + 1, false))) {
		win->shape = SHAPE_REMADE;
		return j;
	}
	return SIZE_MAX;
}

/* The name the step at position POS renames onto NAME (a rename back,
 * step_move()), if no other step names it (V's N touches) from position
 * FIRST on: what is there may come at once (SHAPE_ARRIVES); else NULL. */
static const char *arrival_from(const struct undo_plan *rw, const struct touch *v, size_t n,
				const char *name, size_t first, size_t pos)
{
	size_t i = rw->order[pos];
	const struct store_event *e = &rw->log->events[i];

	if (!op_is(e, "rename") || !e->path2 || strcmp(e->path, name) || !moves_back(rw, i))
		return NULL;
	return untouched(v, n, e->path2, first, pos) && untouched(v, n, e->path2, pos + 1, SIZE_MAX)
		       ? e->path2
		       : NULL;
}

/* The window of a name that shadow_windows() is reading: where it
 * begins (FIRST: its first step on the name; HEAD: the first below it
 * before that), its last step (LAST_OWN: on the name), how many on the
 * name (STEPS: more than attributes; STEP: the last of those), whether
 * one below it came in (BELOW); and before any, the first step below it
 * (LEAD). */
struct reading {
	size_t first, head, last, last_own, own, steps, step, lead;
	bool below;
};

/* True if the step of event I exchanges what is at NAME with another
 * name (an exchange done again). */
static bool exchanges(const struct undo_plan *rw, size_t i, const char *name)
{
	const struct store_event *e = &rw->log->events[i];

	return op_is(e, "exchange") && e->path2 &&
	       (!strcmp(e->path, name) || !strcmp(e->path2, name));
}

/* Adds the shadow of the window RD of NAME, which a step on what is at a
 * directory above it (or none) ends, if it needs one: two or more steps
 * on it, or one and steps below it, and one of them more than
 * attributes. Where the last is a rename back onto it from a name no
 * other step names, after another and steps below it, the window begins
 * at the first of those (SHAPE_ARRIVES); likewise where the one step on
 * it but for its attributes is an exchange, with steps below it before
 * or after (SHAPE_EXCHANGED). */
static int window_end(struct undo_plan *rw, size_t *cap, const struct touch *v, size_t n,
		      const char *name, const struct reading *rd)
{
	struct window win = { .first = rd->first, .last = rd->last, .leave = SIZE_MAX };

	if (rd->last == rd->last_own && rd->steps >= 2 && (rd->below || rd->head != rd->first) &&
	    (win.from = arrival_from(rw, v, n, name, rd->head, rd->last))) {
		win.first = rd->head;
		win.shape = SHAPE_ARRIVES;
	} else if (rd->steps == 1 && (rd->below || rd->head != rd->first) &&
		   exchanges(rw, rw->order[rd->step], name)) {
		win.first = rd->head;
		win.shape = SHAPE_EXCHANGED;
	} else if (rd->steps && (rd->own >= 2 || rd->below)) {
		win.away = away_of(rw, v, n, rw->order[rd->first], name, rd->first, rd->last);
	} else {
		return 0;
	}
	return shadow_add(rw, cap, name, &win);
}

/* The shadows of NAME, from the touches W (M of them, by position) its
 * windows see (V's N touches, sorted, for the rest): each window from a
 * step that may change what is at NAME to the last step on it or below
 * it before one on what is at a directory above it, where that is two or
 * more steps on it, or one followed by steps below it (mv d b; echo new
 * > d/e: the directory comes back into the shadow, its file is written
 * back there, then it goes to d whole), and one of them more than a
 * directory's attributes. Where the last is a rename back onto it, after
 * steps below it, those that came before its first step are in the
 * window too (SHAPE_ARRIVES). And steps below it followed by one that
 * renames it away and no other on it but one that makes it again (mv d
 * e; rm e/f: the directory goes into the shadow first, its file comes
 * back there, then it goes to d whole: SHAPE_TRANSIT, SHAPE_REMADE). */
static int shadow_windows(struct undo_plan *rw, size_t *cap, const struct touch *v, size_t n,
			  const char *name, const struct seen_touch *w, size_t m)
{
	struct reading rd = { .first = SIZE_MAX, .lead = SIZE_MAX };
	int r = 0;

	for (size_t k = 0; k <= m && r == 0; k++) {
		if (k < m && w[k].what == SEEN_OWN) {
			struct window win = { .first = rd.lead, .leave = SIZE_MAX };
			size_t end = rd.first == SIZE_MAX && rd.lead != SIZE_MAX
					     ? transit_end(rw, name, w, m, k, &win)
					     : SIZE_MAX;
			if (end != SIZE_MAX) {
				win.last = w[end].pos;
				r = shadow_add(rw, cap, name, &win);
				rd.lead = SIZE_MAX;
				k = end;
				continue;
			}
			if (rd.first == SIZE_MAX) {
				rd.first = w[k].pos;
				rd.head = rd.lead != SIZE_MAX ? rd.lead : rd.first;
			}
			rd.lead = SIZE_MAX;
			rd.last = rd.last_own = w[k].pos;
			rd.own++;
			if (!w[k].meta) {
				rd.steps++;
				rd.step = w[k].pos;
			}
		} else if (k < m && w[k].what == SEEN_BELOW) {
			if (rd.first != SIZE_MAX) {
				rd.last = w[k].pos;
				rd.below = true;
			} else if (rd.lead == SIZE_MAX) {
				rd.lead = w[k].pos;
			}
		} else {
			if (rd.first != SIZE_MAX)
				r = window_end(rw, cap, v, n, name, &rd);
			rd = (struct reading){ .first = SIZE_MAX, .lead = SIZE_MAX };
		}
	}
	return r;
}

/* The depth of PATH: its slashes. */
static size_t depth(const char *path)
{
	size_t d = 0;

	for (; *path; path++)
		d += *path == '/';
	return d;
}

static int by_first_cmp(const void *a, const void *b, void *arg)
{
	const struct shadow *x = &((const struct undo_plan *)arg)->shadows[*(const size_t *)a],
			    *y = &((const struct undo_plan *)arg)->shadows[*(const size_t *)b];

	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return depth(x->path) < depth(y->path) ? -1 : depth(x->path) > depth(y->path);
}

static int by_last_cmp(const void *a, const void *b, void *arg)
{
	const struct shadow *x = &((const struct undo_plan *)arg)->shadows[*(const size_t *)a],
			    *y = &((const struct undo_plan *)arg)->shadows[*(const size_t *)b];

	if (x->last != y->last)
		return x->last < y->last ? -1 : 1;
	return depth(x->path) > depth(y->path) ? -1 : depth(x->path) < depth(y->path);
}

/* The shadows (RW->shadows): for each name, each window from a step
 * that may change what is there to the last step on it or on a path
 * below it (which its shadow holds meanwhile) before one on what is at a
 * directory above it, where that is two or more steps on it, or one
 * followed by steps below it (mv d b; echo new > d/e: the directory
 * comes back into the shadow, its file is written back there, then it
 * goes to d whole), and one of them more than a directory's attributes.
 * From the events, the order of the steps and the pairs they go in:
 * the same on every attempt. A shadow begins before the shadows below it
 * that begin at the same step, and is published after them. */
static int shadows_plan(struct undo_plan *rw)
{
	const struct runlog *log = rw->log;
	struct touch *v = calloc(3 * log->n + 1, sizeof(*v));
	struct seen_touch *w = NULL;
	size_t n = 0, cap = 0, wcap = 0;
	int r = 0;

	if (!v)
		return -ENOMEM;
	for (size_t p = 0; p < log->n; p++) {
		const char *names[3];
		bool content[3];
		size_t i = rw->order[p], k = step_names(rw, i, names, content);
		bool meta = !rw->log->events[i].object && rw->log->events[i].meta;
		for (size_t j = 0; j < k; j++)
			v[n++] = (struct touch){ names[j], p, content[j], meta };
	}
	if (n)
		qsort(v, n, sizeof(*v), touch_cmp);
	for (size_t g = 0, end; g < n && r == 0; g = end) {
		bool worth = false;
		for (end = g; end < n && !strcmp(v[end].name, v[g].name); end++)
			worth |= v[end].content && !v[end].meta;
		ssize_t m = worth ? touches_seen(v, n, g, end, &w, &wcap) : 0;
		if (m < 0)
			r = (int)m;
		if (m > 0)
			r = shadow_windows(rw, &cap, v, n, v[g].name, w, (size_t)m);
	}
	free(w);
	free(v);
	if (r == 0 && rw->nshadows &&
	    (!(rw->by_first = malloc(rw->nshadows * sizeof(size_t))) ||
	     !(rw->by_last = malloc(rw->nshadows * sizeof(size_t)))))
		r = -ENOMEM;
	if (r < 0) {
		shadows_free(rw);
		return r;
	}
	for (size_t i = 0; i < rw->nshadows; i++)
		rw->by_first[i] = rw->by_last[i] = i;
	if (rw->nshadows) {
		qsort_r(rw->by_first, rw->nshadows, sizeof(size_t), by_first_cmp, rw);
		qsort_r(rw->by_last, rw->nshadows, sizeof(size_t), by_last_cmp, rw);
	}
	return 0;
}

/* What a first attempt logged of the shadows: where each is. */
static void shadows_resume(struct undo_plan *rw)
{
	for (size_t i = 0; i < rw->nsteps; i++) {
		const struct logged *l = &rw->steps[i];
		size_t at;
		if ((l->kind != STEP_SHADOW && l->kind != STEP_PUBLISH) || !l->path ||
		    sscanf(l->object, "shadow-%zu", &at) != 1 || at >= rw->nshadows ||
		    strcmp(rw->shadows[at].path, l->path))
			continue;
		struct shadow *s = &rw->shadows[at];
		if (l->kind == STEP_PUBLISH) {
			s->state = SHADOW_PUBLISHED;
			s->target = l->ino;
		} else if (l->err >= SHADOW_REAL && l->err <= SHADOW_COPIED) {
			s->state = s->begun = l->err;
			s->ino = l->ino;
		}
		s->again = i + 1 == rw->nsteps;
	}
}

static int remove_at(int dfd, const char *name, const struct stat *st)
{
	return unlinkat(dfd, name, S_ISDIR(st->st_mode) ? AT_REMOVEDIR : 0) < 0 ? neg() : 0;
}

/* Whether LEAF in DFD is a directory with no entries. */
static bool dir_empty(int dfd, const char *leaf)
{
	int fd = openat(dfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_(closedirp) DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;

	if (fd >= 0 && !d)
		close(fd);
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			return false;
	return d != NULL;
}

static int shadow_log(struct undo_plan *rw, int log_fd, size_t p, enum step_kind kind,
		      const struct shadow *s, uint64_t ino)
{
	struct logged l = { .seq = rw->order[p],
			    .kind = kind,
			    .at_ns = realtime_ns(),
			    .ino = ino,
			    .err = (int)s->begun,
			    .path = s->path };

	snprintf(l.object, sizeof(l.object), "%s", s->name);
	return log_step(rw, log_fd, &l);
}

/* True if the step of event I renames something back (step_move()): a
 * rename not skipped, not taken by another's step, not over a file the
 * run kept (step_swap()). */
static bool moves_back(const struct undo_plan *rw, size_t i)
{
	const struct store_event *e = &rw->log->events[i];
	size_t v;

	return op_is(e, "rename") && e->path2 && !rw->skip[i] && !rw->done[i] &&
	       ((v = victim_keep(rw, i)) == SIZE_MAX || !rw->done[v]);
}

/* True if the step that renames away the directory at the path of
 * transit shadow S (SHAPE_TRANSIT, SHAPE_REMADE) does: it is not skipped,
 * and not taken by another's step, but for one that goes in one with it
 * (step_over(), which a directory there takes apart). */
static bool leaves_whole(const struct undo_plan *rw, const struct shadow *s)
{
	return moves_back(rw, s->leave) ||
	       (s->paired && !rw->skip[s->leave] && victim_keep(rw, s->leave) == SIZE_MAX);
}

/* True if what the last step of the window of S (SHAPE_ARRIVES) renames
 * onto its path can come at once: the step is to be taken, and something
 * is there to come. */
static bool arrives_now(const struct undo_plan *rw, const struct shadow *s)
{
	const char *leaf;
	struct stat st;
	_cleanup_(closep) int fd = moves_back(rw, rw->order[s->last])
					   ? shadow_parent(rw, s->from, true, &leaf)
					   : -1;

	return fd >= 0 && fstatat(fd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* How shadow S begins, its path (LEAF in DFD) as it is now; in *INO, the
 * inode there. A directory with entries goes whole into the shadow where
 * the window's steps rename it away after steps below it
 * (SHADOW_TRANSIT), or where the path's end is known when the window
 * begins (SHADOW_SWAPPED); it stays where the window's first step
 * renames it away, to a free name (SHADOW_MOVED); it is copied only
 * where a step of the window exchanges it with what is at another name
 * (SHADOW_COPIED); else the steps change the path itself. */
static enum shadow_state shadow_kind(const struct undo_plan *rw, const struct shadow *s, int dfd,
				     const char *leaf, uint64_t *ino)
{
	struct stat st, q;
	const char *qleaf;

	*ino = 0;
	if (dfd < 0 || !strcmp(leaf, "."))
		return SHADOW_REAL;
	if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? SHADOW_ABSENT : SHADOW_REAL;
	*ino = st.st_ino;
	if (s->shape == SHAPE_TRANSIT || s->shape == SHAPE_REMADE)
		return !S_ISDIR(st.st_mode) || !leaves_whole(rw, s) ? SHADOW_REAL
		       : s->shape == SHAPE_TRANSIT		    ? SHADOW_TRANSIT
								    : SHADOW_SWAPPED;
	if (!S_ISDIR(st.st_mode))
		return SHADOW_LINKED;
	if (dir_empty(dfd, leaf))
		return SHADOW_DIR;
	if (s->shape == SHAPE_EXCHANGED)
		return SHADOW_COPIED;
	if (s->shape == SHAPE_ARRIVES)
		return arrives_now(rw, s) ? SHADOW_SWAPPED : SHADOW_REAL;
	if (!s->away || !moves_back(rw, rw->order[s->first]))
		return SHADOW_REAL;
	_cleanup_(closep) int qfd = shadow_parent(rw, s->away, true, &qleaf);
	return qfd >= 0 && fstatat(qfd, qleaf, &q, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT
		       ? SHADOW_MOVED
		       : SHADOW_REAL;
}

/* Logs the attributes of the directories whose entries beginning shadow
 * S (at position P) changes: a directory moved in or out of its path's,
 * and of FROM's, whose directory comes. */
static int shadow_touch_dirs(struct undo_plan *rw, int log_fd, size_t p, const struct shadow *s)
{
	int r = 0;

	if (s->begun != SHADOW_TRANSIT && s->begun != SHADOW_SWAPPED && s->begun != SHADOW_COPIED)
		return 0;
	if ((r = touch_dir(rw, log_fd, rw->order[p], s->path)) < 0 && r != -ENOENT)
		return r;
	if (s->begun == SHADOW_SWAPPED && s->from &&
	    (r = touch_dir(rw, log_fd, rw->order[p], s->from)) < 0 && r != -ENOENT)
		return r;
	return 0;
}

/* What the path of shadow S is at its window's end, made as the shadow's
 * name: what its last step renames onto it (from FROM, which no other
 * step names), or an empty directory with the attributes its last step
 * gives it. */
static int shadow_end_make(struct undo_plan *rw, const struct shadow *s)
{
	const struct store_event *e = &rw->log->events[rw->order[s->last]];
	const char *leaf;
	struct meta m;
	int r;

	if (s->from) {
		_cleanup_(closep) int fd = shadow_parent(rw, s->from, true, &leaf);
		if (fd < 0)
			return fd;
		return renameat2(fd, leaf, rw->to, s->name, RENAME_NOREPLACE) < 0 ? neg() : 0;
	}
	if (mkdirat(rw->to, s->name, 0700) < 0 && errno != EEXIST)
		return neg();
	if (!e->meta)
		return 0;
	if ((r = meta_decode(e->meta, e->meta_len, &m)) < 0)
		return r;
	r = meta_apply(rw->to, s->name, &m);
	meta_free(&m);
	return r;
}

/* Takes back what shadow_end_make() made, where the exchange could not
 * be: the steps then change the path itself, and take what comes from
 * FROM as the run left it. */
static void shadow_end_unmake(struct undo_plan *rw, const struct shadow *s)
{
	const char *leaf;

	if (!s->from) {
		unlinkat(rw->to, s->name, AT_REMOVEDIR);
		return;
	}
	_cleanup_(closep) int fd = shadow_parent(rw, s->from, true, &leaf);
	if (fd >= 0)
		renameat2(rw->to, s->name, fd, leaf, RENAME_NOREPLACE);
}

/* Begins SHADOW_SWAPPED S: its path (LEAF in DFD) gets what it is at the
 * window's end (shadow_end_make()) in one exchange with the directory
 * there, which the shadow then holds, whole, where no view looks. The
 * path is as after the undo from then on; the window's steps below it
 * change what it held, in the shadow. A second attempt goes on from
 * where the first stopped. */
static int shadow_swap_in(struct undo_plan *rw, const struct shadow *s, int dfd, const char *leaf)
{
	struct stat st;
	bool made = fstatat(rw->to, s->name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	int r;

	if (made && st.st_ino == s->ino)
		return 0; /* exchanged */
	if ((!made || !s->from) && (r = shadow_end_make(rw, s)) < 0)
		return r;
	if (renameat2(rw->to, s->name, dfd, leaf, RENAME_EXCHANGE) == 0)
		return 0;
	r = neg();
	shadow_end_unmake(rw, s);
	return r;
}

/* Begins SHADOW_COPIED S: the directory at its path (LEAF in DFD), inode
 * S->INO, is copied with all it holds as the shadow's name, then
 * exchanged with the copy: the path shows the copy, as it was, and the
 * shadow holds the directory itself, which the window's steps change
 * where no view looks. A copy that a first attempt left part made is
 * removed and made again; one exchanged is not. */
static int shadow_copy_in(struct undo_plan *rw, const struct shadow *s, int dfd, const char *leaf)
{
	struct stat st;
	int r;

	if (fstatat(rw->to, s->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (st.st_ino == s->ino)
			return 0; /* exchanged */
		if ((r = tree_remove(rw->to, s->name)) < 0)
			return r;
	}
	if ((r = tree_copy(dfd, leaf, rw->to, s->name)) == 0 &&
	    renameat2(rw->to, s->name, dfd, leaf, RENAME_EXCHANGE) == 0)
		return 0;
	r = r < 0 ? r : neg();
	tree_remove(rw->to, s->name);
	return r;
}

/* Makes shadow S (its window begins at position P), as the path is now:
 * the file there linked, the empty directory there copied with its
 * attributes, or nothing (a directory the first step renames away
 * stays where it is: SHADOW_MOVED); the directory there moved in
 * (SHADOW_TRANSIT) or exchanged for the path's end (SHADOW_SWAPPED) or
 * for a copy of it (SHADOW_COPIED), the attributes of the directories
 * this changes logged first; or not at all (SHADOW_REAL). */
static int shadow_begin(struct undo_plan *rw, int log_fd, size_t p, struct shadow *s)
{
	const char *leaf = NULL;
	struct stat st;
	int r;

	if (s->state != SHADOW_UNBEGUN && !(s->again && shadow_is_active(s)))
		return 0;
	s->again = false;
	dirs_forget(rw); /* the paths below it are the shadow's now */
	_cleanup_(closep) int dfd = shadow_parent(rw, s->path, false, &leaf);
	if (s->state == SHADOW_UNBEGUN) {
		s->begun = shadow_kind(rw, s, dfd, leaf, &s->ino);
		if ((r = shadow_touch_dirs(rw, log_fd, p, s)) < 0 ||
		    (r = shadow_log(rw, log_fd, p, STEP_SHADOW, s, s->ino)) < 0)
			return r;
		s->state = s->begun;
	}
	if (s->state == SHADOW_LINKED &&
	    (linkat(dfd, leaf, rw->to, s->name, 0) == 0 ||
	     (errno == EEXIST && fstatat(rw->to, s->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	      st.st_ino == s->ino)))
		return 0;
	if (s->state == SHADOW_DIR && (mkdirat(rw->to, s->name, 0700) == 0 || errno == EEXIST)) {
		struct meta m;
		if ((r = meta_read(dfd, leaf, &m)) == 0) {
			r = meta_apply(rw->to, s->name, &m);
			meta_free(&m);
		}
		if (r == 0)
			return 0;
	}
	if (s->state == SHADOW_TRANSIT &&
	    (renameat2(dfd, leaf, rw->to, s->name, RENAME_NOREPLACE) == 0 ||
	     (fstatat(rw->to, s->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_ino == s->ino)))
		return 0;
	if (s->state == SHADOW_SWAPPED && shadow_swap_in(rw, s, dfd, leaf) == 0)
		return 0;
	if (s->state == SHADOW_COPIED && shadow_copy_in(rw, s, dfd, leaf) == 0)
		return 0;
	if (s->state == SHADOW_ABSENT || s->state == SHADOW_MOVED || s->state == SHADOW_REAL)
		return 0;
	/* Not made: the steps change the path itself (logged so). */
	s->state = s->begun = SHADOW_REAL;
	return shadow_log(rw, log_fd, p, STEP_SHADOW, s, 0);
}

/* What is left at the name of shadow S (attributes SX) once published,
 * what its path held: removed (SHADOW_COPIED's copy with all it holds),
 * or SHADOW_MOVED's directory renamed to the other name (LEAF in DFD). */
static int shadow_leftover(struct undo_plan *rw, const struct shadow *s, const struct stat *sx,
			   int dfd, const char *leaf)
{
	if (s->begun == SHADOW_MOVED && sx->st_ino == s->ino)
		return renameat2(rw->to, s->name, dfd, leaf, RENAME_NOREPLACE) < 0 ? neg() : 0;
	if (s->begun == SHADOW_COPIED)
		return tree_remove(rw->to, s->name);
	return remove_at(rw->to, s->name, sx);
}

/* Gives the path of shadow S (its window ends at position P) what the
 * shadow holds, in one call (a rename; an exchange where a directory and
 * a file trade places, or SHADOW_MOVED's directory or SHADOW_COPIED's
 * copy leaves; or the removal of what the shadow began as; nothing for
 * SHADOW_SWAPPED), then removes what is left in the undo's directory (or
 * renames SHADOW_MOVED's directory away). Logged first, with the inode
 * that goes to the path: a second attempt sees whether it went, and
 * removes what is left again (a copy that a crash cut short in its
 * removal). */
static int shadow_publish(struct undo_plan *rw, int log_fd, size_t p, struct shadow *s)
{
	const char *leaf, *qleaf = NULL;
	struct stat sx, rx;
	int r;

	if (!shadow_is_active(s) && !(s->state == SHADOW_PUBLISHED && s->again))
		return 0;
	_cleanup_(closep) int dfd = shadow_parent(rw, s->path, false, &leaf);
	bool at_s = fstatat(rw->to, s->name, &sx, AT_SYMLINK_NOFOLLOW) == 0;
	if (s->state != SHADOW_PUBLISHED) {
		s->target = at_s ? sx.st_ino : 0;
		if ((r = shadow_log(rw, log_fd, p, STEP_PUBLISH, s, s->target)) < 0)
			return r;
		s->state = SHADOW_PUBLISHED;
	}
	s->again = false;
	/* The path has had its end since the beginning. What the steps left
	 * of the directory that was there (none took it: one failed) stays
	 * in the undo's directory. */
	if (s->begun == SHADOW_SWAPPED)
		return 0;
	_cleanup_(closep) int qfd = s->begun == SHADOW_MOVED
					    ? shadow_parent(rw, s->away, true, &qleaf)
					    : -1;
	if (dfd < 0 || (s->begun == SHADOW_MOVED && qfd < 0))
		return dfd < 0 ? dfd : qfd;
	dirs_forget(rw); /* a directory may move */
	bool at_r = fstatat(dfd, leaf, &rx, AT_SYMLINK_NOFOLLOW) == 0;
	if (!s->target && s->begun == SHADOW_COPIED) { /* the copy goes */
		if (at_r && !at_s && renameat2(dfd, leaf, rw->to, s->name, RENAME_NOREPLACE) < 0)
			return neg();
		return tree_remove(rw->to, s->name);
	}
	if (!s->target) { /* nothing: what the shadow began as goes */
		if (!at_r || rx.st_ino != s->ino)
			return 0;
		if (s->begun == SHADOW_MOVED)
			return renameat2(dfd, leaf, qfd, qleaf, RENAME_NOREPLACE) < 0 ? neg() : 0;
		return s->begun == SHADOW_LINKED || s->begun == SHADOW_DIR
			       ? remove_at(dfd, leaf, &rx)
			       : 0;
	}
	if (at_r && rx.st_ino == s->target) /* there: what is left goes */
		return at_s ? shadow_leftover(rw, s, &sx, qfd, qleaf) : 0;
	if (!at_s)
		return -ENOENT;
	if (!at_r)
		return renameat2(rw->to, s->name, dfd, leaf, RENAME_NOREPLACE) < 0 ? neg() : 0;
	if (s->begun != SHADOW_MOVED && s->begun != SHADOW_COPIED &&
	    !S_ISDIR(sx.st_mode) == !S_ISDIR(rx.st_mode))
		return renameat(rw->to, s->name, dfd, leaf) < 0 ? neg() : 0;
	if (renameat2(rw->to, s->name, dfd, leaf, RENAME_EXCHANGE) < 0 ||
	    fstatat(rw->to, s->name, &sx, AT_SYMLINK_NOFOLLOW) < 0)
		return neg();
	return shadow_leftover(rw, s, &sx, qfd, qleaf);
}

/* The shadows whose window begins (FIRST) or ends (else) at position P:
 * their indexes in RW->by_first or RW->by_last, from *AT on. */
static size_t shadows_at(const struct undo_plan *rw, bool first, size_t p, size_t *at)
{
	const size_t *idx = first ? rw->by_first : rw->by_last;
	size_t lo = 0, hi = rw->nshadows;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct shadow *s = &rw->shadows[idx[mid]];
		if ((first ? s->first : s->last) < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	for (hi = lo; hi < rw->nshadows; hi++) {
		const struct shadow *s = &rw->shadows[idx[hi]];
		if ((first ? s->first : s->last) != p)
			break;
	}
	return hi;
}

/* The paths shadow S may have changed at its beginning or publication
 * (and those below them): other_name()'s index looks at them again. */
static void shadow_changed(struct undo_plan *rw, const struct shadow *s)
{
	names_changed(rw, s->path);
	names_changed(rw, s->away);
	names_changed(rw, s->from);
}

/* The same for the step of event I. */
static void step_changed(struct undo_plan *rw, size_t i)
{
	const struct store_event *e = &rw->log->events[i];
	const char *names[3];
	bool content[3];

	if (!rw->names)
		return; /* none made yet: nothing to keep current */
	names_changed(rw, e->path);
	names_changed(rw, e->path2);
	names_changed(rw, rw->early[i]);
	if (rw->over[i] != SIZE_MAX) {
		names_changed(rw, rw->log->events[rw->over[i]].path);
		names_changed(rw, rw->log->events[rw->over[i]].path2);
	}
	for (size_t k = 0, n = step_names(rw, i, names, content); k < n; k++)
		names_changed(rw, names[k]);
}

/* Says in the log (common/log.h: on the sbx command's standard error)
 * that the step of event I failed with R (or the publication of PATH,
 * not NULL), and writes it in the undo's log. */
static int step_fail(struct undo_plan *rw, int log_fd, size_t i, int r, const char *command,
		     const char *path)
{
	const struct store_event *e = &rw->log->events[i];
	struct logged l = { .seq = i, .kind = STEP_FAIL, .at_ns = realtime_ns(), .err = -r };
	char b[QUOTE_MAX], b2[QUOTE_MAX];

	rw->last_touched[0] = '\0'; /* it may have stopped half way */
	if (path)
		log_warn("%s: cannot put %s in place: %s", command, quote_name(path, b, sizeof(b)),
			 strerror(-r));
	else
		log_warn("%s: cannot %s %s%s%s: %s", command, describe(e),
			 quote_name(e->path2 ? e->path2 : e->path, b, sizeof(b)),
			 e->path2 ? " -> " : "",
			 e->path2 ? quote_name(e->path, b2, sizeof(b2)) : "", strerror(-r));
	return log_step(rw, log_fd, &l);
}

int undo_plan_apply(struct undo_plan *rw, int to, int log_fd, const char *command)
{
	size_t resume = SIZE_MAX, failed = 0;
	const struct logged *was = NULL;
	int r = log_read(rw, log_fd);

	seen_forget(rw); /* the steps change what it saw */
	if (r < 0)
		return r;
	bool again = false; /* the step at RESUME is to be taken (anew, or WAS) */
	/* A rename over a kept file takes its keep's step too (step_swap),
	 * also where a first attempt took it. */
	for (size_t i = 0; i < rw->log->n; i++) {
		const struct store_event *e = &rw->log->events[i];
		size_t v = op_is(e, "rename") && e->path2 && !rw->skip[i] ? victim_keep(rw, i)
									  : SIZE_MAX;
		if (v == SIZE_MAX || rw->skip[v])
			continue;
		rw->done[v] = true;
		/* What the run made and renamed over the file never comes back. */
		size_t m = maker(rw, i);
		if (m != SIZE_MAX && !rw->skip[m])
			rw->done[m] = true;
	}
	for (size_t i = 0; i < rw->nsteps && r == 0; i++) {
		const struct logged *l = &rw->steps[i];
		struct stat st;
		if (l->kind == STEP_DIR)
			r = touched_add(rw, l->path, l->ino);
		else if ((l->kind == STEP_SWAP_KEEP || (l->kind == STEP_TAKE && !l->ino)) &&
			 l->object[0] && fstatat(to, l->object, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			 !S_ISDIR(st.st_mode) && st.st_nlink > 1)
			held_add(rw, st.st_ino);
	}
	if (r < 0 || (r = steps_order(rw)) < 0 || (r = overs_pair(rw)) < 0 ||
	    (r = shadows_plan(rw)) < 0)
		return r;
	rw->to = to;
	shadows_resume(rw);
	if (rw->nsteps) {
		const struct logged *last = &rw->steps[rw->nsteps - 1];
		enum step_kind k = last->kind;
		resume = rw->pos[last->seq];
		/* Its own line: the step goes on as logged; one logged before
		 * it (its directory's, a shadow's beginning): it is taken
		 * anew; after it (its failure, a publication): it is done. */
		was = k == STEP_FAIL || k == STEP_DIR || k == STEP_SHADOW || k == STEP_PUBLISH
			      ? NULL
			      : last;
		again = k != STEP_FAIL && k != STEP_PUBLISH;
	}
	for (size_t p = 0; p < rw->log->n; p++) {
		size_t i = rw->order[p], at, end;
		if (resume != SIZE_MAX && p < resume)
			continue; /* a first attempt did it */
		for (end = shadows_at(rw, true, p, &at); at < end && r == 0; at++) {
			r = shadow_begin(rw, log_fd, p, &rw->shadows[rw->by_first[at]]);
			shadow_changed(rw, &rw->shadows[rw->by_first[at]]);
		}
		if (r < 0)
			return r;
		if (!(p == resume && !again) && !rw->skip[i] && !rw->done[i] &&
		    (r = step(rw, to, log_fd, i, p == resume ? was : NULL)) < 0) {
			failed++;
			if ((r = step_fail(rw, log_fd, i, r, command, NULL)) < 0)
				return r;
		}
		step_changed(rw, i);
		for (end = shadows_at(rw, false, p, &at); at < end; at++) {
			struct shadow *s = &rw->shadows[rw->by_last[at]];
			r = shadow_publish(rw, log_fd, p, s);
			shadow_changed(rw, s);
			if (r < 0) {
				failed++;
				if ((r = step_fail(rw, log_fd, i, r, command, s->path)) < 0)
					return r;
			}
		}
		r = 0;
	}
	dir_times(rw);
	return (int)failed;
}

void undo_plan_counts(const struct undo_plan *rw, struct undo_counts *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < rw->nsteps; i++) {
		enum step_kind k = rw->steps[i].kind;
		if (k == STEP_FAIL)
			c->failed++;
		else if (step_failed(rw, i))
			continue;
		else if (k == STEP_RESTORE || k == STEP_PUT || k == STEP_SWAP_KEEP ||
			 k == STEP_INPLACE)
			c->restored++;
		else if (k == STEP_TAKE || k == STEP_RMDIR)
			c->removed++;
		else if (k == STEP_MOVE || k == STEP_EXCHANGE || k == STEP_SWAP)
			c->renamed++;
		else if (k == STEP_OVER)
			c->renamed++, c->removed++;
		else if (k == STEP_MOVE_KEPT) {
			c->renamed++;
			c->restored += rw->steps[i].ino != 0;
			c->removed += !rw->steps[i].ino && rw->steps[i].object[0];
		} else if (k == STEP_MKDIR)
			c->made++;
		else if (k == STEP_ATTR)
			c->attrs++;
	}
}

size_t undo_plan_steps(const struct undo_plan *rw)
{
	size_t n = 0;

	for (size_t i = 0; i < rw->log->n; i++)
		n += describe(&rw->log->events[i]) != NULL;
	return n;
}

void undo_plan_print(struct undo_plan *rw, FILE *f)
{
	char b[QUOTE_MAX], b2[QUOTE_MAX];
	bool ordered = steps_order(rw) == 0;

	for (size_t p = 0; p < rw->log->n; p++) {
		size_t i = ordered ? rw->order[p] : rw->log->n - 1 - p;
		const struct store_event *e = &rw->log->events[i];
		const char *what = describe(e);
		if (!what || rw->skip[i])
			continue;
		if (e->path2)
			fprintf(f, "%s %s -> %s\n", what, quote_name(e->path2, b, sizeof(b)),
				quote_name(e->path, b2, sizeof(b2)));
		else
			fprintf(f, "%s %s\n", what,
				quote_name(ordered && rw->early[i] ? rw->early[i] : e->path, b,
					   sizeof(b)));
	}
}
