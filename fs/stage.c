/* stage.c - see stage.h. */
#include "stage.h"
#include "confine.h"
#include "inode.h"
#include "view.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/fileops.h"
#include "common/home.h"
#include "common/lockcheck.h"
#include "common/log.h"
#include "common/proc.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define STAGE_LOCKS 64

/* The staging area of one read-write domain. */
struct stage_area {
	int fd;	      /* O_PATH, or -1: changes go in place */
	bool tmpfile; /* it supports O_TMPFILE */
	/* The root at whose top it was opened (STAGE_HIDDEN_NAME, hidden
	 * from the view even where the area is not used); NULL: the
	 * thread's own .stage, or none. */
	const struct root *hidden;
};

struct stager {
	bool staging, strict;
	_Atomic uint64_t names; /* the next area_name(): counted from a random start */
	pthread_mutex_t locks[STAGE_LOCKS];
	struct stage_area areas[VIEW_MAX_ROOTS]; /* by domain */
};

enum stage_state {
	STAGE_ACTIVE,	 /* holds unpublished changes */
	STAGE_PUBLISHED, /* is the file at the name now */
	STAGE_ORPHAN,	 /* its name went away; never published */
};

struct stage {
	int fd; /* read-write */
	enum stage_state state;
	int error; /* first failed change (ACTIVE): the save fails */
	/* ACTIVE: changed through a handle since it was made or emptied by
	 * an O_TRUNC (stage_close_defers()). */
	bool changed;
	char name[40]; /* in the area, if not an O_TMPFILE */
	/* While the file is open, it keeps the inode number it had when it
	 * was first staged: programs that hold a file open and compare its
	 * fstat() with a stat() of its path (SQLite does, to detect a moved
	 * database) must not see each save as a different file. PIN holds
	 * that inode, so its number cannot be given to another file. */
	ino_t shown_ino;
	int pin;
	struct file_version base; /* what it may replace */
};

static struct file_version version_of(const struct stat *st)
{
	return (struct file_version){ st->st_ino, st->st_size, st->st_mtim };
}

/* True if ST is version V. Size and mtime, not ctime: the view's own
 * metadata changes (chmod, xattrs, links) move ctime, and any change of
 * content moves mtime. */
static bool version_is(const struct file_version *v, const struct stat *st)
{
	return v->ino == st->st_ino && v->size == st->st_size &&
	       v->mtime.tv_sec == st->st_mtim.tv_sec && v->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/* ---- staging areas ------------------------------------------------------ */

static int mount_id(int fd, uint64_t *id)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) < 0)
		return neg_errno();
	if (!(stx.stx_mask & STATX_MNT_ID))
		return -EOPNOTSUPP;
	*id = stx.stx_mnt_id;
	return 0;
}

/* True if a file in directory A can be renamed into directory B. */
static bool same_mount(int a, int b)
{
	struct stat sa, sb;
	uint64_t ma, mb;

	if (fstat(a, &sa) < 0 || fstat(b, &sb) < 0 || sa.st_dev != sb.st_dev)
		return false;
	if (mount_id(a, &ma) < 0 || mount_id(b, &mb) < 0)
		return true; /* no mount ids: the rename itself will tell */
	return ma == mb;
}

/* Removes what an interrupted save left in the area AREA (named stages;
 * O_TMPFILE ones vanish with the daemon). */
static void sweep(int area, const char *where)
{
	_cleanup_(closedirp) DIR *d = NULL;
	int fd = confine_opendir(area);
	struct dirent *de;

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		log_warn("cannot sweep the staging area %s: %s", where,
			 strerror(fd < 0 ? -fd : errno));
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (unlinkat(dirfd(d), de->d_name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) < 0)
			log_warn("cannot remove the leftover stage %s/%s: %s", where, de->d_name,
				 strerror(errno));
		else
			log_info(
				"removed the leftover stage %s/%s (%jd bytes) of a save that was interrupted; the file it was for kept its previous content",
				where, de->d_name, (intmax_t)st.st_size);
	}
}

/* The area of a domain whose first read-write root is R, when the
 * thread's own area is on another filesystem: a hidden directory at the
 * top of R, per user and thread (one host directory may be mounted into
 * several threads' views). Made if CREATE, else only opened; once it
 * exists, A hides it. */
static int hidden_area(struct stage_area *a, const struct root *r, const struct view_config *cfg,
		       bool create)
{
	const char *const path[] = { STAGE_HIDDEN_NAME, cfg->user, cfg->thread };
	int fd = dir_chain_open(r->top->fd, path, 3, create);

	if (fd >= 0)
		a->hidden = r;
	return fd;
}

