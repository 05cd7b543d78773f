/* watch.c - see watch.h. */
#include "watch.h"
#include "confine.h"
#include "overlay.h"
#include "common/cleanup.h"
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define WATCH_MASK                                                                     \
	(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MODIFY | IN_ATTRIB | \
	 IN_CLOSE_WRITE | IN_ONLYDIR | IN_EXCL_UNLINK)

/* An announced change of the view's own: (dir, name, add) expected once
 * more. Once, however many changes were announced: the kernel merges an
 * event into the one before it when they are alike (two renames onto the
 * same name, from a directory it does not watch, in a row), so counting
 * them would leave one expected that never comes, and it would hide the
 * next change made on the host. Entries whose event never came are
 * dropped after a while. */
struct expectation {
	struct expectation *next;
	struct inode *dir;
	bool add;
	time_t since;
	char name[];
};

#define EXPECT_BUCKETS 1024
#define EXPECT_TTL 10	       /* seconds */
#define WATCH_BATCH_NS 2000000 /* 2 ms */

struct watch {
	struct view *view;
	pthread_mutex_t lock; /* guards expect */
	struct expectation *expect[EXPECT_BUCKETS];
	size_t nexpect;
	struct fuse_session *se;
	int ifd;  /* inotify */
	int stop; /* eventfd: wakes the thread to exit */
	/* eventfd: wakes the thread to drop every cache (watch_refresh());
	 * ASKED counts the requests and REFRESHED those it has served (both
	 * under LOCK), and DONE wakes the waiters. */
	int refresh;
	uint64_t asked, refreshed;
	pthread_cond_t done;
	/* Names to invalidate (watch_forget_name()), under LOCK; the same
	 * eventfd wakes the thread for them. */
	struct forget_name {
		struct forget_name *next;
		fuse_ino_t dir;
		char name[];
	} * forget;
	uint64_t forget_asked, forget_done; /* names queued, and done */
	pthread_t thread;
	bool running;
	size_t watches, max_watches; /* atomic; max 0: no limit of ours */
	bool limit_logged;
	/* The disabled-skill files (skills.h), outside the view: each file is
	 * watched for its saves in place, and its directory for the file's
	 * name alone (made, removed, renamed over); wd is -1 where unwatched. */
	int state_dir_wd[SKILL_NSCOPES], state_file_wd[SKILL_NSCOPES];
	int state_dirfd[SKILL_NSCOPES]; /* owned by struct skills */
	const char *state_file[SKILL_NSCOPES];
};

static size_t expect_hash(struct inode *dir, const char *name, bool add)
{
	size_t h = (size_t)(uintptr_t)dir * 31 + add;

	for (const char *p = name; *p; p++)
		h = h * 131 + (unsigned char)*p;
	return h % EXPECT_BUCKETS;
}

static struct expectation **expect_find(struct watch *w, struct inode *dir, const char *name,
					bool add)
{
	struct expectation **p = &w->expect[expect_hash(dir, name, add)];

	while (*p && ((*p)->dir != dir || (*p)->add != add || strcmp((*p)->name, name)))
		p = &(*p)->next;
	return p;
}

static time_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec;
}

/* Drops expectations whose event is long overdue. Lock held. */
static void expect_expire(struct watch *w)
{
	time_t old = now_s() - EXPECT_TTL;

	for (size_t b = 0; b < EXPECT_BUCKETS; b++) {
		for (struct expectation **p = &w->expect[b]; *p;) {
			if ((*p)->since < old) {
				struct expectation *dead = *p;
				*p = dead->next;
				free(dead);
				w->nexpect--;
			} else {
				p = &(*p)->next;
			}
		}
	}
}

void watch_expect(struct watch *w, struct inode *dir, const char *name, bool add)
{
	struct expectation **p, *e;

	if (!w || atomic_load_explicit(&dir->wd, memory_order_relaxed) <= 0 || overlay_merged(dir))
		return;
	pthread_mutex_lock(&w->lock);
	p = expect_find(w, dir, name, add);
	if (*p) {
		(*p)->since = now_s();
	} else if ((e = malloc(sizeof(*e) + strlen(name) + 1))) {
		e->next = NULL;
		e->dir = dir;
		e->add = add;
		e->since = now_s();
		strcpy(e->name, name);
		*p = e;
		if (++w->nexpect % 4096 == 0)
			expect_expire(w);
	}
	pthread_mutex_unlock(&w->lock);
}

