/* journal.c - see journal.h. */
#include "journal.h"
#include "watch.h"
#include "confine.h"
#include "gate.h"
#include "inode.h"
#include "runmarks.h"
#include "view.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/fileops.h"
#include "common/home.h"
#include "common/log.h"
#include "common/proc.h"
#include "store/snapshot.h"
#include "store/writer.h"

#include <errno.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct journal {
	_Atomic int64_t run_since; /* the open run's start, or 0 */
	char *home;		   /* whose store: CONTROL_XATTR_HOME */
	char *user, *thread;
	struct {		       /* the open run's directory of pre-images */
		pthread_rwlock_t lock; /* read: using fd; write: changing it */
		int fd;		       /* O_PATH, or -1 */
		uint64_t stamp;	       /* this daemon's, in every object name */
		_Atomic uint32_t seq;
	} keep;
	struct runmarks *marks; /* what was done for the open run, per file */
	struct {		/* the last caller's name */
		pthread_mutex_t lock;
		pid_t pid;
		int64_t at_ns;
		char comm[COMM_MAX];
	} caller;
};

struct journal *journal_new(const char *home, const char *user, const char *thread)
{
	struct journal *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	/* Absolute: sbx compares it with its own home from anywhere. */
	if (!(j->home = realpath(home, NULL)))
		j->home = strdup(home);
	j->user = strdup(user);
	j->thread = strdup(thread);
	j->marks = runmarks_new();
	if (!j->home || !j->user || !j->thread || !j->marks) {
		runmarks_free(j->marks);
		free(j->home);
		free(j->user);
		free(j->thread);
		free(j);
		return NULL;
	}
	pthread_mutex_init(&j->caller.lock, NULL);
	pthread_rwlock_init(&j->keep.lock, NULL);
	j->keep.fd = -1;
	j->keep.stamp = (uint64_t)realtime_ns();
	return j;
}

void journal_free(struct journal *j)
{
	if (!j)
		return;
	if (j->keep.fd >= 0)
		close(j->keep.fd);
	pthread_rwlock_destroy(&j->keep.lock);
	pthread_mutex_destroy(&j->caller.lock);
	runmarks_free(j->marks);
	free(j->home);
	free(j->user);
	free(j->thread);
	free(j);
}

/* The open run's start, or 0. */
static int64_t open_run(struct view *v)
{
	return atomic_load_explicit(&v->journal->run_since, memory_order_acquire);
}

/* Whether INO has MARK (every mark of it) for RUN; FIELD, INO's imaged or
 * kept, caches it, as the marks outlive INO (runmarks.h). With SET, INO
 * has them from now on. */
static bool marked(struct view *v, struct inode *ino, _Atomic int64_t *field, int64_t run,
		   unsigned mark, bool set)
{
	struct runmark_object o;

	if (atomic_load_explicit(field, memory_order_acquire) == run)
		return true;
	o.born_known = inode_identity(v->inodes, ino, &o.dev, &o.ino, &o.born);
	bool had = runmarks_test(v->journal->marks, run, &o, mark, set);
	if (had || set)
		atomic_store_explicit(field, run, memory_order_release);
	return had;
}

/* True if INO (a directory, or a file) is under user-data/workspace or
 * user-data/outputs. */
static bool journaled(struct view *v, struct inode *ino)
{
	struct root *root = inode_root(v->inodes, ino);

	return root && root->top->parent == v->user_data &&
	       (!strcmp(root->name, "workspace") || !strcmp(root->name, "outputs"));
}

/* The command name of PID, read from /proc at most every 100 ms for the
 * same process: a tool making thousands of changes pays for one read. */
static void caller_name(struct view *v, pid_t pid, int64_t now, char comm[COMM_MAX])
{
	struct journal *j = v->journal;

	pthread_mutex_lock(&j->caller.lock);
	bool fresh = j->caller.pid == pid && now - j->caller.at_ns < 100000000;
	if (fresh)
		memcpy(comm, j->caller.comm, 64);
	pthread_mutex_unlock(&j->caller.lock);
	if (fresh)
		return;
	proc_comm(pid, comm);
	pthread_mutex_lock(&j->caller.lock);
	j->caller.pid = pid;
	j->caller.at_ns = now;
	memcpy(j->caller.comm, comm, 64);
	pthread_mutex_unlock(&j->caller.lock);
}

