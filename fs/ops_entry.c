/* ops_entry.c - requests on names and attributes: lookup, forget,
 * getattr, setattr, readlink, mknod, mkdir, symlink, unlink, rmdir,
 * rename, link. Each finds its inode, applies the view's rules, and makes
 * its backing call relative to a pinned fd; a change of names goes
 * through struct name_change (ops_change.c), a truncation through a
 * handle through struct change.
 */
#include "confine.h"
#include "journal.h"
#include "names.h"
#include "overlay.h"
#include "ops_int.h"
#include "stage.h"
#include "watch.h"
#include "common/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How long the kernel may trust names in DIR: long where a watch tells it
 * of host changes, short where nothing would. */
static double entry_timeout(struct view *v, struct inode *dir)
{
	return dir->synth || atomic_load_explicit(&dir->wd, memory_order_relaxed) > 0
		       ? v->timeout_watched
		       : v->timeout;
}

/* How long the kernel may trust the attributes ST of INO. A file with
 * other names is covered by no watch: a change through another name is
 * reported to that name's directory alone, which the view may not watch,
 * or no longer know when it reads the event (an undo writes a file's
 * content back through a name it then removes). */
static double attr_timeout(struct view *v, struct inode *ino, const struct stat *st)
{
	if (!S_ISDIR(st->st_mode) && st->st_nlink > 1)
		return v->timeout;
	return ino->synth || atomic_load_explicit(&ino->covered, memory_order_relaxed) ||
			       atomic_load_explicit(&ino->wd, memory_order_relaxed) > 0
		       ? v->timeout_watched
		       : v->timeout;
}

/* The attributes of INO from the fd it holds (pinned for the call). */
static int stat_held(struct view *v, struct inode *ino, struct stat *st)
{
	_pinned_ p = pin(v, ino);
	if (p.fd < 0)
		return p.fd;
	_io_ io = io_begin(v, ino, NULL, false);
	int r = stat_fd(io.fd >= 0 ? io.fd : p.fd, st);
	if (r == 0 && io.locked)
		stage_attr(ino, st);
	return r;
}

/* ST, just read from INO's backing file, goes to the kernel: noted, or
 * INO renewed if the kernel cannot take it (inode_note_seen()). */
static void attr_seen(struct view *v, struct inode *ino, struct stat *st)
{
	if (inode_note_seen(v->inodes, ino, st))
		ops_renew(v, ino, 0);
	view_map_attr(v, ino, st);
}

static int inode_stat(struct view *v, struct inode *ino, struct stat *st)
{
	int r;

	if (ino->synth) {
		view_synth_attr(v, ino, st);
		return 0;
	}
	/* Beyond the fd budget, a stat takes no fd (and evicts none). */
	r = inode_stat_evicted(v->inodes, ino, st);
	if (r < 0)
		r = stat_held(v, ino, st);
	if (r == 0)
		attr_seen(v, ino, st);
	return r;
}

void entry_init(struct view *v, struct inode *dir, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->entry_timeout = entry_timeout(v, dir);
	e->attr_timeout = e->entry_timeout;
}

/* The first half of entry_add(): adds the object at PATH_FD (O_PATH,
 * owned) to the table as DIR/NAME, its inode in *OUT, and fills E's
 * attributes. */
static int entry_attach(struct view *v, struct inode *dir, const char *name, int path_fd,
			struct inode_layer *layer, struct fuse_entry_param *e, struct inode **out)
{
	struct timespec born;
	/* Made by the view in an overlay root: the layer's, and its own. */
	struct inode_layer made = { .overlay = true, .lower = false, .lower_fd = -1 };
	int r;

	if (!layer && dir->overlay)
		layer = &made;
	entry_init(v, dir, e);
	r = inode_statx(path_fd, "", AT_EMPTY_PATH, &e->attr, &born);
	if (r < 0) {
		close(path_fd);
		if (layer && layer->lower_fd >= 0)
			close(layer->lower_fd);
		return r;
	}
	*out = inode_lookup_add_layer(v->inodes, dir, name, path_fd, &e->attr, r ? &born : NULL,
				      layer);
	return *out ? 0 : -ENOMEM;
}

