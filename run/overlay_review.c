/* overlay_review.c - see overlay.h: the changes of an overlay, each judged
 * against the project now and its origin.
 *
 * The paths looked at are those the agent touched: every entry of the
 * layer, every origin, and every project path below a directory the
 * layer hides (a whiteout's, an opaque one's). Each is resolved through
 * the layer as the view resolves it; one that resolves to the project
 * is not the agent's, and is left out.
 */
#include "overlay.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/fileops.h"
#include "common/hash.h"
#include "common/home.h"
#include "store/diff.h"
#include "store/origins.h"
#include "store/snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A file read whole for a comparison or a diff, at most this long. */
#define OV_READ_MAX (64 << 20)
/* git's test for a binary file: a NUL in its first 8,000 bytes. */
#define OV_BINARY_SAMPLE 8000

int ov_open(int root, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, root, *path ? path : ".", &how, sizeof(how));

	return fd < 0 ? -errno : fd;
}

int ov_parent(int root, const char *path, const char **base)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];

	*base = slash ? slash + 1 : path;
	if (!slash)
		return ov_open(root, "", O_PATH | O_DIRECTORY);
	if ((size_t)(slash - path) >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	return ov_open(root, dir, O_PATH | O_DIRECTORY);
}

/* lstat() of PATH below ROOT: 0, or -ENOENT where nothing is there (or
 * a symlink or a file stands where a directory was), or -errno. */
static int lstat_at(int root, const char *path, struct stat *st)
{
	int fd = ov_open(root, path, O_PATH);

	if (fd < 0)
		return fd == -ELOOP || fd == -ENOTDIR ? -ENOENT : fd;
	int r = fstatat(fd, "", st, AT_EMPTY_PATH) < 0 ? -errno : 0;
	close(fd);
	return r;
}

/* ---- the paths looked at ------------------------------------------------ */

struct paths {
	char **v;
	size_t n, cap;
};

static int paths_add(struct paths *p, const char *path)
{
	if (array_grow(p->v, p->n, p->cap) < 0)
		return -ENOMEM;
	return (p->v[p->n] = strdup(path)) ? (p->n++, 0) : -ENOMEM;
}

