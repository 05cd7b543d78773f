/* runend.c - see runend.h. */
#include "runend.h"
#include "progress.h"
#include "report.h"
#include "rewind.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/control.h"
#include "common/hash.h"
#include "common/home.h"
#include "common/spawn.h"
#include "common/viewreg.h"
#include "common/walk.h"
#include "common/config.h"
#include "store/receipt.h"
#include "store/snapshot.h"
#include "store/summary.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

/* A run's scan: contents go to the store, progress to the terminal.
 * The end scan keeps its texts in memory instead (up to TEXTS_MAX bytes):
 * they serve this run's diffs only, and the store records the summary. */
#define TEXTS_MAX (64u << 20)

struct text {
	uint8_t sha256[SHA256_BYTES];
	char *data; /* NUL-terminated */
	size_t len;
};

struct scan {
	struct store *store;
	struct scan_progress progress;
	struct store_blob *pending; /* contents to put in the store: copies */
	size_t npending, pcap, pbytes;
	bool in_memory;
	struct text *texts;
	size_t ntexts, cap, bytes;
	bool sorted;
};

/* The texts a snapshot of the sbx command's own run read, kept for the
 * run's end in the same process (struct scan, in memory). */
struct run_texts {
	struct scan scan;
	struct ident { /* each file the snapshot described, by identity */
		dev_t dev;
		ino_t ino;
		int64_t size, mtime_ns;
		size_t at; /* its index in the snapshot */
	} * ids;
	size_t nids, idcap;
	char **names; /* every path the snapshot looked at */
	size_t nnames;
};

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

static int keep_blob(void *arg, const struct snap_file *f, const uint8_t *data, size_t len)
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

static void scan_free(struct scan *sc)
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

/* A file's content for a diff: from the end scan's texts, else the store. */
static int load_blob(void *arg, const struct snap_file *f, char **data, size_t *len)
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

/* Fetches at once the texts the diffs will want from the store: those of
 * BEFORE whose content AFTER no longer has (changed, deleted). Others
 * are fetched one at a time if a diff asks (load_blob()). */
static int prefetch_texts(struct scan *sc, const struct snapshot *before,
			  const struct snapshot *after)
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

/* How long a view may take to answer: a daemon stopped (SIGSTOP, a
 * debugger) holds every call into its mount, uninterruptibly but for
 * SIGKILL. Telling a run is one request; a sync waits for the view's
 * writer to store what it has queued. */
#define VIEW_TELL_MS 2000
#define VIEW_SYNC_MS 10000

/* Runs CALL(MOUNTPOINT, ARG), a call into a view, in a child process:
 * its result (0 or -errno), or -ETIMEDOUT once MS have passed (the child
 * is killed; the call is abandoned). */
static int view_call(const char *mountpoint, int (*call)(const char *mountpoint, void *arg),
		     void *arg, int ms)
{
	int fds[2], r = 0;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	fflush(NULL); /* nothing buffered is written twice */
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		r = call(mountpoint, arg);
		_exit(write(fds[1], &r, sizeof(r)) == sizeof(r) ? 0 : 1);
	}
	close(fds[1]);
	_cleanup_(closep) int rfd = fds[0];
	if (pid < 0)
		return -errno;
	struct pollfd p = { .fd = rfd, .events = POLLIN };
	int ready;
	while ((ready = poll(&p, 1, ms)) < 0 && errno == EINTR)
		;
	if (ready <= 0 || read(rfd, &r, sizeof(r)) != sizeof(r)) {
		kill(pid, SIGKILL);
		r = ready == 0 ? -ETIMEDOUT : -EIO;
	}
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return r;
}

struct view_fn {
	void (*fn)(const char *mountpoint, void *arg);
	void *arg;
};

static void view_found(const char *mountpoint, void *arg)
{
	struct view_fn *f = arg;

	if (f->fn)
		f->fn(mountpoint, f->arg);
}

/* Calls FN with the mount point of each view of USER's THREAD in HOME
 * mounted here, as the home's run/views entries name them
 * (common/viewreg.h): views of other homes are never called into. */
int views_each(const char *home, const char *user, const char *thread,
	       void (*fn)(const char *mountpoint, void *arg), void *arg)
{
	_cleanup_(closep) int homefd = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct view_fn f = { fn, arg };

	return homefd < 0 ? 0 : viewreg_each(homefd, user, thread, view_found, &f);
}