/* Completes E for INO, just attached as DIR/NAME. */
static int entry_finish(struct view *v, struct inode *dir, struct inode *ino,
			struct fuse_entry_param *e)
{
	if (stage_any(ino)) {
		/* Being rewritten through the view: its stage is the file. */
		_io_ io = io_begin(v, ino, NULL, false);
		if (io.fd >= 0 && stat_fd(io.fd, &e->attr) == 0)
			stage_attr(ino, &e->attr);
	}
	if (e->entry_timeout == v->timeout_watched && !dir->synth)
		atomic_store_explicit(&ino->covered, true, memory_order_relaxed);
	if (S_ISDIR(ino->type) && v->watch &&
	    atomic_load_explicit(&ino->wd, memory_order_relaxed) == 0) {
		_pinned_ p = pin(v, ino);
		if (p.fd >= 0)
			watch_dir(v->watch, ino, overlay_watched_fd(ino, p.fd));
	}
	inode_note_attr(v->inodes, ino, &e->attr);
	e->attr_timeout = attr_timeout(v, ino, &e->attr);
	view_map_attr(v, ino, &e->attr);
	e->ino = node_id(v, ino);
	return 0;
}

int entry_add_layer(struct view *v, struct inode *dir, const char *name, int path_fd,
		    struct inode_layer *layer, struct fuse_entry_param *e)
{
	struct inode *ino;
	int r = entry_attach(v, dir, name, path_fd, layer, e, &ino);

	return r < 0 ? r : entry_finish(v, dir, ino, e);
}

int entry_add(struct view *v, struct inode *dir, const char *name, int path_fd,
	      struct fuse_entry_param *e)
{
	return entry_add_layer(v, dir, name, path_fd, NULL, e);
}

int do_lookup(struct view *v, struct inode *dir, const char *name, struct fuse_entry_param *e)
{
	if (dir->synth) {
		for (size_t i = 0; i < dir->synth->n; i++) {
			struct inode *child = dir->synth->entry[i].inode;

			if (strcmp(dir->synth->entry[i].name, name))
				continue;
			entry_init(v, dir, e);
			int r = inode_stat(v, child, &e->attr);
			if (r < 0)
				return r;
			inode_lookup_fixed(v->inodes, child);
			e->ino = node_id(v, child);
			return 0;
		}
		return -ENOENT;
	}
	if (!confine_name_ok(name) || stage_area_name(v, dir, name))
		return -ENOENT;
	if (name_is_upload_staging(name) && in_uploads(v, dir))
		return -ENOENT; /* the uploader's staging files */
	_pinned_ p = pin(v, dir);
	if (p.fd < 0)
		return p.fd;
	struct inode *ino;
	struct inode_layer layer;
	view_names_lock(v, dir, false);
	int r = dir->overlay ? overlay_lookup(dir, p.fd, name, &layer) : confine_lookup(p.fd, name);
	if (r >= 0)
		r = entry_attach(v, dir, name, r, dir->overlay ? &layer : NULL, e, &ino);
	view_names_unlock(v, dir);
	return r < 0 ? r : entry_finish(v, dir, ino, e);
}

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct view *v = req_view(req);
	struct fuse_entry_param e;
	int r = skill_gate(v, req, node(v, parent), name, "lookup");

	if (r == 0)
		r = do_lookup(v, node(v, parent), name, &e);

	if (r == -ENOENT && v->timeout > 0) {
		/* A negative entry: the kernel caches the absence too. */
		entry_init(v, node(v, parent), &e);
		fuse_reply_entry(req, &e);
	} else if (r < 0) {
		reply_status(req, r);
	} else {
		fuse_reply_entry(req, &e);
	}
}

void op_forget(fuse_req_t req, fuse_ino_t id, uint64_t nlookup)
{
	struct view *v = req_view(req);

	inode_forget(v->inodes, node(v, id), nlookup);
	fuse_reply_none(req);
}

void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct view *v = req_view(req);

	for (size_t i = 0; i < count; i++)
		inode_forget(v->inodes, node(v, forgets[i].ino), forgets[i].nlookup);
	fuse_reply_none(req);
}