/* An event by the caller of REQ (NULL: process PID, or the daemon if
 * 0), now; its command name goes to COMM. */
static void caller_of(struct view *v, fuse_req_t req, pid_t pid, struct store_event *e,
		      char comm[COMM_MAX])
{
	memset(e, 0, sizeof(*e));
	e->at_ns = realtime_ns();
	e->pid = req ? fuse_req_ctx(req)->pid : pid ? pid : getpid();
	e->comm = comm;
	strcpy(comm, "sbxfs");
	if (req || pid)
		caller_name(v, e->pid, e->at_ns, comm);
}

static void caller(struct view *v, fuse_req_t req, struct store_event *e, char comm[COMM_MAX])
{
	caller_of(v, req, 0, e, comm);
}

/* Queues one event by the caller of REQ (NULL: the daemon). */
static void record(struct view *v, fuse_req_t req, const char *op, const char *path,
		   const char *path2, const struct snap_file *pre)
{
	struct store_event e;
	char comm[COMM_MAX];

	caller(v, req, &e, comm);
	e.op = op;
	e.path = path;
	e.path2 = path2;
	e.pre = pre;
	store_writer_event(v->writer, &e);
}

void journal_note(struct view *v, fuse_req_t req, const char *op, struct inode *dir,
		  const char *name, struct inode *dir2, const char *name2)
{
	char path[PATH_MAX], path2[PATH_MAX];

	if (!v->writer || !journaled(v, dir) || (dir2 && !journaled(v, dir2)))
		return;
	view_path(v, dir, name, path, sizeof(path));
	if (dir2)
		view_path(v, dir2, name2, path2, sizeof(path2));
	record(v, req, op, path, dir2 ? path2 : NULL, NULL);
}

/* ---- pre-images ---------------------------------------------------------- */

/* The open run, or 0; where pre-images of DIR's entries are wanted, their
 * virtual path (NAME in DIR) in PATH. */
static int64_t wanted(struct view *v, struct inode *dir, const char *name, char path[PATH_MAX])
{
	int64_t run = open_run(v);

	if (!run || !v->writer || !journaled(v, dir))
		return 0;
	view_path(v, dir, name, path, PATH_MAX);
	/* What a scan never looks at needs no pre-image (git's objects). */
	return snapshot_path_excluded(path) ? 0 : run;
}

void journal_preimage(struct view *v, fuse_req_t req, struct inode *ino)
{
	char path[PATH_MAX];
	struct snap_file f;
	struct stat st;
	int64_t run = open_run(v);

	/* Once per file and run: later changes would show our own. */
	if (!run || !S_ISREG(ino->type) ||
	    atomic_load_explicit(&ino->imaged, memory_order_acquire) == run ||
	    wanted(v, ino, NULL, path) != run ||
	    marked(v, ino, &ino->imaged, run, RUNMARK_IMAGED, true))
		return;
	int pfd = inode_fd_get(v->inodes, ino);
	if (pfd < 0)
		return;
	_cleanup_(closep) int fd = confine_reopen(pfd, O_RDONLY | O_NONBLOCK);
	int r = fd < 0		     ? fd
		: fstat(fd, &st) < 0 ? -errno
				     : snapshot_describe(fd, &st, path, NULL,
							 store_writer_keep_text, v->writer, &f);
	inode_unpin(v->inodes, ino);
	if (r < 0) {
		log_debug("no pre-image of %s: %s", path, strerror(-r));
		return;
	}
	record(v, req, "preimage", path, NULL, &f);
	if (st.st_nlink > 1) {
		struct runmark_object o;
		o.born_known = inode_identity(v->inodes, ino, &o.dev, &o.ino, &o.born);
		runmarks_set_image(v->journal->marks, run, &o, &f);
	}
	snap_file_free(&f);
}

void journal_created(struct view *v, struct inode *ino)
{
	int64_t run = open_run(v);

	if (run) {
		marked(v, ino, &ino->kept, run, RUNMARK_IMAGED | RUNMARK_KEPT | RUNMARK_MADE, true);
		atomic_store_explicit(&ino->imaged, run, memory_order_release);
	}
}

/* ---- what undo keeps ------------------------------------------------------ */