static int set_run(const char *mountpoint, void *arg)
{
	char value[32];
	int n = snprintf(value, sizeof(value), "%lld", (long long)*(int64_t *)arg);

	return setxattr(mountpoint, CONTROL_XATTR_RUN, value, (size_t)n, 0) < 0 ? -errno : 0;
}

/* Tells a mounted view which run is open (journal.h). */
static void view_tell_run(const char *mountpoint, void *arg)
{
	int r = view_call(mountpoint, set_run, arg, VIEW_TELL_MS);

	if (r == -ETIMEDOUT)
		fprintf(stderr,
			"sbx: run: the view at %s did not answer within %d s (its daemon"
			" stopped?): what is changed through it is not recorded for this"
			" run's undo\n",
			mountpoint, VIEW_TELL_MS / 1000);
	else if (r < 0)
		fprintf(stderr, "sbx: run: the view at %s records no pre-images for this run: %s\n",
			mountpoint, strerror(-r));
}

/* Tells the mounted views of USER's THREAD about the runs open now. */
void views_update(struct store *s, const char *home, const char *user, const char *thread)
{
	int64_t since = 0;

	if (store_run_open_since(s, user, thread, &since) <= 0)
		since = 0;
	views_each(home, user, thread, view_tell_run, &since);
}

static int get_sync(const char *mountpoint, void *arg)
{
	char ok[2];

	(void)arg;
	return getxattr(mountpoint, CONTROL_XATTR_SYNC, ok, sizeof(ok)) < 0 ? -errno : 0;
}

/* Waits until a mounted view's journal is in the store; a view that
 * cannot say so (another user's) gets the few milliseconds its writer
 * takes. */
static void view_sync(const char *mountpoint, void *arg)
{
	int r = view_call(mountpoint, get_sync, arg, VIEW_SYNC_MS);

	if (r < 0 && r != -ETIMEDOUT)
		usleep(25000);
	if (r == -ETIMEDOUT)
		fprintf(stderr,
			"sbx: run end: the view at %s did not answer within %d s (its daemon"
			" stopped?): changes it has not stored yet are missing from the"
			" summary\n",
			mountpoint, VIEW_SYNC_MS / 1000);
}

/* The scan's end, R its result so far: what it kept waiting is put in
 * the store if it went well. */
static int scan_end(struct scan *sc, int r)
{
	int put = put_pending(sc, r == 0);

	return r < 0 ? r : put;
}

/* Snapshots the thread in ROOTS with at most MAX files into the store,
 * contents kept by SC; files unchanged since KNOWN (snapshot KNOWN_ID,
 * or NULL) not read, and the snapshot kept as its differences from it. */
static int take(struct scan *sc, const struct thread_roots *roots, const char *user,
		const char *thread, size_t max, int64_t known_id, const struct snapshot *known,
		struct snapshot *snap, int64_t *id)
{
	struct store *s = sc->store;
	int r;

	scan_progress_init(&sc->progress);
	r = snapshot_take(roots->ws, roots->out, max, known, show_progress, keep_blob, sc, snap);
	scan_progress_done(&sc->progress);
	r = scan_end(sc, r);
	if (r < 0) {
		fprintf(stderr, "sbx: run: cannot snapshot %s/%s: %s\n", user, thread,
			strerror(-r));
		return r;
	}
	r = store_snapshot_save_since(s, user, thread, snap, max, realtime_ns(), known_id, known,
				      id);
	if (r < 0)
		fprintf(stderr, "sbx: run: cannot record the snapshot: %s\n", strerror(-r));
	return r;
}

/* What sbx run end --format json prints of run R's summary P (NULL if
 * it has none; marked available): a new reference, NULL without memory. */
static json_t *run_document(const struct store_run *r, json_t *p)
{
	if (p)
		return json_object_set_new(p, "available", json_true()) ? NULL : json_incref(p);
	return json_pack("{s:b, s:i, s:{s:i, s:i, s:i, s:i, s:i, s:i, s:b}, s:[], s:{}, s:{s:I}}",
			 "available", 0, "version", 1, "summary", "created", 0, "modified", 0,
			 "deleted", 0, "symlink_created", 0, "additions", 0, "deletions", 0,
			 "truncated", 0, "files", "limits", "sbx", "run", (json_int_t)r->id);
}