/* Takes one expectation away; true if there was one. */
static bool expect_take(struct watch *w, struct inode *dir, const char *name, bool add)
{
	struct expectation **p, *e;
	bool found;

	pthread_mutex_lock(&w->lock);
	p = expect_find(w, dir, name, add);
	e = *p;
	found = e != NULL;
	if (e) {
		*p = e->next;
		free(e);
		w->nexpect--;
	}
	pthread_mutex_unlock(&w->lock);
	return found;
}

void watch_unexpect(struct watch *w, struct inode *dir, const char *name, bool add)
{
	if (w && atomic_load_explicit(&dir->wd, memory_order_relaxed) > 0)
		expect_take(w, dir, name, add);
}

static void forget_wd(void *arg, int wd)
{
	struct watch *w = arg;

	inotify_rm_watch(w->ifd, wd);
	__atomic_fetch_sub(&w->watches, 1, __ATOMIC_RELAXED);
}

void watch_dir(struct watch *w, struct inode *dir, int fd)
{
	char path[CONFINE_FD_PATH_MAX];
	int wd;

	if (!w || atomic_load_explicit(&dir->wd, memory_order_relaxed) != 0)
		return;
	if (w->max_watches && __atomic_load_n(&w->watches, __ATOMIC_RELAXED) >= w->max_watches) {
		wd = -1;
		errno = ENOSPC;
	} else {
		confine_fd_path(fd, path);
		wd = inotify_add_watch(w->ifd, path, WATCH_MASK);
	}
	if (wd < 0) {
		if (!__atomic_exchange_n(&w->limit_logged, true, __ATOMIC_RELAXED))
			log_warn(
				"cannot watch more directories (%s%s): host-side changes below them show up within %g s; raise %s",
				strerror(errno), w->max_watches ? ", --max-watches" : "",
				w->view->timeout,
				w->max_watches ? "--max-watches" : "fs.inotify.max_user_watches");
		wd = -1;
	} else {
		__atomic_fetch_add(&w->watches, 1, __ATOMIC_RELAXED);
	}
	inode_set_watch(w->view->inodes, dir, wd);
}

static fuse_ino_t id_of(struct inode *ino)
{
	return (fuse_ino_t)(uintptr_t)ino;
}

/* Everything known (or everything of the skill categories) may be stale:
 * drop it all (names the kernel cached as absent cannot be enumerated;
 * they age out with the timeout). */
struct inval_all {
	struct watch *w;
	bool skills_only;
	size_t n;
	struct {
		fuse_ino_t ino, parent;
		char *name;
	} * items;
	size_t cap;
};

static void collect(void *arg, struct inode *ino)
{
	struct inval_all *a = arg;

	if (ino->synth || a->n == a->cap ||
	    (a->skills_only && !a->w->view->domains[ino->domain].skill_root))
		return;
	a->items[a->n].ino = id_of(ino);
	a->items[a->n].parent = ino->parent && !ino->parent->synth ? id_of(ino->parent) : 0;
	a->items[a->n].name = ino->name && a->items[a->n].parent ? strdup(ino->name) : NULL;
	a->n++;
}

static void invalidate_all(struct watch *w, bool skills_only)
{
	struct inode_stats s;
	struct inval_all a = { .w = w, .skills_only = skills_only };

	inode_table_stats(w->view->inodes, &s);
	a.cap = s.inodes + 64;
	a.items = calloc(a.cap, sizeof(*a.items));
	if (!a.items)
		return;
	inode_table_each(w->view->inodes, collect, &a);
	for (size_t i = 0; i < a.n; i++) {
		if (a.items[i].name)
			fuse_lowlevel_notify_inval_entry(w->se, a.items[i].parent, a.items[i].name,
							 strlen(a.items[i].name));
		fuse_lowlevel_notify_inval_inode(w->se, a.items[i].ino, 0, 0);
		free(a.items[i].name);
	}
	free(a.items);
}

/* DIR's listing changed: its attributes are stale. The kernel drops a
 * listing it keeps when the directory's mtime moves; a merged
 * directory's is its layer's, which a person's edit of the project does
 * not move, so its listing is dropped as well. */
static void listing_changed(struct watch *w, struct inode *dir)
{
	fuse_lowlevel_notify_inval_inode(w->se, id_of(dir), overlay_merged(dir) ? 0 : -1, 0);
}

