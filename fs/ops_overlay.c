/* ops_overlay.c - the changes of an overlay root (docs/try.md): a
 * project's object copied up into the layer before its first change, and
 * whiteouts where the agent removes one of the project's names.
 *
 * Each is a change of the layer and is journaled as what it is there (a
 * copy-up as "mkdir" or "create" of a file the run made, a whiteout as a
 * "symlink"): a run's undo puts the layer back as it was, and the project
 * shows through again where it did.
 *
 * The first touch of each project path (a copy-up, a whiteout) also
 * records the project's object there then, its origin (store/origins.h),
 * which the review and the apply judge the project's present against.
 */
#include "confine.h"
#include "gate.h"
#include "journal.h"
#include "ops_int.h"
#include "overlay.h"
#include "common/clock.h"
#include "common/fileops.h"
#include "common/home.h"
#include "common/log.h"
#include "store/origins.h"
#include "store/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Gives the entry NAME in PFD, just made, the owner and times in ST
 * (the owner where the daemon may: as a user, its own stays). */
static int own_and_date(int pfd, const char *name, const struct stat *st)
{
	const struct timespec times[2] = { st->st_atim, st->st_mtim };

	if (fchownat(pfd, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0 && errno != EPERM)
		return neg_errno();
	return utimensat(pfd, name, times, AT_SYMLINK_NOFOLLOW) < 0 ? neg_errno() : 0;
}

/* Makes a copy of the project's object LFD (O_PATH; attributes ST) as
 * NAME in layer directory PFD: its owner, mode, times and xattrs; a
 * regular file is TMP, its copy made unnamed beforehand (unnamed_copy()),
 * linked. Returns an O_PATH fd of the copy, or -errno. Called with PFD's
 * names locked exclusively, so that no lookup sees the copy before the
 * inode designates it (only for the link, for a file). */
static int make_copy(int pfd, const char *name, int lfd, const struct stat *st, int tmp)
{
	char path[CONFINE_FD_PATH_MAX];
	const struct timespec times[2] = { st->st_atim, st->st_mtim };
	int r = 0;

	switch (st->st_mode & S_IFMT) {
	case S_IFREG:
		confine_fd_path(tmp, path);
		if (linkat(AT_FDCWD, path, pfd, name, AT_SYMLINK_FOLLOW) < 0)
			return neg_errno();
		break;
	case S_IFDIR: {
		if (mkdirat(pfd, name, 0700) < 0)
			return neg_errno();
		_cleanup_(closep) int dfd = openat(pfd, name,
						   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		_cleanup_(closep) int rfd = confine_opendir(lfd);
		r = dfd < 0 ? neg_errno() : rfd < 0 ? rfd : file_copy_metadata(dfd, rfd, st);
		if (r == 0 && futimens(dfd, times) < 0)
			r = neg_errno();
		if (r < 0)
			unlinkat(pfd, name, AT_REMOVEDIR);
		break;
	}
	case S_IFLNK: {
		char target[PATH_MAX + 1];
		ssize_t n = readlinkat(lfd, "", target, PATH_MAX);
		if (n < 0)
			return neg_errno();
		target[n] = '\0';
		/* The layer's copy would be a whiteout. */
		if (!strcmp(target, OVERLAY_WHITEOUT))
			return -EINVAL;
		if (symlinkat(target, pfd, name) < 0)
			return neg_errno();
		r = own_and_date(pfd, name, st);
		break;
	}
	case S_IFCHR:
	case S_IFBLK:
		/* Never a device node of the agent's making, whatever the
		 * project holds. */
		return -EPERM;
	default: /* a FIFO or a socket */
		if (mknodat(pfd, name, st->st_mode & ~(mode_t)07000, st->st_rdev) < 0)
			return neg_errno();
		r = own_and_date(pfd, name, st);
		break;
	}
	if (r < 0 && r != -EEXIST && !S_ISDIR(st->st_mode))
		unlinkat(pfd, name, 0);
	return r < 0 ? r : confine_lookup(pfd, name);
}

/* A regular file's copy, unnamed in layer directory PFD: content, owner,
 * mode, xattrs and times of the project's file LFD. */
static int unnamed_copy(int pfd, int lfd, const struct stat *st)
{
	const struct timespec times[2] = { st->st_atim, st->st_mtim };
	_cleanup_(closep) int rfd = confine_reopen(lfd, O_RDONLY);
	int tmp = openat(pfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	int r = tmp < 0 ? neg_errno() : rfd < 0 ? rfd : 0;

	if (r == 0)
		r = file_copy_content(tmp, rfd);
	if (r == 0)
		r = file_copy_metadata(tmp, rfd, st);
	if (r == 0 && futimens(tmp, times) < 0)
		r = neg_errno();
	if (r < 0 && tmp >= 0)
		close(tmp);
	return r < 0 ? r : tmp;
}

/* Records the origin of project path NAME in DIR: the project's object
 * of attributes ST, removed (KIND ORIGIN_WHITEOUT) or copied up
 * (ORIGIN_COPY; CONTENT, -1 or an fd of the copy of a regular file, the
 * writer hashes). The path is the workspace's, below the project. */
static void record_origin(struct view *v, struct inode *dir, const char *name,
			  enum origin_kind kind, const struct stat *st, int content)
{
	char path[PATH_MAX];
	const char *ws = home_thread_dir_rel(THREAD_WORKSPACE);
	size_t n = strlen(ws);

	if (!v->writer)
		return;
	inode_path(v->inodes, dir, name, path, sizeof(path));
	if (strncmp(path, ws, n) || path[n] != '/')
		return; /* not below the overlay root: never a project's */
	struct store_origin o = {
		.path = path + n + 1,
		.kind = kind,
		.mode = st->st_mode,
		.dev = (int64_t)st->st_dev,
		.ino = (int64_t)st->st_ino,
		.size = st->st_size,
		.mtime_ns = timespec_ns(&st->st_mtim),
		.ctime_ns = timespec_ns(&st->st_ctim),
		.at_ns = realtime_ns(),
	};
	int fd = content >= 0 ? fcntl(content, F_DUPFD_CLOEXEC, 0) : -1;
	int r = store_writer_origin(v->writer, &o, fd);
	if (r < 0 && fd >= 0) {
		close(fd);
		/* Its version only: the apply judges it by that. */
		r = store_writer_origin(v->writer, &o, -1);
	}
	if (r < 0)
		log_warn("overlay: the origin of %s is not recorded: %s", o.path, strerror(-r));
}

static const char *made_event(mode_t mode)
{
	return S_ISDIR(mode) ? "mkdir" : S_ISLNK(mode) ? "symlink" : "create";
}

/* overlay_copy_up() with the view's copy-up lock held. */
static int copy_up_locked(struct view *v, fuse_req_t req, struct inode *ino)
{
	struct inode *parent;
	char name[NAME_MAX + 1];
	struct stat st, made_st;
	struct timespec born;
	int r;

	if (!ino->lower)
		return 0; /* another request copied it up */
	int pfd = inode_parent_fd_get(v->inodes, ino, &parent, name, sizeof(name));
	if (pfd < 0)
		return pfd;
	if (parent->lower) {
		/* Its directory first: the copy goes there. */
		inode_unpin(v->inodes, parent);
		if ((r = copy_up_locked(v, req, parent)) < 0)
			return r;
		if ((pfd = inode_parent_fd_get(v->inodes, ino, &parent, name, sizeof(name))) < 0)
			return pfd;
	}
	_pinned_ lp = pin(v, ino);
	r = lp.fd < 0 ? lp.fd : stat_fd(lp.fd, &st);
	if (r == 0)
		r = charge(v, req, parent, name,
			   S_ISDIR(st.st_mode)	 ? 4096
			   : S_ISREG(st.st_mode) ? (uint64_t)st.st_size
						 : 0,
			   1, "copy-up");
	_cleanup_(closep) int tmp = -1;
	if (r == 0 && S_ISREG(st.st_mode) && (tmp = unnamed_copy(pfd, lp.fd, &st)) < 0)
		r = tmp;
	/* A directory keeps its project directory: it is merged now. */
	int lower_fd = r == 0 && S_ISDIR(st.st_mode) ? fcntl(lp.fd, F_DUPFD_CLOEXEC, 0) : -1;
	if (r == 0 && S_ISDIR(st.st_mode) && lower_fd < 0)
		r = neg_errno();
	if (r < 0) {
		inode_unpin(v->inodes, parent);
		return r;
	}
	view_names_lock(v, parent, true);
	int fd = make_copy(pfd, name, lp.fd, &st, tmp);
	r = fd < 0 ? fd : inode_statx(fd, "", AT_EMPTY_PATH, &made_st, &born);
	if (r >= 0)
		r = inode_copied_up(v->inodes, ino, fd, &made_st, r ? &born : NULL, lower_fd);
	else {
		if (fd >= 0)
			close(fd);
		if (lower_fd >= 0)
			close(lower_fd);
	}
	view_names_unlock(v, parent);
	if (r == 0) {
		/* The thread read the project's file: it has read its copy. */
		struct gate_ticket t;
		gate_lock(v->gate, &t, &st);
		gate_unlock(&t, &made_st, false);
		journal_note(v, req, made_event(st.st_mode), parent, name, NULL, NULL);
		journal_created(v, ino);
		record_origin(v, parent, name, ORIGIN_COPY, &st, tmp);
	} else {
		log_refusal(v, req, parent, name, "copy-up", strerror(-r));
	}
	inode_unpin(v->inodes, parent);
	return r;
}

int overlay_copy_up(struct view *v, fuse_req_t req, struct inode *ino)
{
	if (!ino->lower)
		return 0;
	pthread_mutex_lock(&v->copy_up_lock);
	int r = copy_up_locked(v, req, ino);
	pthread_mutex_unlock(&v->copy_up_lock);
	return r;
}

int may_modify(struct view *v, fuse_req_t req, struct inode *ino)
{
	int r = view_may_modify(v, ino);

	/* A project's object is read-only as such: the change goes to its
	 * copy (an error of the copy-up is the change's). */
	if (r == -EROFS && ino->lower && !v->domains[ino->domain].read_only &&
	    !view_changes_refused(v))
		r = overlay_copy_up(v, req, ino);
	return r;
}

int overlay_unwhite(struct view *v, fuse_req_t req, struct inode *dir, int dfd, const char *name)
{
	if (!dir->overlay || dir->lower)
		return 0;
	_cleanup_(closep) int fd = confine_lookup(dfd, name);
	if (fd < 0 || !overlay_is_whiteout(fd))
		return 0;
	int r = remove_name(v, req, dir, dfd, name, 0);
	return r < 0 ? r : 1;
}

/* Makes symlink NAME to OVERLAY_WHITEOUT in layer directory DIR (fd
 * DFD), as the change it is. */
static int make_mark(struct view *v, fuse_req_t req, struct inode *dir, int dfd, const char *name)
{
	int r = charge(v, req, dir, name, 0, 1, "whiteout");
	if (r < 0)
		return r;
	struct name_change nc = {
		.kind = NAME_MAKE,
		.dir = dir,
		.dfd = dfd,
		.name = name,
		.event = "symlink",
	};
	if ((r = name_change_begin(v, req, &nc)) < 0)
		return r;
	if (symlinkat(OVERLAY_WHITEOUT, dfd, name) < 0)
		return name_change_abort(&nc, neg_errno());
	name_change_commit(&nc);
	return 0;
}

int overlay_white_out(struct view *v, fuse_req_t req, struct inode *dir, int dfd, const char *name)
{
	struct stat st;

	if (!overlay_merged(dir) || fstatat(dir->lower_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	int r = make_mark(v, req, dir, dfd, name);
	if (r == 0)
		record_origin(v, dir, name, ORIGIN_WHITEOUT, &st, -1);
	return r;
}

int overlay_make_opaque(struct view *v, fuse_req_t req, struct inode *dir)
{
	_pinned_ p = pin(v, dir);
	return p.fd < 0 ? p.fd : make_mark(v, req, dir, p.fd, OVERLAY_OPAQUE);
}

/* Copies up the project's object of attributes ST (in DOMAIN), which the
 * kernel holds an inode of. */
static int copy_up_object(struct view *v, fuse_req_t req, uint16_t domain, const struct stat *st)
{
	struct inode *ino = inode_find(v->inodes, domain, st->st_dev, st->st_ino);

	if (!ino)
		return -ESTALE;
	int r = ino->lower ? overlay_copy_up(v, req, ino) : 0;
	inode_unpin(v->inodes, ino);
	return r;
}

/* What DIR/NAME (fd DFD) is: *LAYER, *ST. Returns 0, or -errno. */
static int resolve(const struct inode *dir, int dfd, const char *name, struct inode_layer *layer,
		   struct stat *st)
{
	int fd = overlay_lookup(dir, dfd, name, layer);

	if (fd < 0)
		return fd;
	int r = stat_fd(fd, st);
	close(fd);
	if (layer->lower_fd >= 0)
		close(layer->lower_fd); /* only whether there is one counts */
	layer->lower_fd = layer->lower_fd >= 0;
	return r;
}

int overlay_rename_prepare(struct view *v, fuse_req_t req, struct inode *from, int ffd,
			   const char *name, struct inode *to, int tfd, const char *newname,
			   unsigned int flags)
{
	struct inode_layer a, b;
	struct stat sa, sb;
	int r = resolve(from, ffd, name, &a, &sa);

	if (r < 0)
		return r;
	if (S_ISDIR(sa.st_mode) && (a.lower || a.lower_fd))
		return -EXDEV;
	r = resolve(to, tfd, newname, &b, &sb);
	if (r == -ENOENT)
		r = 0;
	else if (r == 0 && (flags & RENAME_NOREPLACE))
		r = -EEXIST;
	else if (r == 0 && S_ISDIR(sb.st_mode) && (b.lower || b.lower_fd))
		r = -EXDEV;
	else if (r == 0 && b.lower)
		/* A project's file the rename replaces (an editor's save) is
		 * copied up first, as one it exchanges: its origin, content
		 * hashed and kept, is what the review and a --3way merge judge
		 * the project against. */
		r = copy_up_object(v, req, to->domain, &sb);
	if (r == 0 && a.lower)
		r = copy_up_object(v, req, from->domain, &sa);
	return r;
}
