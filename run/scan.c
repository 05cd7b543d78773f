/* scan.c - the scans at a run's ends (scan.h). */
#include "scan.h"
#include "runlog.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int ident_cmp(const void *a, const void *b)
{
	const struct ident *x = a, *y = b;

	return x->dev != y->dev	  ? (x->dev < y->dev ? -1 : 1)
	       : x->ino != y->ino ? (x->ino < y->ino ? -1 : 1)
				  : 0;
}

/* The file of KNOWN (sorted) that ST is, unchanged, or NULL. */
static const struct ident *ident_find(const struct run_texts *known, const struct stat *st)
{
	struct ident key = { .dev = st->st_dev, .ino = st->st_ino };
	const struct ident *id = known && known->nids ? bsearch(&key, known->ids, known->nids,
								sizeof(key), ident_cmp)
						      : NULL;

	return id && id->size == st->st_size &&
			       id->mtime_ns == (int64_t)st->st_mtim.tv_sec * 1000000000 +
						       st->st_mtim.tv_nsec
		       ? id
		       : NULL;
}

static int keep_in_memory(struct scan *sc, const uint8_t *sha256, const void *data, size_t len)
{
	if (array_grow(sc->texts, sc->ntexts, sc->cap) < 0)
		return -ENOMEM;
	struct text *t = &sc->texts[sc->ntexts];
	if (!(t->data = malloc(len + 1)))
		return -ENOMEM;
	memcpy(t->sha256, sha256, SHA256_BYTES);
	if (len) /* an empty one's DATA may be NULL */
		memcpy(t->data, data, len);
	t->data[len] = '\0';
	t->len = len;
	sc->ntexts++;
	sc->bytes += len;
	sc->sorted = false;
	return 0;
}

/* Contents go to the store PUT_BATCH (or PUT_BYTES) at a time, each
 * batch a few statements in a write transaction of its own: a long scan
 * never keeps the store's write lock from the daemons for long. */
#define PUT_BATCH 256
#define PUT_BYTES (4 << 20)

/* Puts the contents waiting in SC if WRITE (else drops them). */
static int put_pending(struct scan *sc, bool write)
{
	int r = 0;

	if (write && sc->npending && (r = store_begin(sc->store)) == 0) {
		r = store_blobs_put(sc->store, sc->pending, sc->npending);
		if (r == 0)
			r = store_commit(sc->store);
		if (r < 0)
			store_rollback(sc->store);
	}
	for (size_t i = 0; i < sc->npending; i++)
		free((void *)sc->pending[i].data);
	sc->npending = sc->pbytes = 0;
	return r;
}

int keep_blob(void *arg, const struct snap_file *f, const uint8_t *data, size_t len)
{
	struct scan *sc = arg;

	if (sc->in_memory && sc->bytes + len <= TEXTS_MAX)
		return keep_in_memory(sc, f->sha256, data, len);
	if (array_grow(sc->pending, sc->npending, sc->pcap) < 0)
		return -ENOMEM;
	void *copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	if (len) /* an empty one's DATA may be NULL */
		memcpy(copy, data, len);
	struct store_blob *b = &sc->pending[sc->npending++];
	memcpy(b->sha256, f->sha256, SHA256_BYTES);
	b->data = copy;
	b->len = len;
	sc->pbytes += len;
	return sc->npending == PUT_BATCH || sc->pbytes >= PUT_BYTES ? put_pending(sc, true) : 0;
}

void scan_free(struct scan *sc)
{
	put_pending(sc, false);
	free(sc->pending);
	for (size_t i = 0; i < sc->ntexts; i++)
		free(sc->texts[i].data);
	free(sc->texts);
}