/* Prints run R's summary P (NULL if it has none) as asked. */
static int print_payload(const struct store_run *r, json_t *p, enum format format)
{
	char who[300];

	snprintf(who, sizeof(who), "%s/%s", r->user, r->thread);
	if (!p && format == FORMAT_HTML) {
		/* An empty report, still a whole page. */
		json_auto_t *empty = json_pack("{s:{}, s:[], s:{s:I, s:i}}", "summary", "files",
					       "sbx", "run", (json_int_t)r->id, "files_total", 0);
		if (!empty)
			return 1;
		report_html(stdout, empty, who);
		return 0;
	}
	if (format == FORMAT_JSON) {
		json_auto_t *d = run_document(r, p);
		if (!d || json_dumpf(d, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0)
			return 1;
		putchar('\n');
		return 0;
	}
	if (!p)
		printf("run %lld of %s/%s: no change could be established\n", (long long)r->id,
		       r->user, r->thread);
	else if (format == FORMAT_HTML)
		report_html(stdout, p, who);
	else
		report_print(stdout, p, who, isatty(STDOUT_FILENO));
	return 0;
}

/* The same for a summary as recorded (JSON text, or NULL). */
int run_print_summary(const struct store_run *r, const char *summary, enum format format)
{
	json_error_t jerr;
	json_auto_t *p = summary ? json_loads(summary, JSON_ALLOW_NUL, &jerr) : NULL;

	if (summary && !p) {
		fprintf(stderr, "sbx: the summary of run %lld is not valid JSON: %s\n",
			(long long)r->id, jerr.text);
		return 1;
	}
	return print_payload(r, p, format);
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

/* A snapshot of the paths NAMES (N, sorted, each once) as they are now,
 * texts kept by SC: a scan of just those (what an undo or a restore
 * changes). A file KNOWN (with KNOWN_SNAP) described, unchanged (renamed
 * or not), is not read again; COLLECT (may be NULL) records the identity
 * of each file described. */
static int describe_known(struct scan *sc, const struct thread_roots *roots, char *const *names,
			  size_t n, struct snapshot *snap, const struct run_texts *known,
			  const struct snapshot *known_snap, struct run_texts *collect,
			  const struct rewind *seen)
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
		int was = rewind_seen(seen, names[i], &st);
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

/* A list of paths being gathered: NAMES (N of CAP), each malloc'd. */
struct gathered {
	char **names;
	size_t n, cap;
	const char *from, *to; /* a directory's names at TO are added at FROM too */
};

static int gather(struct gathered *g, const char *path)
{
	if (array_grow(g->names, g->n, g->cap) < 0)
		return -ENOMEM;
	return (g->names[g->n++] = strdup(path)) ? 0 : -ENOMEM;
}

/* Sorts the N paths of V and drops the repeated ones (freed); how many
 * are left. */
static size_t names_settle(char **v, size_t n)
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

/* The paths of undo U: those its first snapshot describes and those its
 * journal J names, sorted, each once. */
static int undo_names(const struct snapshot *before, const struct runlog *j,
		      const struct run_texts *texts, char ***out, size_t *n)
{
	char **names;
	size_t k = 0, m, more = texts ? texts->nnames : 0;
	int r = runlog_names(j, &names, &m);

	if (r < 0)
		return r;
	char **all = calloc(m + before->n + more + 1, sizeof(*all));
	if (!all) {
		run_names_free(names, m);
		return -ENOMEM;
	}
	memcpy(all, names, m * sizeof(*all));
	free(names);
	for (size_t i = 0; i < before->n && r == 0; i++)
		if (!(all[m + i] = strdup(before->files[i].path)))
			r = -ENOMEM;
	/* And those it looked at that held nothing then (a directory's
	 * files, where its rename takes them back). */
	for (size_t i = 0; i < more && r == 0; i++)
		if (!(all[m + before->n + i] = strdup(texts->names[i])))
			r = -ENOMEM;
	if (r < 0) {
		run_names_free(all, m + before->n + more);
		return r;
	}
	m += before->n + more;
	k = names_settle(all, m);
	/* What a rename of a directory by the undo took along is where the
	 * rename put it now. */
	struct gathered g = { all, k, k, NULL, NULL };
	for (size_t i = 0; i < j->n && r == 0; i++) {
		const struct store_event *e = &j->events[i];
		char below[PATH_MAX], moved[PATH_MAX];
		if (strcmp(e->op, "rename") || !e->path2 ||
		    (size_t)snprintf(below, sizeof(below), "%s/", e->path) >= sizeof(below))
			continue;
		size_t lo = 0, hi = k;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (strcmp(g.names[mid], below) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < k && !strncmp(g.names[lo], below, strlen(below)) && r == 0; lo++)
			if (runlog_rebase(g.names[lo], e->path, e->path2, moved))
				r = gather(&g, moved);
	}
	if (r < 0) {
		run_names_free(g.names, g.n);
		return r;
	}
	*out = g.names;
	*n = names_settle(g.names, g.n);
	return 0;
}

/* Ends RUN (open) of store S in HOME: snapshots again, compares,
 * completed by the views' journal (an undo's run, whose own journal has
 * every change it made, looks at those paths alone), records the summary
 * and receipt, and prints the summary as FORMAT if PRINT, or gives its
 * document in *DOCUMENT. Returns 0, or -errno (said on stderr). */
int run_finish(struct store *s, const char *home, struct store_run *run, enum format format,
	       bool print, struct run_texts *texts, json_t **document)
{
	struct runlog journal = { 0 };
	_cleanup_(lineage_freep) struct lineage *moves = NULL;
	struct summary_limits limits = SUMMARY_LIMITS_DEFAULT;
	struct snapshot before = { 0 }, after = { 0 };
	struct thread_roots roots = { -1, -1 };
	struct scan scan = { .in_memory = true };
	struct summary sum;
	int64_t after_id;
	size_t end_max;
	bool journal_only = run->kind != RUN_AGENT;
	int r;

	scan.store = s;
	if (texts) {
		/* Those of the first snapshot serve the diffs too. */
		scan.texts = texts->scan.texts;
		scan.ntexts = texts->scan.ntexts;
		scan.cap = texts->scan.cap;
		scan.bytes = texts->scan.bytes;
		texts->scan.texts = NULL;
		texts->scan.ntexts = texts->scan.cap = texts->scan.bytes = 0;
	}
	r = store_snapshot_load(s, run->before_snapshot, &before);
	if (r < 0) {
		fprintf(stderr, "sbx: run end: cannot read the run's first snapshot: %s\n",
			strerror(-r));
		goto done;
	}
	r = thread_roots_open("run end", home, run->user, run->thread, &roots);
	if (r < 0)
		goto done;
	views_each(home, run->user, run->thread, view_sync, NULL);
	/* The run's window closes here: what it changed is what the journal
	 * has by now, and undo takes a change after it for someone else's. */
	int64_t closes = realtime_ns();
	r = runlog_load(s, run->user, run->thread, run->begun_ns, closes, &journal);
	if (r < 0) {
		fprintf(stderr, "sbx: run end: cannot read the journal: %s\n", strerror(-r));
		goto done;
	}
	/* A file's ctime comes from the kernel's coarse clock, up to a tick
	 * behind this one: the scan begins once that clock is past CLOSES,
	 * so a change it sees after the window has a later ctime. (Waited
	 * for here, not before the journal's load: that load is a tick's
	 * time or more, so there is seldom anything left to wait.) */
	realtime_coarse_pass(closes);
	/* The thread is known to hold as many files as it did, plus those
	 * the views created: the second scan may see that many, so a run
	 * that only added files through a view is scanned whole. The limits
	 * reported are the run's as configured (run begin --max-files). */
	end_max = (before.n > limits.max_scanned_files ? before.n : limits.max_scanned_files) +
		  journal.made;
	if (before.max_files && !journal_only)
		limits.max_scanned_files = before.max_files;
	if (journal_only) {
		/* An undo's run changed only the paths it described when it
		 * began and those its journal names: those are scanned. */
		char **names = NULL;
		size_t n = 0;
		r = undo_names(&before, &journal, texts, &names, &n);
		if (r == 0)
			r = describe_known(&scan, &roots, names, n, &after, texts, &before, NULL,
					   NULL);
		run_names_free(names, n);
		if (r == 0)
			r = store_snapshot_save(s, run->user, run->thread, &after, n, realtime_ns(),
						&after_id);
	} else {
		r = take(&scan, &roots, run->user, run->thread, end_max, run->before_snapshot,
			 &before, &after, &after_id);
		if (r == 0)
			r = scan_end(&scan, runlog_complete(&journal, &before, &after, roots.ws,
							    roots.out, keep_blob, &scan));
	}
	if (r == 0)
		r = prefetch_texts(&scan, &before, &after);
	if (r == 0)
		r = runlog_lineage(&journal, &before, &moves);
	if (r == 0)
		r = summary_compare(&before, &after, &limits, moves, load_blob, &scan, &sum);
	if (r == 0) {
		runlog_attribute(&journal, roots.ws, roots.out, &sum);
		json_auto_t *payload = summary_has_changes(&sum)
					       ? report_summary(&sum, run->id, end_max)
					       : NULL;
		json_auto_t *receipt = report_receipt_new();
		char *text = payload ? json_dumps(payload, JSON_COMPACT | JSON_PRESERVE_ORDER)
				     : NULL;
		char *rtext = NULL;

		if (!receipt || (summary_has_changes(&sum) && !text))
			r = -ENOMEM;
		/* The presentations are read and the run ended in one write
		 * transaction: a presentation made meanwhile waits for it, then
		 * finds the run ended and is refused, so the receipt has every
		 * presentation that succeeded. */
		if (r == 0)
			r = store_begin(s);
		if (r == 0)
			r = store_presented_each(s, run->id, report_receipt_add, receipt);
		if (r == 0)
			r = report_receipt_verify(receipt, &sum, before.truncated);
		if (r == 0 && !(rtext = json_dumps(receipt, JSON_COMPACT | JSON_PRESERVE_ORDER)))
			r = -ENOMEM;
		if (r == 0)
			r = store_run_end(s, run->id, after_id, closes, text, rtext);
		if (r == 0)
			r = store_commit(s);
		if (r < 0)
			store_rollback(s);
		if (r == 0) {
			views_update(s, home, run->user, run->thread);
			if (document && !(*document = run_document(run, payload)))
				r = -ENOMEM;
			if (r == 0 && print && print_payload(run, payload, format))
				r = -EIO;
			/* The reference makes this the run's error; here the run
			 * is recorded all the same, and sbx receipt fails on it. */
			if (report_receipt_incomplete(receipt))
				fprintf(stderr, "sbx: run end: run %lld: %s (sbx receipt %lld)\n",
					(long long)run->id, RECEIPT_INCOMPLETE, (long long)run->id);
		}
		free(text);
		free(rtext);
		summary_free(&sum);
	}
	if (r < 0)
		fprintf(stderr, "sbx: run end: cannot record the summary: %s\n", strerror(-r));
done:
	snapshot_free(&before);
	snapshot_free(&after);
	runlog_free(&journal);
	scan_free(&scan);
	thread_roots_close(&roots);
	return r;
}

/* Drops the pre-images of USER's THREAD that [undo] in HOME's sbx.conf
 * no longer keeps (docs/changes.md, "Retention"). */
void run_retain(struct store *s, const char *home, const char *user, const char *thread,
		const char *command)
{
	char path[PATH_MAX], err[PATH_MAX + 256];
	struct config c;
	int r;

	snprintf(path, sizeof(path), "%s/%s", home, HOME_CONFIG);
	if ((r = config_load(path, &c, err, sizeof(err))) < 0 && r != -ENOENT) {
		fprintf(stderr, "sbx: %s: %s: pre-images kept as they are\n", command, err);
		return;
	}
	_cleanup_(closep) int homefd = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	r = homefd < 0 ? -errno
		       : rewind_retain(s, homefd, user, thread,
				       (int64_t)c.undo.max_age_days * 86400 * 1000000000,
				       (int64_t)c.undo.budget, realtime_ns(), command);
	if (r < 0)
		fprintf(stderr, "sbx: %s: cannot drop old pre-images: %s\n", command, strerror(-r));
	config_free(&c);
}

int run_begin_in(struct store *s, const char *home, const char *user, const char *thread,
		 size_t max, int64_t *id)
{
	struct thread_roots roots;
	int64_t snap_id, begun = realtime_ns();
	int r = thread_roots_open("run begin", home, user, thread, &roots);

	if (!max)
		max = SNAPSHOT_MAX_FILES;
	if (r < 0)
		return r;
	r = thread_fence("run begin", home, s, user, thread);
	if (r == 0) {
		/* Mounted views record pre-images from now on: a change made
		 * while the scan runs is seen as it was before. */
		views_tell_run(home, user, thread, begun);
		r = run_snapshot(s, &roots, user, thread, max, &snap_id);
		if (r == 0)
			r = store_run_begin(s, user, thread, snap_id, begun, id);
		if (r < 0)
			views_update(s, home, user, thread);
	}
	thread_roots_close(&roots);
	return r;
}

int run_end_in(struct store *s, const char *home, int64_t id, enum format format, json_t **document)
{
	struct store_run run;
	int r = run_get("run end", home, s, id, true, &run);

	if (r < 0)
		return r;
	if (run.ended) {
		fprintf(stderr,
			"sbx: run end: run %lld has ended already (sbx changes %lld shows it)\n",
			(long long)id, (long long)id);
		r = -EALREADY;
	} else {
		r = run_finish(s, home, &run, format, !document, NULL, document);
	}
	if (r == 0)
		run_retain(s, home, run.user, run.thread, "run end");
	store_run_free(&run);
	return r;
}

void views_tell_run(const char *home, const char *user, const char *thread, int64_t since)
{
	views_each(home, user, thread, view_tell_run, &since);
}

int run_snapshot(struct store *s, const struct thread_roots *roots, const char *user,
		 const char *thread, size_t max, int64_t *id)
{
	struct scan scan = { .store = s };
	struct snapshot snap;
	int r = take(&scan, roots, user, thread, max, 0, NULL, &snap, id);

	if (r == 0)
		snapshot_free(&snap);
	scan_free(&scan);
	return r;
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

/* A snapshot of exactly the paths NAMES (N, sorted, each once), at AT,
 * into the store: its id in *ID, the texts it read in *TEXTS. */
static int snapshot_paths(struct store *s, const struct thread_roots *roots, const char *user,
			  const char *thread, char *const *names, size_t n, int64_t at,
			  const struct rewind *seen, int64_t *id, struct run_texts **texts)
{
	struct run_texts *t = calloc(1, sizeof(*t));
	struct snapshot snap;
	int r;

	if (!t)
		return -ENOMEM;
	t->scan = (struct scan){ .store = s, .in_memory = true };
	r = describe_known(&t->scan, roots, names, n, &snap, NULL, NULL, t, seen);
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

/* ---- runs the sbx command makes itself ------------------------------------ */

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

int run_record_own(struct store *s, struct rewind *rw, const struct store_run *u)
{
	struct journal_to t = { s, u };
	struct recorded rec = { own_comm(u), false };
	int r = store_journal_each(s, u->user, u->thread, u->begun_ns, u->begun_ns, find_recorded,
				   &rec);

	if (r < 0 || rec.found)
		return r;
	if ((r = store_begin(s)) < 0)
		return r;
	r = rewind_events(rw, u->begun_ns, getpid(), own_comm(u), put_event, &t);
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

/* LOG's names, and below each directory one of its renames moved, the
 * names it holds now, under both of the rename's names: an undo moves
 * them back, and its summary must describe them. Sorted, each once. */
static int own_names(const struct runlog *log, const struct thread_roots *roots,
		     const struct rewind *seen, char ***out, size_t *n)
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
			int was = rewind_seen(seen, g.to, &st);
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

int run_begin_own(struct store *s, int homefd, const char *user, const char *thread,
		  enum run_kind kind, int64_t undoes, const struct runlog *log,
		  const struct thread_roots *roots, const struct rewind *seen, struct store_run *u,
		  struct run_texts **texts)
{
	int64_t snap, id, begun = realtime_ns();
	char **names;
	size_t n;
	int r = own_names(log, roots, seen, &names, &n);

	if (r < 0)
		return r;
	r = snapshot_paths(s, roots, user, thread, names, n, begun, seen, &snap, texts);
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

int run_own_steps(struct store *s, const char *home, int homefd, struct store_run *u,
		  struct rewind *rw, enum format format, struct run_texts *texts,
		  int (*prepare)(void *arg, int dir), void *arg, const char *command)
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
	if (r < 0) {
		fprintf(stderr, "sbx: %s: cannot begin: %s\n", command, strerror(-r));
		return r;
	}
	int failed = rewind_apply(rw, to, log_fd, command);
	if (failed < 0) {
		fprintf(stderr, "sbx: %s: its log: %s\n", command, strerror(-failed));
		return failed;
	}
	if ((r = run_record_own(s, rw, u)) < 0)
		fprintf(stderr, "sbx: %s: cannot record its journal: %s\n", command, strerror(-r));
	if (r == 0)
		r = run_finish(s, home, u, format, true, texts, NULL);
	return r < 0 ? r : failed;
}
