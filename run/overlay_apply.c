/* overlay_apply.c - see overlay.h, ov_apply(): an overlay's changes
 * written to its project, each path at once or not at all.
 *
 * Removals go first, deepest first (a directory after what it held),
 * then placements, parents first (a directory before what it holds). A
 * file or symlink is made unnamed or under a temporary name in its
 * directory, complete with its mode, owner, xattrs and times, then
 * renamed onto its path: over the project's object the review saw, or
 * where there was none, never over one made since (RENAME_NOREPLACE).
 * Each path's origin then becomes what the apply left there, so the
 * agent's next change of it is judged against that.
 */
#include "overlay.h"
#include "project_run.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/fileops.h"
#include "common/home.h"
#include "common/walk.h"
#include "store/origins.h"
#include "undo_plan_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

/* What happens to each chosen change: its outcome so far. */
enum fate { FATE_APPLY, FATE_CONFLICT, FATE_SKIP, FATE_FAILED, FATE_DONE };

struct job {
	struct ov_change *c;
	enum fate fate;
	const char *why;
	bool removed;		     /* its project object (at FROM, or PATH) is gone */
	bool moved_from, moved_path; /* their origins are to be moved */
	bool merge;		     /* --3way: merged, not placed */
	bool marked;		     /* the merge left conflict markers */
};

static bool chosen(const struct ov_apply *a, const struct ov_change *c)
{
	return ov_chosen(c, a->only, a->n_only);
}

/* Whether the project's object at PATH is still what the review saw
 * (C->project, or none; GONE: the apply removed it itself). A
 * directory's times move with what the apply does inside it: only its
 * type counts. */
static bool as_reviewed(const struct ov_review *r, const struct ov_change *c, const char *path,
			bool was, const struct stat *then)
{
	struct stat now;
	_cleanup_(closep) int pfd = -1;
	const char *base;

	if ((pfd = ov_parent(r->project_fd, path, &base)) < 0)
		return !was;
	if (fstatat(pfd, base, &now, AT_SYMLINK_NOFOLLOW) < 0)
		return !was && errno == ENOENT;
	if (!was)
		return false;
	(void)c;
	if (S_ISDIR(then->st_mode))
		return S_ISDIR(now.st_mode);
	return now.st_ino == then->st_ino && now.st_dev == then->st_dev &&
	       now.st_size == then->st_size && now.st_mode == then->st_mode &&
	       now.st_mtim.tv_sec == then->st_mtim.tv_sec &&
	       now.st_mtim.tv_nsec == then->st_mtim.tv_nsec &&
	       now.st_ctim.tv_sec == then->st_ctim.tv_sec &&
	       now.st_ctim.tv_nsec == then->st_ctim.tv_nsec;
}

/* A temporary entry's name in a project directory: TEMP_PREFIX, then
 * what makes it this apply's. */
#define TEMP_PREFIX ".sbx-apply."

void ov_temp_name(char *out, size_t size)
{
	static unsigned seq;

	snprintf(out, size, TEMP_PREFIX "%d.%u.%llx", (int)getpid(), ++seq,
		 (unsigned long long)realtime_ns());
}

static int drop_temp(void *arg, int dirfd, const char *name, const struct stat *st)
{
	(void)arg;
	if (!strncmp(name, TEMP_PREFIX, sizeof(TEMP_PREFIX) - 1) && !S_ISDIR(st->st_mode))
		unlinkat(dirfd, name, 0);
	return 0;
}

