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
#define DEPTH_MAX 4096

struct quota {
	pthread_mutex_t lock;
	pthread_cond_t changed; /* a scan ended */
	uint64_t max_bytes, max_inodes;
	uint64_t bytes, inodes;			/* the last scan, plus charges since */
	uint64_t charged_bytes, charged_inodes; /* ever: what a scan missed */
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

struct tally {
	struct seen seen;
	uint64_t bytes, inodes;
	int depth;
};

/* Counts one entry, and what it holds if it is a directory. */
static int count_entry(void *arg, int dirfd, const char *name, const struct stat *st)
{
	struct tally *t = arg;

	if (!S_ISDIR(st->st_mode) && st->st_nlink > 1 && seen_before(&t->seen, st))
		return 0;
	t->bytes += (uint64_t)st->st_blocks * 512;
	t->inodes++;
	if (S_ISDIR(st->st_mode) && t->depth < DEPTH_MAX) {
		int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			t->depth++;
			dir_each(fd, count_entry, t);
			t->depth--;
		}
	}
	return 0;
}

static void scan(const struct quota *q, uint64_t *bytes, uint64_t *inodes)
{
	struct tally t = { 0 };

	for (size_t i = 0; i < q->nroots; i++) {
		char path[64];
		/* A readable fd of the root from our O_PATH one. */
		snprintf(path, sizeof(path), "/proc/self/fd/%d", q->roots[i]);
		int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0)
			dir_each(fd, count_entry, &t);
	}
	free(t.seen.v);
	*bytes = t.bytes;
	*inodes = t.inodes;
}

/* Scans with the lock dropped meanwhile; what was charged during the
 * scan is added on top (the scan may have missed it). */
static void rescan_locked(struct quota *q)
{
	uint64_t bytes, inodes, cb = q->charged_bytes, ci = q->charged_inodes;

	q->scanning = true;
	pthread_mutex_unlock(&q->lock);
	scan(q, &bytes, &inodes);
	pthread_mutex_lock(&q->lock);
	q->bytes = bytes + (q->charged_bytes - cb);
	q->inodes = inodes + (q->charged_inodes - ci);
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

void quota_usage(struct quota *q, uint64_t *bytes, uint64_t *inodes)
{
	pthread_mutex_lock(&q->lock);
	*bytes = q->bytes;
	*inodes = q->inodes;
	pthread_mutex_unlock(&q->lock);
}
