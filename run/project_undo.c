/* project_undo.c - the undo of a project's run (project_run.h,
 * project_undo()): a project run of its own whose changes are the steps
 * back, taken newest first, each a whole object put at its path with one
 * rename (copied from the undone run's pre-images: they stay, as a
 * restore's sources do, until the undo has taken every step).
 *
 * Only the last change of each path decides a conflict: what the run
 * left there must be there still (the same inode, size, mtime and ctime;
 * a file the run's end described by its content, the same content; a
 * directory, a directory), or, where the run left nothing, nothing.
 */
#include "project_run_int.h"
#include "overlay.h"
#include "undo.h"
#include "undo_plan_int.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/fileops.h"
#include "common/home.h"
#include "common/log.h"
#include "store/snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

struct project_undo {
	struct plog log; /* the undone run's changes */
	bool *skip;	 /* by step: not taken back (--partial, or taken already) */
	size_t left;	 /* of those, the steps left alone (--partial) */
	struct undo_conflict *conflicts;
	size_t nconflicts, capconflicts;
	struct undo_counts counts;
};

const struct undo_conflict *project_undo_conflict_at(const struct project_undo *pu, size_t i)
{
	return pu && i < pu->nconflicts ? &pu->conflicts[i] : NULL;
}

void project_undo_counts(const struct project_undo *pu, struct undo_counts *c)
{
	memset(c, 0, sizeof(*c));
	if (pu)
		*c = pu->counts;
}

void project_undo_free(struct project_undo *pu)
{
	if (!pu)
		return;
	plog_free(&pu->log);
	free(pu->skip);
	free(pu->conflicts);
	free(pu);
}

/* What taking step S back does, in words. */
static const char *step_back(const struct pstep *s)
{
	switch (s->op) {
	case PROJECT_MODIFY:
		return "put back";
	case PROJECT_CREATE:
	case PROJECT_SYMLINK:
	case PROJECT_MKDIR:
		return "remove";
	case PROJECT_DELETE:
		return "make again";
	case PROJECT_RMDIR:
		return "make the directory again";
	default:
		return "set the attributes back";
	}
}

void project_undo_print(const struct project_undo *pu, FILE *f)
{
	for (size_t i = pu ? pu->log.n : 0; i-- > 0;)
		if (pu->log.v[i].state == STEP_DONE && !pu->skip[i])
			fprintf(f, "%s %s\n", step_back(&pu->log.v[i]), pu->log.v[i].path);
}

/* ---- conflicts ------------------------------------------------------------ */

static int by_path_then_step(const void *x, const void *y, void *arg)
{
	const struct plog *l = arg;
	size_t a = *(const size_t *)x, b = *(const size_t *)y;
	int c = strcmp(l->v[a].path, l->v[b].path);

	return c ? c : a < b ? -1 : a > b;
}

/* The run's end snapshot's description of PATH (below the project), or
 * NULL. */
static const struct snap_file *described(const struct snapshot *after, const char *path)
{
	char virt[PATH_MAX + 32];

	snprintf(virt, sizeof(virt), PROJECT_ROOT "%s", path);
	for (size_t i = 0; i < after->n; i++)
		if (!strcmp(after->files[i].path, virt))
			return &after->files[i];
	return NULL;
}

/* Why the project's PATH is not what step S (its last change) left there,
 * or NULL if it is. */
