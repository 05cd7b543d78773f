/* inode.c - see inode.h. */
#include "inode.h"
#include "confine.h"
#include "common/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#define WATCH_BUCKETS 4096

struct inode_table {
	pthread_mutex_t lock;
	struct inode **buckets;
	size_t nbuckets; /* a power of two */
	size_t count;
	size_t fds, fd_budget, evictions;
	bool handles; /* evicted inodes keep a file handle */
	bool renew;   /* a changed file gets a new inode (inode_table_renew) */
	/* open_by_handle_at() refuses an O_PATH mount fd (EBADF): one
	 * directory opened for reading per filesystem serves instead. */
	struct {
		dev_t dev;
		int fd;
	} anchors[8];
	size_t nanchors;
	struct inode lru;		      /* sentinel: lru.lru_next is the newest */
	struct inode *watches[WATCH_BUCKETS]; /* by inotify wd */
	void (*on_unwatch)(void *, int);
	void *on_unwatch_arg;
};

static size_t key_hash(uint16_t domain, dev_t dev, ino_t ino)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ULL;

	h ^= ((uint64_t)dev + ((uint64_t)domain << 48)) * 0xc2b2ae3d27d4eb4fULL;
	return (size_t)(h ^ (h >> 29));
}

static struct inode **bucket_of(struct inode_table *t, uint16_t domain, dev_t dev, ino_t ino)
{
	return &t->buckets[key_hash(domain, dev, ino) & (t->nbuckets - 1)];
}

static struct inode *hash_find(struct inode_table *t, uint16_t domain, dev_t dev, ino_t ino)
{
	for (struct inode *i = *bucket_of(t, domain, dev, ino); i; i = i->hnext)
		if (i->ino == ino && i->dev == dev && i->domain == domain && !i->superseded)
			return i;
	return NULL;
}

static void hash_grow(struct inode_table *t)
{
	size_t n = t->nbuckets * 2;
	struct inode **nb = calloc(n, sizeof(*nb));

	if (!nb)
		return; /* a longer chain is slower, not wrong */
	for (size_t b = 0; b < t->nbuckets; b++) {
		for (struct inode *i = t->buckets[b], *next; i; i = next) {
			next = i->hnext;
			size_t k = key_hash(i->domain, i->dev, i->ino) & (n - 1);
			i->hnext = nb[k];
			nb[k] = i;
		}
	}
	free(t->buckets);
	t->buckets = nb;
	t->nbuckets = n;
}

static void hash_remove(struct inode_table *t, struct inode *ino)
{
	struct inode **p = bucket_of(t, ino->domain, ino->dev, ino->ino);

	while (*p != ino)
		p = &(*p)->hnext;
	*p = ino->hnext;
}

static void stat_of_statx(const struct statx *x, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_dev = makedev(x->stx_dev_major, x->stx_dev_minor);
	st->st_ino = x->stx_ino;
	st->st_mode = x->stx_mode;
	st->st_nlink = x->stx_nlink;
	st->st_uid = x->stx_uid;
	st->st_gid = x->stx_gid;
	st->st_rdev = makedev(x->stx_rdev_major, x->stx_rdev_minor);
	st->st_size = (off_t)x->stx_size;
	st->st_blksize = x->stx_blksize;
	st->st_blocks = (blkcnt_t)x->stx_blocks;
	st->st_atim = (struct timespec){ x->stx_atime.tv_sec, x->stx_atime.tv_nsec };
	st->st_mtim = (struct timespec){ x->stx_mtime.tv_sec, x->stx_mtime.tv_nsec };
	st->st_ctim = (struct timespec){ x->stx_ctime.tv_sec, x->stx_ctime.tv_nsec };
}

int inode_statx(int dirfd, const char *name, int flags, struct stat *st, struct timespec *born)
{
	struct statx x;

	if (statx(dirfd, name, flags | AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
		  STATX_BASIC_STATS | STATX_BTIME, &x) < 0)
		return neg_errno();
	stat_of_statx(&x, st);
	if (!(x.stx_mask & STATX_BTIME))
		return 0;
	born->tv_sec = x.stx_btime.tv_sec;
	born->tv_nsec = x.stx_btime.tv_nsec;
	return 1;
}