void op_getattr(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi)
{
	struct view *v = req_view(req);
	struct inode *ino = node(v, id);
	struct stat st;
	int r = skill_gate(v, req, ino, NULL, "stat");

	if (r < 0) {
		/* nothing */
	} else if (fi && S_ISREG(ino->type)) {
		_io_ io = io_begin(v, ino, fh_of(fi), false);
		r = fstat(io.fd, &st) < 0 ? neg_errno() : 0;
		if (r == 0 && io.locked)
			stage_attr(ino, &st);
		if (r == 0)
			attr_seen(v, ino, &st);
	} else {
		r = inode_stat(v, ino, &st);
	}
	if (r < 0)
		reply_status(req, r);
	else
		fuse_reply_attr(req, &st, attr_timeout(v, ino, &st));
}

static int set_times(int pfd, int fh, const struct stat *attr, int valid)
{
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT } };
	char path[CONFINE_FD_PATH_MAX];

	if (valid & FUSE_SET_ATTR_ATIME_NOW)
		ts[0].tv_nsec = UTIME_NOW;
	else if (valid & FUSE_SET_ATTR_ATIME)
		ts[0] = attr->st_atim;
	if (valid & FUSE_SET_ATTR_MTIME_NOW)
		ts[1].tv_nsec = UTIME_NOW;
	else if (valid & FUSE_SET_ATTR_MTIME)
		ts[1] = attr->st_mtim;
	if (fh >= 0)
		return futimens(fh, ts) < 0 ? neg_errno() : 0;
	if (utimensat(pfd, "", ts, AT_EMPTY_PATH) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOENT)
		return neg_errno();
	/* Kernels without utimensat(AT_EMPTY_PATH) on O_PATH fds. */
	confine_fd_path(pfd, path);
	return utimensat(AT_FDCWD, path, ts, 0) < 0 ? neg_errno() : 0;
}

/* The backing calls of a setattr; ATTR receives the attributes after. */
static int apply_setattr(struct view *v, fuse_req_t req, int pfd, int fh, struct stat *attr,
			 int valid)
{
	char path[CONFINE_FD_PATH_MAX];
	int r;

	confine_fd_path(pfd, path);
	if (valid & FUSE_SET_ATTR_MODE) {
		r = fh >= 0 ? fchmod(fh, attr->st_mode) : chmod(path, attr->st_mode);
		if (r < 0)
			return neg_errno();
	}
	if (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		uid_t uid = valid & FUSE_SET_ATTR_UID ? attr->st_uid : (uid_t)-1;
		gid_t gid = valid & FUSE_SET_ATTR_GID ? attr->st_gid : (gid_t)-1;

		r = fh >= 0 ? fchown(fh, uid, gid)
			    : fchownat(pfd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
		if (r < 0)
			return neg_errno();
	}
	if (valid & FUSE_SET_ATTR_SIZE) {
		/* Under the writeback cache the kernel keeps a file's times
		 * and moves them at a truncate only if the size changes; the
		 * backing filesystem moves them anyway. A truncate that keeps
		 * the size keeps the mtime the view shows, or the kernel's next
		 * flush of its times (at a rename, say) would set it back,
		 * unseen by the journal and undo. */
		struct stat before;
		bool keep_mtime = v->writeback &&
				  !(valid & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW)) &&
				  stat_fd(fh >= 0 ? fh : pfd, &before) == 0 &&
				  before.st_size == attr->st_size;

		r = drop_privs(v, req, fh >= 0 ? fh : pfd, fh < 0, NULL);
		if (r < 0)
			return r;
		r = fh >= 0 ? ftruncate(fh, attr->st_size) : truncate(path, attr->st_size);
		if (r < 0)
			return neg_errno();
		/* Best effort: a caller who may write the file but does not own
		 * it may not set its times; then it is as without the cache. */
		if (keep_mtime)
			(void)set_times(pfd, fh, &before, FUSE_SET_ATTR_MTIME);
	}
	if (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
		     FUSE_SET_ATTR_MTIME_NOW)) {
		r = set_times(pfd, fh, attr, valid);
		if (r < 0)
			return r;
	}
	return fh >= 0 ? (fstat(fh, attr) < 0 ? neg_errno() : 0) : stat_fd(pfd, attr);
}