/* The open run, if DIR's entries are journaled, with the virtual path of
 * DIR/NAME in PATH; 0 otherwise. Unlike pre-images, every path counts:
 * undo puts back .git as much as the files it tracks. */
static int64_t keeping(struct view *v, struct inode *dir, const char *name, char path[PATH_MAX])
{
	int64_t run = open_run(v);

	if (!run || !v->writer || !journaled(v, dir))
		return 0;
	view_path(v, dir, name, path, PATH_MAX);
	return run;
}

/* Queues a "keep" event for PATH: OBJECT or META (LEN bytes). */
static void record_keep(struct view *v, fuse_req_t req, pid_t pid, const char *path,
			const char *object, const uint8_t *meta, size_t len)
{
	struct store_event e;
	char comm[COMM_MAX];

	caller_of(v, req, pid, &e, comm);
	e.op = "keep";
	e.path = path;
	e.object = object;
	e.meta = meta;
	e.meta_len = len;
	store_writer_event(v->writer, &e);
}

/* A fresh object name in the run's directory. */
static void object_name(struct journal *j, char name[40])
{
	uint32_t seq = atomic_fetch_add_explicit(&j->keep.seq, 1, memory_order_relaxed);

	snprintf(name, 40, "%016" PRIx64 "-%08" PRIx32, j->keep.stamp, seq);
}

/* Puts a copy of the file read through RFD (attributes ST) into the run's
 * directory KEEPFD as NAME. The caller holds the read lock that keeps
 * KEEPFD from changing. */
