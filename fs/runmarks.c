/* runmarks.c - see runmarks.h. An open-addressing table (linear probing,
 * a power of two of slots, at most half full) of one entry per object
 * number; entries are never removed singly, only all at once for a new
 * run (later runs have larger ids: a run's id is when it began). */
#include "runmarks.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

struct entry {
	struct runmark_object o;
	bool used;
	unsigned marks;
	struct snap_file *image; /* runmarks_set_image()'s, or NULL */
};

struct runmarks {
	pthread_mutex_t lock;
	int64_t run; /* whose marks these are */
	struct entry *v;
	size_t cap, n;
};

struct runmarks *runmarks_new(void)
{
	struct runmarks *m = calloc(1, sizeof(*m));

	if (m)
		pthread_mutex_init(&m->lock, NULL);
	return m;
}

/* Forgets every entry (a new run's marks begin anew). */
static void clear(struct runmarks *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->v[i].image);
	free(m->v);
	m->v = NULL;
	m->cap = m->n = 0;
}

void runmarks_free(struct runmarks *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->lock);
	clear(m);
	free(m);
}

static size_t slot_of(const struct runmarks *m, dev_t dev, ino_t ino)
{
	uint64_t h = ((uint64_t)ino ^ ((uint64_t)dev << 32)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 32) & (m->cap - 1);
}

/* The slot of O's number: its entry, or the free slot it would take. */
static struct entry *find(const struct runmarks *m, const struct runmark_object *o)
{
	size_t i = slot_of(m, o->dev, o->ino);

	while (m->v[i].used && (m->v[i].o.ino != o->ino || m->v[i].o.dev != o->dev))
		i = (i + 1) & (m->cap - 1);
	return &m->v[i];
}

static int grow(struct runmarks *m)
{
	size_t cap = m->cap ? 2 * m->cap : 1024;
	struct entry *old = m->v, *v = calloc(cap, sizeof(*v));

	if (!v)
		return -ENOMEM;
	m->v = v;
	m->cap = cap;
	for (size_t i = 0; i < cap / 2 && old; i++)
		if (old[i].used)
			*find(m, &old[i].o) = old[i];
	free(old);
	return 0;
}

/* Whether E, of O's number, is O: not if both birth times are known and
 * differ (the number went to a new object). */
static bool same_object(const struct entry *e, const struct runmark_object *o)
{
	return !e->o.born_known || !o->born_known ||
	       (e->o.born.tv_sec == o->born.tv_sec && e->o.born.tv_nsec == o->born.tv_nsec);
}

/* O's entry for RUN, under M's lock, made if SET (a new object's entry
 * replaces a former one of its number); NULL if there is none, memory
 * runs out, or RUN is over. */
static struct entry *entry_of(struct runmarks *m, int64_t run, const struct runmark_object *o,
			      bool set)
{
	if (run < m->run) /* a request of an earlier run, late */
		return NULL;
	if (run > m->run) {
		clear(m);
		m->run = run;
	}
	struct entry *e = m->v ? find(m, o) : NULL;
	if (e && e->used && !same_object(e, o)) {
		if (!set)
			return NULL;
		free(e->image); /* the number's new object */
		*e = (struct entry){ .o = *o, .used = true };
	} else if (e && e->used) {
		if (!e->o.born_known)
			e->o = *o;
	} else if (set && (2 * (m->n + 1) <= m->cap || grow(m) == 0)) {
		e = find(m, o);
		*e = (struct entry){ .o = *o, .used = true };
		m->n++;
	} else {
		e = NULL;
	}
	return e;
}

bool runmarks_test(struct runmarks *m, int64_t run, const struct runmark_object *o, unsigned marks,
		   bool set)
{
	pthread_mutex_lock(&m->lock);
	struct entry *e = entry_of(m, run, o, false);
	bool had = e && (e->marks & marks) == marks;
	if (set && (e || (e = entry_of(m, run, o, true))))
		e->marks |= marks;
	pthread_mutex_unlock(&m->lock);
	return had;
}

void runmarks_set_image(struct runmarks *m, int64_t run, const struct runmark_object *o,
			const struct snap_file *image)
{
	struct snap_file *copy = malloc(sizeof(*copy));

	if (!copy)
		return;
	*copy = *image;
	copy->path = copy->target = NULL;
	pthread_mutex_lock(&m->lock);
	struct entry *e = entry_of(m, run, o, true);
	if (e && !e->image) {
		e->image = copy;
		copy = NULL;
	}
	pthread_mutex_unlock(&m->lock);
	free(copy);
}

bool runmarks_get_image(struct runmarks *m, int64_t run, const struct runmark_object *o,
			struct snap_file *image)
{
	pthread_mutex_lock(&m->lock);
	struct entry *e = entry_of(m, run, o, false);
	bool had = e && e->image;
	if (had)
		*image = *e->image;
	pthread_mutex_unlock(&m->lock);
	return had;
}