/* --map-owner: the sandbox's ids in a chown are the daemon's user's on
 * the host, and a set-id bit it asks for would be that user's (root's,
 * under a root broker): refused. */
static int map_setattr(struct view *v, fuse_req_t req, struct inode *ino, struct stat *attr,
		       int valid)
{
	if (!v->map_owner)
		return 0;
	if ((valid & FUSE_SET_ATTR_UID) && attr->st_uid == v->map_uid)
		attr->st_uid = v->uid;
	if ((valid & FUSE_SET_ATTR_GID) && attr->st_gid == v->map_gid)
		attr->st_gid = v->gid;
	if ((valid & FUSE_SET_ATTR_MODE) && !S_ISDIR(ino->type) &&
	    (attr->st_mode & (S_ISUID | S_ISGID)) &&
	    view_mapped_caller(v, fuse_req_ctx(req)->uid)) {
		log_refusal(v, req, ino, NULL, "chmod",
			    "a sandbox may not set set-user-ID or set-group-ID bits");
		return -EPERM;
	}
	return 0;
}

/* Without default_permissions (a private view) the kernel leaves the
 * rules for privileged changes to us: a root daemon applies them with
 * the caller's own capabilities, as the kernel's setattr_prepare() does
 * (ST: the file's attributes now). A daemon run by a user can do no more
 * than its caller anyway. */
static int caller_may_setattr(struct view *v, fuse_req_t req, const struct stat *st,
			      struct stat *attr, int valid)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	bool owner = ctx->uid == st->st_uid;
	bool times_set = ((valid & FUSE_SET_ATTR_ATIME) && !(valid & FUSE_SET_ATTR_ATIME_NOW)) ||
			 ((valid & FUSE_SET_ATTR_MTIME) && !(valid & FUSE_SET_ATTR_MTIME_NOW));

	if (v->default_permissions || !v->creds_switch)
		return 0;
	if ((valid & FUSE_SET_ATTR_UID) && !(owner && attr->st_uid == st->st_uid) &&
	    !proc_capable(ctx->pid, CAP_CHOWN))
		return -EPERM;
	if ((valid & FUSE_SET_ATTR_GID) &&
	    !(owner && (attr->st_gid == st->st_gid || proc_in_group(ctx->pid, attr->st_gid))) &&
	    !proc_capable(ctx->pid, CAP_CHOWN))
		return -EPERM;
	if (((valid & FUSE_SET_ATTR_MODE) || times_set) && !owner &&
	    !proc_capable(ctx->pid, CAP_FOWNER))
		return -EPERM;
	if ((valid & FUSE_SET_ATTR_MODE) && (attr->st_mode & S_ISGID)) {
		gid_t group = valid & FUSE_SET_ATTR_GID ? attr->st_gid : st->st_gid;
		if (!proc_in_group(ctx->pid, group) && !proc_capable(ctx->pid, CAP_FSETID))
			attr->st_mode &= ~(mode_t)S_ISGID;
	}
	return 0;
}

/* Under the writeback cache the kernel owns a file's mtime and ctime and
 * sends them by themselves: after its writes, at close, or when it drops
 * the inode, by then perhaps in a later run or unlinked. The times of
 * writes the journal already has are no change for undo to restore (nor
 * is a touch -m, which comes the same way). */
static bool kernel_times(const struct view *v, int valid)
{
	return v->writeback && !(valid & ~(FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_CTIME));
}

