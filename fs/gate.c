/* gate.c - see gate.h. */
#include "gate.h"
#include "confine.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/hash.h"
#include "common/lockcheck.h"
#include "common/log.h"
#include "store/snapshot.h"
#include "store/store.h"
#include "store/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STRIPES 256
/* Hash jobs waiting beyond this are dropped (the mark then stays
 * metadata-only, which can only refuse more, never less). */
#define HASH_QUEUE_MAX 4096

struct version {
	uint64_t ino;
	int64_t size, mtime_ns, ctime_ns;
};

/* The SHA-256 of a file the view made, streamed from the bytes written
 * through it while each write lands where the last one ended: the hash
 * the hasher would read back, without reading or waking anyone. Only the
 * first WRITTEN_HASH_MAX bytes: the requests' own threads hash at most
 * that much of a file, and a larger one is read back by the hasher, off
 * the path of the requests (an untar of /usr/include streams 76% of its
 * files and a quarter of its bytes). */
#define WRITTEN_HASH_MAX (16 * 1024)

struct written_hash {
	EVP_MD_CTX *ctx;
	int64_t len; /* bytes hashed: the file's [0, len) */
};

struct mark {
	struct mark *next;
	dev_t dev;
	struct version ver;
	int64_t at_ns;
	bool hashed;
	bool dirty; /* not yet written to the store */
	uint8_t hash[SHA256_BYTES];
	struct written_hash *written; /* a file the view made, being written */
};

/* The marks of the files whose identity hashes to this stripe, and the
 * gate lock those files share. */
struct stripe {
	pthread_mutex_t lock;
	struct mark **buckets;
	size_t nbuckets, count;
};

/* A mark recorded by an earlier daemon, claimed at most once. */
struct loaded_mark {
	char *path;
	struct store_mark m;
	bool claimed;
};

struct hash_job {
	struct hash_job *next;
	dev_t dev;
	struct version ver;
	int64_t at_ns;	/* the mark's: the read or change it was queued for */
	int fd;		/* readable, the job's own */
	bool keep_text; /* a read's: its text kept with the mark */
	char path[];
};

struct gate {
	enum gate_mode mode;
	bool unlink;
	struct store_writer *writer;
	struct stripe stripes[STRIPES];
	EVP_MD *sha256; /* sha256_md(): streams need no lookup each */
	pthread_mutex_t md_lock;
	bool md_fetched; /* tried: sha256 is what it gave */

	struct loaded_mark *loaded; /* sorted by path; read-only */
	size_t nloaded;
	size_t unclaimed; /* atomic */

	pthread_t hasher;
	bool hasher_running;
	pthread_mutex_t hlock;
	pthread_cond_t hwake, hidle;
	struct hash_job *jobs, **jobs_tail;
	size_t njobs;
	bool hashing, stopping;
};

static const char *const mode_names[] = {
	[GATE_ENFORCE] = "enforce",
	[GATE_STRICT] = "strict",
	[GATE_AUDIT] = "audit",
	[GATE_OFF] = "off",
};

int gate_mode_parse(const char *s, enum gate_mode *out)
{
	for (size_t i = 0; i < sizeof(mode_names) / sizeof(*mode_names); i++)
		if (!strcmp(s, mode_names[i])) {
			*out = (enum gate_mode)i;
			return 0;
		}
	return -EINVAL;
}

const char *gate_mode_name(enum gate_mode mode)
{
	return mode_names[mode];
}

static struct version version_of(const struct stat *st)
{
	return (struct version){ st->st_ino, st->st_size, timespec_ns(&st->st_mtim),
				 timespec_ns(&st->st_ctim) };
}

static bool version_eq(const struct version *a, const struct version *b)
{
	return a->ino == b->ino && a->size == b->size && a->mtime_ns == b->mtime_ns &&
	       a->ctime_ns == b->ctime_ns;
}

static uint64_t id_hash(dev_t dev, ino_t ino)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)dev;

	return h ^ (h >> 29);
}

static struct stripe *stripe_of(struct gate *g, dev_t dev, ino_t ino)
{
	return &g->stripes[id_hash(dev, ino) % STRIPES];
}