static bool tmpfile_works(int area)
{
	int fd = openat(area, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* The thread's own area, $SBX_HOME/users/USER/threads/THREAD/.stage;
 * made if CREATE, else only opened. */
static int thread_area(const struct view_config *cfg, bool create)
{
	const char *const path[] = { "users", cfg->user, "threads", cfg->thread, STAGE_DIR };
	_cleanup_(closep) int home = home_open(cfg->home);

	return home < 0 ? home : dir_chain_open(home, path, 5, create);
}

static void stager_free(struct stager *sg)
{
	if (!sg)
		return;
	for (size_t d = 0; d < VIEW_MAX_ROOTS; d++)
		closep(&sg->areas[d].fd);
	for (size_t i = 0; i < STAGE_LOCKS; i++)
		pthread_mutex_destroy(&sg->locks[i]);
	free(sg);
}

int stage_setup(struct view *v, const struct view_config *cfg, char *err, size_t errlen)
{
	_cleanup_(closep) int own = -1;
	struct stager *sg = calloc(1, sizeof(*sg));

	if (!sg) {
		snprintf(err, errlen, "cannot set up staging: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	for (size_t i = 0; i < STAGE_LOCKS; i++)
		pthread_mutex_init(&sg->locks[i], NULL);
	for (size_t d = 0; d < VIEW_MAX_ROOTS; d++)
		sg->areas[d].fd = -1;
	sg->staging = cfg->staging;
	sg->strict = cfg->staging && cfg->staging_strict;
	uint64_t start;
	if (getrandom(&start, sizeof(start), 0) != sizeof(start))
		start = (uint64_t)realtime_ns() ^ (uint64_t)getpid() << 40;
	atomic_init(&sg->names, start);
	/* Unstaged, the areas that exist are still opened: stage_sweep()
	 * removes what an earlier mount that staged left there. */
	own = thread_area(cfg, sg->staging);
	if (own < 0 && sg->staging) {
		char area[PATH_MAX];
		home_thread_path(cfg->home, cfg->user, cfg->thread, STAGE_DIR, area, sizeof(area));
		snprintf(err, errlen, "cannot create the staging area %s: %s", area,
			 strerror(-own));
		stager_free(sg);
		return own;
	}
	for (size_t d = 0; own >= 0 && d < v->ndomains; d++) {
		struct stage_area *a = &sg->areas[d];
		const struct root *first = NULL;
		int area;

		if (v->domains[d].read_only)
			continue;
		for (size_t i = 0; i < v->nroots && !first; i++)
			if (v->roots[i].top->domain == d)
				first = &v->roots[i];
		if (!first)
			continue;
		if (same_mount(own, first->top->fd))
			area = fcntl(own, F_DUPFD_CLOEXEC, 0);
		else
			area = hidden_area(a, first, cfg, sg->staging);
		if (area < 0 && !sg->staging)
			continue;
		if (area < 0 || !same_mount(area, first->top->fd)) {
			log_warn(
				"changes under %s are written in place, not staged: no staging area on its filesystem (%s)",
				first->host, area < 0 ? strerror(-area) : "another mount");
			if (area >= 0)
				close(area);
			continue;
		}
		a->fd = area;
		a->tmpfile = tmpfile_works(area);
	}
	v->stager = sg;
	return 0;
}

void stage_sweep(struct view *v, const struct view_config *cfg)
{
	struct stager *sg = v->stager;
	char where[PATH_MAX + 32];

	for (size_t d = 0; sg && d < v->ndomains; d++) {
		struct stage_area *a = &sg->areas[d];

		if (a->fd < 0)
			continue;
		if (a->hidden)
			snprintf(where, sizeof(where), "%s/%s/%s/%s", a->hidden->host,
				 STAGE_HIDDEN_NAME, cfg->user, cfg->thread);
		else
			snprintf(where, sizeof(where), "the thread's .stage");
		sweep(a->fd, where);
		if (!sg->staging)
			closep(&a->fd); /* nothing goes there */
	}
}

bool stage_possible(struct view *v, struct inode *ino)
{
	return v->stager->staging && S_ISREG(ino->type) && v->stager->areas[ino->domain].fd >= 0;
}

bool stage_strict(const struct view *v)
{
	return v->stager->strict;
}

bool stage_area_name(const struct view *v, const struct inode *dir, const char *name)
{
	return dir->root && v->stager->areas[dir->domain].hidden == dir->root &&
	       !strcmp(name, STAGE_HIDDEN_NAME);
}

/* The area of INO's domain (it has one: stage_possible()). */
static const struct stage_area *area_of(const struct view *v, const struct inode *ino)
{
	return &v->stager->areas[ino->domain];
}

/* ---- locking ------------------------------------------------------------ */

static pthread_mutex_t *lock_of(struct view *v, struct inode *ino)
{
	uintptr_t h = (uintptr_t)ino;

	return &v->stager->locks[(h >> 6 ^ h >> 12) % STAGE_LOCKS];
}

void stage_lock(struct view *v, struct inode *ino)
{
	lock_check_take(LOCK_STAGE);
	pthread_mutex_lock(lock_of(v, ino));
}

void stage_unlock(struct view *v, struct inode *ino)
{
	pthread_mutex_unlock(lock_of(v, ino));
	lock_check_drop(LOCK_STAGE);
}

bool stage_any(struct inode *ino)
{
	return atomic_load_explicit(&ino->stage, memory_order_acquire) != NULL;
}

/* (locked) INO's stage, or NULL. The lock orders it: relaxed. It is
 * stored with release only for stage_any(). */
static struct stage *stage_of(const struct inode *ino)
{
	return atomic_load_explicit(&ino->stage, memory_order_relaxed);
}

int stage_io_fd(struct inode *ino, int hfd)
{
	assert_held(LOCK_STAGE);
	struct stage *s = stage_of(ino);

	return s ? s->fd : hfd;
}

int stage_active_fd(struct inode *ino)
{
	assert_held(LOCK_STAGE);
	struct stage *s = stage_of(ino);

	return s && s->state == STAGE_ACTIVE ? s->fd : -1;
}

static void stage_free(struct inode *ino)
{
	struct stage *s = stage_of(ino);

	if (!s)
		return;
	atomic_store_explicit(&ino->stage, NULL, memory_order_release);
	close(s->fd);
	if (s->pin >= 0)
		close(s->pin);
	free(s);
}

void stage_attr(struct inode *ino, struct stat *st)
{
	assert_held(LOCK_STAGE);
	struct stage *s = stage_of(ino);

	if (!s)
		return;
	st->st_ino = s->shown_ino;
	if (s->state == STAGE_ACTIVE)
		st->st_nlink = 1; /* the file it will replace has one */
}

/* ---- what a save may replace -------------------------------------------- */

/* True while INO's saves have a base of their own (an unpublished stage
 * holds it). */
static bool base_held(const struct inode *ino)
{
	struct stage *s = stage_of(ino);

	return s && s->state != STAGE_PUBLISHED;
}

void stage_note_open(struct inode *ino, const struct stat *st)
{
	assert_held(LOCK_STAGE);
	if (base_held(ino))
		return;
	ino->save_base = version_of(st);
	ino->save_base_set = true;
}

void stage_note_change(struct inode *ino, const struct stat *st)
{
	assert_held(LOCK_STAGE);
	stage_note_open(ino, st); /* the same rule */
}

/* ---- making a stage ----------------------------------------------------- */

/* A name no other file in the areas has: this daemon's own names are
 * counted, and one an earlier daemon left (swept at mount, but a lazy
 * unmount's may outlive that) was counted from another random start. */
static void area_name(struct view *v, const char *kind, char name[40])
{
	uint64_t n = atomic_fetch_add_explicit(&v->stager->names, 1, memory_order_relaxed);

	snprintf(name, 40, "%s-%016" PRIx64, kind, n);
}

/* A new file in the area with permission bits MODE: unnamed if the
 * filesystem has O_TMPFILE, else under a name of area_name()'s written
 * into NAME. (The area is 0700: nobody else reaches it whatever MODE
 * says.) */
static int area_create(struct view *v, const struct stage_area *a, mode_t mode, char name[40])
{
	int fd;

	name[0] = '\0';
	if (a->tmpfile) {
		fd = openat(a->fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
		if (fd >= 0 || errno != EOPNOTSUPP)
			return fd < 0 ? neg_errno() : fd;
	}
	area_name(v, "stage", name);
	fd = openat(a->fd, name, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, mode);
	return fd < 0 ? neg_errno() : fd;
}

int stage_for_change(struct view *v, struct inode *ino, int io_fd, const struct stat *known,
		     bool empty)
{
	assert_held(LOCK_STAGE);
	const struct stage_area *a = area_of(v, ino);
	struct stage *old = stage_of(ino), *s;
	struct stat st;
	int fd, r;

	if (old && old->state != STAGE_PUBLISHED) { /* active, or an orphan: keep going */
		if (empty && ftruncate(old->fd, 0) < 0)
			return neg_errno();
		old->changed = !empty;
		return old->fd;
	}
	if (known)
		st = *known;
	else if (fstat(io_fd, &st) < 0)
		return neg_errno();
	/* The copy takes the file's space again until it is published. */
	char why[128];
	if (!empty &&
	    (r = view_charge(v, ino, (uint64_t)st.st_blocks * 512, 0, why, sizeof(why))) < 0) {
		log_warn("refused a save of a %lld-byte file: %s", (long long)st.st_size, why);
		return r;
	}
	/* Its content is read from a descriptor of its own (IO_FD may be
	 * write-only); its attributes, all an empty stage takes, from IO_FD. */
	_cleanup_(closep) int rfd = empty ? -1 : confine_reopen(io_fd, O_RDONLY);
	if (rfd < 0 && !empty)
		return rfd;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->pin = -1;
	fd = area_create(v, a, st.st_mode & 0777, s->name);
	if (fd < 0) {
		free(s);
		return fd;
	}
	r = file_copy_metadata(fd, empty ? io_fd : rfd, &st);
	if (r == 0 && !empty)
		r = file_copy_content(fd, rfd);
	if (r < 0) {
		close(fd);
		if (s->name[0])
			unlinkat(a->fd, s->name, 0);
		free(s);
		return r;
	}
	s->fd = fd;
	s->state = STAGE_ACTIVE;
	s->changed = !empty;
	/* A file that is not what the writers started from (a mapping's
	 * pages written back after a host save) is refused at publication. */
	s->base = ino->save_base_set ? ino->save_base : version_of(&st);
	if (old) {
		/* It replaces a published stage: same file, same number. */
		s->shown_ino = old->shown_ino;
		s->pin = TAKE_FD(old->pin);
	} else {
		s->shown_ino = st.st_ino;
		s->pin = confine_reopen(io_fd, O_PATH);
	}
	stage_free(ino);
	atomic_store_explicit(&ino->stage, s, memory_order_release);
	return fd;
}

bool stage_close_defers(const struct view *v, struct inode *ino, pid_t pid)
{
	assert_held(LOCK_STAGE);
	struct stage *s = stage_of(ino);

	return s && s->state == STAGE_ACTIVE && !s->changed && !s->error &&
	       proc_writes_ino(pid, view_ino(v, ino, s->shown_ino));
}

void stage_failed(struct inode *ino, int err)
{
	assert_held(LOCK_STAGE);
	struct stage *s = stage_of(ino);

	if (s && s->state == STAGE_ACTIVE && !s->error)
		s->error = err;
}

/* ---- publication's steps (their order: change_publish(), ops_change.c) -- */

static void discard(struct view *v, struct inode *ino)
{
	struct stage *s = stage_of(ino);

	atomic_store_explicit(&ino->stale_pages, true, memory_order_release);

	if (s->name[0])
		unlinkat(area_of(v, ino)->fd, s->name, 0);
	stage_free(ino);
}

void stage_discard(struct view *v, struct inode *ino)
{
	assert_held(LOCK_STAGE);
	if (stage_of(ino))
		discard(v, ino);
}

int stage_pending(struct inode *ino)
{
	assert_held(LOCK_STAGE);
	struct stage *s = stage_of(ino);

	if (!s || s->state != STAGE_ACTIVE)
		return 0;
	return s->error ? -s->error : 1;
}

int stage_ready(struct view *v, struct inode *ino, bool durable)
{
	assert_held(LOCK_STAGE);
	struct stage *s = stage_of(ino);

	if (durable && fsync(s->fd) < 0) {
		int r = neg_errno();
		discard(v, ino);
		return r;
	}
	return 0;
}

/* Every save gives the file a fresh mtime, an empty save too; with the
 * writeback cache the kernel sets the stage's itself, with its own clock. */
static const struct timespec save_time = { .tv_nsec = UTIME_NOW };

bool stage_replaces(struct inode *ino, const struct stat *st)
{
	assert_held(LOCK_STAGE);
	return version_is(&stage_of(ino)->base, st);
}

int stage_link(struct view *v, struct inode *ino)
{
	assert_held(LOCK_STAGE);
	struct stage *s = stage_of(ino);
	const struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, save_time };
	char path[CONFINE_FD_PATH_MAX];

	if (!v->writeback && futimens(s->fd, ts) < 0)
		return neg_errno();
	if (s->name[0])
		return 0;
	area_name(v, "publish", s->name);
	confine_fd_path(s->fd, path);
	if (linkat(AT_FDCWD, path, area_of(v, ino)->fd, s->name, AT_SYMLINK_FOLLOW) < 0) {
		s->name[0] = '\0';
		return neg_errno();
	}
	return 0;
}

int stage_rename_over(struct view *v, struct inode *ino, int pfd, const char *name)
{
	assert_held(LOCK_STAGE);
	struct stage *s = stage_of(ino);

	if (renameat(area_of(v, ino)->fd, s->name, pfd, name) < 0)
		return neg_errno();
	s->name[0] = '\0';
	s->state = STAGE_PUBLISHED;
	return 0;
}

void stage_published(struct inode *ino, const struct stat *after)
{
	assert_held(LOCK_STAGE);
	ino->save_base = version_of(after);
}

void stage_orphan(struct inode *ino)
{
	assert_held(LOCK_STAGE);
	stage_of(ino)->state = STAGE_ORPHAN;
}

int stage_write_back(struct view *v, struct inode *ino, int fd, bool durable)
{
	assert_held(LOCK_STAGE);
	struct stage *s = stage_of(ino);
	struct stat st;

	if (fstat(s->fd, &st) < 0)
		return neg_errno();
	struct timespec ts[2] = { st.st_atim, v->writeback ? st.st_mtim : save_time };
	int r = file_copy_content(fd, s->fd);
	if (r == 0 && (ftruncate(fd, st.st_size) < 0 || fchmod(fd, st.st_mode & 07777) < 0 ||
		       futimens(fd, ts) < 0 || (durable && fsync(fd) < 0)))
		r = neg_errno();
	return r;
}

void stage_written_back(struct inode *ino, const struct stat *after)
{
	assert_held(LOCK_STAGE);
	if (after)
		ino->save_base = version_of(after);
	stage_free(ino);
}

/* NAME with a conflict suffix that fits in NAME_MAX: "NAME.sbx-conflict-
 * 20261201T120000Z", then "-2", "-3"... for the Nth try. */
static void conflict_name(const char *name, unsigned n, char out[NAME_MAX + 1])
{
	char suffix[64];
	struct tm tm;
	time_t now = time(NULL);
	int len;

	gmtime_r(&now, &tm);
	len = (int)strftime(suffix, sizeof(suffix), ".sbx-conflict-%Y%m%dT%H%M%SZ", &tm);
	if (n > 0)
		len += snprintf(suffix + len, sizeof(suffix) - (size_t)len, "-%u", n + 1);
	snprintf(out, NAME_MAX + 1, "%.*s%s", NAME_MAX - len, name, suffix);
}

int stage_keep_conflict(struct view *v, struct inode *ino, int pfd, const char *name,
			char copy[NAME_MAX + 1], struct stat *st)
{
	assert_held(LOCK_STAGE);
	struct stage *s = stage_of(ino);
	int area = area_of(v, ino)->fd;
	int r = pfd < 0 ? -ENOENT : stage_link(v, ino);

	for (unsigned n = 0; r == 0; n++) {
		conflict_name(name, n, copy);
		if (renameat2(area, s->name, pfd, copy, RENAME_NOREPLACE) == 0)
			break;
		r = neg_errno();
		if (r == -EEXIST && n < 99)
			r = 0;
	}
	if (r < 0)
		return r; /* stage_discard() removes its name in the area */
	s->name[0] = '\0';
	return fstat(s->fd, st) < 0 ? neg_errno() : 0;
}

void stage_drop(struct view *v, struct inode *ino)
{
	assert_held(LOCK_STAGE);
	struct stage *s = stage_of(ino);

	if (s && s->state == STAGE_ACTIVE)
		discard(v, ino);
	else
		stage_free(ino);
}

/* ---- the end ------------------------------------------------------------ */

/* No request runs any more (stage_close()), so nobody holds INO's lock:
 * it is taken all the same, as stage_drop() requires, but with trylock.
 * inode_table_each() calls this with the table lock held, and everywhere
 * else the stage lock comes first and the table lock inside it; a
 * blocking lock here would be the reverse order, a trylock cannot wait
 * for anyone. Failing it would mean a request is still running. */
static void drop_stage(void *arg, struct inode *ino)
{
	struct view *v = arg;
	pthread_mutex_t *lock = lock_of(v, ino);
	int r;

	if (!stage_any(ino))
		return;
	r = pthread_mutex_trylock(lock);
	assert(r == 0);
	if (r != 0)
		return; /* with NDEBUG: leave it to the exit */
	lock_check_take(LOCK_STAGE);
	stage_drop(v, ino);
	pthread_mutex_unlock(lock);
	lock_check_drop(LOCK_STAGE);
}

void stage_close(struct view *v)
{
	if (!v->stager)
		return;
	/* Handles the kernel never released (a lazy unmount): their
	 * unpublished changes go, as with a crash. */
	if (v->inodes)
		inode_table_each(v->inodes, drop_stage, v);
	stager_free(v->stager);
	v->stager = NULL;
}