static int do_setattr(struct view *v, fuse_req_t req, struct inode *ino, struct stat *attr,
		      int valid, struct fuse_file_info *fi)
{
	bool resize = valid & FUSE_SET_ATTR_SIZE;
	struct gate_ticket t;
	struct change c;
	struct stat st;
	int r;

	r = may_modify(v, req, ino);
	if (r < 0 || (r = map_setattr(v, req, ino, attr, valid)) < 0)
		return r;
	/* The kernel's own times that change nothing (a rename or a link
	 * moved its ctime, or the file's mtime is already its): setting them
	 * would only move the file's ctime, which the gate, the journal and
	 * undo would take for a change, perhaps after the run ended. */
	if (kernel_times(v, valid) && S_ISREG(ino->type) && stat_held(v, ino, &st) == 0 &&
	    (!(valid & FUSE_SET_ATTR_MTIME) || (st.st_mtim.tv_sec == attr->st_mtim.tv_sec &&
						st.st_mtim.tv_nsec == attr->st_mtim.tv_nsec))) {
		*attr = st;
		inode_note_attr(v->inodes, ino, attr);
		view_map_attr(v, ino, attr);
		return 0;
	}
	_pinned_ p = pin(v, ino);
	if (p.fd < 0)
		return p.fd;
	if (!v->default_permissions && v->creds_switch &&
	    (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID | FUSE_SET_ATTR_MODE |
		      FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) &&
	    ((r = stat_fd(p.fd, &st)) < 0 ||
	     (r = caller_may_setattr(v, req, &st, attr, valid)) < 0))
		return r;
	if (resize && fi && S_ISREG(ino->type)) {
		/* ftruncate: a content change through the handle. */
		int fd = change_begin(v, req, ino, fi, &c, "truncate");
		if (fd < 0)
			return fd;
		r = apply_setattr(v, req, p.fd, fd, attr, valid);
		change_end(&c, r, r == 0);
	} else {
		/* By name: a truncation is gated; anything else keeps a current
		 * read mark current across the ctime it moves. While the file
		 * has a stage, the stage takes the change: it is what the file
		 * will be. */
		if (resize)
			journal_preimage(v, req, ino);
		bool content = valid & (FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_MTIME);
		_io_ io = io_begin(v, ino, NULL, content);
		int target = io.fd >= 0 ? io.fd : p.fd;
		r = gate_file_begin(v, req, &t, ino, target, NULL, resize ? "truncate" : NULL);
		if (r < 0)
			return r;
		/* Undo keeps what the file was: its content where it changes in
		 * place, else (a stage takes the change) its attributes. */
		if (resize && io.fd < 0)
			journal_keep_content(v, req, 0, ino, p.fd);
		else if (io.fd < 0 && !kernel_times(v, valid))
			journal_keep_attrs(v, req, ino, p.fd);
		r = apply_setattr(v, req, p.fd, io.fd, attr, valid);
		if (r == 0 && content && io.locked)
			stage_note_change(ino, attr);
		gate_unlock(&t, r == 0 ? attr : NULL, resize);
		if (r == 0 && (resize || (valid & FUSE_SET_ATTR_MODE)))
			journal_note(v, req, resize ? "modify" : "chmod", ino, NULL, NULL, NULL);
	}
	if (r == 0) {
		if (resize)
			view_release(v, ino, NULL);
		inode_note_attr(v->inodes, ino, attr);
		if (stage_any(ino)) {
			_io_ io = io_begin(v, ino, NULL, false);
			if (io.locked)
				stage_attr(ino, attr);
		}
		view_map_attr(v, ino, attr);
	}
	return r;
}

void op_setattr(fuse_req_t req, fuse_ino_t id, struct stat *attr, int valid,
		struct fuse_file_info *fi)
{
	struct view *v = req_view(req);
	int r = do_setattr(v, req, node(v, id), attr, valid, fi);

	if (r < 0)
		reply_status(req, r);
	else
		fuse_reply_attr(req, attr, attr_timeout(v, node(v, id), attr));
}

void op_readlink(fuse_req_t req, fuse_ino_t id)
{
	struct view *v = req_view(req);
	char buf[PATH_MAX + 1];
	ssize_t n;
	int r = skill_gate(v, req, node(v, id), NULL, "readlink");

	if (r < 0)
		return reply_status(req, r);
	_pinned_ p = pin(v, node(v, id));
	if (p.fd < 0)
		return reply_status(req, p.fd);
	n = readlinkat(p.fd, "", buf, sizeof(buf));
	if (n < 0)
		return reply_status(req, neg_errno());
	if ((size_t)n >= sizeof(buf))
		return reply_status(req, -ENAMETOOLONG);
	buf[n] = '\0';
	fuse_reply_readlink(req, buf);
}