/* Every stripe lock is a gate lock: a thread holds at most one. */
static void stripe_lock(pthread_mutex_t *lock)
{
	lock_check_take(LOCK_GATE);
	pthread_mutex_lock(lock);
}

static void stripe_unlock(pthread_mutex_t *lock)
{
	pthread_mutex_unlock(lock);
	lock_check_drop(LOCK_GATE);
}

/* The mark slot of (DEV, INO) in its stripe (locked). */
static struct mark **mark_slot(struct stripe *s, dev_t dev, ino_t ino)
{
	struct mark **p;

	if (!s->nbuckets)
		return NULL;
	p = &s->buckets[(id_hash(dev, ino) / STRIPES) % s->nbuckets];
	while (*p && ((*p)->dev != dev || (*p)->ver.ino != ino))
		p = &(*p)->next;
	return p;
}

static struct mark *mark_find(struct stripe *s, dev_t dev, ino_t ino)
{
	struct mark **p = mark_slot(s, dev, ino);

	return p ? *p : NULL;
}

static void stripe_grow(struct stripe *s)
{
	size_t n = s->nbuckets ? s->nbuckets * 2 : 16;
	struct mark **b = calloc(n, sizeof(*b));

	if (!b)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < s->nbuckets; i++)
		for (struct mark *m = s->buckets[i], *next; m; m = next) {
			size_t k = (id_hash(m->dev, m->ver.ino) / STRIPES) % n;
			next = m->next;
			m->next = b[k];
			b[k] = m;
		}
	free(s->buckets);
	s->buckets = b;
	s->nbuckets = n;
}

/* The mark of (DEV, INO), created if missing; NULL without memory. */
static struct mark *mark_get(struct stripe *s, dev_t dev, ino_t ino)
{
	struct mark **p, *m;

	if (s->count >= 2 * s->nbuckets)
		stripe_grow(s);
	p = mark_slot(s, dev, ino);
	if (!p)
		return NULL;
	if (*p)
		return *p;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->dev = dev;
	m->ver.ino = ino;
	*p = m;
	s->count++;
	return m;
}

static void mark_set(struct stripe *s, const struct stat *st, int64_t at_ns)
{
	struct mark *m = mark_get(s, st->st_dev, st->st_ino);
	struct version v = version_of(st);

	if (!m || version_eq(&m->ver, &v))
		return;
	m->ver = v;
	m->at_ns = at_ns;
	m->hashed = false;
	m->dirty = true;
}

static void written_drop(struct mark *m)
{
	if (!m || !m->written)
		return;
	EVP_MD_CTX_free(m->written->ctx);
	free(m->written);
	m->written = NULL;
}

/* OpenSSL's SHA-256, fetched once, at its first use: the first fetch
 * sets up OpenSSL's library (3 ms here), which a mount must not wait
 * for (it did: cold acquires took 10% longer). The hasher thread asks
 * as it starts, so a writer rarely waits for it. NULL if there is none. */
static EVP_MD *sha256_md(struct gate *g)
{
	EVP_MD *md = __atomic_load_n(&g->sha256, __ATOMIC_ACQUIRE);

	if (md)
		return md;
	pthread_mutex_lock(&g->md_lock);
	if (!g->md_fetched) {
		g->md_fetched = true;
		__atomic_store_n(&g->sha256, EVP_MD_fetch(NULL, "SHA256", NULL), __ATOMIC_RELEASE);
	}
	md = g->sha256;
	pthread_mutex_unlock(&g->md_lock);
	return md;
}

/* M's file was just made, empty, through the view: its hash starts. */
static void written_start(struct gate *g, struct mark *m)
{
	written_drop(m);
	EVP_MD *md = sha256_md(g);
	struct written_hash *w = md ? calloc(1, sizeof(*w)) : NULL;

	if (!w)
		return;
	w->ctx = EVP_MD_CTX_new();
	if (!w->ctx || EVP_DigestInit_ex(w->ctx, md, NULL) != 1) {
		EVP_MD_CTX_free(w->ctx);
		free(w);
		return;
	}
	m->written = w;
}

/* M's file is ST, made or emptied through the view just now: what the
 * thread writes next from offset 0 is all of it, so its written hash
 * starts. Only a stored mark keeps a hash: without a writer none starts.
 * False, and nothing started, for a file that is not empty. */
