/* project_run.c - the runs of a person's project (project_run.h). */
#include "project_run_int.h"
#include "lifecycle.h"
#include "lookup.h"
#include "overlay.h"
#include "own.h"
#include "retain.h"
#include "scan.h"
#include "undo.h"
#include "undo_plan_int.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/fileops.h"
#include "common/home.h"
#include "common/ids.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const project_op_names[PROJECT_OPS] = {
	[PROJECT_CREATE] = "create", [PROJECT_SYMLINK] = "symlink", [PROJECT_MODIFY] = "modify",
	[PROJECT_DELETE] = "delete", [PROJECT_MKDIR] = "mkdir",	    [PROJECT_RMDIR] = "rmdir",
	[PROJECT_CHMOD] = "chmod",
};

bool keeps_object(enum project_op op)
{
	return op == PROJECT_MODIFY || op == PROJECT_DELETE;
}

bool keeps_meta(enum project_op op)
{
	return op == PROJECT_RMDIR || op == PROJECT_CHMOD;
}

int project_record(int homefd, const char *user, const char *project, char *thread, size_t size)
{
	const char *base = strrchr(project, '/');
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char slug[40];

	if (size < THREAD_ID_MAX + 1)
		return -ENAMETOOLONG;
	if (!EVP_Digest(project, strlen(project), md, &mdlen, EVP_sha256(), NULL))
		return -ENOMEM;
	thread_id_slug(base && base[1] ? base + 1 : "root", 38, slug, sizeof(slug));
	int n = snprintf(thread, size, "applied-%s-", slug);
	for (int i = 0; i < 8; i++, n += 2)
		snprintf(thread + n, size - (size_t)n, "%02x", md[i]);
	return home_project_set(homefd, user, thread, project);
}

/* ---- the log --------------------------------------------------------------
 *
 * Records of NUL-terminated fields, each record's first field its type:
 *   "O" overlay         the overlay whose origins follow (first, if any)
 *   "S" src             a step of the undone run left alone (--partial)
 *   "W" op object src at ino path
 *                       a change about to be made (object: the kept
 *                       pre-image's name in the directory, or ""; ino:
 *                       the inode at PATH then, 0 if none)
 *   "D" ino size mtime ctime
 *                       the last W made; what it left at its path
 *   "F"                 the last W not made
 */

void plog_free(struct plog *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].object);
		free(l->v[i].path);
	}
	free(l->v);
	free(l->overlay);
	free(l->skipped);
	memset(l, 0, sizeof(*l));
}

static int parse_op(const char *s, enum project_op *op)
{
	for (size_t i = 0; i < PROJECT_OPS; i++)
		if (!strcmp(s, project_op_names[i])) {
			*op = (enum project_op)i;
			return 0;
		}
	return -EINVAL;
}