enum make_kind { MAKE_NODE, MAKE_DIR, MAKE_SYMLINK };

/* mknod, mkdir and symlink: the same checks, one backing call apart. */
static void make_entry(fuse_req_t req, fuse_ino_t parent, const char *name, enum make_kind kind,
		       mode_t mode, dev_t rdev, const char *target)
{
	static const char *const op_names[] = { "mknod", "mkdir", "symlink" };
	struct view *v = req_view(req);
	struct inode *dir = node(v, parent);
	struct fuse_entry_param e;
	int r, fd;

	r = may_modify(v, req, dir);
	if (r < 0)
		return reply_status(req, r);
	_pinned_ p = pin(v, dir);
	if (p.fd < 0)
		return reply_status(req, p.fd);
	r = check_new_name(v, req, dir, p.fd, name, op_names[kind]);
	if (r == 0 && kind == MAKE_SYMLINK && overlay_reserved_target(dir, target)) {
		log_refusal(v, req, dir, name, "symlink", "the target is the overlay's whiteout");
		r = -EINVAL;
	}
	if (r == 0)
		r = charge(v, req, dir, name, kind == MAKE_DIR ? 4096 : 0, 1, op_names[kind]);
	int white = r < 0 ? r : overlay_unwhite(v, req, dir, p.fd, name);
	if (r < 0 || (r = white) < 0)
		return reply_status(req, r);

	struct name_change nc = {
		.kind = NAME_MAKE,
		.dir = dir,
		.dfd = p.fd,
		.name = name,
		.event = kind == MAKE_DIR	? "mkdir"
			 : kind == MAKE_SYMLINK ? "symlink"
						: "create",
	};
	r = name_change_begin(v, req, &nc);
	if (r < 0)
		return reply_status(req, r);
	switch (kind) {
	case MAKE_NODE:
		r = mknodat(p.fd, name, mode & ~nc.caller.umask & ~nc.caller.strip, rdev);
		break;
	case MAKE_DIR:
		r = mkdirat(p.fd, name, mode & ~nc.caller.umask);
		break;
	case MAKE_SYMLINK:
		r = symlinkat(target, p.fd, name);
		break;
	}
	if (r < 0)
		return reply_status(req, name_change_abort(&nc, neg_errno()));
	name_change_commit(&nc);

	fd = confine_lookup(p.fd, name);
	if (fd >= 0 && kind == MAKE_DIR && gate_unlink(v->gate)) {
		struct stat st;
		if (stat_fd(fd, &st) == 0)
			gate_note_listed(v->gate, &st);
	}
	r = fd < 0 ? fd : entry_add(v, dir, name, fd, &e);
	if (r < 0)
		return reply_status(req, r);
	journal_created(v, node(v, e.ino));
	/* Made where the project's was removed: it hides that one whole. */
	if (white && kind == MAKE_DIR && (r = overlay_make_opaque(v, req, node(v, e.ino))) < 0)
		log_refusal(v, req, dir, name, "mkdir", "cannot mark the directory opaque");
	if (fuse_reply_entry(req, &e) != 0)
		inode_forget(v->inodes, node(v, e.ino), 1);
}

void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	make_entry(req, parent, name, MAKE_NODE, mode, rdev, NULL);
}

void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	make_entry(req, parent, name, MAKE_DIR, mode, 0, NULL);
}

void op_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name)
{
	make_entry(req, parent, name, MAKE_SYMLINK, 0, 0, target);
}

int remove_name(struct view *v, fuse_req_t req, struct inode *dir, int dfd, const char *name,
		int flags)
{
	struct name_change nc = {
		.kind = NAME_REMOVE,
		.dir = dir,
		.dfd = dfd,
		.name = name,
		.flags = (unsigned int)flags,
		.event = flags & AT_REMOVEDIR ? "rmdir" : "delete",
	};
	int r = name_change_begin(v, req, &nc);

	if (r < 0)
		return r;
	if (flags & AT_REMOVEDIR)
		r = unlinkat(dfd, name, flags) < 0 ? neg_errno() : 0;
	else
		r = journal_remove_kept(v, req, dir, dfd, name, nc.gone ? &nc.victim : NULL);
	nc.kept = r == 1;
	if (r < 0)
		return name_change_abort(&nc, r);
	name_change_commit(&nc);
	return 0;
}