static const char *changed_since(int project_fd, const struct pstep *s,
				 const struct snapshot *after)
{
	const char *base;
	struct stat now;
	_cleanup_(closep) int pfd = ov_parent(project_fd, s->path, &base);
	bool there = pfd >= 0 && fstatat(pfd, base, &now, AT_SYMLINK_NOFOLLOW) == 0;

	if (!s->left.st_ino)
		return there ? "created after the run" : NULL;
	if (!there)
		return "removed after the run";
	if (s->op == PROJECT_MKDIR || s->op == PROJECT_CHMOD)
		return S_ISDIR(now.st_mode) ? NULL : "changed after the run";
	if (now.st_ino == s->left.st_ino && now.st_size == s->left.st_size &&
	    timespec_ns(&now.st_mtim) == timespec_ns(&s->left.st_mtim) &&
	    timespec_ns(&now.st_ctim) == timespec_ns(&s->left.st_ctim))
		return NULL;
	/* Touched, or rewritten alike: the same content is no change. */
	const struct snap_file *f = S_ISREG(now.st_mode) ? described(after, s->path) : NULL;
	uint8_t sha[32];
	_cleanup_(closep) int fd = f && f->hashed && !f->symlink && f->size == now.st_size
					   ? openat(pfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
					   : -1;
	if (fd >= 0 && file_sha256(fd, sha) == 0 && !memcmp(sha, f->sha256, sizeof(sha)))
		return NULL;
	return "changed after the run";
}

/* Finds the conflicts among the steps to take back (each path's last);
 * returns how many. */
static int find_conflicts(struct project_undo *pu, struct store *s, const struct store_run *run,
			  int project_fd)
{
	struct snapshot after = { 0 };
	_cleanup_(freep) size_t *order = calloc(pu->log.n ? pu->log.n : 1, sizeof(*order));
	size_t n = 0;
	int r = order ? 0 : -ENOMEM;

	if (r == 0 && run->after_snapshot)
		r = store_snapshot_load(s, run->after_snapshot, &after);
	for (size_t i = 0; r == 0 && i < pu->log.n; i++)
		if (pu->log.v[i].state == STEP_DONE && !pu->skip[i])
			order[n++] = i;
	if (r == 0)
		qsort_r(order, n, sizeof(*order), by_path_then_step, &pu->log);
	for (size_t k = 0; r == 0 && k < n; k++) {
		const struct pstep *last = &pu->log.v[order[k]];
		if (k + 1 < n && !strcmp(pu->log.v[order[k + 1]].path, last->path))
			continue; /* a later change of the path decides */
		const char *why = changed_since(project_fd, last, &after);
		if (!why)
			continue;
		if (array_grow(pu->conflicts, pu->nconflicts, pu->capconflicts) < 0)
			r = -ENOMEM;
		else
			pu->conflicts[pu->nconflicts++] = (struct undo_conflict){ last->path, why };
	}
	snapshot_free(&after);
	return r < 0 ? r : (int)pu->nconflicts;
}

/* --partial: every step of a conflicting path is left alone (and the
 * making of a directory above one), logged in the undo's run (so that a
 * second attempt leaves them too). */
static void skip_conflicts(struct project_undo *pu)
{
	for (size_t i = 0; i < pu->log.n; i++) {
		const struct pstep *s = &pu->log.v[i];
		size_t len = strlen(s->path);
		for (size_t k = 0; k < pu->nconflicts && !pu->skip[i]; k++) {
			const char *c = pu->conflicts[k].path;
			/* A directory the run made stays while it holds one. */
			bool holds = s->op == PROJECT_MKDIR && !strncmp(c, s->path, len) &&
				     c[len] == '/';
			if (s->state == STEP_DONE && (holds || !strcmp(s->path, c))) {
				pu->skip[i] = true;
				pu->left++;
			}
		}
	}
}

/* ---- the steps ------------------------------------------------------------ */

/* Puts a copy of OBJECT of directory FROM at project directory PFD's
 * BASE: over what is there (REPLACE), or where nothing is. */
static int publish(int from, const char *object, int pfd, const char *base, bool replace)
{
	char tmp[96];
	int r;

	ov_temp_name(tmp, sizeof(tmp));
	r = copy_object(from, object, pfd, tmp);
	if (r == 0 && renameat2(pfd, tmp, pfd, base, replace ? 0 : RENAME_NOREPLACE) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(pfd, tmp, 0);
	return r;
}

/* Reads the attributes kept as OBJECT in FROM. */
static int kept_meta(int from, const char *object, struct meta *m)
{
	_cleanup_(freep) uint8_t *blob = NULL;
	size_t len;
	int r = kept_attributes(from, object, &blob, &len);

	return r < 0 ? r : meta_decode(blob, len, m);
}

/* The change that takes step S back, made as PR's change (it keeps what
 * it replaces), from the undone run's pre-images in FROM. */
static int take_back(struct project_run *pr, int from, const struct pstep *s, long src,
		     struct undo_counts *c)
{
	const char *base;
	struct stat st;
	struct meta m = { 0 };
	enum project_op op;
	size_t *count;
	int r;

	switch (s->op) {
	case PROJECT_MODIFY:
		op = PROJECT_MODIFY, count = &c->restored;
		break;
	case PROJECT_CREATE:
	case PROJECT_SYMLINK:
		op = PROJECT_DELETE, count = &c->removed;
		break;
	case PROJECT_DELETE:
		op = fstatat(from, s->object, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)
			     ? PROJECT_SYMLINK
			     : PROJECT_CREATE;
		count = &c->restored;
		break;
	case PROJECT_MKDIR:
		op = PROJECT_RMDIR, count = &c->removed;
		break;
	case PROJECT_RMDIR:
		op = PROJECT_MKDIR, count = &c->made;
		break;
	default:
		op = PROJECT_CHMOD, count = &c->attrs;
		break;
	}
	_cleanup_(closep) int pfd = ov_parent(pr->project_fd, s->path, &base);
	if (pfd < 0)
		return pfd;
	if (keeps_meta(s->op) && (r = kept_meta(from, s->object, &m)) < 0)
		return r;
	if ((r = project_run_will(pr, op, s->path, src)) < 0) {
		meta_free(&m);
		return r;
	}
	switch (s->op) {
	case PROJECT_MODIFY:
	case PROJECT_DELETE:
		r = publish(from, s->object, pfd, base, s->op == PROJECT_MODIFY);
		break;
	case PROJECT_CREATE:
	case PROJECT_SYMLINK:
		r = unlinkat(pfd, base, 0) < 0 ? -errno : 0;
		break;
	case PROJECT_MKDIR:
		r = unlinkat(pfd, base, AT_REMOVEDIR) < 0 ? -errno : 0;
		break;
	case PROJECT_RMDIR:
		r = mkdirat(pfd, base, m.mode & 07777) < 0 ? -errno : meta_apply(pfd, base, &m);
		break;
	default:
		r = meta_apply(pfd, base, &m);
		break;
	}
	meta_free(&m);
	project_run_did(pr, r);
	*count += r == 0;
	return r;
}

/* The steps of PU not taken yet, newest first, as PR's changes. Returns
 * how many failed. */
static int take_steps(struct project_undo *pu, struct project_run *pr, int from)
{
	for (size_t i = pu->log.n; i-- > 0;) {
		const struct pstep *s = &pu->log.v[i];
		if (s->state != STEP_DONE || pu->skip[i])
			continue;
		int r = take_back(pr, from, s, (long)i, &pu->counts);
		if (r < 0) {
			pu->counts.failed++;
			log_warn("run undo: %s of the project: cannot %s it: %s", s->path,
				 step_back(s), strerror(-r));
		}
	}
	return (int)pu->counts.failed;
}

/* The steps PR (an undo begun before) took or left: not to be taken
 * again. */
static void skip_taken(struct project_undo *pu, const struct project_run *pr)
{
	for (size_t i = 0; i < pr->log.n; i++) {
		long src = pr->log.v[i].src;
		if (pr->log.v[i].state == STEP_DONE && src >= 0 && (size_t)src < pu->log.n)
			pu->skip[src] = true;
	}
	for (size_t i = 0; i < pr->log.nskipped; i++)
		if (pr->log.skipped[i] >= 0 && (size_t)pr->log.skipped[i] < pu->log.n) {
			pu->skip[pr->log.skipped[i]] = true;
			pu->left++;
		}
}

/* The undo of RUN as the run PR: the steps, the origins that follow,
 * its end. */
static int undo_as(struct store *s, int homefd, const struct store_run *run,
		   struct project_undo *pu, struct project_run *pr, int from,
		   struct undo_result *res, struct error *e)
{
	char project[PATH_MAX], of[PATH_MAX];
	/* What the run's pre-images take is measured again when retention
	 * next looks. */
	int r = store_run_held(s, run->id, -1);
	if (r < 0) {
		project_run_free(pr);
		return error_set(e, r, "cannot begin: %s", strerror(-r));
	}
	/* What a killed apply or undo left half made goes first. */
	_cleanup_(freep) const char **all = calloc(pu->log.n ? pu->log.n : 1, sizeof(*all));
	for (size_t i = 0; all && i < pu->log.n; i++)
		all[i] = pu->log.v[i].path;
	if (all)
		ov_drop_leftovers(pr->project_fd, all, pu->log.n);
	int failed = take_steps(pu, pr, from);

	/* The overlay's origins of the paths the undo changed (in this
	 * attempt or one a kill stopped) follow what the project holds now,
	 * unless it was discarded, or is another's now. */
	_cleanup_(freep) const char **paths = calloc(pr->log.n ? pr->log.n : 1, sizeof(*paths));
	size_t n = 0;
	for (size_t i = 0; paths && i < pr->log.n; i++)
		if (pr->log.v[i].state == STEP_DONE)
			paths[n++] = pr->log.v[i].path;
	if (pu->log.overlay && paths &&
	    home_project_get(homefd, run->user, run->thread, project, sizeof(project)) > 0 &&
	    home_overlay_get(homefd, run->user, pu->log.overlay, of, sizeof(of)) > 0 &&
	    !strcmp(project, of))
		ov_origins_follow(s, run->user, pu->log.overlay, pr->project_fd, paths, n);
	int64_t undo = pr->run.id;
	r = project_run_end(pr, &res->undo, &res->summary, e);
	if (r < 0)
		return r;
	res->failed = failed;
	if (failed && (r = store_run_clean(s, undo, false)) < 0)
		return error_set(e, r, "cannot record the undo's state: %s", strerror(-r));
	/* Every step taken: the undone run's pre-images serve nothing now
	 * (the undo kept what it replaced, for its own undo). */
	if (!failed && !pu->left)
		kept_drop(homefd, run->user, run->thread, run->begun_ns);
	return 0;
}

/* project_undo(), RUN's end (if it had none) read into COPY. */
static int undo_run(struct store *s, const char *home, const struct store_run *run, int64_t resume,
		    const struct undo_options *o, struct undo_result *res, struct store_run *copy,
		    struct error *e)
{
	_cleanup_(closep) int homefd = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_(closep) int lock = -1, project_fd = -1, from = -1;
	struct project_undo *pu = calloc(1, sizeof(*pu));
	struct project_run *pr = NULL;
	char project[PATH_MAX];
	int r;

	if (!pu)
		return error_set(e, -ENOMEM, "out of memory");
	res->project = pu;
	if (homefd < 0)
		return error_set(e, -errno, "cannot open the home %s: %s", home, strerror(errno));
	r = home_project_get(homefd, run->user, run->thread, project, sizeof(project));
	if (r <= 0)
		return error_set(e, r < 0 ? r : -ENOENT, "%s/%s is no project's record", run->user,
				 run->thread);
	/* Applies and undos of a project take turns (ov_apply()). */
	if ((lock = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    flock(lock, o->dry_run ? LOCK_SH : LOCK_EX) < 0 ||
	    (project_fd = open(project, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return error_set(e, -errno, "cannot open the project %s: %s", project,
				 strerror(errno));
	if (resume && o->dry_run)
		return error_set(e, -EINPROGRESS,
				 "run %lld is being undone by run %lld, which stopped short; sbx"
				 " run undo %lld completes it",
				 (long long)run->id, (long long)resume, (long long)run->id);
	/* An apply killed before its end is ended first: its log says what
	 * it changed. */
	if (!run->ended) {
		json_t *summary = NULL;
		e->code = 0;
		if ((r = store_run_get(s, run->id, copy)) == 0 &&
		    (r = pr_open(s, home, copy, &pr)) == 0)
			r = project_run_end(pr, copy, &summary, e);
		json_decref(summary);
		if (r < 0)
			return e->code ? r
				       : error_set(e, r, "cannot end run %lld: %s",
						   (long long)run->id, strerror(-r));
		pr = NULL;
		run = copy; /* as it ended: its end's snapshot */
	}
	if ((from = home_undo_dir(homefd, run->user, run->thread, run->begun_ns, false)) < 0)
		return error_set(e, -ESTALE,
				 "run %lld can no longer be undone: its pre-images are gone",
				 (long long)run->id);
	if ((r = plog_read(from, &pu->log)) < 0)
		return error_set(e, r, "cannot read the log of run %lld: %s", (long long)run->id,
				 strerror(-r));
	if (!(pu->skip = calloc(pu->log.n ? pu->log.n : 1, sizeof(*pu->skip))))
		return error_set(e, -ENOMEM, "out of memory");
	if (resume) {
		struct store_run u;
		store_run_free(&res->undo);
		if ((r = store_run_get(s, resume, &u)) < 0 || (r = pr_open(s, home, &u, &pr)) < 0)
			return error_set(e, r, "cannot read run %lld: %s", (long long)resume,
					 strerror(-r));
		judge_pending(pr);
		skip_taken(pu, pr);
		return undo_as(s, homefd, run, pu, pr, from, res, e);
	}
	size_t steps = 0;
	for (size_t i = 0; i < pu->log.n; i++)
		steps += pu->log.v[i].state == STEP_DONE;
	if (!steps) {
		res->nothing = true;
		return 0;
	}
	if ((r = find_conflicts(pu, s, run, project_fd)) < 0)
		return error_set(e, r, "cannot check the paths: %s", strerror(-r));
	res->conflicts = r;
	if (r > 0 && o->partial)
		skip_conflicts(pu);
	if (r > 0 && !o->partial && !o->force)
		return o->dry_run ? 0 : error_set(e, -EEXIST, "nothing was undone");
	if (o->dry_run)
		return 0;
	/* The undo's run describes every path it may change first. */
	_cleanup_(freep) const char **paths = calloc(pu->log.n ? pu->log.n : 1, sizeof(*paths));
	size_t n = 0;
	if (!paths)
		return error_set(e, -ENOMEM, "out of memory");
	for (size_t i = 0; i < pu->log.n; i++)
		if (pu->log.v[i].state == STEP_DONE && !pu->skip[i])
			paths[n++] = pu->log.v[i].path;
	if ((r = project_run_begin(s, home, run->user, run->thread, RUN_UNDO, run->id,
				   pu->log.overlay, paths, n, &pr, e)) < 0)
		return r;
	for (size_t i = 0; i < pu->log.n; i++)
		if (pu->skip[i] && pu->log.v[i].state == STEP_DONE)
			project_run_skip(pr, (long)i);
	if (res->conflicts == 0 && (r = store_run_clean(s, pr->run.id, true)) < 0) {
		project_run_free(pr);
		return error_set(e, r, "cannot begin: %s", strerror(-r));
	}
	return undo_as(s, homefd, run, pu, pr, from, res, e);
}

int project_undo(struct store *s, const char *home, const struct store_run *run, int64_t resume,
		 const struct undo_options *o, struct undo_result *res, struct error *e)
{
	struct store_run copy = { 0 };
	int r = undo_run(s, home, run, resume, o, res, &copy, e);

	store_run_free(&copy);
	return r;
}