/* A name in DIR appeared, vanished or changed on the backing side. */
static void handle_event(struct watch *w, struct inode *dir, const struct inotify_event *e)
{
	struct inode_table *t = w->view->inodes;
	struct inode *child;
	struct stat st;
	int dfd, r;

	if ((e->mask & (IN_DELETE | IN_MOVED_FROM)) && !expect_take(w, dir, e->name, false)) {
		fuse_lowlevel_notify_inval_entry(w->se, id_of(dir), e->name, strlen(e->name));
		listing_changed(w, dir);
	}
	if ((e->mask & (IN_CREATE | IN_MOVED_TO)) && expect_take(w, dir, e->name, true))
		return;
	if (!(e->mask & (IN_CREATE | IN_MOVED_TO | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE)))
		return;
	dfd = inode_fd_get(t, dir);
	if (dfd < 0)
		return;
	r = fstatat(overlay_watched_fd(dir, dfd), e->name, &st, AT_SYMLINK_NOFOLLOW);
	inode_unpin(t, dir);
	if (r < 0)
		return; /* gone again; its delete event follows */
	if (e->mask & (IN_CREATE | IN_MOVED_TO)) {
		child = inode_find(t, dir->domain, st.st_dev, st.st_ino);
		if (!child || !inode_is_named(t, child, dir, e->name)) {
			fuse_lowlevel_notify_inval_entry(w->se, id_of(dir), e->name,
							 strlen(e->name));
			listing_changed(w, dir);
			if (child)
				inode_seen_as(t, child, &st, dir, e->name);
		}
	} else {
		bool relookup = false;
		child = inode_find_changed(t, dir->domain, &st, &relookup);
		if (child)
			fuse_lowlevel_notify_inval_inode(w->se, id_of(child), 0, 0);
		/* The kernel's next lookup of the name finds the new inode. */
		if (relookup)
			fuse_lowlevel_notify_inval_entry(w->se, id_of(dir), e->name,
							 strlen(e->name));
	}
	if (child)
		inode_unpin(t, child);
}

/* An event that only says a name's content or attributes changed. */
static bool attr_only(const struct inotify_event *e)
{
	return e->len &&
	       !(e->mask & ~(uint32_t)(IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_ISDIR));
}

static void watch_state_file(struct watch *w, int i);

/* True for an event of a disabled-skill file: its own, or its
 * directory's about its name (a new file there is watched in its turn). */
static bool is_state_event(struct watch *w, const struct inotify_event *e)
{
	for (int i = 0; i < SKILL_NSCOPES; i++) {
		if (w->state_file_wd[i] >= 0 && e->wd == w->state_file_wd[i]) {
			if (e->mask & IN_IGNORED) /* removed or replaced */
				w->state_file_wd[i] = -1;
			return true;
		}
		if (w->state_dir_wd[i] >= 0 && e->wd == w->state_dir_wd[i] && e->len &&
		    !strcmp(e->name, w->state_file[i])) {
			if (e->mask & (IN_CREATE | IN_MOVED_TO))
				watch_state_file(w, i);
			return true;
		}
	}
	return false;
}

static void process(struct watch *w, const char *buf, ssize_t len)
{
	struct inode_table *t = w->view->inodes;
	const struct inotify_event *prev = NULL;
	bool skills_changed = false;

	for (const char *p = buf; p < buf + len;) {
		const struct inotify_event *e = (const void *)p;
		struct inode *dir;

		p += sizeof(*e) + e->len;
		/* A write and its close (IN_MODIFY, IN_CLOSE_WRITE) come in
		 * pairs: the attributes read for the first are already those
		 * after the second, which was queued before this batch was
		 * read. */
		bool repeat = prev && attr_only(e) && attr_only(prev) && e->wd == prev->wd &&
			      !strcmp(e->name, prev->name);
		prev = e;
		if (repeat)
			continue;
		if (e->mask & IN_Q_OVERFLOW) {
			log_warn(
				"host change events were lost (inotify queue overflow): invalidating all cached entries");
			invalidate_all(w, false);
			continue;
		}
		if (is_state_event(w, e)) {
			skills_changed = true;
			continue;
		}
		dir = inode_find_watch(t, e->wd);
		if (!dir)
			continue;
		if (e->mask & IN_IGNORED) {
			inode_set_watch(t, dir, -1); /* the directory is gone */
			__atomic_fetch_sub(&w->watches, 1, __ATOMIC_RELAXED);
		} else if (e->len == 0)
			listing_changed(w, dir);
		else
			handle_event(w, dir, e);
		inode_unpin(t, dir);
	}
	/* Which skills are disabled changed: the kernel may hold names,
	 * attributes and listings of any of them (their directories' mtimes
	 * do not move, so it would keep listings for as long as it likes).
	 * The file itself is read again by the next request (skills.c). */
	if (skills_changed)
		invalidate_all(w, true);
}