/* rmdir of NAME in overlay directory DIR (fd DFD): what the view shows
 * of it must be empty; the layer's marks in it go first. */
static int remove_overlay_dir(struct view *v, fuse_req_t req, struct inode *dir, int dfd,
			      const char *name)
{
	struct inode_layer layer;
	struct stat st;
	int fd = overlay_lookup(dir, dfd, name, &layer);

	if (fd < 0)
		return fd;
	_cleanup_(closep) int own = fd;
	_cleanup_(closep) int lower_fd = layer.lower_fd;
	if (stat_fd(fd, &st) < 0 || !S_ISDIR(st.st_mode))
		return -ENOTDIR;
	struct inode child = { .overlay = true, .lower = layer.lower, .lower_fd = lower_fd };
	int n = overlay_count(&child, fd);
	if (n != 0)
		return n < 0 ? n : -ENOTEMPTY;
	if (layer.lower)
		return overlay_white_out(v, req, dir, dfd, name);
	/* The layer's directory: its whiteouts and mark, as the changes
	 * they are, need its inode (the kernel, removing it, holds it). */
	struct inode *ino = inode_find(v->inodes, dir->domain, st.st_dev, st.st_ino);
	int sfd = ino ? confine_opendir(fd) : -ESTALE;
	_cleanup_(closedirp) DIR *d = sfd >= 0 ? fdopendir(sfd) : NULL;
	int r = sfd < 0 ? sfd : d ? 0 : neg_errno();
	struct dirent *de;
	if (sfd >= 0 && !d)
		close(sfd);
	while (r >= 0 && d && (errno = 0, de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			r = remove_name(v, req, ino, fd, de->d_name, 0);
	if (ino)
		inode_unpin(v->inodes, ino);
	if (r < 0)
		return r;
	if ((r = remove_name(v, req, dir, dfd, name, AT_REMOVEDIR)) < 0)
		return r;
	return overlay_white_out(v, req, dir, dfd, name);
}

static void remove_entry(fuse_req_t req, fuse_ino_t parent, const char *name, int flags)
{
	struct view *v = req_view(req);
	struct inode *dir = node(v, parent);
	int r = may_modify(v, req, dir);

	if (r < 0)
		return reply_status(req, r);
	if (!confine_name_ok(name))
		return reply_status(req, -EINVAL);
	if (stage_area_name(v, dir, name) || overlay_hidden_name(dir, name))
		return reply_status(req, -ENOENT);
	_pinned_ p = pin(v, dir);
	if (p.fd < 0)
		return reply_status(req, p.fd);
	if (!dir->overlay)
		return reply_status(req, remove_name(v, req, dir, p.fd, name, flags));
	if (flags & AT_REMOVEDIR)
		return reply_status(req, remove_overlay_dir(v, req, dir, p.fd, name));
	/* A file: the layer's goes, then the project's is whited out. */
	struct inode_layer layer;
	int fd = overlay_lookup(dir, p.fd, name, &layer);
	if (fd < 0)
		return reply_status(req, fd);
	close(fd);
	if (layer.lower_fd >= 0)
		close(layer.lower_fd);
	if (!layer.lower && (r = remove_name(v, req, dir, p.fd, name, 0)) < 0)
		return reply_status(req, r);
	reply_status(req, overlay_white_out(v, req, dir, p.fd, name));
}

void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, 0);
}

void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, AT_REMOVEDIR);
}

/* Whether NAME in DFD and NEWNAME in TFD are two names of one file (hard
 * links): a rename of one over the other does nothing and succeeds. The
 * kernel asks for it only if it holds two inodes of the file, as under
 * the writeback cache once one of the names led to a renewed inode; the
 * view must not take it for a move (its journal, its table). */