static bool written_start_if_empty(struct gate *g, struct mark *m, const struct stat *st)
{
	if (!m || !g->writer || !S_ISREG(st->st_mode) || st->st_size != 0)
		return false;
	written_start(g, m);
	return true;
}

/* The mark of S follows a change the view made, to AFTER: a change of
 * content that left the file empty (O_TRUNC, a save's new stage) starts
 * its written hash, so a save is hashed from its own writes as a new
 * file is, not read back. */
static void mark_moved(struct gate *g, struct stripe *s, const struct stat *after, bool content)
{
	mark_set(s, after, realtime_ns());
	if (content)
		written_start_if_empty(g, mark_find(s, after->st_dev, after->st_ino), after);
}

static void to_store_mark(const struct mark *m, const char *path, struct store_mark *out)
{
	*out = (struct store_mark){
		.path = path,
		.ino = m->ver.ino,
		.size = m->ver.size,
		.mtime_ns = m->ver.mtime_ns,
		.ctime_ns = m->ver.ctime_ns,
		.at_ns = m->at_ns,
		.hashed = m->hashed,
	};
	memcpy(out->hash, m->hash, sizeof(out->hash));
}

/* SHA-256 of the first SIZE bytes read from FD; false if the file does not
 * have exactly SIZE bytes or cannot be read. */
static bool hash_fd(int fd, int64_t size, uint8_t out[SHA256_BYTES])
{
	_cleanup_(freep) char *buf = malloc((size_t)size + 1);
	size_t got = 0;
	ssize_t n;

	if (!buf || size < 0 || size > SNAPSHOT_HASH_MAX)
		return false;
	while ((n = pread(fd, buf + got, (size_t)size + 1 - got, (off_t)got)) > 0)
		got += (size_t)n;
	if (n < 0 || got != (size_t)size)
		return false;
	return EVP_Digest(buf, got, out, NULL, EVP_sha256(), NULL) == 1;
}

/* The text of a read (malloc'd), kept with its mark. */
struct read_text {
	void *data;
	size_t len;
};

/* Queues SM, the mark of the file at FD. The worker looked at the file
 * before it got here, and another may have unlinked it since and queued
 * the drop of its path first (a close's RELEASE comes after close()
 * returned): a file with no name left now takes its row back out, unless
 * the row is another file's by then. */
static void store_mark(struct gate *g, const struct store_mark *sm, int fd)
{
	struct stat now;

	store_writer_mark_put(g->writer, sm);
	if (fd >= 0 && fstat(fd, &now) == 0 && now.st_nlink == 0)
		store_writer_mark_drop(g->writer, sm->path, sm->ino);
}

static int keep_read_text(void *arg, const struct snap_file *f, const uint8_t *data, size_t len)
{
	struct read_text *t = arg;

	(void)f;
	free(t->data);
	t->data = malloc(len ? len : 1);
	t->len = t->data ? len : 0;
	if (t->data)
		memcpy(t->data, data, len);
	return 0;
}

/* The hash of what JOB read, with its text in *TEXT where a change
 * summary would keep it (not sensitive, not binary, up to 256 KiB): kept
 * with the mark, it lets a refusal show the change. */
static bool hash_read(struct gate *g, const struct hash_job *job, uint8_t out[SHA256_BYTES],
		      struct read_text *text)
{
	struct snap_file f;
	struct stat st;

	if (job->keep_text && g->writer && fstat(job->fd, &st) == 0 &&
	    snapshot_describe(job->fd, &st, job->path, NULL, keep_read_text, text, &f) == 0) {
		bool ok = f.hashed && f.size == job->ver.size;
		memcpy(out, f.sha256, sizeof(f.sha256));
		snap_file_free(&f);
		if (ok)
			return true;
	}
	return hash_fd(job->fd, job->ver.size, out);
}