static int keep_copy(int keepfd, int rfd, const struct stat *st, const char *name)
{
	char proc[32];
	int fd = openat(keepfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600), r;
	bool named = fd < 0 && errno == EOPNOTSUPP;

	if (named)
		fd = openat(keepfd, name, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return neg_errno();
	r = file_copy_content(fd, rfd);
	if (r == 0)
		r = file_copy_metadata(fd, rfd, st);
	struct timespec ts[2] = { st->st_atim, st->st_mtim };
	if (r == 0 && futimens(fd, ts) < 0)
		r = neg_errno();
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (r == 0 && !named && linkat(AT_FDCWD, proc, keepfd, name, AT_SYMLINK_FOLLOW) < 0)
		r = neg_errno();
	if (r < 0 && named)
		unlinkat(keepfd, name, 0);
	close(fd);
	return r;
}

void journal_keep_content(struct view *v, fuse_req_t req, pid_t pid, struct inode *ino, int fd)
{
	struct journal *j = v->journal;
	char path[PATH_MAX], name[40];
	struct stat st;
	int64_t run = open_run(v);
	int r;

	if (!run || !S_ISREG(ino->type) ||
	    atomic_load_explicit(&ino->kept, memory_order_acquire) == run ||
	    keeping(v, ino, NULL, path) != run)
		return;
	/* A stage is another file: the one at the name stays as it was. */
	if (fstat(fd, &st) < 0 || st.st_ino != ino->ino || st.st_dev != ino->dev ||
	    marked(v, ino, &ino->kept, run, RUNMARK_KEPT, true))
		return;
	_cleanup_(closep) int rfd = confine_reopen(fd, O_RDONLY | O_NONBLOCK);
	pthread_rwlock_rdlock(&j->keep.lock);
	object_name(j, name);
	r = rfd < 0 ? rfd : j->keep.fd < 0 ? -ENOENT : keep_copy(j->keep.fd, rfd, &st, name);
	pthread_rwlock_unlock(&j->keep.lock);
	if (r < 0) {
		log_warn("cannot keep '%s' for undo: %s", path, strerror(-r));
		return;
	}
	/* The copy takes the file's space again (counted by the quota's
	 * scans too, which read the pre-images). */
	view_took(v, (uint64_t)st.st_blocks * 512);
	record_keep(v, req, pid, path, name, NULL, 0);
}

/* Queues a "keep" event with the attributes of NAME in DFD (NAME NULL:
 * of DFD itself). */
static void keep_meta(struct view *v, fuse_req_t req, pid_t pid, int dfd, const char *name,
		      const char *path)
{
	_cleanup_(freep) uint8_t *blob = NULL;
	struct meta m;
	size_t len;
	int r = meta_read(dfd, name, &m);

	if (r == 0) {
		r = meta_encode(&m, &blob, &len);
		meta_free(&m);
	}
	if (r < 0) {
		log_warn("cannot keep the attributes of '%s' for undo: %s", path, strerror(-r));
		return;
	}
	record_keep(v, req, pid, path, NULL, blob, len);
}

void journal_keep_going(struct view *v, fuse_req_t req, pid_t pid, struct inode *dir, int dfd,
			const char *name)
{
	struct journal *j = v->journal;
	char path[PATH_MAX], object[40];
	struct stat st;
	int r;

	if (!keeping(v, dir, name, path) || fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	if (S_ISDIR(st.st_mode))
		return keep_meta(v, req, pid, dfd, name, path);
	pthread_rwlock_rdlock(&j->keep.lock);
	object_name(j, object);
	if (j->keep.fd < 0) {
		r = -ENOENT;
	} else {
		/* A file with other names too: the same inode, so that its
		 * names are one file again once undone (what they change of
		 * it meanwhile is kept, and undone first). */
		r = linkat(dfd, name, j->keep.fd, object, 0) < 0 ? neg_errno() : 0;
	}
	pthread_rwlock_unlock(&j->keep.lock);
	if (r < 0) {
		log_warn("cannot keep '%s' for undo: %s", path, strerror(-r));
		return;
	}
	record_keep(v, req, pid, path, object, NULL, 0);
}

/* Whether object O is one the open run RUN made through the view and
 * never renamed (or a saved version of one). */
static bool own_object(struct view *v, int64_t run, const struct runmark_object *o)
{
	return runmarks_test(v->journal->marks, run, o, RUNMARK_MADE, false) &&
	       !runmarks_test(v->journal->marks, run, o, RUNMARK_RENAMED, false);
}

/* The object ST describes, born at *BORN (NULL: not known). */
static struct runmark_object object_of(const struct stat *st, const struct timespec *born)
{
	return (struct runmark_object){ .dev = st->st_dev,
					.ino = st->st_ino,
					.born_known = born != NULL,
					.born = born ? *born : (struct timespec){ 0 } };
}

/* True if NAME in DFD, about to go, is the open run RUN's own file or
 * symlink: made by the run through the view, never renamed, with no
 * other name. The run began without it and ends without it, at the name
 * it made it under: undo has nothing to bring back, and a redo, the undo
 * of that undo, nothing either (docs/changes.md, "What the view keeps").
 * Only where its birth time is known: the number of a file the run made
 * and removed unkept goes to the next new file, which a mark of the
 * number alone would take for it. */
static bool own_file(struct view *v, int dfd, const char *name, int64_t run)
{
	struct stat st;
	struct timespec born;

	if (inode_statx(dfd, name, 0, &st, &born) <= 0 || st.st_nlink != 1 || S_ISDIR(st.st_mode))
		return false;
	struct runmark_object o = object_of(&st, &born);
	return own_object(v, run, &o);
}

void journal_renamed(struct view *v, const struct stat *st, const struct timespec *born)
{
	struct runmark_object o = object_of(st, born);
	int64_t run = open_run(v);

	/* Only a file the run made needs the word (its removal is kept). */
	if (run && !S_ISDIR(st->st_mode) &&
	    runmarks_test(v->journal->marks, run, &o, RUNMARK_MADE, false))
		runmarks_test(v->journal->marks, run, &o, RUNMARK_RENAMED, true);
}

int journal_remove_kept(struct view *v, fuse_req_t req, struct inode *dir, int dfd,
			const char *name, const struct stat *victim)
{
	struct journal *j = v->journal;
	char path[PATH_MAX], object[40];
	int64_t run = victim && !S_ISDIR(victim->st_mode) ? keeping(v, dir, name, path) : 0;
	bool keep = run && !own_file(v, dfd, name, run);
	int kept = -ENOENT;

	if (keep) {
		pthread_rwlock_rdlock(&j->keep.lock);
		object_name(j, object);
		if (j->keep.fd >= 0)
			kept = renameat2(dfd, name, j->keep.fd, object, RENAME_NOREPLACE) < 0
				       ? neg_errno()
				       : 0;
		pthread_rwlock_unlock(&j->keep.lock);
		if (kept == 0) {
			record_keep(v, req, 0, path, object, NULL, 0);
			return 1;
		}
	}
	if (unlinkat(dfd, name, 0) < 0)
		return neg_errno();
	if (keep)
		log_warn("cannot keep '%s' for undo: %s", path, strerror(-kept));
	return 0;
}

/* journal_keep_dir() for the caller of REQ, or process PID. */
static void keep_dir(struct view *v, fuse_req_t req, pid_t pid, struct inode *dir, int dfd)
{
	char path[PATH_MAX];
	int64_t run = open_run(v);

	if (!run || atomic_load_explicit(&dir->kept, memory_order_acquire) == run ||
	    keeping(v, dir, NULL, path) != run ||
	    marked(v, dir, &dir->kept, run, RUNMARK_KEPT, true))
		return;
	keep_meta(v, req, pid, dfd, NULL, path);
}

void journal_keep_dir(struct view *v, fuse_req_t req, struct inode *dir, int dfd)
{
	keep_dir(v, req, 0, dir, dfd);
}

void journal_keep_attrs(struct view *v, fuse_req_t req, struct inode *ino, int fd)
{
	char path[PATH_MAX];
	int64_t run = keeping(v, ino, NULL, path);

	/* A file made in the run, or whose whole self is kept already, goes
	 * back as a whole. */
	if (run && !marked(v, ino, &ino->kept, run, RUNMARK_KEPT, false))
		keep_meta(v, req, 0, fd, NULL, path);
}

void journal_keep_replaced(struct view *v, pid_t pid, struct inode *ino, struct inode *dir, int dfd,
			   const char *name)
{
	int64_t run = open_run(v);

	/* Its rename moves the directory's times: those go first. */
	keep_dir(v, NULL, pid, dir, dfd);
	if (run && !marked(v, ino, &ino->kept, run, RUNMARK_KEPT, false))
		journal_keep_going(v, NULL, pid, dir, dfd, name);
}

void journal_published(struct view *v, struct inode *ino, const struct stat *after,
		       const struct timespec *born)
{
	struct runmark_object o;
	int64_t run = open_run(v);

	if (!run)
		return;
	o.born_known = inode_identity(v->inodes, ino, &o.dev, &o.ino, &o.born);
	bool own = own_object(v, run, &o);
	unsigned marks = RUNMARK_KEPT | (own ? RUNMARK_MADE : 0);
	if (marked(v, ino, &ino->imaged, run, RUNMARK_IMAGED, false))
		marks |= RUNMARK_IMAGED;
	marked(v, ino, &ino->kept, run, RUNMARK_KEPT, true);
	/* The new file is the view's inode from now on, with its imaged and
	 * kept: its marks must say as much for when the kernel forgets the
	 * inode (the run's own file saved again is still its own). */
	if (after && born) {
		struct runmark_object now = object_of(after, born);
		runmarks_test(v->journal->marks, run, &now, marks, true);
	}
}

/* Opens (creating) the directory of pre-images of the run begun at SINCE
 * (0: none) and makes it the one files are kept into. */
static void keep_dir_set(struct view *v, int64_t since)
{
	struct journal *j = v->journal;
	int fd = -1;

	if (since) {
		_cleanup_(closep) int home = home_open(j->home);
		fd = home < 0 ? home : home_undo_dir(home, j->user, j->thread, since, true);
		if (fd < 0) {
			char dir[PATH_MAX];
			home_thread_path(j->home, j->user, j->thread, UNDO_DIR, dir, sizeof(dir));
			log_warn("undo cannot keep this run's pre-images: %s/%lld: %s", dir,
				 (long long)since, strerror(-fd));
		}
	}
	pthread_rwlock_wrlock(&j->keep.lock);
	int old = j->keep.fd;
	j->keep.fd = fd < 0 ? -1 : fd;
	pthread_rwlock_unlock(&j->keep.lock);
	if (old >= 0)
		close(old);
}

/* True if DFD/NAME (virtual PATH) is a file with other names whose
 * content the run changed through one of them already: *F is then the
 * pre-image taken before that change (no path or target to free), as
 * PATH's name rules take it. What the file holds now is the run's. */
static bool image_of_other_name(struct view *v, int dfd, const char *name, const char *path,
				struct snap_file *f)
{
	struct runmark_object o;
	struct stat st;
	int r = inode_statx(dfd, name, 0, &st, &o.born);

	if (r < 0 || !S_ISREG(st.st_mode) || st.st_nlink < 2)
		return false;
	o.born_known = r > 0;
	o.dev = st.st_dev;
	o.ino = st.st_ino;
	if (!runmarks_get_image(v->journal->marks, open_run(v), &o, f))
		return false;
	if (snapshot_path_sensitive(path)) {
		f->sensitive = true; /* never hashed under this name */
		f->hashed = false;
	}
	return true;
}

void journal_preimage_at(struct view *v, fuse_req_t req, struct inode *dir, int dfd,
			 const char *name, bool going)
{
	char path[PATH_MAX];
	struct snap_file f;
	struct stat st;

	if (!wanted(v, dir, name, path))
		return;
	/* A file about to lose its name is read by the store writer from an
	 * fd: the view cannot change it any more, and the remove does not
	 * wait for the read (nor, on its last close, for the file's end). */
	if (going && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    st.st_nlink == 1) {
		int fd = openat(dfd, name,
				O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
			struct store_event e;
			char comm[COMM_MAX];
			caller(v, req, &e, comm);
			e.op = "preimage";
			e.path = path;
			if (store_writer_preimage_fd(v->writer, &e, fd) == 0)
				return;
		}
		if (fd >= 0)
			close(fd);
	}
	if (image_of_other_name(v, dfd, name, path, &f)) {
		record(v, req, "preimage", path, NULL, &f);
		return;
	}
	if (snapshot_file_at(dfd, name, NULL, path, store_writer_keep_text, v->writer, &f) < 0)
		return; /* nothing there, or a directory */
	record(v, req, "preimage", path, NULL, &f);
	snap_file_free(&f);
}

void journal_run(struct view *v, fuse_req_t req, int64_t since)
{
	int64_t was = atomic_exchange_explicit(&v->journal->run_since, since, memory_order_acq_rel);

	if (!v->writer || was == since)
		return;
	keep_dir_set(v, since);
	if (since) {
		/* Marks where pre-images begin: sbx run trusts the journal's
		 * account of what existed before only from here on. */
		record(v, req, "capture", "/mnt/user-data", NULL, NULL);
		log_info("a run is open: pre-images are recorded");
	} else {
		log_info("no run is open: pre-images are no longer recorded");
	}
}

bool journal_control(struct view *v, fuse_req_t req, bool set, const char *name, const char *value,
		     size_t size, char *out, ssize_t *result)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	bool run = !strcmp(name, CONTROL_XATTR_RUN);
	bool home = !strcmp(name, CONTROL_XATTR_HOME);
	bool refresh = !strcmp(name, CONTROL_XATTR_REFRESH);
	char buf[32], *end;

	if (!run && !home && !refresh && strcmp(name, CONTROL_XATTR_SYNC))
		return false;
	if (ctx->uid != 0 && ctx->uid != v->uid) {
		*result = -EPERM;
	} else if (home && !set) {
		size_t len = strlen(v->journal->home);
		*result = size && size < len ? -ERANGE : (ssize_t)len;
		if (size >= len)
			memcpy(out, v->journal->home, len);
	} else if (run && set) {
		long long since = -1;
		if (size < sizeof(buf)) {
			memcpy(buf, value, size);
			buf[size] = '\0';
			since = strtoll(buf, &end, 10);
			if (*end || end == buf)
				since = -1;
		}
		if (since < 0) {
			*result = -EINVAL;
		} else {
			journal_run(v, req, since);
			*result = 0;
		}
	} else if (refresh && !set) {
		/* A getxattr, which the kernel serves without the top
		 * directory's lock: the invalidations may need it. Without a
		 * host watch, the cache timeout bounds what stays stale. */
		int r = watch_refresh(v->watch);
		*result = r < 0 && r != -ENOTCONN ? r : size && size < 2 ? -ERANGE : 2;
		if (*result == 2 && size >= 2)
			memcpy(out, "ok", 2);
	} else if (!run && !set) {
		/* Every content hash and event queued so far is in the store
		 * on return (the hashes queue their rows). */
		gate_settle(v->gate);
		store_writer_sync(v->writer);
		*result = size && size < 2 ? -ERANGE : 2;
		if (size >= 2)
			memcpy(out, "ok", 2);
	} else {
		*result = set ? -EPERM : -ENODATA;
	}
	return true;
}