static bool names_of_one_file(int dfd, const char *name, int tfd, const char *newname)
{
	struct stat a, b;

	return fstatat(tfd, newname, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	       fstatat(dfd, name, &a, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

static int do_rename(struct view *v, fuse_req_t req, struct inode *from, const char *name,
		     struct inode *to, const char *newname, unsigned int flags)
{
	int r = may_modify(v, req, from);

	if (r == 0)
		r = may_modify(v, req, to);
	if (r < 0)
		return r;
	if (from->domain != to->domain)
		return -EXDEV;
	if (!confine_name_ok(name))
		return -EINVAL;
	if (stage_area_name(v, from, name))
		return -ENOENT;
	_pinned_ pf = pin(v, from);
	if (pf.fd < 0)
		return pf.fd;
	_pinned_ pt = pin(v, to);
	if (pt.fd < 0)
		return pt.fd;
	r = check_new_name(v, req, to, pt.fd, newname, "rename");
	if (r < 0 && r != -EEXIST)
		return r;
	if (!from->overlay && !to->overlay && names_of_one_file(pf.fd, name, pt.fd, newname))
		return flags & RENAME_NOREPLACE ? -EEXIST : 0;
	if (from->overlay &&
	    (r = overlay_rename_prepare(v, req, from, pf.fd, name, to, pt.fd, newname, flags)) < 0)
		return r;
	struct name_change nc = {
		.kind = NAME_RENAME,
		.dir = from,
		.dfd = pf.fd,
		.name = name,
		.to = to,
		.tfd = pt.fd,
		.newname = newname,
		.flags = flags,
		.event = flags & RENAME_EXCHANGE ? "exchange" : "rename",
	};
	r = name_change_begin(v, req, &nc);
	if (r < 0)
		return r;
	if (renameat2(pf.fd, name, pt.fd, newname, flags) < 0)
		return name_change_abort(&nc, neg_errno());
	name_change_commit(&nc);
	/* The project's name it had stays hidden. */
	return flags & RENAME_EXCHANGE ? 0 : overlay_white_out(v, req, from, pf.fd, name);
}

void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
	       const char *newname, unsigned int flags)
{
	struct view *v = req_view(req);

	reply_status(req,
		     do_rename(v, req, node(v, parent), name, node(v, newparent), newname, flags));
}

static int do_link(struct view *v, fuse_req_t req, struct inode *ino, struct inode *dir,
		   const char *newname, struct fuse_entry_param *e)
{
	char path[CONFINE_FD_PATH_MAX];
	int r, fd;

	if (ino->synth || ino->root)
		return -EPERM;
	r = may_modify(v, req, dir);
	if (r == 0 && ino->lower)
		r = may_modify(v, req, ino); /* links its copy */
	if (r < 0)
		return r;
	if (ino->domain != dir->domain)
		return -EXDEV;
	_pinned_ pd = pin(v, dir);
	if (pd.fd < 0)
		return pd.fd;
	r = check_new_name(v, req, dir, pd.fd, newname, "link");
	if (r == 0)
		r = overlay_unwhite(v, req, dir, pd.fd, newname);
	if (r < 0)
		return r;
	_pinned_ ps = pin(v, ino);
	if (ps.fd < 0)
		return ps.fd;
	/* linkat(AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH; the fd's proc
	 * link names the same inode and works for everyone. */
	confine_fd_path(ps.fd, path);
	struct name_change nc = {
		.kind = NAME_LINK,
		.dir = dir,
		.dfd = pd.fd,
		.name = newname,
		.file = ino,
		.file_fd = ps.fd,
		.event = "link",
	};
	r = name_change_begin(v, req, &nc);
	if (r < 0)
		return r;
	if (linkat(AT_FDCWD, path, pd.fd, newname, AT_SYMLINK_FOLLOW) < 0)
		return name_change_abort(&nc, neg_errno());
	name_change_commit(&nc);
	fd = fcntl(ps.fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return neg_errno();
	return entry_add(v, dir, newname, fd, e);
}

void op_link(fuse_req_t req, fuse_ino_t id, fuse_ino_t newparent, const char *newname)
{
	struct view *v = req_view(req);
	struct fuse_entry_param e;
	int r = do_link(v, req, node(v, id), node(v, newparent), newname, &e);

	if (r < 0)
		return reply_status(req, r);
	if (fuse_reply_entry(req, &e) != 0)
		inode_forget(v->inodes, node(v, e.ino), 1);
}
