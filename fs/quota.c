/* quota.c - see quota.h. */
#include "quota.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/units.h"
#include "common/walk.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define QUOTA_MAX_ROOTS 8
#define RESCAN_MS 1000

struct quota {
	pthread_mutex_t lock;
	pthread_cond_t changed; /* a scan ended */
	uint64_t max_bytes, max_inodes;
	uint64_t bytes, inodes;			/* the last scan, plus charges since */
	uint64_t charged_bytes, charged_inodes; /* ever, to tell what a scan missed */
	bool ready, scanning;
	bool freed; /* space went since the last scan */
	int64_t scanned_ms;
	int roots[QUOTA_MAX_ROOTS];
	size_t nroots;
	pthread_t first;
	bool started;
};

/* Files with several links, counted once: an open-addressed set. */
struct seen {
	struct {
		dev_t dev;
		ino_t ino;
	} * v;
	size_t n, cap;
};

static bool seen_before(struct seen *s, const struct stat *st)
{
	if (s->n * 2 >= s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		__typeof__(s->v) v = calloc(cap, sizeof(*v));
		if (!v)
			return false; /* counted twice: an overestimate */
		for (size_t i = 0; i < s->cap; i++)
			if (s->v[i].ino) {
				size_t h = (s->v[i].ino * 2654435761u) & (cap - 1);
				while (v[h].ino)
					h = (h + 1) & (cap - 1);
				v[h] = s->v[i];
			}
		free(s->v);
		s->v = v;
		s->cap = cap;
	}
	size_t h = (st->st_ino * 2654435761u) & (s->cap - 1);
	for (; s->v[h].ino; h = (h + 1) & (s->cap - 1))
		if (s->v[h].ino == st->st_ino && s->v[h].dev == st->st_dev)
			return true;
	s->v[h].dev = st->st_dev;
	s->v[h].ino = st->st_ino;
	s->n++;
	return false;
}

/* A directory on the way down: who it is, to come back up to it by
 * "..", and its subdirectories not entered yet. One descriptor is open
 * at a time, so any depth can be scanned (recursion, or a descriptor per
 * level, would stop at a few thousand). */
struct level {
	dev_t dev;
	ino_t ino;
	char **subdirs;
	size_t n, cap, next;
};

struct tally {
	struct seen seen;
	uint64_t bytes, inodes;
	struct level *at; /* the directory being read */
	int error;
};

static void level_free(struct level *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->subdirs[i]);
	free(l->subdirs);
}

/* Counts one entry, and lists it if it is a directory. */
static int count_entry(void *arg, int dirfd, const char *name, const struct stat *st)
{
	struct tally *t = arg;
	struct level *l = t->at;

	(void)dirfd;
	if (!S_ISDIR(st->st_mode) && st->st_nlink > 1 && seen_before(&t->seen, st))
		return 0;
	t->bytes += (uint64_t)st->st_blocks * 512;
	t->inodes++;
	if (!S_ISDIR(st->st_mode))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		char **v = realloc(l->subdirs, cap * sizeof(*v));
		if (!v)
			return t->error = -ENOMEM;
		l->subdirs = v;
		l->cap = cap;
	}
	if (!(l->subdirs[l->n] = strdup(name)))
		return t->error = -ENOMEM;
	l->n++;
	return 0;
}

/* Reads directory FD as a new level on top of the N of LEVELS (grown as
 * needed): its entries counted, its subdirectories listed. */
static int enter(struct tally *t, struct level **levels, size_t *n, size_t *cap, int fd)
{
	struct stat st;

	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 64;
		struct level *v = realloc(*levels, c * sizeof(*v));
		if (!v)
			return -ENOMEM;
		*levels = v;
		*cap = c;
	}
	int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0); /* dir_each takes it */
	if (copy < 0 || fstat(fd, &st) < 0) {
		int r = -errno;
		if (copy >= 0)
			close(copy);
		return r;
	}
	t->at = &(*levels)[(*n)++];
	*t->at = (struct level){ .dev = st.st_dev, .ino = st.st_ino };
	dir_each(copy, count_entry, t);
	return t->error;
}

/* Counts all below directory ROOT (a readable fd, taken), depth first.
 * Returns 0, or -errno if the count is short: out of memory, or a
 * directory on the way moved away meanwhile ("..", on the way back,
 * not where it came from). */
static int scan_root(struct tally *t, int root)
{
	struct level *levels = NULL;
	size_t n = 0, cap = 0;
	int cur = root, r = enter(t, &levels, &n, &cap, cur);

	while (r == 0 && n > 0) {
		struct level *top = &levels[n - 1];
		if (top->next < top->n) {
			const char *name = top->subdirs[top->next++];
			int fd = openat(cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0)
				continue; /* gone since it was listed */
			r = enter(t, &levels, &n, &cap, fd);
			close(cur);
			cur = fd;
			continue;
		}
		level_free(top);
		if (--n == 0)
			break;
		struct stat st;
		int up = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (up < 0 || fstat(up, &st) < 0 || st.st_dev != levels[n - 1].dev ||
		    st.st_ino != levels[n - 1].ino)
			r = -ESTALE;
		close(cur);
		cur = up;
	}
	while (n > 0)
		level_free(&levels[--n]);
	free(levels);
	if (cur >= 0)
		close(cur);
	return r;
}