static void show_progress(void *arg, size_t files)
{
	scan_progress_show(&((struct scan *)arg)->progress, files);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int text_cmp(const void *a, const void *b)
{
	return memcmp(((const struct text *)a)->sha256, ((const struct text *)b)->sha256,
		      SHA256_BYTES);
}

int load_blob(void *arg, const struct snap_file *f, char **data, size_t *len)
{
	struct scan *sc = arg;

	if (!f->hashed)
		return -ENOENT;
	if (!sc->sorted && sc->ntexts) {
		qsort(sc->texts, sc->ntexts, sizeof(*sc->texts), text_cmp);
		sc->sorted = true;
	}
	struct text key, *t;
	memcpy(key.sha256, f->sha256, SHA256_BYTES);
	t = sc->ntexts ? bsearch(&key, sc->texts, sc->ntexts, sizeof(key), text_cmp) : NULL;
	if (!t)
		return store_blob_get(sc->store, f->sha256, data, len);
	if (!(*data = malloc(t->len + 1)))
		return -ENOMEM;
	memcpy(*data, t->data, t->len + 1);
	*len = t->len;
	return 0;
}

static int keep_fetched(void *arg, const uint8_t *sha256, const void *data, size_t len)
{
	struct scan *sc = arg;

	return sc->bytes + len <= TEXTS_MAX ? keep_in_memory(sc, sha256, data, len) : 0;
}

static int sha_cmp(const void *a, const void *b)
{
	return memcmp(a, b, SHA256_BYTES);
}

int prefetch_texts(struct scan *sc, const struct snapshot *before, const struct snapshot *after)
{
	_cleanup_(freep) uint8_t(*have)[SHA256_BYTES] = malloc((after->n + 1) * SHA256_BYTES);
	_cleanup_(freep) uint8_t(*want)[SHA256_BYTES] = malloc((before->n + 1) * SHA256_BYTES);
	size_t nhave = 0, nwant = 0;

	if (!have || !want)
		return -ENOMEM;
	for (size_t i = 0; i < after->n; i++)
		if (after->files[i].hashed)
			memcpy(have[nhave++], after->files[i].sha256, SHA256_BYTES);
	qsort(have, nhave, SHA256_BYTES, sha_cmp);
	for (size_t i = 0; i < before->n; i++) {
		const struct snap_file *f = &before->files[i];
		if (f->hashed && !f->binary &&
		    !bsearch(f->sha256, have, nhave, SHA256_BYTES, sha_cmp))
			memcpy(want[nwant++], f->sha256, SHA256_BYTES);
	}
	return nwant ? store_blobs_each(sc->store, (const uint8_t(*)[SHA256_BYTES])want, nwant,
					keep_fetched, sc)
		     : 0;
}

int scan_end(struct scan *sc, int r)
{
	int put = put_pending(sc, r == 0);

	return r < 0 ? r : put;
}

int scan_take(struct scan *sc, const struct thread_roots *roots, const char *user,
	      const char *thread, size_t max, int64_t known_id, const struct snapshot *known,
	      struct snapshot *snap, int64_t *id, struct error *e)
{
	struct store *s = sc->store;
	int r;

	scan_progress_init(&sc->progress);
	r = snapshot_take(roots->ws, roots->out, max, known, show_progress, keep_blob, sc, snap);
	scan_progress_done(&sc->progress);
	r = scan_end(sc, r);
	if (r < 0)
		return error_set(e, r, "cannot snapshot %s/%s: %s", user, thread, strerror(-r));
	if (!id)
		return 0;
	r = store_snapshot_save_since(s, user, thread, snap, max, realtime_ns(), known_id, known,
				      id);
	if (r < 0)
		return error_set(e, r, "cannot record the snapshot: %s", strerror(-r));
	return r;
}

/* F (for PATH) as the description D of the same file at another path. */
static int describe_as(const struct snap_file *d, const char *path, struct snap_file *f)
{
	*f = *d;
	f->path = strdup(path);
	f->root = !strncmp(path, "/mnt/user-data/outputs/", 23) ? "outputs" : "workspace";
	f->target = d->target ? strdup(d->target) : NULL;
	return f->path && (!d->target || f->target) ? 0 : -ENOMEM;
}

int scan_paths(struct scan *sc, const struct thread_roots *roots, char *const *names, size_t n,
	       struct snapshot *snap, const struct run_texts *known,
	       const struct snapshot *known_snap, struct run_texts *collect, scan_seen seen,
	       const void *seen_arg)
{
	struct parent_cache dir = PARENT_CACHE_INIT;
	int r = 0;

	memset(snap, 0, sizeof(*snap));
	snap->max_files = n;
	for (size_t i = 0; i < n && r == 0; i++) {
		const char *leaf;
		/* The names are sorted: a directory's come together. */
		int dfd = runlog_parent_cached(&dir, roots->ws, roots->out, names[i], &leaf);
		struct snap_file *f = snapshot_append(snap);
		struct stat st;
		const struct ident *id = NULL;
		/* What the undo's check found is taken as it found it: absent,
		 * or a file, opened as it was and checked again by the open
		 * (what has become a symlink is looked at again). */
		int was = seen ? seen(seen_arg, names[i], &st) : -ENOENT;
		if (!f)
			r = -ENOMEM;
		else if (dfd < 0)
			r = dfd;
		else if (was == 0)
			r = -ENOENT;
		else if ((was < 0 || !S_ISREG(st.st_mode)) &&
			 fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
			r = -errno;
		else if (S_ISREG(st.st_mode) && (id = ident_find(known, &st)) &&
			 !known_snap->files[id->at].sensitive && !snapshot_path_sensitive(names[i]))
			r = describe_as(&known_snap->files[id->at], names[i], f);
		else if ((r = snapshot_file_at(dfd, leaf, &st, names[i], keep_blob, sc, f)) ==
				 -ELOOP &&
			 was == 1)
			r = snapshot_file_at(dfd, leaf, NULL, names[i], keep_blob, sc, f);
		if (r == -ENOENT) {
			snap_file_free(f);
			snap->n--;
			r = 0;
		} else if (r == 0 && collect && S_ISREG(st.st_mode)) {
			if (array_grow(collect->ids, collect->nids, collect->idcap) < 0)
				r = -ENOMEM;
			else
				collect->ids[collect->nids++] = (struct ident){
					st.st_dev,
					st.st_ino,
					st.st_size,
					(int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
					snap->n - 1,
				};
		}
	}
	parent_cache_drop(&dir);
	if (r == 0 && collect && collect->nids)
		qsort(collect->ids, collect->nids, sizeof(*collect->ids), ident_cmp);
	r = scan_end(sc, r);
	if (r < 0)
		snapshot_free(snap);
	return r;
}

void run_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int gather(struct gathered *g, const char *path)
{
	if (array_grow(g->names, g->n, g->cap) < 0)
		return -ENOMEM;
	return (g->names[g->n++] = strdup(path)) ? 0 : -ENOMEM;
}

size_t names_settle(char **v, size_t n)
{
	size_t k = 0;

	if (n)
		qsort(v, n, sizeof(*v), name_cmp);
	for (size_t i = 0; i < n; i++) {
		if (k && !strcmp(v[k - 1], v[i]))
			free(v[i]);
		else
			v[k++] = v[i];
	}
	return k;
}

void run_texts_free(struct run_texts *t)
{
	if (t) {
		scan_free(&t->scan);
		free(t->ids);
		run_names_free(t->names, t->nnames);
		free(t);
	}
}