/* Invalidates the names of list F (NULL: none; w->se NULL: only frees). */
static void forget_names(struct watch *w, struct forget_name *f)
{
	while (f) {
		struct forget_name *next = f->next;

		if (w->se)
			fuse_lowlevel_notify_inval_entry(w->se, f->dir, f->name, strlen(f->name));
		free(f);
		f = next;
	}
}

void watch_forget_name(struct watch *w, struct inode *dir, const char *name)
{
	size_t len = strlen(name) + 1;
	struct forget_name *f;
	uint64_t one = 1;

	if (!w || !w->running || !(f = malloc(sizeof(*f) + len)))
		return;
	f->dir = id_of(dir);
	memcpy(f->name, name, len);
	pthread_mutex_lock(&w->lock);
	f->next = w->forget;
	w->forget = f;
	w->forget_asked++;
	pthread_mutex_unlock(&w->lock);
	if (write(w->refresh, &one, sizeof(one)) != sizeof(one))
		log_warn("the host watch was not woken to drop a name (%s)", strerror(errno));
}

void watch_forget_wait(struct watch *w)
{
	if (!w || !w->running)
		return;
	pthread_mutex_lock(&w->lock);
	uint64_t mine = w->forget_asked;
	while (w->forget_done < mine)
		pthread_cond_wait(&w->done, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

static void *watch_thread(void *arg)
{
	struct watch *w = arg;
	char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct pollfd pfd[3] = { { .fd = w->ifd, .events = POLLIN },
				 { .fd = w->stop, .events = POLLIN },
				 { .fd = w->refresh, .events = POLLIN } };
	uint64_t n8;

	pthread_setname_np(pthread_self(), "sbxfs-watch");

	for (;;) {
		if (poll(pfd, 3, -1) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents)
			break;
		if (pfd[2].revents && read(w->refresh, &n8, sizeof(n8)) == sizeof(n8)) {
			pthread_mutex_lock(&w->lock);
			uint64_t asked = w->asked;
			struct forget_name *f = w->forget;
			uint64_t queued = w->forget_asked;
			w->forget = NULL;
			pthread_mutex_unlock(&w->lock);
			if (f) {
				forget_names(w, f);
				pthread_mutex_lock(&w->lock);
				w->forget_done = queued;
				pthread_cond_broadcast(&w->done);
				pthread_mutex_unlock(&w->lock);
			}
			if (asked != w->refreshed) {
				invalidate_all(w, false);
				pthread_mutex_lock(&w->lock);
				w->refreshed = asked;
				pthread_cond_broadcast(&w->done);
				pthread_mutex_unlock(&w->lock);
			}
		}
		if (!pfd[0].revents)
			continue;
		/* Let a burst (an untar, an rm -rf) gather: one wake-up per
		 * batch instead of one per event keeps this thread off the
		 * CPU the requests need, for a few ms of extra latency. */
		nanosleep(&(struct timespec){ .tv_nsec = WATCH_BATCH_NS }, NULL);
		ssize_t n = read(w->ifd, buf, sizeof(buf));
		if (n > 0)
			process(w, buf, n);
	}
	return NULL;
}

static void state_watch_failed(const struct watch *w, int i)
{
	log_warn("cannot watch the disabled skills' file %s (%s): a listing the kernel holds may"
		 " show a skill disabled since",
		 w->state_file[i], strerror(errno));
}

/* Watches disabled-skill file I itself, if it is there, for its saves in
 * place; not the other files of its directory. For the shared file that
 * directory is the home, where every command's close of the store's
 * files would otherwise wake every view. */
static void watch_state_file(struct watch *w, int i)
{
	char dir[CONFINE_FD_PATH_MAX], path[CONFINE_FD_PATH_MAX + NAME_MAX + 2];

	confine_fd_path(w->state_dirfd[i], dir);
	snprintf(path, sizeof(path), "%s/%s", dir, w->state_file[i]);
	w->state_file_wd[i] = inotify_add_watch(w->ifd, path,
						IN_CLOSE_WRITE | IN_ATTRIB | IN_DONT_FOLLOW);
	if (w->state_file_wd[i] < 0 && errno != ENOENT)
		state_watch_failed(w, i);
}

/* Watches each disabled-skill file and, for its name's comings and
 * goings, its directory: not for writes and closes there (an editor's
 * save in place is seen on the file; the shared file's directory is the
 * home, where the store's files are written and closed all the time).
 * IN_MASK_ADD: the directory may be one the view watches too. */
static void watch_skill_states(struct watch *w)
{
	char path[CONFINE_FD_PATH_MAX];

	for (int i = 0; i < SKILL_NSCOPES; i++)
		w->state_dir_wd[i] = w->state_file_wd[i] = -1;
	if (!w->view->skills)
		return;
	for (int i = 0; i < SKILL_NSCOPES; i++) {
		w->state_dirfd[i] = skills_state_dir(w->view->skills, i, &w->state_file[i]);
		confine_fd_path(w->state_dirfd[i], path);
		w->state_dir_wd[i] = inotify_add_watch(w->ifd, path,
						       IN_CREATE | IN_DELETE | IN_MOVED_FROM |
							       IN_MOVED_TO | IN_ONLYDIR |
							       IN_MASK_ADD);
		if (w->state_dir_wd[i] < 0)
			state_watch_failed(w, i);
		else
			watch_state_file(w, i);
	}
}

static void watch_roots(struct watch *w)
{
	struct view *v = w->view;

	for (size_t i = 0; i < v->nroots; i++) {
		struct inode *top = v->roots[i].top;

		watch_dir(w, top, overlay_watched_fd(top, top->fd));
	}
}

struct watch *watch_new(struct view *v, size_t max_watches, char *err, size_t errlen)
{
	struct watch *w = calloc(1, sizeof(*w));

	if (!w) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	w->view = v;
	w->max_watches = max_watches;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->done, NULL);
	int e = (w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0 ? errno : 0;
	if ((w->stop = eventfd(0, EFD_CLOEXEC)) < 0 && !e)
		e = errno;
	if ((w->refresh = eventfd(0, EFD_CLOEXEC)) < 0 && !e)
		e = errno;
	if (e) {
		snprintf(err, errlen, "%s: %s", w->ifd < 0 ? "inotify" : "eventfd", strerror(e));
		if (w->ifd >= 0)
			close(w->ifd);
		if (w->stop >= 0)
			close(w->stop);
		if (w->refresh >= 0)
			close(w->refresh);
		pthread_mutex_destroy(&w->lock);
		free(w);
		errno = e;
		return NULL;
	}
	inode_table_on_unwatch(v->inodes, forget_wd, w);
	watch_roots(w);
	watch_skill_states(w);
	return w;
}

int watch_refresh(struct watch *w)
{
	uint64_t one = 1;

	if (!w || !w->running)
		return -ENOTCONN;
	pthread_mutex_lock(&w->lock);
	uint64_t mine = ++w->asked;
	int r = write(w->refresh, &one, sizeof(one)) == sizeof(one) ? 0 : neg_errno();
	while (r == 0 && w->refreshed < mine)
		pthread_cond_wait(&w->done, &w->lock);
	pthread_mutex_unlock(&w->lock);
	return r;
}

int watch_start(struct watch *w, struct fuse_session *se)
{
	int r;

	w->se = se;
	r = pthread_create(&w->thread, NULL, watch_thread, w);
	if (r)
		return -r;
	w->running = true;
	return 0;
}

void watch_free(struct watch *w)
{
	uint64_t one = 1;

	if (!w)
		return;
	if (w->running) {
		if (write(w->stop, &one, sizeof(one)) == sizeof(one))
			pthread_join(w->thread, NULL);
	}
	inode_table_on_unwatch(w->view->inodes, NULL, NULL);
	w->se = NULL;
	forget_names(w, w->forget);
	close(w->ifd);
	close(w->stop);
	close(w->refresh);
	pthread_cond_destroy(&w->done);
	for (size_t b = 0; b < EXPECT_BUCKETS; b++) {
		for (struct expectation *e = w->expect[b], *next; e; e = next) {
			next = e->next;
			free(e);
		}
	}
	pthread_mutex_destroy(&w->lock);
	free(w);
}