static int by_string(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void join(char *out, size_t size, const char *dir, const char *name)
{
	if ((size_t)snprintf(out, size, "%s%s%s", dir, *dir ? "/" : "", name) >= size)
		out[0] = '\0'; /* too long: the root's, which no mark is named */
}

/* Calls FN(ARG, NAME) for each entry of directory PATH below ROOT (none
 * if it is not one). */
static int each_entry(int root, const char *path, int (*fn)(void *arg, const char *name), void *arg)
{
	int fd = ov_open(root, path, O_RDONLY | O_DIRECTORY);

	if (fd < 0)
		return fd == -ENOENT || fd == -ENOTDIR || fd == -ELOOP ? 0 : fd;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	int r = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			r = fn(arg, e->d_name);
	closedir(d);
	return r;
}

struct walk {
	int root;
	char path[PATH_MAX];
	struct paths *out;
	bool layer; /* walking the layer (else: the project) */
	int project_fd;
};

static int walk_tree(struct walk *w);

static int walk_entry(void *arg, const char *name)
{
	struct walk *w = arg;
	struct stat st;
	size_t len = strlen(w->path);
	int r;

	if (w->layer && !strcmp(name, OVERLAY_OPAQUE))
		return 0;
	if (len + 1 + strlen(name) >= sizeof(w->path))
		return -ENAMETOOLONG;
	snprintf(w->path + len, sizeof(w->path) - len, "%s%s", len ? "/" : "", name);
	if ((r = paths_add(w->out, w->path)) == 0 && (r = lstat_at(w->root, w->path, &st)) == 0) {
		bool hides = false;
		if (w->layer && S_ISLNK(st.st_mode)) {
			_cleanup_(closep) int fd = ov_open(w->root, w->path, O_PATH);
			hides = fd >= 0 && home_is_whiteout(fd);
		} else if (w->layer && S_ISDIR(st.st_mode)) {
			char mark[PATH_MAX];
			struct stat ms;
			join(mark, sizeof(mark), w->path, OVERLAY_OPAQUE);
			hides = lstat_at(w->root, mark, &ms) == 0;
		}
		if (hides) {
			/* What the project holds below is the agent's to judge. */
			struct walk p = { .root = w->project_fd, .out = w->out };
			snprintf(p.path, sizeof(p.path), "%s", w->path);
			r = walk_tree(&p);
		}
		if (r == 0 && S_ISDIR(st.st_mode))
			r = walk_tree(w);
	} else if (r == -ENOENT) {
		r = 0; /* gone meanwhile */
	}
	w->path[len] = '\0';
	return r;
}

static int walk_tree(struct walk *w)
{
	return each_entry(w->root, w->path, walk_entry, w);
}

/* ---- the origins ---------------------------------------------------------- */

struct origins {
	struct store_origin *v;
	size_t n, cap;
};

static int origin_keep(void *arg, const struct store_origin *o)
{
	struct origins *os = arg;

	if (array_grow(os->v, os->n, os->cap) < 0)
		return -ENOMEM;
	os->v[os->n] = *o;
	return (os->v[os->n].path = strdup(o->path)) ? (os->n++, 0) : -ENOMEM;
}

static int by_origin_path(const void *a, const void *b)
{
	return strcmp(((const struct store_origin *)a)->path,
		      ((const struct store_origin *)b)->path);
}

static const struct store_origin *origin_of(const struct origins *os, const char *path)
{
	struct store_origin key = { .path = path };

	return os->n ? bsearch(&key, os->v, os->n, sizeof(*os->v), by_origin_path) : NULL;
}

static void origins_free(struct origins *os)
{
	for (size_t i = 0; i < os->n; i++)
		free((char *)os->v[i].path);
	free(os->v);
}

/* ---- one path ------------------------------------------------------------- */

enum ov_side { SIDE_PROJECT, SIDE_ABSENT, SIDE_LAYER };

/* Resolves PATH through the layer as the view does: the layer's object
 * (*ST), nothing (a whiteout, an opaque directory or a file on the way),
 * or the project's. */
static enum ov_side resolve(int layer, const char *path, struct stat *st)
{
	char at[PATH_MAX];
	bool lower = true; /* the project shows through where the layer has nothing */
	const char *p = path;

	for (;;) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - path) : strlen(path);
		if (len >= sizeof(at))
			return SIDE_ABSENT;
		memcpy(at, path, len);
		at[len] = '\0';
		if (lstat_at(layer, at, st) < 0)
			return lower ? SIDE_PROJECT : SIDE_ABSENT;
		if (S_ISLNK(st->st_mode)) {
			_cleanup_(closep) int fd = ov_open(layer, at, O_PATH);
			if (fd >= 0 && home_is_whiteout(fd))
				return SIDE_ABSENT;
		}
		if (!slash)
			return SIDE_LAYER;
		if (!S_ISDIR(st->st_mode))
			return SIDE_ABSENT;
		char mark[PATH_MAX];
		struct stat ms;
		join(mark, sizeof(mark), at, OVERLAY_OPAQUE);
		if (lstat_at(layer, mark, &ms) == 0)
			lower = false;
		p = slash + 1;
	}
}

/* Reads regular file PATH below ROOT whole (at most OV_READ_MAX bytes)
 * into *DATA (malloc'd, NUL-terminated) and *LEN. */