int plog_read(int dir, struct plog *l)
{
	_cleanup_(closep) int fd = openat(dir, LOG_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_(freep) char *buf = NULL;
	size_t len = 0, cap = 0;
	ssize_t got;

	memset(l, 0, sizeof(*l));
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	do {
		if (len == cap) {
			char *more = realloc(buf, cap = cap ? cap * 2 : 4096);
			if (!more)
				return -ENOMEM;
			buf = more;
		}
		got = read(fd, buf + len, cap - len);
		len += got > 0 ? (size_t)got : 0;
	} while (got > 0);
	if (got < 0)
		return -errno;
	/* The fields, each NUL-terminated: a last one without is cut short. */
	const char *f[8];
	size_t k = 0, at = 0;
	while (at < len) {
		const char *end = memchr(buf + at, '\0', len - at);
		if (!end)
			break;
		f[k++] = buf + at;
		at = (size_t)(end - buf) + 1;
		size_t need = f[0][0] == 'W' ? 7 : f[0][0] == 'D' ? 5 : f[0][0] == 'F' ? 1 : 2;
		if (k < need && k < 8)
			continue;
		k = 0;
		struct pstep *last = l->n ? &l->v[l->n - 1] : NULL;
		if (f[0][0] == 'O' && !l->overlay) {
			if (!(l->overlay = strdup(f[1])))
				return -ENOMEM;
		} else if (f[0][0] == 'S') {
			if (array_grow(l->skipped, l->nskipped, l->capskipped) < 0)
				return -ENOMEM;
			l->skipped[l->nskipped++] = strtol(f[1], NULL, 10);
		} else if (f[0][0] == 'W') {
			if (array_grow(l->v, l->n, l->cap) < 0)
				return -ENOMEM;
			struct pstep *s = &l->v[l->n];
			*s = (struct pstep){ .src = strtol(f[3], NULL, 10),
					     .at_ns = strtoll(f[4], NULL, 10),
					     .was_ino = strtoull(f[5], NULL, 10) };
			if (parse_op(f[1], &s->op) < 0)
				return -EINVAL;
			if (!(s->object = strdup(f[2])) || !(s->path = strdup(f[6]))) {
				free(s->object);
				return -ENOMEM;
			}
			l->n++;
		} else if (f[0][0] == 'D' && last && last->state == STEP_PENDING) {
			last->state = STEP_DONE;
			last->left.st_ino = strtoull(f[1], NULL, 10);
			last->left.st_size = strtoll(f[2], NULL, 10);
			last->left.st_mtim.tv_sec = strtoll(f[3], NULL, 10) / 1000000000;
			last->left.st_mtim.tv_nsec = strtoll(f[3], NULL, 10) % 1000000000;
			last->left.st_ctim.tv_sec = strtoll(f[4], NULL, 10) / 1000000000;
			last->left.st_ctim.tv_nsec = strtoll(f[4], NULL, 10) % 1000000000;
		} else if (f[0][0] == 'F' && last && last->state == STEP_PENDING) {
			last->state = STEP_FAILED;
		}
	}
	return 0;
}

/* ---- a run ------------------------------------------------------------------ */

static const char *run_comm(const struct store_run *run)
{
	return run->kind == RUN_APPLY ? "sbx-apply" : "sbx-undo";
}

/* Appends the record of N fields F to PR's log. */
static int log_put(struct project_run *pr, const char *const *f, size_t n)
{
	char buf[PATH_MAX + 256];
	size_t len = 0;

	for (size_t i = 0; i < n; i++) {
		size_t k = strlen(f[i]) + 1;
		if (len + k > sizeof(buf))
			return -ENAMETOOLONG;
		memcpy(buf + len, f[i], k);
		len += k;
	}
	/* One write of a few hundred bytes to an O_APPEND file: whole, or
	 * (a full disk) short, which the reader takes for cut short. */
	ssize_t w = write(pr->log_fd, buf, len);
	return w == (ssize_t)len ? 0 : w < 0 ? -errno : -ENOSPC;
}

void project_run_free(struct project_run *pr)
{
	if (!pr)
		return;
	run_texts_free(pr->texts);
	store_run_free(&pr->run);
	plog_free(&pr->log);
	for (int *fd = &pr->homefd; fd <= &pr->log_fd; fd++)
		closep(fd);
	free(pr->home);
	free(pr->user);
	free(pr->thread);
	free(pr);
}

int pr_open(struct store *s, const char *home, struct store_run *run, struct project_run **out)
{
	struct project_run *pr = calloc(1, sizeof(*pr));
	char project[PATH_MAX];
	int r;

	if (!pr) {
		store_run_free(run);
		return -ENOMEM;
	}
	pr->homefd = pr->project_fd = pr->dir = pr->log_fd = -1;
	pr->s = s;
	pr->run = *run;
	memset(run, 0, sizeof(*run));
	pr->home = strdup(home);
	pr->user = strdup(pr->run.user);
	pr->thread = strdup(pr->run.thread);
	r = pr->home && pr->user && pr->thread ? 0 : -ENOMEM;
	if (r == 0 && (pr->homefd = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		r = -errno;
	if (r == 0 &&
	    (r = home_project_get(pr->homefd, pr->user, pr->thread, project, sizeof(project))) == 0)
		r = -ENOENT;
	if (r > 0)
		r = (pr->project_fd = open(project, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ? -errno
											   : 0;
	if (r == 0 &&
	    (pr->dir = home_undo_dir(pr->homefd, pr->user, pr->thread, pr->run.begun_ns, true)) < 0)
		r = pr->dir;
	if (r == 0 &&
	    (pr->log_fd = openat(pr->dir, LOG_NAME,
				 O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
		r = -errno;
	if (r == 0)
		r = plog_read(pr->dir, &pr->log);
	if (r < 0) {
		project_run_free(pr);
		return r;
	}
	*out = pr;
	return 0;
}

/* The object the N-th change keeps: its name in the run's directory. */
static void object_name(size_t n, enum project_op op, char *out, size_t size)
{
	snprintf(out, size, "%s%zu", keeps_meta(op) ? "m" : "o", n);
}

/* Keeps PATH's object (or, for a directory, its attributes) as OBJECT in
 * PR's directory. */
static int keep(struct project_run *pr, enum project_op op, const char *path, const char *object)
{
	const char *base;
	_cleanup_(closep) int pfd = ov_parent(pr->project_fd, path, &base);

	if (pfd < 0)
		return pfd;
	if (keeps_object(op))
		return copy_object(pfd, base, pr->dir, object);
	struct meta m;
	_cleanup_(freep) uint8_t *blob = NULL;
	size_t len;
	int r = meta_read(pfd, base, &m);
	if (r < 0)
		return r;
	r = meta_encode(&m, &blob, &len);
	meta_free(&m);
	_cleanup_(closep) int fd =
		r < 0 ? -1
		      : openat(pr->dir, object,
			       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (r == 0 && fd < 0)
		r = -errno;
	if (r == 0 && write(fd, blob, len) != (ssize_t)len)
		r = -EIO;
	return r;
}

int project_run_will(struct project_run *pr, enum project_op op, const char *path, long src)
{
	char object[32] = "", srcs[24], at[24], ino[24];
	struct stat st;
	const char *base;
	_cleanup_(closep) int pfd = ov_parent(pr->project_fd, path, &base);
	uint64_t was = pfd >= 0 && fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 ? st.st_ino
										     : 0;
	int r;

	if (pr->log.n && pr->log.v[pr->log.n - 1].state == STEP_PENDING)
		return -EBUSY; /* one change at a time */
	if (keeps_object(op) || keeps_meta(op)) {
		object_name(pr->log.n + 1, op, object, sizeof(object));
		unlinkat(pr->dir, object, 0); /* a killed attempt's */
		if ((r = keep(pr, op, path, object)) < 0)
			return r;
	}
	int64_t now = realtime_ns();
	snprintf(srcs, sizeof(srcs), "%ld", src);
	snprintf(at, sizeof(at), "%" PRId64, now);
	snprintf(ino, sizeof(ino), "%" PRIu64, was);
	const char *f[] = { "W", project_op_names[op], object, srcs, at, ino, path };
	if ((r = log_put(pr, f, 7)) < 0)
		return r;
	struct plog *l = &pr->log;
	if (array_grow(l->v, l->n, l->cap) < 0)
		return -ENOMEM;
	l->v[l->n] = (struct pstep){ .op = op, .src = src, .at_ns = now, .was_ino = was };
	if (!(l->v[l->n].object = strdup(object)) || !(l->v[l->n].path = strdup(path))) {
		free(l->v[l->n].object);
		return -ENOMEM;
	}
	l->n++;
	return 0;
}

void project_run_skip(struct project_run *pr, long src)
{
	char f[24];

	snprintf(f, sizeof(f), "%ld", src);
	const char *rec[] = { "S", f };
	log_put(pr, rec, 2);
}

/* What step S left at its path (nothing: st_ino 0), into S->left. */
static void note_left(struct project_run *pr, struct pstep *s)
{
	const char *base;
	_cleanup_(closep) int pfd = ov_parent(pr->project_fd, s->path, &base);

	memset(&s->left, 0, sizeof(s->left));
	if (pfd >= 0 && fstatat(pfd, base, &s->left, AT_SYMLINK_NOFOLLOW) < 0)
		memset(&s->left, 0, sizeof(s->left));
}

void project_run_did(struct project_run *pr, int r)
{
	struct pstep *s = pr->log.n ? &pr->log.v[pr->log.n - 1] : NULL;
	char f[4][24];

	if (!s || s->state != STEP_PENDING)
		return;
	if (r < 0) {
		const char *rec[] = { "F" };
		s->state = STEP_FAILED;
		log_put(pr, rec, 1);
		return;
	}
	s->state = STEP_DONE;
	note_left(pr, s);
	snprintf(f[0], sizeof(f[0]), "%llu", (unsigned long long)s->left.st_ino);
	snprintf(f[1], sizeof(f[1]), "%lld", (long long)s->left.st_size);
	snprintf(f[2], sizeof(f[2]), "%" PRId64, timespec_ns(&s->left.st_mtim));
	snprintf(f[3], sizeof(f[3]), "%" PRId64, timespec_ns(&s->left.st_ctim));
	const char *rec[] = { "D", f[0], f[1], f[2], f[3] };
	log_put(pr, rec, 5);
}

void judge_pending(struct project_run *pr)
{
	struct pstep *s = pr->log.n ? &pr->log.v[pr->log.n - 1] : NULL;
	const char *base;
	struct stat now;

	if (!s || s->state != STEP_PENDING)
		return;
	_cleanup_(closep) int pfd = ov_parent(pr->project_fd, s->path, &base);
	bool there = pfd >= 0 && fstatat(pfd, base, &now, AT_SYMLINK_NOFOLLOW) == 0;
	bool made;
	switch (s->op) {
	case PROJECT_CREATE:
	case PROJECT_SYMLINK:
		made = there;
		break;
	case PROJECT_MKDIR:
		made = there && S_ISDIR(now.st_mode);
		break;
	case PROJECT_DELETE:
	case PROJECT_RMDIR:
		made = !there;
		break;
	case PROJECT_MODIFY: /* the replacement is a new inode, renamed over */
		made = !there || now.st_ino != s->was_ino;
		break;
	default: /* an attribute set again: its undo sets the kept ones */
		made = true;
		break;
	}
	project_run_did(pr, made ? 0 : -EINTR);
}

/* ---- its journal and its end ------------------------------------------------- */

int kept_attributes(int dir, const char *object, uint8_t **blob, size_t *len)
{
	_cleanup_(closep) int fd = openat(dir, object, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	*blob = NULL;
	if (fd < 0 || fstat(fd, &st) < 0)
		return -errno;
	if (!(*blob = malloc((size_t)st.st_size + 1)))
		return -ENOMEM;
	*len = (size_t)st.st_size;
	return read(fd, *blob, *len) == (ssize_t)*len ? 0 : -EIO;
}

/* Records PR's journal from its log, once (a second look after a crash
 * may find it recorded already). */
static int record_journal(struct project_run *pr)
{
	const struct store_run *u = &pr->run;
	const char *comm = run_comm(u);
	int r = run_journal_recorded(pr->s, u, comm);

	if (r != 0)
		return r < 0 ? r : 0;
	if ((r = store_begin(pr->s)) < 0)
		return r;
	struct store_event e = { .at_ns = u->begun_ns,
				 .op = "capture",
				 .path = "/mnt/user-data",
				 .pid = getpid(),
				 .comm = comm };
	r = store_journal_add(pr->s, u->user, u->thread, &e);
	for (size_t i = 0; r == 0 && i < pr->log.n; i++) {
		const struct pstep *s = &pr->log.v[i];
		char path[PATH_MAX + 32];
		_cleanup_(freep) uint8_t *blob = NULL;
		size_t len = 0;
		if (s->state != STEP_DONE)
			continue;
		snprintf(path, sizeof(path), PROJECT_ROOT "%s", s->path);
		e = (struct store_event){
			.at_ns = s->at_ns, .op = "keep", .path = path, .pid = getpid(), .comm = comm
		};
		if (keeps_meta(s->op) && kept_attributes(pr->dir, s->object, &blob, &len) == 0) {
			e.meta = blob;
			e.meta_len = len;
			r = store_journal_add(pr->s, u->user, u->thread, &e);
		} else if (keeps_object(s->op)) {
			e.object = s->object;
			r = store_journal_add(pr->s, u->user, u->thread, &e);
		}
		e = (struct store_event){ .at_ns = s->at_ns,
					  .op = project_op_names[s->op],
					  .path = path,
					  .pid = getpid(),
					  .comm = comm };
		if (r == 0)
			r = store_journal_add(pr->s, u->user, u->thread, &e);
	}
	if (r == 0)
		r = store_commit(pr->s);
	else
		store_rollback(pr->s);
	return r;
}

int project_run_end(struct project_run *pr, struct store_run *run, json_t **summary,
		    struct error *e)
{
	_cleanup_(closep) int sync_fd = openat(pr->project_fd, ".", O_RDONLY | O_DIRECTORY);
	int r;

	*summary = NULL;
	memset(run, 0, sizeof(*run));
	judge_pending(pr);
	/* Each change is whole; the sync makes them and their pre-images
	 * last (one sync, not one per file). */
	if (sync_fd >= 0)
		syncfs(sync_fd);
	syncfs(pr->log_fd);
	if ((r = record_journal(pr)) < 0) {
		error_set(e, r, "cannot record the journal of run %lld: %s", (long long)pr->run.id,
			  strerror(-r));
		project_run_free(pr);
		return r;
	}
	r = run_finish(pr->s, pr->home, &pr->run, pr->texts, summary, e);
	if (r == 0)
		run_retain(pr->s, pr->home, pr->user, pr->thread,
			   pr->run.kind == RUN_APPLY ? "try apply" : "run undo");
	if (r == 0) {
		*run = pr->run;
		memset(&pr->run, 0, sizeof(pr->run));
	}
	project_run_free(pr);
	return r;
}

/* Ends the runs of USER's project record THREAD that an apply killed left
 * open; -EBUSY (E) for one an undo left: its undo completes it. */
struct open_runs {
	int64_t *v;
	size_t n, cap;
	int64_t undo, undoes;
};

static int collect_open(void *arg, const struct store_run *r)
{
	struct open_runs *o = arg;

	if (r->ended)
		return 0;
	if (r->kind != RUN_APPLY) {
		o->undo = r->id;
		o->undoes = r->undoes;
		return 0;
	}
	if (array_grow(o->v, o->n, o->cap) < 0)
		return -ENOMEM;
	o->v[o->n++] = r->id;
	return 0;
}

static int end_open_runs(struct store *s, const char *home, const char *user, const char *thread,
			 struct error *e)
{
	struct open_runs o = { 0 };
	int r = store_runs_each(s, user, thread, false, collect_open, &o);

	if (r == 0 && o.undo)
		r = error_set(e, -EBUSY,
			      "run %lld, the undo of run %lld, stopped short: sbx run undo %lld"
			      " completes it first",
			      (long long)o.undo, (long long)o.undoes, (long long)o.undoes);
	for (size_t i = 0; r == 0 && i < o.n; i++) {
		struct store_run run;
		struct project_run *pr;
		json_t *summary = NULL;
		if ((r = store_run_get(s, o.v[i], &run)) == 0 &&
		    (r = pr_open(s, home, &run, &pr)) == 0)
			r = project_run_end(pr, &run, &summary, e);
		json_decref(summary);
		store_run_free(&run);
		if (r < 0 && !e->code)
			error_set(e, r, "cannot end run %lld: %s", (long long)o.v[i], strerror(-r));
	}
	free(o.v);
	return r;
}

int project_run_begin(struct store *s, const char *home, const char *user, const char *thread,
		      enum run_kind kind, int64_t undoes, const char *overlay,
		      const char *const *paths, size_t n, struct project_run **out, struct error *e)
{
	struct thread_roots roots = { -1, -1 };
	struct store_run run;
	struct run_texts *texts = NULL;
	_cleanup_(closep) int homefd = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	char **names = calloc(n ? n : 1, sizeof(*names));
	int r = homefd < 0 ? -errno : names ? 0 : -ENOMEM;

	*out = NULL;
	e->code = 0;
	for (size_t i = 0; r == 0 && i < n; i++)
		if (asprintf(&names[i], PROJECT_ROOT "%s", paths[i]) < 0)
			r = -ENOMEM;
	if (r < 0) {
		run_names_free(names, n);
		return error_set(e, r, "cannot begin the run: %s", strerror(-r));
	}
	n = names_settle(names, n);
	if ((r = thread_fence(home, s, user, thread, e)) == 0 &&
	    (r = end_open_runs(s, home, user, thread, e)) == 0)
		r = thread_roots_open(home, user, thread, &roots, e);
	if (r < 0) {
		run_names_free(names, n);
		return r;
	}
	r = run_begin_paths(s, homefd, user, thread, kind, undoes, &roots, names, n, NULL, &run,
			    &texts);
	thread_roots_close(&roots);
	if (r == 0 && (r = pr_open(s, home, &run, out)) == 0) {
		(*out)->texts = texts;
		texts = NULL;
		const char *f[] = { "O", overlay };
		if (overlay)
			r = log_put(*out, f, 2);
	}
	run_texts_free(texts);
	if (r < 0) {
		project_run_free(*out);
		*out = NULL;
		return error_set(e, r, "cannot begin the run: %s", strerror(-r));
	}
	return 0;
}