static bool ts_eq(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* True if ST differs from what the kernel was last given for INO. */
static bool seen_differs(const struct inode *ino, const struct stat *st)
{
	return !ts_eq(ino->seen_mtime, st->st_mtim) || !ts_eq(ino->seen_ctime, st->st_ctim) ||
	       ino->seen_size != st->st_size;
}

/* (locked) With renew set: INO, a regular file not renewed yet, whose
 * attributes ST differ from what the kernel was last given. The kernel,
 * under the writeback cache, keeps its own size and times of it. Not
 * while the view writes it: its own writes are not news to the kernel,
 * and the writer's close renews what it must (a refused save, a direct
 * write). */
static bool renew_wanted(const struct inode_table *t, const struct inode *ino,
			 const struct stat *st)
{
	return t->renew && S_ISREG(ino->type) && !ino->superseded && !ino->writers &&
	       seen_differs(ino, st);
}

/* (locked) Renews INO unless a handle of the view other than the
 * caller's HELD ones has it open or an OPEN of it is in progress: it is
 * never found again, and the next lookup of its name makes a new inode.
 * (Open handles, and the locks the kernel keeps on them, must not be
 * split across two inodes of one file.) Otherwise it is due at the last
 * close (inode_renew_due()). Returns whether it was renewed now. */
static bool renew_unless_open(struct inode *ino, uint32_t held)
{
	ino->renew_due = ino->opens > held || ino->opening;
	ino->superseded = !ino->renew_due;
	return ino->superseded;
}

/* (locked) Renews INO if renew_wanted(), or has it wait for the last
 * close. Returns whether it was renewed now. */
static bool renew_if_changed(struct inode_table *t, struct inode *ino, const struct stat *st)
{
	return renew_wanted(t, ino, st) && renew_unless_open(ino, 0);
}

static void note(struct inode *ino, const struct stat *st)
{
	ino->seen_mtime = st->st_mtim;
	ino->seen_ctime = st->st_ctim;
	ino->seen_size = st->st_size;
}

/* The birth time of the object FD designates, if its filesystem keeps
 * one (ext4, xfs, btrfs, tmpfs). */
static bool birth_of(int fd, struct timespec *born)
{
	struct stat st;

	return inode_statx(fd, "", AT_EMPTY_PATH, &st, born) > 0;
}

/* The file handle of the object FD designates (malloc'd), or NULL. */
static struct file_handle *handle_of(int fd)
{
	struct file_handle *fh = malloc(sizeof(*fh) + MAX_HANDLE_SZ);
	int mount_id;

	if (fh) {
		fh->handle_bytes = MAX_HANDLE_SZ;
		if (name_to_handle_at(fd, "", fh, &mount_id, AT_EMPTY_PATH) == 0)
			return fh;
	}
	free(fh);
	return NULL;
}

/* True if FD (attributes ST) is still the object evicted inode INO was:
 * once nothing holds a deleted file, its inode number can be given to a
 * new one, which the view must not take for the old (the kernel would
 * keep the old one's cached names and attributes). A file handle tells
 * exactly (it carries the inode's generation); else the birth time. */
static bool same_object(const struct inode *ino, int fd, const struct stat *st)
{
	struct timespec born;

	if ((st->st_mode & S_IFMT) != ino->type)
		return false;
	if (ino->fh) {
		_cleanup_(freep) struct file_handle *fh = handle_of(fd);
		return fh && fh->handle_type == ino->fh->handle_type &&
		       fh->handle_bytes == ino->fh->handle_bytes &&
		       !memcmp(fh->f_handle, ino->fh->f_handle, fh->handle_bytes);
	}
	return !ino->born_known || (birth_of(fd, &born) && born.tv_sec == ino->born.tv_sec &&
				    born.tv_nsec == ino->born.tv_nsec);
}

static bool evictable(const struct inode *i)
{
	return !i->root && !i->synth;
}

static void lru_unlink(struct inode *i)
{
	if (i->lru_next) {
		i->lru_next->lru_prev = i->lru_prev;
		i->lru_prev->lru_next = i->lru_next;
		i->lru_next = i->lru_prev = NULL;
	}
}

static void lru_push(struct inode_table *t, struct inode *i)
{
	i->lru_next = t->lru.lru_next;
	i->lru_prev = &t->lru;
	t->lru.lru_next->lru_prev = i;
	t->lru.lru_next = i;
}

/* Closes idle fds, oldest first, until the budget holds. Inodes with open
 * handles are not on the list; pinned ones (in use by a request right
 * now) are skipped. */
static void lru_trim(struct inode_table *t)
{
	struct inode *i = t->lru.lru_prev;

	while (t->fds > t->fd_budget && i != &t->lru) {
		struct inode *prev = i->lru_prev;

		if (!i->pins) {
			lru_unlink(i);
			/* What finds it again, and tells it from a file
			 * that gets its number later. */
			free(i->fh);
			i->fh = t->handles ? handle_of(i->fd) : NULL;
			if (!i->born_known)
				i->born_known = birth_of(i->fd, &i->born);
			close(i->fd);
			i->fd = -1;
			t->fds--;
			t->evictions++;
		}
		i = prev;
	}
}

/* Records that INO holds FD. Called with the lock held. */
static void attach_fd(struct inode_table *t, struct inode *ino, int fd)
{
	ino->fd = fd;
	if (evictable(ino)) {
		t->fds++;
		if (!ino->opens)
			lru_push(t, ino);
	}
}

static void set_parent(struct inode *ino, struct inode *parent, char *name)
{
	if (parent)
		parent->refs++;
	free(ino->name);
	ino->name = name;
	ino->parent = parent; /* the caller dropped the old parent's ref */
}

/* INO's watch, read under the table lock, which orders it: relaxed. */
static int wd_of(const struct inode *ino)
{
	return atomic_load_explicit(&ino->wd, memory_order_relaxed);
}

static void watch_unlink(struct inode_table *t, struct inode *ino)
{
	struct inode **p = &t->watches[wd_of(ino) % WATCH_BUCKETS];

	while (*p && *p != ino)
		p = &(*p)->wnext;
	if (*p)
		*p = ino->wnext;
	ino->wnext = NULL;
}

/* Frees INO and, transitively, parents it was the last reference of.
 * Called with the lock held. */
static void release_if_unused(struct inode_table *t, struct inode *ino)
{
	/* A file's other directory: released once the walk up from the file
	 * is over (until then its ref keeps it from being freed twice). Only
	 * a file has one, and only the first inode of the walk is a file. */
	struct inode *alt[INODE_ALT_NAMES];
	int nalt = 0;

	while (ino && !ino->nlookup && !ino->refs && !ino->opens && !ino->pins) {
		struct inode *parent = ino->parent;

		for (int k = 0; k < INODE_ALT_NAMES && ino->alt[k].parent; k++) {
			if (nalt < INODE_ALT_NAMES)
				alt[nalt++] = ino->alt[k].parent;
			free(ino->alt[k].name);
		}

		if (wd_of(ino) > 0) {
			watch_unlink(t, ino);
			if (t->on_unwatch)
				t->on_unwatch(t->on_unwatch_arg, wd_of(ino));
		}
		hash_remove(t, ino);
		lru_unlink(ino);
		if (ino->fd >= 0) {
			close(ino->fd);
			if (evictable(ino))
				t->fds--;
		}
		if (ino->lower_fd >= 0)
			close(ino->lower_fd);
		free(ino->name);
		free(ino->fh);
		free(ino);
		t->count--;
		if (parent)
			parent->refs--;
		ino = parent;
	}
	for (int k = 0; k < nalt; k++) {
		alt[k]->refs--;
		release_if_unused(t, alt[k]);
	}
}

/* The other names of a file (struct inode's alt), under the lock. */

/* The slot of PARENT/NAME among INO's other names, or -1. */
static int alt_find(const struct inode *ino, const struct inode *parent, const char *name)
{
	for (int k = 0; k < INODE_ALT_NAMES && ino->alt[k].parent; k++)
		if (ino->alt[k].parent == parent && !strcmp(ino->alt[k].name, name))
			return k;
	return -1;
}

/* Takes slot K out (the others keep their order): its parent, whose ref
 * becomes the caller's, and its name in *NAME (the caller's). */
static struct inode *alt_take(struct inode *ino, int k, char **name)
{
	struct inode *parent = ino->alt[k].parent;

	*name = ino->alt[k].name;
	memmove(&ino->alt[k], &ino->alt[k + 1],
		(size_t)(INODE_ALT_NAMES - 1 - k) * sizeof(*ino->alt));
	ino->alt[INODE_ALT_NAMES - 1] = (struct inode_alt){ NULL, NULL };
	return parent;
}

/* Adds PARENT/NAME as the newest other name, taking NAME and a ref of
 * PARENT; false (nothing taken) if every slot is used. */
static bool alt_add(struct inode *ino, struct inode *parent, char *name)
{
	for (int k = 0; k < INODE_ALT_NAMES; k++)
		if (!ino->alt[k].parent) {
			ino->alt[k] = (struct inode_alt){ parent, name };
			return true;
		}
	return false;
}

/* Forgets INO's other name in slot K. */
static void alt_drop(struct inode_table *t, struct inode *ino, int k)
{
	char *name;
	struct inode *parent = alt_take(ino, k, &name);

	free(name);
	parent->refs--;
	release_if_unused(t, parent);
}

struct inode_table *inode_table_new(size_t fd_budget)
{
	struct inode_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->nbuckets = 1024;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	if (!t->buckets) {
		free(t);
		return NULL;
	}
	pthread_mutex_init(&t->lock, NULL);
	t->fd_budget = fd_budget;
	t->lru.lru_next = t->lru.lru_prev = &t->lru;
	/* open_by_handle_at() needs CAP_DAC_READ_SEARCH. */
	t->handles = geteuid() == 0;
	return t;
}

void inode_table_free(struct inode_table *t)
{
	if (!t)
		return;
	for (size_t b = 0; b < t->nbuckets; b++) {
		for (struct inode *i = t->buckets[b], *next; i; i = next) {
			next = i->hnext;
			if (i->fd >= 0)
				close(i->fd);
			if (i->lower_fd >= 0)
				close(i->lower_fd);
			free(i->name);
			for (int k = 0; k < INODE_ALT_NAMES; k++)
				free(i->alt[k].name);
			free(i->fh);
			free(i);
		}
	}
	for (size_t a = 0; a < t->nanchors; a++)
		close(t->anchors[a].fd);
	free(t->buckets);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static void hash_insert(struct inode_table *t, struct inode *ino)
{
	struct inode **b = bucket_of(t, ino->domain, ino->dev, ino->ino);

	ino->hnext = *b;
	*b = ino;
}

static struct inode *inode_alloc(struct inode_table *t, const struct stat *st, uint16_t domain)
{
	struct inode *ino = calloc(1, sizeof(*ino));

	if (!ino)
		return NULL;
	ino->dev = st->st_dev;
	ino->ino = st->st_ino;
	ino->type = st->st_mode & S_IFMT;
	ino->domain = domain;
	ino->fd = -1;
	ino->lower_fd = -1;
	if (t->count >= t->nbuckets)
		hash_grow(t);
	hash_insert(t, ino);
	t->count++;
	return ino;
}

struct inode *inode_add_fixed(struct inode_table *t, struct inode *parent, const char *name, int fd,
			      const struct stat *st, uint16_t domain, struct root *root,
			      const struct synth *synth)
{
	char *copy = name ? strdup(name) : NULL;
	struct inode *ino;

	if (name && !copy)
		return NULL;
	pthread_mutex_lock(&t->lock);
	ino = inode_alloc(t, st, domain);
	if (ino) {
		ino->root = root;
		ino->synth = synth;
		ino->refs = 1; /* never released */
		set_parent(ino, parent, copy);
		copy = NULL;
		attach_fd(t, ino, fd);
	}
	pthread_mutex_unlock(&t->lock);
	free(copy);
	return ino;
}

struct inode *inode_lookup_add(struct inode_table *t, struct inode *parent, const char *name,
			       int fd, const struct stat *st, const struct timespec *born)
{
	return inode_lookup_add_layer(t, parent, name, fd, st, born, NULL);
}

void inode_set_overlay_top(struct inode_table *t, struct inode *ino, int lower_fd)
{
	pthread_mutex_lock(&t->lock);
	ino->overlay = true;
	ino->lower_fd = lower_fd;
	pthread_mutex_unlock(&t->lock);
}

struct inode *inode_lookup_add_layer(struct inode_table *t, struct inode *parent, const char *name,
				     int fd, const struct stat *st, const struct timespec *born,
				     struct inode_layer *layer)
{
	char *copy = strdup(name);
	struct inode *ino, *old_parent = NULL;
	_cleanup_(closep) int lower_fd = layer ? layer->lower_fd : -1;

	if (!copy) {
		close(fd);
		return NULL;
	}
	pthread_mutex_lock(&t->lock);
	ino = hash_find(t, parent->domain, st->st_dev, st->st_ino);
	if (ino && ino->fd < 0 && !same_object(ino, fd, st)) {
		/* Its number now belongs to another object: the old inode
		 * lives on, never found again, until the kernel forgets it. */
		ino->superseded = true;
		ino = NULL;
	}
	if (ino && renew_if_changed(t, ino, st))
		ino = NULL;
	if (!ino) {
		ino = inode_alloc(t, st, parent->domain);
		if (!ino) {
			pthread_mutex_unlock(&t->lock);
			free(copy);
			close(fd);
			return NULL;
		}
	}
	if (born && !ino->born_known) {
		ino->born = *born;
		ino->born_known = true;
	}
	if (layer) {
		ino->overlay = layer->overlay;
		ino->lower = layer->lower;
		if (ino->lower_fd < 0) {
			ino->lower_fd = lower_fd;
			lower_fd = -1;
		}
	}
	if (!ino->root && !ino->synth) {
		/* Remember the newest name: after a host-side rename or for
		 * a hard link, it is the one that resolves now. */
		old_parent = ino->parent;
		if (old_parent && !S_ISDIR(st->st_mode) && st->st_nlink > 1 &&
		    (old_parent != parent || strcmp(ino->name, name))) {
			/* Another name of it (a hard link): the previous one
			 * is kept, with its parent's ref, for when this one
			 * goes, unless every slot is used. The oldest names
			 * are the likeliest to stay (ln f g; ln f h; rm h g),
			 * and one removed through the view is forgotten
			 * (inode_name_gone()). */
			int k = alt_find(ino, parent, name);
			if (k >= 0) {
				/* Seen again under another name it has: the
				 * two trade places (the alt's ref is the
				 * name's). */
				char *same;
				old_parent = alt_take(ino, k, &same);
				free(same);
				alt_add(ino, ino->parent, ino->name);
				ino->name = NULL;
			} else if (alt_add(ino, old_parent, ino->name)) {
				ino->name = NULL;
				old_parent = NULL;
			}
		}
		set_parent(ino, parent, copy);
		copy = NULL;
	}
	if (ino->fd < 0) {
		attach_fd(t, ino, fd);
		fd = -1;
		lru_trim(t);
	}
	ino->nlookup++;
	if (old_parent) {
		old_parent->refs--;
		release_if_unused(t, old_parent);
	}
	pthread_mutex_unlock(&t->lock);
	free(copy);
	if (fd >= 0)
		close(fd);
	return ino;
}

void inode_lookup_fixed(struct inode_table *t, struct inode *ino)
{
	pthread_mutex_lock(&t->lock);
	ino->nlookup++;
	pthread_mutex_unlock(&t->lock);
}

void inode_forget(struct inode_table *t, struct inode *ino, uint64_t n)
{
	pthread_mutex_lock(&t->lock);
	ino->nlookup = n > ino->nlookup ? 0 : ino->nlookup - n;
	release_if_unused(t, ino);
	pthread_mutex_unlock(&t->lock);
}

/* The readable directory on filesystem DEV that open_by_handle_at() takes
 * as its mount fd, opened from directory DIRFD (on DEV) the first time;
 * -1 if there is none. */
static int anchor_of(struct inode_table *t, dev_t dev, int dirfd)
{
	int fd = -1;

	pthread_mutex_lock(&t->lock);
	for (size_t a = 0; a < t->nanchors && fd < 0; a++)
		if (t->anchors[a].dev == dev)
			fd = t->anchors[a].fd;
	if (fd < 0 && t->nanchors < sizeof(t->anchors) / sizeof(t->anchors[0]) &&
	    (fd = confine_opendir(dirfd)) >= 0) {
		t->anchors[t->nanchors].dev = dev;
		t->anchors[t->nanchors].fd = fd;
		t->nanchors++;
	}
	pthread_mutex_unlock(&t->lock);
	return fd;
}

/* Re-opens an evicted inode from its parent's fd and name. */
static int resolve_again(struct inode_table *t, struct inode *ino)
{
	struct inode *parent;
	char *name;
	int pfd, fd;
	struct stat st;

	pthread_mutex_lock(&t->lock);
	parent = ino->parent;
	name = ino->name ? strdup(ino->name) : NULL;
	pthread_mutex_unlock(&t->lock);
	if (!parent || !name) {
		free(name);
		return parent ? -ENOMEM : -ESTALE;
	}
	/* The child's ref keeps PARENT alive while we use it. */
	pfd = inode_fd_get(t, parent);
	if (pfd < 0) {
		free(name);
		return pfd;
	}
	if (ino->lower && !parent->lower) {
		/* A project's object seen through a merged directory: found
		 * again in its project directory, which lives as PARENT
		 * does. */
		inode_unpin(t, parent);
		pfd = parent->lower_fd;
		if (pfd < 0) {
			free(name);
			return -ESTALE;
		}
		parent = NULL;
	}
	if (ino->fh) {
		/* The object itself, wherever its names went (a root daemon):
		 * ESTALE if it is gone. */
		int mfd = anchor_of(t, ino->dev, pfd);

		fd = mfd < 0 ? -1 : open_by_handle_at(mfd, ino->fh, O_PATH | O_CLOEXEC);
		if (fd >= 0 || (mfd >= 0 && errno == ESTALE)) {
			if (parent)
				inode_unpin(t, parent);
			free(name);
			if (fd < 0)
				return -ESTALE;
			if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0 ||
			    st.st_ino != ino->ino || st.st_dev != ino->dev) {
				close(fd);
				return -ESTALE;
			}
			return fd;
		}
	}
	fd = confine_lookup(pfd, name);
	if (parent)
		inode_unpin(t, parent);
	free(name);
	if (fd < 0)
		return fd == -ENOENT ? -ESTALE : fd;
	if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
		int r = neg_errno();
		close(fd);
		return r;
	}
	if (st.st_ino != ino->ino || st.st_dev != ino->dev || !same_object(ino, fd, &st)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int inode_fd_get(struct inode_table *t, struct inode *ino)
{
	int fd;

	pthread_mutex_lock(&t->lock);
	if (ino->fd >= 0) {
		ino->pins++;
		if (ino->lru_next && t->lru.lru_next != ino) {
			lru_unlink(ino);
			lru_push(t, ino);
		}
		fd = ino->fd;
		pthread_mutex_unlock(&t->lock);
		return fd;
	}
	if (ino->synth) {
		pthread_mutex_unlock(&t->lock);
		return -EPERM;
	}
	ino->pins++; /* keeps INO alive while we resolve unlocked */
	pthread_mutex_unlock(&t->lock);

	fd = resolve_again(t, ino);

	pthread_mutex_lock(&t->lock);
	if (fd >= 0) {
		if (ino->fd >= 0)
			close(fd); /* another thread won the race */
		else {
			attach_fd(t, ino, fd);
			lru_trim(t);
		}
		fd = ino->fd;
	} else {
		ino->pins--;
		release_if_unused(t, ino);
	}
	pthread_mutex_unlock(&t->lock);
	return fd;
}

void inode_unpin(struct inode_table *t, struct inode *ino)
{
	pthread_mutex_lock(&t->lock);
	ino->pins--;
	if (t->fds > t->fd_budget)
		lru_trim(t);
	release_if_unused(t, ino);
	pthread_mutex_unlock(&t->lock);
}

void inode_open_ref(struct inode_table *t, struct inode *ino, bool writer)
{
	pthread_mutex_lock(&t->lock);
	if (ino->opens++ == 0)
		lru_unlink(ino); /* an open handle keeps the fd */
	ino->writers += writer;
	pthread_mutex_unlock(&t->lock);
}

void inode_open_unref(struct inode_table *t, struct inode *ino, bool writer)
{
	pthread_mutex_lock(&t->lock);
	ino->writers -= writer;
	if (--ino->opens == 0 && ino->fd >= 0 && evictable(ino))
		lru_push(t, ino);
	release_if_unused(t, ino);
	pthread_mutex_unlock(&t->lock);
}

uint32_t inode_open_count(struct inode_table *t, struct inode *ino, uint32_t *writers)
{
	uint32_t n;

	pthread_mutex_lock(&t->lock);
	n = ino->opens;
	if (writers)
		*writers = ino->writers;
	pthread_mutex_unlock(&t->lock);
	return n;
}

bool inode_identity(struct inode_table *t, const struct inode *ino, dev_t *dev, ino_t *num,
		    struct timespec *born)
{
	pthread_mutex_lock(&t->lock);
	*dev = ino->dev;
	*num = ino->ino;
	*born = ino->born;
	bool known = ino->born_known;
	pthread_mutex_unlock(&t->lock);
	return known;
}

/* inode_rekey() with the lock held. */
static int rekey_locked(struct inode_table *t, struct inode *ino, int fd, const struct stat *st,
			const struct timespec *born)
{
	if (hash_find(t, ino->domain, st->st_dev, st->st_ino)) {
		close(fd);
		return -EEXIST;
	}
	hash_remove(t, ino);
	ino->dev = st->st_dev;
	ino->ino = st->st_ino;
	hash_insert(t, ino);
	/* Requests that pinned the old fd number go on with whichever
	 * object it designates when they use it; dup3 swaps atomically. */
	if (ino->fd >= 0) {
		dup3(fd, ino->fd, O_CLOEXEC);
		close(fd);
	} else {
		attach_fd(t, ino, fd);
	}
	note(ino, st);
	/* The new object's (else taken at eviction). */
	ino->born_known = born != NULL;
	if (born)
		ino->born = *born;
	return 0;
}

int inode_rekey(struct inode_table *t, struct inode *ino, int fd, const struct stat *st,
		const struct timespec *born)
{
	pthread_mutex_lock(&t->lock);
	int r = rekey_locked(t, ino, fd, st, born);
	pthread_mutex_unlock(&t->lock);
	return r;
}

int inode_copied_up(struct inode_table *t, struct inode *ino, int fd, const struct stat *st,
		    const struct timespec *born, int lower_fd)
{
	pthread_mutex_lock(&t->lock);
	int r = rekey_locked(t, ino, fd, st, born);
	if (r == 0) {
		ino->lower = false;
		if (lower_fd >= 0 && ino->lower_fd < 0) {
			ino->lower_fd = lower_fd;
			lower_fd = -1;
		}
	}
	pthread_mutex_unlock(&t->lock);
	if (lower_fd >= 0)
		close(lower_fd);
	return r;
}

int inode_parent_fd_get(struct inode_table *t, struct inode *ino, struct inode **parent, char *name,
			size_t size)
{
	int fd;

	pthread_mutex_lock(&t->lock);
	*parent = ino->parent;
	if (!*parent || !ino->name || strlen(ino->name) >= size) {
		pthread_mutex_unlock(&t->lock);
		return -ESTALE;
	}
	strcpy(name, ino->name);
	(*parent)->pins++; /* alive until inode_fd_get pins it too */
	pthread_mutex_unlock(&t->lock);
	fd = inode_fd_get(t, *parent);
	inode_unpin(t, *parent);
	return fd;
}

int inode_stat_evicted(struct inode_table *t, struct inode *ino, struct stat *st)
{
	char name[NAME_MAX + 1];
	struct inode *parent;
	struct timespec born, now;
	bool evicted;
	dev_t dev;
	ino_t nr;
	int pfd, r;

	pthread_mutex_lock(&t->lock); /* what to expect, as of now */
	evicted = ino->fd < 0 && ino->born_known && !ino->synth;
	dev = ino->dev;
	nr = ino->ino;
	born = ino->born;
	pthread_mutex_unlock(&t->lock);
	if (!evicted)
		return -EAGAIN;
	pfd = inode_parent_fd_get(t, ino, &parent, name, sizeof(name));
	if (pfd < 0)
		return -EAGAIN;
	r = inode_statx(pfd, name, 0, st, &now);
	inode_unpin(t, parent);
	if (r <= 0 || st->st_dev != dev || st->st_ino != nr ||
	    (st->st_mode & S_IFMT) != ino->type || !ts_eq(now, born))
		return -EAGAIN;
	return 0;
}

struct inode *inode_find(struct inode_table *t, uint16_t domain, dev_t dev, ino_t ino)
{
	struct inode *i;

	pthread_mutex_lock(&t->lock);
	i = hash_find(t, domain, dev, ino);
	if (i)
		i->pins++;
	pthread_mutex_unlock(&t->lock);
	return i;
}

bool inode_is_named(struct inode_table *t, struct inode *ino, struct inode *dir, const char *name)
{
	bool named;

	pthread_mutex_lock(&t->lock);
	named = ino->parent == dir && ino->name && !strcmp(ino->name, name);
	pthread_mutex_unlock(&t->lock);
	return named;
}

void inode_note_attr(struct inode_table *t, struct inode *ino, const struct stat *st)
{
	pthread_mutex_lock(&t->lock);
	note(ino, st);
	pthread_mutex_unlock(&t->lock);
}

bool inode_note_seen(struct inode_table *t, struct inode *ino, const struct stat *st)
{
	pthread_mutex_lock(&t->lock);
	bool wanted = renew_wanted(t, ino, st);
	if (!wanted)
		note(ino, st);
	pthread_mutex_unlock(&t->lock);
	return wanted;
}

struct inode *inode_find_changed(struct inode_table *t, uint16_t domain, const struct stat *st,
				 bool *relookup)
{
	struct inode *i;

	pthread_mutex_lock(&t->lock);
	i = hash_find(t, domain, st->st_dev, st->st_ino);
	if (i && !i->writers && seen_differs(i, st)) {
		*relookup = renew_wanted(t, i, st);
		if (*relookup)
			renew_unless_open(i, 0);
		else
			note(i, st);
		i->pins++;
	} else {
		i = NULL;
	}
	pthread_mutex_unlock(&t->lock);
	return i;
}

int inode_open_begin(struct inode_table *t, struct inode *ino)
{
	int r = 0;

	pthread_mutex_lock(&t->lock);
	if (t->renew && S_ISREG(ino->type) && ino->superseded)
		r = -ESTALE;
	else
		ino->opening++;
	pthread_mutex_unlock(&t->lock);
	return r;
}

void inode_open_end(struct inode_table *t, struct inode *ino)
{
	pthread_mutex_lock(&t->lock);
	ino->opening--;
	pthread_mutex_unlock(&t->lock);
}

void inode_table_renew(struct inode_table *t, bool on)
{
	pthread_mutex_lock(&t->lock);
	t->renew = on;
	pthread_mutex_unlock(&t->lock);
}

bool inode_renew(struct inode_table *t, struct inode *ino, uint32_t held, struct inode **dir,
		 char *name, size_t size)
{
	bool renewed = false;

	pthread_mutex_lock(&t->lock);
	if (t->renew && S_ISREG(ino->type) && !ino->superseded)
		renewed = renew_unless_open(ino, held) && ino->parent && ino->name &&
			  strlen(ino->name) < size;
	*dir = ino->parent;
	if (renewed)
		strcpy(name, ino->name);
	pthread_mutex_unlock(&t->lock);
	return renewed;
}

bool inode_renew_due(struct inode_table *t, struct inode *ino)
{
	pthread_mutex_lock(&t->lock);
	bool due = ino->renew_due && !ino->opens && !ino->opening;
	pthread_mutex_unlock(&t->lock);
	return due;
}

void inode_set_watch(struct inode_table *t, struct inode *ino, int wd)
{
	pthread_mutex_lock(&t->lock);
	if (wd_of(ino) > 0)
		watch_unlink(t, ino);
	atomic_store_explicit(&ino->wd, wd, memory_order_relaxed);
	if (wd > 0) {
		ino->wnext = t->watches[wd % WATCH_BUCKETS];
		t->watches[wd % WATCH_BUCKETS] = ino;
	}
	pthread_mutex_unlock(&t->lock);
}

struct inode *inode_find_watch(struct inode_table *t, int wd)
{
	struct inode *i;

	if (wd <= 0)
		return NULL;
	pthread_mutex_lock(&t->lock);
	for (i = t->watches[wd % WATCH_BUCKETS]; i && wd_of(i) != wd; i = i->wnext)
		;
	if (i)
		i->pins++;
	pthread_mutex_unlock(&t->lock);
	return i;
}

void inode_table_on_unwatch(struct inode_table *t, void (*fn)(void *, int), void *arg)
{
	pthread_mutex_lock(&t->lock);
	t->on_unwatch = fn;
	t->on_unwatch_arg = arg;
	pthread_mutex_unlock(&t->lock);
}

void inode_table_each(struct inode_table *t, void (*fn)(void *, struct inode *), void *arg)
{
	pthread_mutex_lock(&t->lock);
	for (size_t b = 0; b < t->nbuckets; b++)
		for (struct inode *i = t->buckets[b]; i; i = i->hnext)
			fn(arg, i);
	pthread_mutex_unlock(&t->lock);
}

void inode_note_unnamed(struct inode_table *t, uint16_t domain, dev_t dev, ino_t ino)
{
	pthread_mutex_lock(&t->lock);
	struct inode *i = hash_find(t, domain, dev, ino);
	if (i)
		atomic_store_explicit(&i->unnamed, true, memory_order_release);
	pthread_mutex_unlock(&t->lock);
}

/* True if DIR/NAME designates the object (DEV, INO) now. Called with the
 * lock held, which it drops while it looks (a stat is I/O, and
 * inode_fd_get() takes the lock): the caller keeps DIR alive (a pin) and
 * NAME is its own copy; what it read of the table before may be stale
 * after. */
static bool names_now(struct inode_table *t, struct inode *dir, const char *name, dev_t dev,
		      ino_t ino)
{
	struct stat st;

	pthread_mutex_unlock(&t->lock);
	int pfd = inode_fd_get(t, dir);
	bool there = pfd >= 0 && fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		     st.st_dev == dev && st.st_ino == ino;
	if (pfd >= 0)
		inode_unpin(t, dir);
	pthread_mutex_lock(&t->lock);
	return there;
}

void inode_name_gone(struct inode_table *t, uint16_t domain, dev_t dev, ino_t ino,
		     struct inode *dir, const char *name)
{
	struct inode *i;
	int k;

	pthread_mutex_lock(&t->lock);
	i = hash_find(t, domain, dev, ino);
	if (i && (k = alt_find(i, dir, name)) >= 0) {
		alt_drop(t, i, k); /* one of its other names went */
		pthread_mutex_unlock(&t->lock);
		return;
	}
	/* Its name went: the oldest other name that still names it becomes
	 * its name, those that no longer do are forgotten. */
	for (int tries = 0; tries < INODE_ALT_NAMES && i && i->parent == dir && i->name &&
			    !strcmp(i->name, name) && i->alt[0].parent;
	     tries++) {
		struct inode *alt = i->alt[0].parent;
		char *alt_name = strdup(i->alt[0].name);

		if (!alt_name)
			break;
		alt->pins++; /* alive while it is looked at */
		/* The other name may have gone too (on the host, say), and
		 * then it is no better than the one the table holds. */
		bool there = names_now(t, alt, alt_name, dev, ino);
		/* Unless another request moved it meanwhile: the alt's ref
		 * becomes the name's, the gone name's parent loses one. */
		i = hash_find(t, domain, dev, ino);
		k = i ? alt_find(i, alt, alt_name) : -1;
		if (there && k >= 0 && i->parent == dir && i->name && !strcmp(i->name, name)) {
			char *promoted;
			alt_take(i, k, &promoted);
			free(i->name);
			i->name = promoted;
			i->parent = alt;
			dir->refs--;
			release_if_unused(t, dir);
		} else if (!there && k >= 0) {
			alt_drop(t, i, k);
		}
		alt->pins--;
		release_if_unused(t, alt);
		free(alt_name);
		if (there)
			break;
	}
	pthread_mutex_unlock(&t->lock);
}

/* inode_moved() of I, with the lock held; *COPY (NEWNAME's) is taken if
 * the table keeps it (then NULL). */
static void moved(struct inode_table *t, struct inode *i, const struct stat *st,
		  struct inode *oldparent, const char *oldname, struct inode *newparent,
		  char **copy)
{
	struct inode *old_parent;
	bool named = oldparent && i->parent == oldparent && i->name && !strcmp(i->name, oldname);
	int k = oldparent && !named ? alt_find(i, oldparent, oldname) : -1;

	if (k >= 0) {
		/* One of its other names moved, not the one the table knows
		 * it by. */
		newparent->refs++;
		free(i->alt[k].name);
		i->alt[k] = (struct inode_alt){ newparent, *copy };
		*copy = NULL;
		oldparent->refs--;
		release_if_unused(t, oldparent);
	} else if (!i->root && !i->synth &&
		   (!oldparent || S_ISDIR(st->st_mode) || st->st_nlink < 2 || named)) {
		/* The name the table knows it by moved, or its only one.
		 * (Where another name moved, which the table does not know,
		 * the names it knows still name the file: nothing changes.) */
		old_parent = i->parent;
		if (old_parent && i->name && (k = alt_find(i, newparent, *copy)) >= 0) {
			/* Its new name is one of its other names (a rename
			 * of one link over another, or a late word from the
			 * watch): the name it had becomes an other name, if
			 * it still names the file (inode_name_gone() looks). */
			char *same;
			old_parent = alt_take(i, k, &same); /* its ref, now the name's */
			free(same);
			alt_add(i, i->parent, i->name);
			i->name = NULL;
		}
		set_parent(i, newparent, *copy);
		*copy = NULL;
		if (old_parent) {
			old_parent->refs--;
			release_if_unused(t, old_parent);
		}
	}
}

void inode_moved(struct inode_table *t, uint16_t domain, const struct stat *st,
		 struct inode *oldparent, const char *oldname, struct inode *newparent,
		 const char *newname)
{
	char *copy = strdup(newname);
	struct inode *i;

	if (!copy)
		return; /* the next lookup by the new name fixes it */
	pthread_mutex_lock(&t->lock);
	i = hash_find(t, domain, st->st_dev, st->st_ino);
	if (i) {
		moved(t, i, st, oldparent, oldname, newparent, &copy);
		note(i, st); /* the rename moved its ctime: not news */
	}
	pthread_mutex_unlock(&t->lock);
	free(copy);
}

void inode_seen_as(struct inode_table *t, struct inode *ino, const struct stat *st,
		   struct inode *dir, const char *name)
{
	char *copy = strdup(name), *known = NULL;

	if (!copy)
		return;
	pthread_mutex_lock(&t->lock);
	struct inode *at = ino->parent;
	if (!S_ISDIR(st->st_mode) && st->st_nlink > 1 && at && ino->name &&
	    (known = strdup(ino->name))) {
		/* Another name of a file that has several: a link made on
		 * the host, or a rename of one of its names. It is the latter
		 * only where the name the table holds no longer names it;
		 * a name that came and went (undo puts a removed link back
		 * and takes it away again) must not take the place of one
		 * that stays. */
		at->pins++; /* alive while it is looked at */
		bool stays = names_now(t, at, known, st->st_dev, st->st_ino);
		if (stays && ino->parent == at && ino->name && !strcmp(ino->name, known) &&
		    !(at == dir && !strcmp(known, name)) && alt_find(ino, dir, name) < 0 &&
		    alt_add(ino, dir, copy)) {
			dir->refs++;
			copy = NULL;
		}
		at->pins--;
		release_if_unused(t, at);
		if (!stays)
			moved(t, ino, st, NULL, NULL, dir, &copy);
	} else {
		moved(t, ino, st, NULL, NULL, dir, &copy);
	}
	pthread_mutex_unlock(&t->lock);
	free(copy);
	free(known);
}

struct root *inode_root(struct inode_table *t, struct inode *ino)
{
	struct root *root;

	pthread_mutex_lock(&t->lock);
	while (ino && !ino->root)
		ino = ino->parent;
	root = ino ? ino->root : NULL;
	pthread_mutex_unlock(&t->lock);
	return root;
}

bool inode_within(struct inode_table *t, struct inode *ino, bool (*match)(const char *name))
{
	bool found = false;

	pthread_mutex_lock(&t->lock);
	for (; ino && ino->name && !found; ino = ino->parent)
		found = match(ino->name);
	pthread_mutex_unlock(&t->lock);
	return found;
}

size_t inode_names_below(struct inode_table *t, struct inode *ino, const struct inode *top,
			 const char *child, char (*names)[NAME_MAX + 1], size_t max)
{
	const char *parts[256];
	size_t n = 0, depth;

	pthread_mutex_lock(&t->lock);
	if (child)
		parts[n++] = child;
	for (; ino && ino != top && ino->name && n < 256; ino = ino->parent)
		parts[n++] = ino->name;
	depth = ino == top ? n : 0;
	for (size_t i = 0; i < depth && i < max; i++)
		snprintf(names[i], NAME_MAX + 1, "%s", parts[depth - 1 - i]);
	pthread_mutex_unlock(&t->lock);
	return depth;
}

char *inode_path(struct inode_table *t, struct inode *ino, const char *child, char *buf,
		 size_t size)
{
	const char *parts[256];
	size_t n = 0, len = 0;

	pthread_mutex_lock(&t->lock);
	if (child)
		parts[n++] = child;
	for (; ino && ino->name && n < 256; ino = ino->parent)
		parts[n++] = ino->name;
	buf[0] = '\0';
	while (n > 0 && len < size) {
		int w = snprintf(buf + len, size - len, "%s%s", len ? "/" : "", parts[--n]);
		if (w < 0)
			break;
		len += (size_t)w;
	}
	pthread_mutex_unlock(&t->lock);
	return buf;
}

void inode_table_stats(struct inode_table *t, struct inode_stats *out)
{
	pthread_mutex_lock(&t->lock);
	out->inodes = t->count;
	out->fds = t->fds;
	out->evictions = t->evictions;
	pthread_mutex_unlock(&t->lock);
}