static void *hasher_main(void *arg)
{
	struct gate *g = arg;

	pthread_setname_np(pthread_self(), "sbxfs-hash");
	sha256_md(g);

	pthread_mutex_lock(&g->hlock);
	for (;;) {
		while (!g->jobs && !g->stopping)
			pthread_cond_wait(&g->hwake, &g->hlock);
		struct hash_job *job = g->jobs;
		if (!job)
			break;
		g->jobs = job->next;
		if (!g->jobs)
			g->jobs_tail = &g->jobs;
		g->njobs--;
		g->hashing = true;
		pthread_mutex_unlock(&g->hlock);

		uint8_t hash[SHA256_BYTES];
		struct stat st;
		struct read_text text = { 0 };
		bool ok = !g->stopping && hash_read(g, job, hash, &text) &&
			  fstat(job->fd, &st) == 0;
		struct version now = ok ? version_of(&st) : job->ver;
		if (ok && version_eq(&now, &job->ver)) {
			struct stripe *s = stripe_of(g, job->dev, job->ver.ino);
			struct store_mark sm;
			bool fill = false;

			/* Only the mark the job was queued for takes the hash:
			 * a change or a read since, which may have left the
			 * same size and times, made another. Its stored row is
			 * filled in, never replaced: by now the path may name
			 * another file, whose row was put after it. */
			stripe_lock(&s->lock);
			struct mark *m = mark_find(s, job->dev, job->ver.ino);
			if (m && !m->hashed && m->at_ns == job->at_ns &&
			    version_eq(&m->ver, &job->ver)) {
				memcpy(m->hash, hash, sizeof(hash));
				m->hashed = true;
				to_store_mark(m, job->path, &sm);
				fill = g->writer != NULL;
			}
			stripe_unlock(&s->lock);
			if (fill)
				store_writer_mark_hash(g->writer, &sm, text.data, text.len);
		}
		close(job->fd);
		free(text.data);
		free(job);
		pthread_mutex_lock(&g->hlock);
		g->hashing = false;
		if (!g->jobs)
			pthread_cond_broadcast(&g->hidle);
	}
	pthread_mutex_unlock(&g->hlock);
	return NULL;
}

struct gate *gate_new(enum gate_mode mode, bool unlink, struct store_writer *w)
{
	struct gate *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->mode = mode;
	g->unlink = unlink;
	g->writer = w;
	for (size_t i = 0; i < STRIPES; i++)
		pthread_mutex_init(&g->stripes[i].lock, NULL);
	pthread_mutex_init(&g->hlock, NULL);
	pthread_cond_init(&g->hwake, NULL);
	pthread_cond_init(&g->hidle, NULL);
	g->jobs_tail = &g->jobs;
	pthread_mutex_init(&g->md_lock, NULL);
	g->hasher_running = pthread_create(&g->hasher, NULL, hasher_main, g) == 0;
	if (!g->hasher_running)
		log_warn("gate: no hashing thread; marks compare metadata only");
	return g;
}

void gate_free(struct gate *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->hlock);
	g->stopping = true;
	pthread_cond_signal(&g->hwake);
	pthread_mutex_unlock(&g->hlock);
	if (g->hasher_running)
		pthread_join(g->hasher, NULL);
	for (struct hash_job *j = g->jobs, *next; j; j = next) {
		next = j->next;
		close(j->fd);
		free(j);
	}
	for (size_t i = 0; i < STRIPES; i++) {
		struct stripe *s = &g->stripes[i];

		for (size_t b = 0; b < s->nbuckets; b++)
			for (struct mark *m = s->buckets[b], *next; m; m = next) {
				next = m->next;
				written_drop(m);
				free(m);
			}
		free(s->buckets);
		pthread_mutex_destroy(&s->lock);
	}
	for (size_t i = 0; i < g->nloaded; i++)
		free(g->loaded[i].path);
	free(g->loaded);
	EVP_MD_free(g->sha256);
	pthread_mutex_destroy(&g->md_lock);
	pthread_mutex_destroy(&g->hlock);
	pthread_cond_destroy(&g->hwake);
	pthread_cond_destroy(&g->hidle);
	free(g);
}

void gate_set_writer(struct gate *g, struct store_writer *w)
{
	if (g)
		g->writer = w;
}

void gate_settle(struct gate *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->hlock);
	while ((g->jobs || g->hashing) && g->hasher_running)
		pthread_cond_wait(&g->hidle, &g->hlock);
	pthread_mutex_unlock(&g->hlock);
}

enum gate_mode gate_mode(const struct gate *g)
{
	return g ? g->mode : GATE_OFF;
}