static int read_whole(int root, const char *path, char **data, size_t *len)
{
	_cleanup_(closep) int fd = ov_open(root, path, O_RDONLY);
	struct stat st;

	*data = NULL;
	*len = 0;
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (st.st_size > OV_READ_MAX)
		return -EFBIG;
	char *buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	size_t got = 0;
	ssize_t n;
	while (got < (size_t)st.st_size && (n = read(fd, buf + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	*data = buf;
	*len = got;
	return 0;
}

/* The SHA-256 of regular file PATH below ROOT: 0, or -errno. */
static int hash_file(int root, const char *path, uint8_t out[SHA256_BYTES])
{
	_cleanup_(closep) int fd = ov_open(root, path, O_RDONLY);

	return fd < 0 ? fd : file_sha256(fd, out);
}

/* Whether regular files PATH below A and B hold the same bytes. */
static bool same_content(int a, int b, const char *path, off_t size)
{
	uint8_t ha[SHA256_BYTES], hb[SHA256_BYTES];

	if (size == 0)
		return true;
	return hash_file(a, path, ha) == 0 && hash_file(b, path, hb) == 0 &&
	       !memcmp(ha, hb, SHA256_BYTES);
}

static bool same_target(int a, int b, const char *path)
{
	char ta[PATH_MAX + 1], tb[PATH_MAX + 1];
	_cleanup_(closep) int fa = ov_open(a, path, O_PATH);
	_cleanup_(closep) int fb = ov_open(b, path, O_PATH);
	ssize_t na = fa < 0 ? -1 : readlinkat(fa, "", ta, PATH_MAX);
	ssize_t nb = fb < 0 ? -1 : readlinkat(fb, "", tb, PATH_MAX);

	return na >= 0 && na == nb && !memcmp(ta, tb, (size_t)na);
}

/* Whether the overlay's object (layer, LS) and the project's (PS) at
 * PATH are the same to the apply: type, and a file's mode and content, a
 * symlink's target. Directories are the same whatever their mode. */
static bool same_object(const struct ov_review *r, const char *path, const struct stat *ls,
			const struct stat *ps)
{
	if ((ls->st_mode & S_IFMT) != (ps->st_mode & S_IFMT))
		return false;
	if (S_ISREG(ls->st_mode))
		return (ls->st_mode & 07777) == (ps->st_mode & 07777) &&
		       ls->st_size == ps->st_size &&
		       same_content(r->layer_fd, r->project_fd, path, ls->st_size);
	if (S_ISLNK(ls->st_mode))
		return same_target(r->layer_fd, r->project_fd, path);
	return S_ISDIR(ls->st_mode) || (ls->st_mode & 07777) == (ps->st_mode & 07777);
}

/* Whether the project's object PS at PATH is origin O still: the same
 * version (inode, size, mtime and ctime: ctime moves with any change and
 * no one sets it), the same content and mode, or for a directory a
 * directory (what it holds is judged path by path). */
static bool unchanged_since(const struct ov_review *r, const char *path, const struct stat *ps,
			    const struct store_origin *o)
{
	if ((ps->st_mode & S_IFMT) != (o->mode & S_IFMT))
		return false;
	if (S_ISDIR(ps->st_mode))
		return true;
	if ((int64_t)ps->st_dev == o->dev && (int64_t)ps->st_ino == o->ino &&
	    ps->st_size == o->size && timespec_ns(&ps->st_mtim) == o->mtime_ns &&
	    timespec_ns(&ps->st_ctim) == o->ctime_ns)
		return true;
	uint8_t h[SHA256_BYTES];
	return S_ISREG(ps->st_mode) && o->hashed && (ps->st_mode & 07777) == (o->mode & 07777) &&
	       ps->st_size == o->size && hash_file(r->project_fd, path, h) == 0 &&
	       !memcmp(h, o->sha256, SHA256_BYTES);
}

static int change_add(struct ov_review *r, const struct ov_change *c)
{
	if (array_grow(r->v, r->n, r->cap) < 0)
		return -ENOMEM;
	r->v[r->n] = *c;
	if (!(r->v[r->n].path = strdup(c->path)))
		return -ENOMEM;
	r->conflicts += c->conflict != NULL;
	r->n++;
	return 0;
}

/* Judges PATH: a change of R, or none. */
static int judge(struct ov_review *r, const struct origins *os, const char *path)
{
	struct ov_change c = { .path = (char *)path };
	enum ov_side side = resolve(r->layer_fd, path, &c.overlay);

	if (side == SIDE_PROJECT)
		return 0; /* not the agent's */
	c.in_overlay = side == SIDE_LAYER;
	int e = lstat_at(r->project_fd, path, &c.project);
	if (e < 0 && e != -ENOENT)
		return e;
	c.in_project = e == 0;
	if (c.in_overlay == c.in_project &&
	    (!c.in_overlay || same_object(r, path, &c.overlay, &c.project)))
		return 0; /* the project is as the overlay shows it */
	c.kind = !c.in_project ? OV_ADDED : !c.in_overlay ? OV_DELETED : OV_MODIFIED;
	const struct store_origin *o = origin_of(os, path);
	c.origin = o != NULL;
	if ((c.base_hashed = o && o->hashed))
		memcpy(c.base_sha256, o->sha256, SHA256_BYTES);
	if (o && !c.in_project)
		c.conflict = "removed on the project since the agent first changed it";
	else if (o && !unchanged_since(r, path, &c.project, o))
		c.conflict = c.in_overlay ? "changed on the project since the agent copied it"
					  : "changed on the project since the agent removed it";
	else if (!o && c.in_project)
		c.conflict = c.in_overlay
				     ? "made on the project too"
				     : "made on the project since the agent removed its directory";
	return change_add(r, &c);
}

/* ---- renames -------------------------------------------------------------- */

/* Pairs each deleted file whose origin has a hash with an added file of
 * that content: one rename, at the added path (git diff -M's 100%). */
static int pair_renames(struct ov_review *r, const struct origins *os)
{
	for (size_t i = 0; i < r->n; i++) {
		struct ov_change *d = &r->v[i];
		const struct store_origin *o = origin_of(os, d->path);
		if (d->kind != OV_DELETED || !o || !o->hashed || !S_ISREG(o->mode) ||
		    !S_ISREG(d->project.st_mode))
			continue;
		for (size_t j = 0; j < r->n; j++) {
			struct ov_change *a = &r->v[j];
			uint8_t h[SHA256_BYTES];
			if (a->kind != OV_ADDED || !S_ISREG(a->overlay.st_mode) ||
			    a->overlay.st_size != o->size ||
			    hash_file(r->layer_fd, a->path, h) < 0 ||
			    memcmp(h, o->sha256, SHA256_BYTES))
				continue;
			a->kind = OV_RENAMED;
			a->from = d->path;
			a->in_project = true;
			a->project = d->project;
			if (!a->conflict)
				a->conflict = d->conflict;
			else if (d->conflict)
				r->conflicts--;
			d->path = NULL; /* dropped below */
			break;
		}
	}
	size_t k = 0;
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].path)
			r->v[k++] = r->v[i];
	r->n = k;
	return 0;
}

/* The workspace's virtual prefix of a read mark's path. */
#define WORKSPACE_PREFIX "/mnt/user-data/workspace/"

/* A read mark of the thread: a stale read if its path still shows the
 * project's file and that file is no longer the version read. */
static int stale_read(void *arg, const struct store_mark *m)
{
	struct ov_review *r = arg;
	const char *path = m->path;
	struct stat st;

	if (strncmp(path, WORKSPACE_PREFIX, sizeof(WORKSPACE_PREFIX) - 1))
		return 0;
	path += sizeof(WORKSPACE_PREFIX) - 1;
	if (resolve(r->layer_fd, path, &st) != SIDE_PROJECT)
		return 0; /* the agent's own now: a change, judged as one */
	if (lstat_at(r->project_fd, path, &st) == 0 && (uint64_t)st.st_ino == m->ino &&
	    st.st_size == m->size && timespec_ns(&st.st_mtim) == m->mtime_ns &&
	    timespec_ns(&st.st_ctim) == m->ctime_ns)
		return 0;
	if (array_grow(r->stale, r->n_stale, r->cap_stale) < 0)
		return -ENOMEM;
	return (r->stale[r->n_stale] = strdup(path)) ? (r->n_stale++, 0) : -ENOMEM;
}

int ov_review(int layer_fd, int project_fd, struct store *s, const char *user, const char *thread,
	      struct ov_review *out)
{
	struct paths p = { 0 };
	struct origins os = { 0 };
	struct walk w = { .root = layer_fd, .out = &p, .layer = true, .project_fd = project_fd };
	int r;

	memset(out, 0, sizeof(*out));
	out->layer_fd = layer_fd;
	out->project_fd = project_fd;
	r = store_origins_each(s, user, thread, origin_keep, &os);
	if (r == 0)
		r = walk_tree(&w);
	for (size_t i = 0; r == 0 && i < os.n; i++)
		r = paths_add(&p, os.v[i].path);
	if (r == 0) {
		qsort(p.v, p.n, sizeof(*p.v), by_string);
		if (os.n)
			qsort(os.v, os.n, sizeof(*os.v), by_origin_path);
	}
	for (size_t i = 0; r == 0 && i < p.n; i++)
		if (!i || strcmp(p.v[i], p.v[i - 1]))
			r = judge(out, &os, p.v[i]);
	if (r == 0)
		r = pair_renames(out, &os);
	if (r == 0)
		r = store_marks_each(s, user, thread, stale_read, out);
	if (r == 0 && out->n_stale)
		qsort(out->stale, out->n_stale, sizeof(*out->stale), by_string);
	for (size_t i = 0; i < p.n; i++)
		free(p.v[i]);
	free(p.v);
	origins_free(&os);
	if (r < 0)
		ov_review_free(out);
	return r;
}

void ov_review_free(struct ov_review *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->v[i].path);
		free(r->v[i].from);
	}
	free(r->v);
	for (size_t i = 0; i < r->n_stale; i++)
		free(r->stale[i]);
	free(r->stale);
	memset(r, 0, sizeof(*r));
}