static int by_string(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

void ov_drop_leftovers(int project_fd, const char *const *paths, size_t n)
{
	_cleanup_(freep) char **dirs = calloc(n ? n : 1, sizeof(*dirs));
	size_t k = 0;

	for (size_t i = 0; dirs && i < n; i++) {
		const char *slash = strrchr(paths[i], '/');
		dirs[k] = strndup(paths[i], slash ? (size_t)(slash - paths[i]) : 0);
		k += dirs[k] != NULL;
	}
	if (k)
		qsort(dirs, k, sizeof(*dirs), by_string);
	for (size_t i = 0; i < k; i++) {
		if (!i || strcmp(dirs[i], dirs[i - 1])) {
			int fd = ov_open(project_fd, dirs[i], O_RDONLY | O_DIRECTORY);
			if (fd >= 0)
				dir_each(fd, drop_temp, NULL);
		}
	}
	for (size_t i = 0; i < k; i++)
		free(dirs[i]);
}

/* The same for the directories of the N JOBS' paths. */
static void drop_leftovers(const struct ov_review *r, const struct job *jobs, size_t n)
{
	_cleanup_(freep) const char **paths = calloc(n ? n : 1, sizeof(*paths));

	for (size_t i = 0; paths && i < n; i++)
		paths[i] = jobs[i].c->path;
	if (paths)
		ov_drop_leftovers(r->project_fd, paths, n);
}

/* Makes a regular file in project directory PFD under temporary name
 * TMP: CONTENT's content, and the mode, owner and xattrs of META
 * (attributes ST), its times too if TIMES. */
static int make_file_of(int pfd, int content, int meta, const struct stat *st, bool times,
			const char *tmp)
{
	const struct timespec ts[2] = { st->st_atim, st->st_mtim };
	_cleanup_(closep) int fd = openat(pfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	char proc[64];
	int r = fd < 0 ? -errno : file_copy_content(fd, content);

	if (r == 0)
		r = file_copy_metadata(fd, meta, st);
	if (r == 0 && times && futimens(fd, ts) < 0)
		r = -errno;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (r == 0 && linkat(AT_FDCWD, proc, pfd, tmp, AT_SYMLINK_FOLLOW) < 0)
		r = -errno;
	return r;
}

/* Makes regular file BASE's copy of the layer's SRC (attributes ST) in
 * project directory PFD under temporary name TMP: content, mode, owner,
 * xattrs, times. */
static int make_file(int pfd, int src, const struct stat *st, const char *tmp)
{
	return make_file_of(pfd, src, src, st, true, tmp);
}

/* Places C's layer object at its path in the project. */
static int place(const struct ov_review *r, const struct ov_change *c, bool replace)
{
	const char *base;
	_cleanup_(closep) int pfd = ov_parent(r->project_fd, c->path, &base);
	_cleanup_(closep) int src = -1;
	const struct stat *st = &c->overlay;
	char tmp[96];
	int e = 0;

	if (pfd < 0)
		return pfd;
	if (S_ISDIR(st->st_mode)) {
		if (replace) /* a directory still: its mode only */
			return fchmodat(pfd, base, st->st_mode & 07777, 0) < 0 ? -errno : 0;
		return mkdirat(pfd, base, st->st_mode & 07777) < 0 ? -errno : 0;
	}
	ov_temp_name(tmp, sizeof(tmp));
	if (S_ISREG(st->st_mode)) {
		if ((src = ov_open(r->layer_fd, c->path, O_RDONLY)) < 0)
			return src;
		e = make_file(pfd, src, st, tmp);
	} else {
		char target[PATH_MAX + 1];
		_cleanup_(closep) int lfd = ov_open(r->layer_fd, c->path, O_PATH);
		ssize_t n = lfd < 0 ? -1 : readlinkat(lfd, "", target, PATH_MAX);
		if (n < 0)
			return lfd < 0 ? lfd : -errno;
		target[n] = '\0';
		const struct timespec times[2] = { st->st_atim, st->st_mtim };
		if (symlinkat(target, pfd, tmp) < 0)
			return -errno;
		utimensat(pfd, tmp, times, AT_SYMLINK_NOFOLLOW);
	}
	if (e == 0 && renameat2(pfd, tmp, pfd, base, replace ? 0 : RENAME_NOREPLACE) < 0)
		e = -errno;
	if (e < 0)
		unlinkat(pfd, tmp, 0);
	return e;
}

/* Removes PATH's object from the project (a directory: if empty). */
static int take_away(const struct ov_review *r, const char *path, const struct stat *st)
{
	const char *base;
	_cleanup_(closep) int pfd = ov_parent(r->project_fd, path, &base);

	if (pfd < 0)
		return pfd;
	return unlinkat(pfd, base, S_ISDIR(st->st_mode) ? AT_REMOVEDIR : 0) < 0 ? -errno : 0;
}

/* The origin of PATH of USER's overlay THREAD after a change of the
 * project PROJECT_FD: the object there now. */
static void origin_follow(struct store *s, const char *user, const char *thread, int project_fd,
			  const char *path)
{
	struct stat st;
	const char *base;
	_cleanup_(closep) int pfd = ov_parent(project_fd, path, &base);

	if (pfd < 0 || fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		store_origin_drop(s, user, thread, path);
		return;
	}
	struct store_origin o = {
		.path = path,
		.kind = ORIGIN_COPY,
		.mode = st.st_mode,
		.dev = (int64_t)st.st_dev,
		.ino = (int64_t)st.st_ino,
		.size = st.st_size,
		.mtime_ns = timespec_ns(&st.st_mtim),
		.ctime_ns = timespec_ns(&st.st_ctim),
		.at_ns = realtime_ns(),
	};
	store_origin_set(s, user, thread, &o);
}

void ov_origins_follow(struct store *s, const char *user, const char *thread, int project_fd,
		       const char *const *paths, size_t n)
{
	if (store_begin(s) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		origin_follow(s, user, thread, project_fd, paths[i]);
	if (store_commit(s) < 0)
		store_rollback(s);
}

/* Before the apply's run PR (NULL: none, a dry run) changes PATH by OP:
 * 0 to go on, or -errno (its pre-image could not be kept). */
static int will(struct project_run *pr, enum project_op op, const char *path)
{
	return pr ? project_run_will(pr, op, path, -1) : 0;
}

static void did(struct project_run *pr, int e)
{
	if (pr)
		project_run_did(pr, e);
}

static void fail(struct job *j, enum fate fate, const char *why)
{
	if (j->fate == FATE_APPLY) {
		j->fate = fate;
		j->why = why;
	}
}

/* Whether job J takes away a project object: its own path's (a removal,
 * a type changed, a rename's old path). */
static bool removes(const struct ov_change *c)
{
	if (c->kind == OV_DELETED || c->kind == OV_RENAMED)
		return true;
	return c->in_project && c->in_overlay &&
	       (c->project.st_mode & S_IFMT) != (c->overlay.st_mode & S_IFMT);
}

static void run_removal(const struct ov_review *r, const struct ov_apply *a, struct project_run *pr,
			struct job *j)
{
	const char *path = j->c->from ? j->c->from : j->c->path;

	if (j->fate != FATE_APPLY || !removes(j->c))
		return;
	if (!as_reviewed(r, j->c, path, true, &j->c->project)) {
		fail(j, FATE_CONFLICT, "changed on the project during the apply");
		return;
	}
	if (a->dry_run) {
		j->removed = true;
		return;
	}
	int e = will(pr, S_ISDIR(j->c->project.st_mode) ? PROJECT_RMDIR : PROJECT_DELETE, path);
	if (e == 0) {
		e = take_away(r, path, &j->c->project);
		did(pr, e);
	}
	if (e == -ENOTEMPTY || e == -EEXIST)
		fail(j, FATE_CONFLICT, "the project's directory holds what the agent never saw");
	else if (e < 0)
		fail(j, FATE_FAILED, strerror(-e));
	else
		j->removed = true;
	j->moved_from = e == 0 && j->c->from;
}

/* A memfd holding LEN bytes of DATA, at offset 0; or -errno. */
static int memfd_of(const char *name, const void *data, size_t len)
{
	int fd = memfd_create(name, 0); /* inherited: diff3 reads it */

	if (fd < 0)
		return -errno;
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, (const char *)data + off, len - off);
		if (n < 0) {
			int e = -errno;
			close(fd);
			return e;
		}
		off += (size_t)n;
	}
	return lseek(fd, 0, SEEK_SET) < 0 ? (close(fd), -errno) : fd;
}

/* Reads regular file PATH below ROOT whole into a memfd: its fd, or
 * -errno (-EILSEQ if it is no text: a NUL byte). */
static int text_memfd(int root, const char *path)
{
	_cleanup_(closep) int fd = ov_open(root, path, O_RDONLY);
	int out = fd < 0 ? fd : memfd_create("sbx-merge", 0);

	if (out < 0)
		return fd < 0 ? fd : -errno;
	int r = file_copy_content(out, fd);
	char buf[8192];
	ssize_t n;
	if (r == 0 && lseek(out, 0, SEEK_SET) == 0)
		while (r == 0 && (n = read(out, buf, sizeof(buf))) > 0)
			if (memchr(buf, '\0', (size_t)n))
				r = -EILSEQ;
	if (r == 0 && lseek(out, 0, SEEK_SET) < 0)
		r = -errno;
	if (r < 0) {
		close(out);
		return r;
	}
	return out;
}

/* diff3 -m of the project's MINE, the origin's BASE and the overlay's
 * YOURS (memfds) into a new memfd *OUT: 0 merged clean, 1 with conflict
 * markers, or -errno. */
static int diff3_merge(int mine, int base, int yours, int *out)
{
	char m[32], b[32], y[32];
	const char *argv[] = { "diff3", "-m",	   "-L", "project", "-L", "origin",
			       "-L",	"overlay", m,	 b,	    y,	  NULL };
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int st;

	snprintf(m, sizeof(m), "/dev/fd/%d", mine);
	snprintf(b, sizeof(b), "/dev/fd/%d", base);
	snprintf(y, sizeof(y), "/dev/fd/%d", yours);
	if ((*out = memfd_create("sbx-merged", MFD_CLOEXEC)) < 0)
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, *out, STDOUT_FILENO);
	int e = posix_spawnp(&pid, "diff3", &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (e == 0 && waitpid(pid, &st, 0) < 0)
		e = errno;
	if (e == 0 && (!WIFEXITED(st) || WEXITSTATUS(st) > 1))
		e = EIO; /* diff3's trouble: it said why on stderr */
	if (e == 0 && lseek(*out, 0, SEEK_SET) < 0)
		e = errno;
	if (e) {
		close(*out);
		*out = -1;
		return -e;
	}
	return WEXITSTATUS(st);
}

/* --3way: merges job J's file (changed on both sides since its origin)
 * against the origin's kept content, and publishes the result over the
 * project's file, with that file's mode, owner and xattrs. */
static void run_merge(const struct ov_review *r, const struct ov_apply *a, struct project_run *pr,
		      struct job *j)
{
	struct ov_change *c = j->c;
	_cleanup_(freep) char *text = NULL;
	size_t len;

	if (!as_reviewed(r, c, c->path, true, &c->project)) {
		fail(j, FATE_CONFLICT, "changed on the project during the apply");
		return;
	}
	if (!a->s || store_blob_get(a->s, c->base_sha256, &text, &len) < 0) {
		fail(j, FATE_CONFLICT, "no text of the origin was kept to merge against");
		return;
	}
	_cleanup_(closep) int base = memfd_of("sbx-origin", text, len);
	_cleanup_(closep) int mine = text_memfd(r->project_fd, c->path);
	_cleanup_(closep) int yours = text_memfd(r->layer_fd, c->path);
	_cleanup_(closep) int merged = -1;
	int e = base < 0 ? base : mine < 0 ? mine : yours < 0 ? yours : 0;
	if (e == -EILSEQ || memchr(text, '\0', len)) {
		fail(j, FATE_CONFLICT, "not text: no three-way merge");
		return;
	}
	if (e == 0)
		e = diff3_merge(mine, base, yours, &merged);
	if (e < 0) {
		fail(j, FATE_FAILED, strerror(-e));
		return;
	}
	j->marked = e == 1;
	if (a->dry_run) {
		j->fate = FATE_DONE;
		return;
	}
	const char *name;
	_cleanup_(closep) int pfd = ov_parent(r->project_fd, c->path, &name);
	_cleanup_(closep) int meta = ov_open(r->project_fd, c->path, O_RDONLY);
	char tmp[96];
	ov_temp_name(tmp, sizeof(tmp));
	e = pfd < 0 ? pfd : meta < 0 ? meta : will(pr, PROJECT_MODIFY, c->path);
	if (e == 0) {
		e = make_file_of(pfd, merged, meta, &c->project, false, tmp);
		if (e == 0 && renameat(pfd, tmp, pfd, name) < 0)
			e = -errno;
		did(pr, e);
	}
	if (e < 0 && pfd >= 0)
		unlinkat(pfd, tmp, 0);
	if (e < 0) {
		fail(j, FATE_FAILED, strerror(-e));
		return;
	}
	j->fate = FATE_DONE;
	j->moved_path = true;
}

/* The change a placement of C's overlay object makes: over THERE (the
 * project's object) or where nothing is. */
static enum project_op placing(const struct ov_change *c, bool there)
{
	if (S_ISDIR(c->overlay.st_mode))
		return there ? PROJECT_CHMOD : PROJECT_MKDIR;
	if (there)
		return PROJECT_MODIFY;
	return S_ISLNK(c->overlay.st_mode) ? PROJECT_SYMLINK : PROJECT_CREATE;
}

static void run_placement(const struct ov_review *r, const struct ov_apply *a,
			  struct project_run *pr, struct job *j)
{
	struct ov_change *c = j->c;

	if (j->fate != FATE_APPLY)
		return;
	if (j->merge) {
		run_merge(r, a, pr, j);
		return;
	}
	if (!c->in_overlay) {
		j->fate = FATE_DONE;
		j->moved_path = !a->dry_run;
		return;
	}
	/* What the placement replaces: the project's object the review saw,
	 * unless a removal took it away (a type changed), or a rename's new
	 * path, where there was none. */
	bool there = c->in_project && !j->removed && c->kind != OV_RENAMED;
	bool seen = there || (a->dry_run && j->removed && c->kind != OV_RENAMED);
	if (!as_reviewed(r, c, c->path, seen, &c->project)) {
		fail(j, FATE_CONFLICT, "changed on the project during the apply");
		return;
	}
	if (a->dry_run) {
		j->fate = FATE_DONE;
		return;
	}
	int e = will(pr, placing(c, there), c->path);
	if (e == 0) {
		e = place(r, c, there);
		did(pr, e);
	}
	if (e == -EEXIST)
		fail(j, FATE_CONFLICT, "made on the project during the apply");
	else if (e < 0)
		fail(j, FATE_FAILED, strerror(-e));
	else {
		j->fate = FATE_DONE;
		j->moved_path = true;
	}
}

/* Moves the origins of the paths the N JOBS wrote, in one transaction
 * (a commit each would cost the apply a sync per file). An apply killed
 * before leaves them as they were: the paths it wrote then show no
 * change, and a later change of one by the agent is a conflict, never an
 * overwrite. */
static void move_origins(const struct ov_review *r, const struct ov_apply *a, struct job *jobs,
			 size_t n)
{
	_cleanup_(freep) const char **paths = calloc(2 * n + 1, sizeof(*paths));
	size_t k = 0;

	if (!a->s || !paths)
		return;
	for (size_t i = 0; i < n; i++) {
		if (jobs[i].moved_from)
			paths[k++] = jobs[i].c->from;
		if (jobs[i].moved_path)
			paths[k++] = jobs[i].c->path;
	}
	ov_origins_follow(a->s, a->user, a->thread, r->project_fd, paths, k);
}

/* Removals deepest first: by the path taken away, descending. */
static int by_path_down(const void *x, const void *y)
{
	const struct ov_change *a = (*(struct job *const *)x)->c;
	const struct ov_change *b = (*(struct job *const *)y)->c;
	return -strcmp(a->from ? a->from : a->path, b->from ? b->from : b->path);
}

/* Placements parents first. */
static int by_path_up(const void *x, const void *y)
{
	return strcmp((*(struct job *const *)x)->c->path, (*(struct job *const *)y)->c->path);
}

/* Decides which chosen changes are not applied at all, and why. */
static void judge_job(const struct ov_apply *a, struct job *j)
{
	const struct ov_change *c = j->c;
	mode_t m = c->in_overlay ? c->overlay.st_mode : c->project.st_mode;

	if (ov_in_git(c->path) || (c->from && ov_in_git(c->from)))
		fail(j, FATE_SKIP, "a repository's internals are never applied as files");
	else if (c->conflict && a->three_way && c->kind == OV_MODIFIED && c->base_hashed &&
		 S_ISREG(c->project.st_mode) && S_ISREG(c->overlay.st_mode))
		j->merge = true;
	else if (c->conflict)
		fail(j, FATE_CONFLICT, c->conflict);
	else if (!S_ISREG(m) && !S_ISDIR(m) && !S_ISLNK(m))
		fail(j, FATE_SKIP, "not a file, directory or symlink");
}

/* Begins the apply as a run of the project's record (project_run.h),
 * of the paths the N JOBS may write, into *PR (NULL if none may). */
static int begin_run(const struct ov_apply *a, const struct job *jobs, size_t n,
		     struct ov_applied *out, struct project_run **pr, struct error *e)
{
	_cleanup_(freep) const char **paths = calloc(2 * n + 1, sizeof(*paths));
	_cleanup_(closep) int homefd = open(a->home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	size_t k = 0;
	int r;

	*pr = NULL;
	if (!paths || homefd < 0)
		return error_set(e, paths ? -errno : -ENOMEM, "cannot open the home %s: %s",
				 a->home, strerror(paths ? errno : ENOMEM));
	for (size_t i = 0; i < n; i++) {
		if (jobs[i].fate != FATE_APPLY)
			continue;
		paths[k++] = jobs[i].c->path;
		if (jobs[i].c->from)
			paths[k++] = jobs[i].c->from;
	}
	if (!k)
		return 0;
	if ((r = project_record(homefd, a->user, a->project, out->record, sizeof(out->record))) < 0)
		return error_set(e, r, "cannot make the record of the applies to %s: %s",
				 a->project, strerror(-r));
	return project_run_begin(a->s, a->home, a->user, out->record, RUN_APPLY, 0, a->thread,
				 paths, k, pr, e);
}

int ov_apply(struct ov_review *r, const struct ov_apply *a, struct ov_applied *out, struct error *e)
{
	struct project_run *pr = NULL;
	size_t n = 0;
	_cleanup_(freep) struct job *jobs = calloc(r->n ? r->n : 1, sizeof(*jobs));
	_cleanup_(freep) struct job **order = calloc(r->n ? r->n : 1, sizeof(*order));

	memset(out, 0, sizeof(*out));
	if (!jobs || !order)
		return -ENOMEM;
	/* Applies of one project take turns (any overlay's): each judges
	 * the project as the one before left it. */
	_cleanup_(closep) int lock = openat(r->project_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lock < 0 || flock(lock, a->dry_run ? LOCK_SH : LOCK_EX) < 0)
		return error_set(e, -errno, "%s: %s", a->project, strerror(errno));
	for (size_t i = 0; i < r->n; i++)
		if (chosen(a, &r->v[i])) {
			jobs[n] = (struct job){ .c = &r->v[i], .fate = FATE_APPLY };
			judge_job(a, &jobs[n]);
			n++;
		}
	bool any_conflict = false;
	for (size_t i = 0; i < n; i++)
		any_conflict |= jobs[i].fate == FATE_CONFLICT;
	if (!(any_conflict && a->all_or_nothing)) {
		for (size_t i = 0; i < n; i++)
			order[i] = &jobs[i];
		qsort(order, n, sizeof(*order), by_path_down);
		if (!a->dry_run && a->home) {
			int b = begin_run(a, jobs, n, out, &pr, e);
			if (b < 0)
				return b; /* nothing written */
		}
		if (!a->dry_run)
			drop_leftovers(r, jobs, n);
		for (size_t i = 0; i < n; i++)
			run_removal(r, a, pr, order[i]);
		/* A removal that could not be done stops its path's placement;
		 * a rename whose old path stays is no rename. */
		qsort(order, n, sizeof(*order), by_path_up);
		for (size_t i = 0; i < n; i++)
			run_placement(r, a, pr, order[i]);
		if (!a->dry_run && !pr)
			syncfs(lock); /* (the run's end syncs) */
		move_origins(r, a, jobs, n);
	}
	for (size_t i = 0; i < n; i++) {
		struct job *j = &jobs[i];
		const char *outcome;
		switch (j->fate) {
		case FATE_DONE:
			out->applied++;
			outcome = a->dry_run ? "would apply" : "applied";
			if (j->merge) {
				out->merged++;
				out->marked += j->marked;
				outcome = a->dry_run ? "would merge" : "merged";
				j->why = j->marked
						 ? "with conflict markers where both sides changed"
						 : NULL;
			}
			break;
		case FATE_CONFLICT:
			out->conflicts++;
			outcome = "conflict";
			break;
		case FATE_SKIP:
			out->skipped++;
			outcome = "skipped";
			break;
		case FATE_FAILED:
			out->failed++;
			outcome = "failed";
			break;
		default: /* all or nothing, and there was a conflict */
			out->skipped++;
			outcome = "not applied";
			j->why = "another chosen change is a conflict (--all-or-nothing)";
			break;
		}
		if (a->say)
			a->say(a->arg, j->c, outcome, j->why);
	}
	if (pr) {
		struct store_run run;
		json_t *summary = NULL;
		int end = project_run_end(pr, &run, &summary, e);
		json_decref(summary);
		if (end < 0)
			return end;
		out->run = run.id;
		store_run_free(&run);
	}
	return 0;
}

int ov_discard(int homefd, struct store *s, const char *user, const char *thread)
{
	const char *const path[] = { "users", user, "threads" };
	_cleanup_(closep) int tfd = dir_chain_open(homefd, path, 3, false);
	int r = tfd < 0 ? tfd : tree_remove(tfd, thread);

	/* The records last: an overlay half removed is found again. */
	return r < 0 ? r : store_origins_drop(s, user, thread);
}