bool gate_unlink(const struct gate *g)
{
	return g && g->unlink;
}

struct load_ctx {
	struct gate *g;
	size_t cap;
};

static int load_one(void *arg, const struct store_mark *m)
{
	struct load_ctx *c = arg;
	struct gate *g = c->g;

	if (array_grow(g->loaded, g->nloaded, c->cap) < 0)
		return -ENOMEM;
	struct loaded_mark *l = &g->loaded[g->nloaded];
	l->path = strdup(m->path);
	if (!l->path)
		return -ENOMEM;
	l->m = *m;
	l->m.path = l->path;
	l->claimed = false;
	g->nloaded++;
	return 0;
}

static int loaded_cmp(const void *a, const void *b)
{
	return strcmp(((const struct loaded_mark *)a)->path, ((const struct loaded_mark *)b)->path);
}

int gate_load(struct gate *g, struct store *s, const char *user, const char *thread)
{
	struct load_ctx c = { g, 0 };
	int r;

	if (!g || !s)
		return 0;
	r = store_marks_each(s, user, thread, load_one, &c);
	if (r < 0)
		return r;
	if (g->nloaded)
		qsort(g->loaded, g->nloaded, sizeof(*g->loaded), loaded_cmp);
	g->unclaimed = g->nloaded;
	return (int)g->nloaded;
}

bool gate_wants_path(const struct gate *g)
{
	return g && __atomic_load_n(&g->unclaimed, __ATOMIC_RELAXED) > 0;
}

/* Adopts the mark an earlier daemon recorded for PATH, if it names the
 * same inode (stripe locked). */
static struct mark *claim_loaded(struct gate *g, struct stripe *s, const struct stat *st,
				 const char *path)
{
	struct loaded_mark key = { .path = (char *)path }, *l;
	struct mark *m;

	if (!path || !gate_wants_path(g))
		return NULL;
	l = bsearch(&key, g->loaded, g->nloaded, sizeof(*l), loaded_cmp);
	if (!l || l->m.ino != (uint64_t)st->st_ino ||
	    __atomic_exchange_n(&l->claimed, true, __ATOMIC_ACQ_REL))
		return NULL;
	__atomic_sub_fetch(&g->unclaimed, 1, __ATOMIC_RELAXED);
	m = mark_get(s, st->st_dev, st->st_ino);
	if (!m)
		return NULL;
	m->ver = (struct version){ l->m.ino, l->m.size, l->m.mtime_ns, l->m.ctime_ns };
	m->at_ns = l->m.at_ns;
	m->hashed = l->m.hashed;
	memcpy(m->hash, l->m.hash, sizeof(m->hash));
	m->dirty = false;
	return m;
}

bool gate_read_is_news(struct gate *g, const struct stat *st)
{
	if (!g)
		return false;
	struct stripe *s = stripe_of(g, st->st_dev, st->st_ino);
	struct version v = version_of(st);

	stripe_lock(&s->lock);
	struct mark *m = mark_find(s, st->st_dev, st->st_ino);
	bool news = !m || !version_eq(&m->ver, &v);
	stripe_unlock(&s->lock);
	return news;
}

/* Whether the hasher takes files like ST. Files up to SNAPSHOT_HASH_MAX
 * (the limit snapshots hash and diff under: the texts the gate keeps
 * serve the same files) get a content hash when read, so that a host
 * rewrite with identical bytes is not taken for a change. */
static bool hashable(const struct gate *g, const struct stat *st)
{
	return g->hasher_running && S_ISREG(st->st_mode) && st->st_size > 0 &&
	       st->st_size <= SNAPSHOT_HASH_MAX;
}

/* Queues the hash of the file ST at FD (readable; the job takes it) for
 * its mark SM, stored already, with its text if KEEP_TEXT. */