/* ---- naming and showing --------------------------------------------------- */

bool ov_is_dir(const struct ov_change *c)
{
	return c->in_overlay ? S_ISDIR(c->overlay.st_mode) : S_ISDIR(c->project.st_mode);
}

const char *ov_kind_name(enum ov_kind k)
{
	static const char *const names[] = { "added", "modified", "deleted", "renamed" };
	return names[k];
}

char ov_status_letter(const struct ov_change *c)
{
	if (c->kind == OV_MODIFIED &&
	    (c->overlay.st_mode & S_IFMT) != (c->project.st_mode & S_IFMT))
		return 'T';
	return "AMDR"[c->kind];
}

/* Whether PATH is one of the N PATHS or below one. */
static bool path_among(const char *path, const char *const *paths, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(paths[i]);
		while (len && paths[i][len - 1] == '/')
			len--;
		if (!strncmp(path, paths[i], len) && (path[len] == '\0' || path[len] == '/'))
			return true;
	}
	return false;
}

bool ov_chosen(const struct ov_change *c, const char *const *paths, size_t n)
{
	return !n || path_among(c->path, paths, n) || (c->from && path_among(c->from, paths, n));
}

bool ov_in_git(const char *path)
{
	for (const char *p = path; *p;) {
		size_t len = strcspn(p, "/");
		if (len == 4 && !memcmp(p, ".git", 4))
			return true;
		p += len + (p[len] == '/');
	}
	return false;
}