/* Counts the roots. Returns 0, or -errno if the count may be short. */
static int scan(const struct quota *q, uint64_t *bytes, uint64_t *inodes)
{
	struct tally t = { 0 };
	int r = 0;

	for (size_t i = 0; i < q->nroots && r == 0; i++) {
		char path[64];
		/* A readable fd of the root from our O_PATH one. */
		snprintf(path, sizeof(path), "/proc/self/fd/%d", q->roots[i]);
		int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0)
			r = scan_root(&t, fd);
	}
	free(t.seen.v);
	*bytes = t.bytes;
	*inodes = t.inodes;
	return r;
}

/* Scans with the lock dropped meanwhile; what was charged during the
 * scan is added on top (the scan may have missed it). */
static void rescan_locked(struct quota *q)
{
	uint64_t bytes, inodes, cb = q->charged_bytes, ci = q->charged_inodes;

	q->scanning = true;
	pthread_mutex_unlock(&q->lock);
	int r = scan(q, &bytes, &inodes);
	pthread_mutex_lock(&q->lock);
	bytes += q->charged_bytes - cb;
	inodes += q->charged_inodes - ci;
	/* A short count only ever raises the figure. */
	if (r < 0)
		log_warn("disk quota: the scan of the thread's files was cut short (%s);"
			 " usage is taken as at least what it counted",
			 strerror(-r));
	q->bytes = r < 0 && q->bytes > bytes ? q->bytes : bytes;
	q->inodes = r < 0 && q->inodes > inodes ? q->inodes : inodes;
	q->scanning = false;
	q->ready = true;
	q->freed = false;
	q->scanned_ms = now_ms();
	pthread_cond_broadcast(&q->changed);
}

static void *first_scan(void *arg)
{
	struct quota *q = arg;
	char size[32];

	pthread_mutex_lock(&q->lock);
	rescan_locked(q);
	log_info("disk quota: %s in %llu files and directories so far",
		 size_text(q->bytes, size, sizeof(size)), (unsigned long long)q->inodes);
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

struct quota *quota_new(uint64_t max_bytes, uint64_t max_inodes, const int *roots, size_t nroots)
{
	if (!max_bytes && !max_inodes)
		return NULL;
	struct quota *q = calloc(1, sizeof(*q));
	if (!q) {
		log_warn("no disk quota: out of memory");
		return NULL;
	}
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->changed, NULL);
	q->max_bytes = max_bytes;
	q->max_inodes = max_inodes;
	q->scanning = true; /* until the first scan is done */
	for (size_t i = 0; i < nroots && q->nroots < QUOTA_MAX_ROOTS; i++)
		if ((q->roots[q->nroots] = fcntl(roots[i], F_DUPFD_CLOEXEC, 3)) >= 0)
			q->nroots++;
	return q;
}

void quota_start(struct quota *q)
{
	if (!q)
		return;
	if (pthread_create(&q->first, NULL, first_scan, q) == 0) {
		q->started = true;
		return;
	}
	pthread_mutex_lock(&q->lock);
	rescan_locked(q); /* no thread: scan here */
	pthread_mutex_unlock(&q->lock);
}

void quota_free(struct quota *q)
{
	if (!q)
		return;
	if (q->started)
		pthread_join(q->first, NULL);
	for (size_t i = 0; i < q->nroots; i++)
		close(q->roots[i]);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->changed);
	free(q);
}

static bool over(const struct quota *q, uint64_t bytes, uint64_t inodes)
{
	return (q->max_bytes && bytes && q->bytes + bytes > q->max_bytes) ||
	       (q->max_inodes && inodes && q->inodes + inodes > q->max_inodes);
}

int quota_charge(struct quota *q, uint64_t bytes, uint64_t inodes, char *why, size_t whylen)
{
	char size[32];

	if (!q || (!bytes && !inodes))
		return 0;
	pthread_mutex_lock(&q->lock);
	while (!q->ready)
		pthread_cond_wait(&q->changed, &q->lock);
	if (over(q, bytes, inodes)) {
		/* Space may have been freed since the last scan. */
		if (q->scanning)
			pthread_cond_wait(&q->changed, &q->lock);
		else if (q->freed || now_ms() - q->scanned_ms >= RESCAN_MS)
			rescan_locked(q);
	}
	if (over(q, bytes, inodes)) {
		bool by_bytes = q->max_bytes && bytes && q->bytes + bytes > q->max_bytes;
		if (by_bytes)
			snprintf(why, whylen, "the thread's disk quota of %s is reached",
				 size_text(q->max_bytes, size, sizeof(size)));
		else
			snprintf(why, whylen,
				 "the thread's quota of %llu files and directories is"
				 " reached",
				 (unsigned long long)q->max_inodes);
		pthread_mutex_unlock(&q->lock);
		return -EDQUOT;
	}
	q->bytes += bytes;
	q->inodes += inodes;
	q->charged_bytes += bytes;
	q->charged_inodes += inodes;
	pthread_mutex_unlock(&q->lock);
	return 0;
}

void quota_took(struct quota *q, uint64_t bytes)
{
	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->bytes += bytes;
	q->charged_bytes += bytes;
	pthread_mutex_unlock(&q->lock);
}

void quota_release(struct quota *q, uint64_t bytes, uint64_t inodes)
{
	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->bytes = q->bytes > bytes ? q->bytes - bytes : 0;
	q->inodes = q->inodes > inodes ? q->inodes - inodes : 0;
	q->freed = true;
	pthread_mutex_unlock(&q->lock);
}