static void queue_hash(struct gate *g, const struct stat *st, const struct store_mark *sm, int fd,
		       bool keep_text)
{
	struct hash_job *job = fd >= 0 ? malloc(sizeof(*job) + strlen(sm->path) + 1) : NULL;

	if (!job) {
		if (fd >= 0)
			close(fd);
		return;
	}
	job->fd = fd;
	job->keep_text = keep_text;
	job->dev = st->st_dev;
	job->ver = version_of(st);
	job->at_ns = sm->at_ns;
	job->next = NULL;
	strcpy(job->path, sm->path);
	pthread_mutex_lock(&g->hlock);
	if (g->njobs < HASH_QUEUE_MAX && !g->stopping) {
		*g->jobs_tail = job;
		g->jobs_tail = &job->next;
		g->njobs++;
		pthread_cond_signal(&g->hwake);
		job = NULL;
	}
	pthread_mutex_unlock(&g->hlock);
	if (job) {
		close(job->fd);
		free(job);
	}
}

void gate_note_read(struct gate *g, const struct stat *st, const struct stat *after, int fd,
		    const char *path)
{
	struct version before, now;
	struct store_mark sm;
	bool put = false;

	if (!g)
		return;
	before = version_of(st);
	now = version_of(after);
	if (!version_eq(&before, &now) || st->st_dev != after->st_dev)
		return; /* changed while read: which version was seen? */
	struct stripe *s = stripe_of(g, st->st_dev, st->st_ino);
	stripe_lock(&s->lock);
	struct mark *m = mark_get(s, st->st_dev, st->st_ino);
	if (m && !version_eq(&m->ver, &now)) {
		written_drop(m); /* changed by someone else */
		m->ver = now;
		m->at_ns = realtime_ns();
		m->hashed = false;
		m->dirty = false;
		to_store_mark(m, path, &sm);
		put = true;
	}
	stripe_unlock(&s->lock);
	if (put) {
		if (g->writer)
			store_mark(g, &sm, fd);
		if (hashable(g, st))
			queue_hash(g, st, &sm, fcntl(fd, F_DUPFD_CLOEXEC, 0), true);
	}
}

void gate_lock(struct gate *g, struct gate_ticket *t, const struct stat *st)
{
	*t = (struct gate_ticket){ .g = g, .verdict = GATE_OK };
	if (!g)
		return;
	struct stripe *s = stripe_of(g, st->st_dev, st->st_ino);
	struct version v = version_of(st);

	t->dev = st->st_dev;
	t->ino = st->st_ino;
	t->lock = &s->lock;
	stripe_lock(t->lock);
	struct mark *m = mark_find(s, t->dev, t->ino);
	t->was_current = m && version_eq(&m->ver, &v);
}

/* True if the file at FD (attributes ST) has the content M was read with:
 * the hash fallback for metadata-only differences. */
static bool same_content(const struct mark *m, const struct stat *st, int fd)
{
	uint8_t hash[SHA256_BYTES];
	struct stat again;

	if (!m->hashed || m->ver.size != st->st_size || st->st_size > SNAPSHOT_HASH_MAX)
		return false;
	_cleanup_(closep) int rfd = confine_reopen(fd, O_RDONLY);
	if (rfd < 0 || !hash_fd(rfd, st->st_size, hash) || fstat(rfd, &again) < 0)
		return false;
	struct version a = version_of(st), b = version_of(&again);
	return version_eq(&a, &b) && !memcmp(hash, m->hash, sizeof(hash));
}

enum gate_verdict gate_check(struct gate_ticket *t, const struct stat *st, int fd, const char *path)
{
	struct gate *g = t->g;

	t->verdict = GATE_OK;
	if (!g)
		return GATE_OK;
	struct stripe *s = stripe_of(g, t->dev, t->ino);
	struct version v = version_of(st);
	struct mark *m = mark_find(s, t->dev, t->ino);
	if (t->was_current)
		return GATE_OK;
	if (S_ISDIR(st->st_mode)) {
		/* Only an empty directory can be removed or replaced: with
		 * --rbw-unlink, having listed it (or made it) is enough. */
		t->verdict = m || !g->unlink ? GATE_OK : GATE_NEVER_READ;
		return t->verdict;
	}
	if (!S_ISREG(st->st_mode) || st->st_size == 0)
		return GATE_OK;
	if (!m)
		m = claim_loaded(g, s, st, path);
	if (m && version_eq(&m->ver, &v)) {
		t->was_current = true;
		return GATE_OK;
	}
	if (m && same_content(m, st, fd)) {
		/* The same bytes under new metadata: the read still holds. */
		m->ver = v;
		m->dirty = true;
		t->was_current = true;
		return GATE_OK;
	}
	t->verdict = m ? GATE_CHANGED : GATE_NEVER_READ;
	t->read_at_ns = m ? m->at_ns : 0;
	if (m) {
		t->base = (struct store_version){
			.known = true,
			.hashed = m->hashed,
			.size = m->ver.size,
			.mtime_ns = m->ver.mtime_ns,
		};
		memcpy(t->base.sha256, m->hash, sizeof(m->hash));
	}
	return t->verdict;
}