bool ov_noise(const char *path)
{
	static const char *const noise[] = {
		"node_modules", "target",	 ".venv",	"venv",	       "__pycache__",
		".tox",		".gradle",	 "dist",	"build",       ".next",
		".cache",	".pytest_cache", ".mypy_cache", ".nyc_output",
	};
	for (const char *p = path; *p;) {
		size_t len = strcspn(p, "/");
		for (size_t i = 0; i < sizeof(noise) / sizeof(*noise); i++)
			if (strlen(noise[i]) == len && !memcmp(p, noise[i], len))
				return true;
		p += len + (p[len] == '/');
	}
	return false;
}

/* ---- the diff ------------------------------------------------------------- */

struct out {
	char **s;
	size_t *len;
	int failed;
	bool secrets;	       /* summarize a text that holds a credential */
	enum ov_hidden hidden; /* why a block's content is not shown */
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	char *add;
	va_list ap;

	va_start(ap, fmt);
	int n = vasprintf(&add, fmt, ap);
	va_end(ap);
	if (n < 0 || o->failed) {
		o->failed = -ENOMEM;
		if (n >= 0)
			free(add);
		return;
	}
	char *s = realloc(*o->s, *o->len + (size_t)n + 1);
	if (!s) {
		free(add);
		o->failed = -ENOMEM;
		return;
	}
	memcpy(s + *o->len, add, (size_t)n + 1);
	*o->s = s;
	*o->len += (size_t)n;
	free(add);
}

/* git's mode of an object: 100644, 100755 or 120000. */
static unsigned git_mode(const struct stat *st)
{
	return S_ISLNK(st->st_mode) ? 0120000 : (st->st_mode & 0111) ? 0100755 : 0100644;
}

/* The content git diffs of an object: a file's bytes, a symlink's
 * target. */
static int content_of(int root, const char *path, const struct stat *st, char **data, size_t *len)
{
	if (!S_ISLNK(st->st_mode))
		return read_whole(root, path, data, len);
	_cleanup_(closep) int fd = ov_open(root, path, O_PATH);
	char *t = malloc(PATH_MAX + 1);
	ssize_t n = fd < 0 || !t ? -1 : readlinkat(fd, "", t, PATH_MAX);
	if (n < 0) {
		free(t);
		return fd < 0 ? fd : -ENOMEM;
	}
	t[n] = '\0';
	*data = t;
	*len = (size_t)n;
	return 0;
}

static bool binary(const char *data, size_t len)
{
	return memchr(data, '\0', len < OV_BINARY_SAMPLE ? len : OV_BINARY_SAMPLE) != NULL;
}

/* One git diff block: OLD_PATH's OLD object (NULL: none) to NEW_PATH's
 * NEW (NULL: none). */