/* The mark of T's file (T locked), or NULL. */
static struct mark *ticket_mark(const struct gate_ticket *t)
{
	return mark_find(stripe_of(t->g, t->dev, t->ino), t->dev, t->ino);
}

bool gate_hashes_write(const struct gate_ticket *t, off_t off, size_t size)
{
	if (!t->g || !t->was_current)
		return false; /* changed since the view's last write: not all its bytes */
	struct mark *m = ticket_mark(t);
	return m && m->written && off == m->written->len &&
	       size <= (size_t)(WRITTEN_HASH_MAX - m->written->len);
}

void gate_note_written(struct gate_ticket *t, off_t off, const void *buf, size_t n)
{
	if (!gate_hashes_write(t, off, n))
		return;
	struct written_hash *w = ticket_mark(t)->written;
	if (EVP_DigestUpdate(w->ctx, buf, n) != 1)
		return; /* not fed: gate_unlock() drops it */
	w->len += (int64_t)n;
	t->fed = true;
}

void gate_unlock(struct gate_ticket *t, const struct stat *after, bool content)
{
	struct gate *g = t->g;

	if (!g)
		return;
	/* Content the stream did not see: it no longer describes the file. */
	if (content && !t->fed)
		written_drop(ticket_mark(t));
	bool moves = content ? g->mode != GATE_STRICT : t->was_current;
	bool same = after && after->st_dev == t->dev && after->st_ino == t->ino;

	if (same && moves)
		mark_moved(g, stripe_of(g, t->dev, t->ino), after, content);
	stripe_unlock(t->lock);
	if (after && !same && moves) {
		/* The change made a new file (a stage): its mark. */
		struct stripe *s = stripe_of(g, after->st_dev, after->st_ino);

		stripe_lock(&s->lock);
		mark_moved(g, s, after, content);
		stripe_unlock(&s->lock);
	}
}

void gate_note_created(struct gate *g, const struct stat *st)
{
	if (!g || g->mode == GATE_STRICT)
		return;
	struct stripe *s = stripe_of(g, st->st_dev, st->st_ino);

	stripe_lock(&s->lock);
	mark_set(s, st, realtime_ns());
	struct mark *m = mark_find(s, st->st_dev, st->st_ino);
	if (!written_start_if_empty(g, m, st))
		written_drop(m);
	stripe_unlock(&s->lock);
}

void gate_note_listed(struct gate *g, const struct stat *st)
{
	if (!g || !g->unlink)
		return;
	struct stripe *s = stripe_of(g, st->st_dev, st->st_ino);
	stripe_lock(&s->lock);
	if (!mark_find(s, st->st_dev, st->st_ino))
		mark_set(s, st, realtime_ns());
	stripe_unlock(&s->lock);
}

bool gate_dirty(struct gate *g, const struct stat *st)
{
	if (!g || !g->writer)
		return false;
	struct stripe *s = stripe_of(g, st->st_dev, st->st_ino);
	stripe_lock(&s->lock);
	struct mark *m = mark_find(s, st->st_dev, st->st_ino);
	bool dirty = m && m->dirty && S_ISREG(st->st_mode);
	stripe_unlock(&s->lock);
	return dirty;
}

void gate_persist(struct gate *g, const struct stat *st, int fd, const char *path)
{
	struct store_mark sm;
	bool put = false, hash = false;

	if (!g || !g->writer)
		return;
	struct stripe *s = stripe_of(g, st->st_dev, st->st_ino);
	struct version v = version_of(st);
	stripe_lock(&s->lock);
	struct mark *m = mark_find(s, st->st_dev, st->st_ino);
	/* No name left (unlinked while open, a stage not linked yet): PATH
	 * names nothing of it, and an unlink may have dropped PATH's row
	 * before this close. It stays dirty, for a name it may get. */
	if (m && m->dirty && st->st_nlink == 0) {
		written_drop(m);
	} else if (m && m->dirty) {
		m->dirty = false;
		/* A version the thread wrote itself: its hash lets a host
		 * touch or a save of the same bytes pass (gate_check()).
		 * Streamed from its writes if they made all of it, else read
		 * back by the hasher. */
		struct written_hash *w = m->written;
		if (w && !m->hashed && w->len == st->st_size && st->st_size > 0 &&
		    version_eq(&m->ver, &v) && EVP_DigestFinal_ex(w->ctx, m->hash, NULL) == 1)
			m->hashed = true;
		written_drop(m);
		to_store_mark(m, path, &sm);
		put = true;
		hash = fd >= 0 && !m->hashed && version_eq(&m->ver, &v) && hashable(g, st);
	}
	stripe_unlock(&s->lock);
	if (put)
		store_mark(g, &sm, fd);
	if (hash)
		queue_hash(g, st, &sm, confine_reopen(fd, O_RDONLY), false);
}

void gate_forget_path(struct gate *g, const char *path)
{
	if (g && g->writer)
		store_writer_mark_drop(g->writer, path, 0);
}

void gate_reason(const struct gate_ticket *t, char *buf, size_t size)
{
	if (t->verdict == GATE_NEVER_READ) {
		snprintf(buf, size, "never read");
		return;
	}
	time_t sec = (time_t)(t->read_at_ns / 1000000000);
	struct tm tm;
	char when[32];

	gmtime_r(&sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(buf, size, "changed since it was read at %s", when);
}

/* An audit row; BASE and CURRENT may be NULL (not known). */
static void record(struct gate *g, const char *path, const char *op, const char *reason,
		   bool allowed, pid_t pid, const char *comm, const struct store_version *base,
		   const struct store_version *current)
{
	if (!g || !g->writer)
		return;
	struct store_audit a = {
		.at_ns = realtime_ns(),
		.path = path,
		.op = op,
		.comm = comm,
		.reason = reason,
		.mode = gate_mode_name(g->mode),
		.pid = pid,
		.allowed = allowed,
	};
	if (base)
		a.base = *base;
	if (current)
		a.current = *current;
	store_writer_audit(g->writer, &a);
}

/* The version of the file ST (FD any fd of it, virtual PATH) a refusal
 * found, its text kept in the store as a snapshot would keep it. */
static struct store_version describe_current(struct gate *g, const struct stat *st, int fd,
					     const char *path)
{
	struct store_version v = { .known = true,
				   .size = st->st_size,
				   .mtime_ns = timespec_ns(&st->st_mtim) };
	_cleanup_(closep) int rfd = confine_reopen(fd, O_RDONLY);
	struct snap_file f;

	if (rfd >= 0 &&
	    snapshot_describe(rfd, st, path, NULL, store_writer_keep_text, g->writer, &f) == 0) {
		v.hashed = f.hashed;
		memcpy(v.sha256, f.sha256, sizeof(f.sha256));
		snap_file_free(&f);
	}
	return v;
}

void gate_report(struct gate *g, const struct gate_ticket *t, const struct stat *st, int fd,
		 const char *path, const char *op, pid_t pid, const char *comm)
{
	char reason[96];

	if (!g || t->verdict == GATE_OK)
		return;
	gate_reason(t, reason, sizeof(reason));
	bool allowed = g->mode == GATE_AUDIT;
	log_warn("%s %s of '%s': %s (pid %d, %s)", allowed ? "audit: would refuse" : "refused", op,
		 path, reason, (int)pid, comm);
	if (t->verdict != GATE_CHANGED || !g->writer) {
		record(g, path, op, reason, allowed, pid, comm, NULL, NULL);
		return;
	}
	struct store_version current = describe_current(g, st, fd, path);
	record(g, path, op, reason, allowed, pid, comm, &t->base, &current);
}

void gate_record_refusal(struct gate *g, const char *path, const char *op, const char *reason,
			 pid_t pid, const char *comm)
{
	record(g, path, op, reason, false, pid, comm, NULL, NULL);
}