static int diff_block(const struct ov_review *r, struct out *o, const char *old_path,
		      const struct stat *old, const char *new_path, const struct stat *new)
{
	_cleanup_(freep) char *a = NULL, *b = NULL;
	size_t alen = 0, blen = 0;
	char vpath[PATH_MAX];
	int e;

	put(o, "diff --git a/%s b/%s\n", old_path, new_path);
	if (!old)
		put(o, "new file mode %06o\n", git_mode(new));
	else if (!new)
		put(o, "deleted file mode %06o\n", git_mode(old));
	else if (git_mode(old) != git_mode(new))
		put(o, "old mode %06o\nnew mode %06o\n", git_mode(old), git_mode(new));
	if (old && new &&strcmp(old_path, new_path))
		put(o, "similarity index 100%%\nrename from %s\nrename to %s\n", old_path,
		    new_path);
	snprintf(vpath, sizeof(vpath), "/mnt/user-data/workspace/%s", new_path);
	if (snapshot_sensitive(vpath) && !S_ISLNK((new ? new : old)->st_mode)) {
		/* As run reports: a secret-looking file's content is not shown. */
		put(o,
		    "Binary files %s%s and %s%s differ (sensitive-looking name: content not"
		    " shown)\n",
		    old ? "a/" : "/dev/null", old ? old_path : "", new ? "b/" : "/dev/null",
		    new ? new_path : "");
		o->hidden = OV_SECRET_NAME;
		return o->failed;
	}
	if (old && (e = content_of(r->project_fd, old_path, old, &a, &alen)) < 0)
		return e;
	if (new && (e = content_of(r->layer_fd, new_path, new, &b, &blen)) < 0)
		return e;
	if ((a && binary(a, alen)) || (b && binary(b, blen))) {
		put(o, "Binary files %s%s and %s%s differ (%zu to %zu bytes)\n",
		    old ? "a/" : "/dev/null", old ? old_path : "", new ? "b/" : "/dev/null",
		    new ? new_path : "", alen, blen);
		o->hidden = OV_BINARY;
		return o->failed;
	}
	if (o->secrets &&
	    ((a && snapshot_text_secret(a, alen)) || (b && snapshot_text_secret(b, blen)))) {
		put(o,
		    "Binary files %s%s and %s%s differ (a credential in its content: not"
		    " shown)\n",
		    old ? "a/" : "/dev/null", old ? old_path : "", new ? "b/" : "/dev/null",
		    new ? new_path : "");
		o->hidden = OV_SECRET_CONTENT;
		return o->failed;
	}
	char from[PATH_MAX + 2], to[PATH_MAX + 2];
	snprintf(from, sizeof(from), old ? "a/%s" : "/dev/null", old_path);
	snprintf(to, sizeof(to), new ? "b/%s" : "/dev/null", new_path);
	struct diff d;
	if ((e = diff_git(a ? a : "", alen, b ? b : "", blen, from, to, SIZE_MAX, &d)) < 0)
		return e;
	put(o, "%s", d.text);
	diff_free(&d);
	return o->failed;
}

/* The diff of C, appended to O's text. */
static int diff_change(const struct ov_review *r, const struct ov_change *c, struct out *o)
{
	if (ov_is_dir(c) && (!c->in_overlay || !c->in_project || S_ISDIR(c->overlay.st_mode)) &&
	    (!c->in_project || S_ISDIR(c->project.st_mode)))
		return 0; /* git shows no directories */
	const struct stat *old = c->in_project && !S_ISDIR(c->project.st_mode) ? &c->project : NULL;
	const struct stat *new = c->in_overlay && !S_ISDIR(c->overlay.st_mode) ? &c->overlay : NULL;
	const char *old_path = c->from ? c->from : c->path;

	if (old && new && (old->st_mode & S_IFMT) != (new->st_mode &S_IFMT)) {
		/* A type changed: git's removal, then addition. */
		int e = diff_block(r, o, old_path, old, old_path, NULL);
		return e < 0 ? e : diff_block(r, o, c->path, NULL, c->path, new);
	}
	return diff_block(r, o, old ? old_path : c->path, old, c->path, new);
}

int ov_diff(const struct ov_review *r, const struct ov_change *c, char **out, size_t *len,
	    enum ov_hidden *hidden)
{
	struct out o = { out, len, 0, true, OV_SHOWN };
	int e = diff_change(r, c, &o);

	if (hidden)
		*hidden = o.hidden;
	return e;
}
