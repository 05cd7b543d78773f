/* ops.c - see ops.h.
 *
 * Conventions: helpers return 0/positive or -errno; a callback ends with
 * exactly one reply. Backing fds are pinned with pin() and released by the
 * cleanup attribute, so an early return never leaks a pin.
 */
#include "ops.h"
#include "channel.h"
#include "cleanup.h"
#include "confine.h"
#include "gate.h"
#include "gate_request.h"
#include "inode.h"
#include "log.h"
#include "journal.h"
#include "names.h"
#include "proc.h"
#include "stage.h"
#include "view.h"
#include "watch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

static struct view *req_view(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static struct inode *node(struct view *v, fuse_ino_t id)
{
	return id == FUSE_ROOT_ID ? v->top : (struct inode *)(uintptr_t)id;
}

static fuse_ino_t node_id(struct view *v, struct inode *ino)
{
	return ino == v->top ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)ino;
}

static void reply_status(fuse_req_t req, int r)
{
	fuse_reply_err(req, r < 0 ? -r : 0);
}

/* A backing fd pinned for the duration of a request. */
struct pinned {
	struct inode_table *table;
	struct inode *ino;
	int fd;
};

static struct pinned pin(struct view *v, struct inode *ino)
{
	return (struct pinned){ v->inodes, ino, inode_fd_get(v->inodes, ino) };
}

static void unpin(struct pinned *p)
{
	if (p->fd >= 0)
		inode_unpin(p->table, p->ino);
	p->fd = -1;
}

#define _pinned_ _cleanup_(unpin) struct pinned

/* An open regular file. */
struct open_file {
	struct open_file *prev, *next;	/* the view's open handles */
	struct inode *ino;
	int fd;
	_Atomic bool refused;	/* a save through it was refused
				 * (ops_refuse_handles): no more changes */
	bool writer;		/* opened to modify (write access, O_TRUNC, create) */
	bool authorized;	/* the gate let it modify; kept until close */
	bool stageable;		/* its changes go to a stage (stage.h) */
	bool journaled;		/* its change is in the journal already */
	bool flushed;		/* stageable: closed (FLUSH) since its last
				 * change; counted in inode->flushed_writers */
};

static struct open_file *fh_of(const struct fuse_file_info *fi)
{
	return (struct open_file *)(uintptr_t)fi->fh;
}

static int fd_of(const struct fuse_file_info *fi)
{
	return fh_of(fi)->fd;
}

static int stat_fd(int fd, struct stat *st)
{
	return fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0
		       ? neg_errno() : 0;
}

static bool handle_refused(const struct open_file *h)
{
	return h && atomic_load_explicit(&h->refused, memory_order_acquire);
}

/* The content of a regular file for one request: the stage's fd while the
 * file has one (under its stage lock, as the stage may change), else the
 * fd of handle H (or -1 for requests without a handle). A refused handle
 * has only its own fd. CHANGE: the request may create a stage, so it always
 * locks a stageable file. */
struct io {
	struct view *v;
	struct inode *ino;
	int fd;
	bool locked;
};

static struct io io_begin(struct view *v, struct inode *ino,
			  const struct open_file *h, bool change)
{
	struct io io = { v, ino, h ? h->fd : -1, false };

	if (S_ISREG(ino->type) && !handle_refused(h) &&
	    (stage_any(ino) || (change && stage_possible(v, ino)))) {
		stage_lock(v, ino);
		if (handle_refused(h)) {	/* while we waited for the lock */
			stage_unlock(v, ino);
			return io;
		}
		io.locked = true;
		io.fd = stage_io_fd(ino, io.fd);
	}
	return io;
}

static void io_end(struct io *io)
{
	if (io->locked)
		stage_unlock(io->v, io->ino);
	io->locked = false;
}

#define _io_ _cleanup_(io_end) struct io

/* For a change through handle H (IO from io_begin): the fd the change
 * goes to, staging the file first if H stages; or -errno. */
static int io_change_fd(struct io *io, struct open_file *h)
{
	if (!h->stageable || !io->locked)
		return io->fd;
	int fd = stage_for_change(io->v, io->ino, io->fd, false);
	if (fd >= 0)
		io->fd = fd;
	return fd;
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
	if (r == 0) {
		inode_note_attr(v->inodes, ino, st);
		view_map_attr(v, ino, st);
	}
	return r;
}

/* How long the kernel may trust names in DIR: long where a watch tells it
 * of host changes, short where nothing would. */
static double entry_timeout(struct view *v, struct inode *dir)
{
	return dir->synth || atomic_load_explicit(&dir->wd, memory_order_relaxed) > 0
		       ? v->timeout_watched : v->timeout;
}

static double attr_timeout(struct view *v, struct inode *ino)
{
	return ino->synth || atomic_load_explicit(&ino->covered, memory_order_relaxed) ||
			       atomic_load_explicit(&ino->wd, memory_order_relaxed) > 0
		       ? v->timeout_watched : v->timeout;
}

static bool in_uploads(struct view *v, struct inode *dir)
{
	struct root *root = inode_root(v->inodes, dir);

	return root && root->uploads;
}

/* Logs a refused request with enough context to act on it. */
static void log_refusal(struct view *v, fuse_req_t req, struct inode *dir,
			const char *name, const char *op, const char *why)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char path[PATH_MAX], comm[COMM_MAX];

	proc_comm(ctx->pid, comm);
	log_warn("refused %s of '%s': %s (pid %d, %s)", op,
		 inode_path(v->inodes, dir, name, path, sizeof(path)), why,
		 (int)ctx->pid, comm);
}

/* EACCES for DIR/NAME (NAME may be NULL) if it is or is in a disabled
 * skill, logged in the reference's words: nothing of such a skill is
 * served, whatever the kernel still holds of it (a cached name, an open
 * directory). */
static int skill_gate(struct view *v, fuse_req_t req, struct inode *dir,
		      const char *name, const char *op)
{
	char skill[NAME_MAX + 1], why[sizeof(skill) + 128];
	int r = view_skill_check(v, dir, name, skill, sizeof(skill));

	if (r < 0) {
		snprintf(why, sizeof(why), SKILL_DISABLED_FMT, skill);
		log_refusal(v, req, dir, name, op, why);
	}
	return r;
}

/* Charges the thread's quota for a change of INO (or a new entry NAME of
 * it); a refusal is logged. */
static int charge(struct view *v, fuse_req_t req, struct inode *ino, const char *name,
		  uint64_t bytes, uint64_t inodes, const char *op)
{
	char why[128];
	int r = view_charge(v, ino, bytes, inodes, why, sizeof(why));

	if (r < 0)
		log_refusal(v, req, ino, name, op, why);
	return r;
}

/* What a write of LEN bytes at OFF may allocate in FD: what it adds past
 * the end (a hole before it takes no space). */
static uint64_t write_growth(int fd, off_t off, size_t len)
{
	struct stat st;
	off_t end = off + (off_t)len;

	if (fstat(fd, &st) < 0)
		return len;
	if (end <= st.st_size)
		return 0;
	return end - st.st_size < (off_t)len ? (uint64_t)(end - st.st_size) : len;
}

/* Checks a name about to be created in DIR (fd DFD). Returns 0, -EINVAL
 * for a refused name (logged), or -EEXIST if a refused name already exists
 * (nothing new would be created, so replacing it is not refused). */
static int check_new_name(struct view *v, fuse_req_t req, struct inode *dir,
			  int dfd, const char *name, const char *op)
{
	const char *why = NULL;
	struct stat st;

	if (!confine_name_ok(name))
		return -EINVAL;
	if (stage_area_name(v, dir, name)) {
		log_refusal(v, req, dir, name, op, "the name is the view's staging area");
		return -EINVAL;
	}
	if (name_is_upload_staging(name) && in_uploads(v, dir)) {
		log_refusal(v, req, dir, name, op,
			    "the name matches the reserved upload staging pattern .upload-*.part");
		return -EINVAL;
	}
	if (!v->portable_names || name_check_portable(name, &why) == 0)
		return 0;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return -EEXIST;
	log_refusal(v, req, dir, name, op, why);
	return -EINVAL;
}

/* A change through handle H of INO: H is authorized by its first change
 * and keeps the right until closed. The check and the change it allows
 * are atomic under T (gate_unlock ends both). */
static int handle_change_begin(struct view *v, fuse_req_t req,
			       struct inode *ino, struct open_file *h, int fd,
			       struct gate_ticket *t, const char *op)
{
	int r = gate_file_begin(v, req, t, ino, fd, h->authorized ? NULL : op);

	if (r == 0 && v->gate)
		h->authorized = true;
	return r;
}

static int drop_privs(struct view *v, fuse_req_t req, int fd, bool opath);

/* A change of file content through a handle (write, fallocate, ftruncate,
 * copy_file_range): the file's stage lock, then its gate; the change goes
 * to the fd change_begin() returns (a stage if the handle stages). */
struct change {
	struct io io;
	struct gate_ticket t;
	struct view *v;
	fuse_req_t req;
	struct open_file *h;
};

static int change_begin(struct view *v, fuse_req_t req, struct inode *ino,
			struct fuse_file_info *fi, struct change *c,
			const char *op)
{
	struct open_file *h = fh_of(fi);
	int r, fd;

	/* Its save was refused and kept as a copy: what it would write now
	 * would have no file to go to that the thread reads back. */
	if (handle_refused(h))
		return -EACCES;
	c->v = v;
	c->req = req;
	c->h = h;
	if (!h->journaled)
		journal_preimage(v, req, ino);
	c->io = io_begin(v, ino, h, true);
	/* The kernel writing back a shared writable mapping is never refused:
	 * the process wrote that memory already, so a refusal could only lose
	 * it; and a mapping's pages were read from the file (a READ, which
	 * sets the mark) when the process first touched them. */
	r = handle_change_begin(v, req, ino, h, c->io.fd, &c->t,
				fi->writepage ? NULL : op);
	if (r < 0) {
		io_end(&c->io);
		return r;
	}
	if (h->flushed && c->io.locked) {
		h->flushed = false;	/* written again through a dup */
		ino->flushed_writers--;
	}
	/* Set-id bits go with the change, under its gate lock: the gate must
	 * not take their removal for a change on the host. */
	fd = fi->writepage ? 0 : drop_privs(v, req, c->io.fd, false);
	if (fd == 0)
		fd = io_change_fd(&c->io, h);
	if (fd < 0) {
		gate_unlock(&c->t, NULL, true);
		io_end(&c->io);
	}
	return fd;
}

/* Ends it with the change's result: a failure that means the data may not
 * be there (no space, quota, I/O error) fails the whole save of a staged
 * file, which then keeps its previous content. */
static void change_end(struct change *c, ssize_t result, bool changed)
{
	if (c->io.locked && (result == -ENOSPC || result == -EDQUOT || result == -EIO ||
			     result == -EFBIG))
		stage_failed(c->io.ino, (int)-result);	/* unlocked: no stage */
	/* The change went to the file or its stage, and the thread has seen
	 * what it wrote: the mark follows, and so does what saves start
	 * from. */
	struct stat after;
	bool have_after = changed && fstat(c->io.fd, &after) == 0;
	if (have_after && c->io.locked)
		stage_note_change(c->io.ino, &after);
	gate_unlock(&c->t, have_after ? &after : NULL, true);
	if (changed && !c->h->journaled) {
		c->h->journaled = true;
		journal_note(c->v, c->req, "modify", c->io.ino, NULL, NULL, NULL);
	}
	io_end(&c->io);
}

/* New entries are made as the caller would make them natively:
 *  - with the caller's umask, applied by the backing filesystem, which
 *    ignores it where a default ACL says so. The umask is per process, so
 *    each worker thread unshares its fs attributes once (CLONE_FS), as
 *    virtiofsd does, and sets the umask per request;
 *  - by a root daemon, with the caller's fsuid/fsgid, so entries belong to
 *    the caller and set-gid directories work. The kernel did the
 *    permission check (default_permissions), and SECBIT_NO_SETUID_FIXUP
 *    keeps our capabilities across the switch. The sandbox of
 *    --map-owner is served as the daemon's user, and its new files get
 *    no set-id bits: on the host they belong to that user. */
struct as_caller {
	bool switched;
	mode_t umask;	/* to apply by hand where the thread could not unshare */
	mode_t strip;	/* bits a new file may not have */
};

static __thread bool thread_fs_unshared;
static __thread mode_t thread_umask;	/* valid once unshared */

static bool unshare_thread_fs(void)
{
	if (!thread_fs_unshared && unshare(CLONE_FS) == 0) {
		thread_umask = umask(0);
		umask(thread_umask);
		thread_fs_unshared = true;
	}
	return thread_fs_unshared;
}

static struct as_caller caller_enter(struct view *v, fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct as_caller c = { false, 0, 0 };
	bool mapped = view_mapped_caller(v, ctx->uid);

	if (mapped)
		c.strip = S_ISUID | S_ISGID;
	if (v->caller_umask) {
		if (unshare_thread_fs()) {
			/* Callers rarely change it: skip the syscall. */
			if (thread_umask != ctx->umask)
				umask(ctx->umask);
			thread_umask = ctx->umask;
		} else
			c.umask = ctx->umask;	/* default ACLs then lose */
	}
	uid_t uid = mapped ? v->uid : ctx->uid;
	gid_t gid = mapped ? v->gid : ctx->gid;
	if (v->creds_switch && (uid != 0 || gid != 0)) {
		setfsgid(gid);
		setfsuid(uid);
		c.switched = true;
	}
	return c;
}

static void caller_leave(struct as_caller *c)
{
	if (c->switched) {
		setfsuid(0);
		setfsgid(0);
	}
}

int ops_enable_creds_switch(void)
{
	int bits = prctl(PR_GET_SECUREBITS);

	if (bits < 0 || prctl(PR_SET_SECUREBITS,
			      bits | SECBIT_NO_SETUID_FIXUP) < 0)
		return neg_errno();
	return 0;
}

/* Tells the inode table where the object now called DIR/NAME lives. */
static void note_moved(struct view *v, struct inode *dir, int dfd,
		       const char *name)
{
	struct stat st;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		inode_moved(v->inodes, dir->domain, st.st_dev, st.st_ino, dir,
			    name);
}

/* A change of names: mknod, mkdir, symlink and create make one, link adds
 * one, unlink and rmdir remove one, rename moves one (and may replace or
 * exchange another). The caller says what changes; name_change_begin()
 * does what must come before the backing syscall, name_change_commit()
 * or name_change_abort() what must come after it, always in this order:
 *
 *  1. the gate decides on the file the change replaces or removes (or,
 *     for a link, on the file linked), and its gate lock is held to the
 *     end: the decision and the change it allows are one step;
 *  2. the journal takes the pre-images of the names that go or move, as
 *     the gate saw them;
 *  3. the host watch is told of the names to come and go (before the
 *     syscall: a faster watch thread would take them for host changes);
 *  4. a new entry is made with the caller's credentials and umask;
 *  5. the directories' names are held (view_names_hold()), and the entry
 *     the change removes or replaces is looked at under the hold, where
 *     no publication can put another file in its place;
 *     -- the caller's backing syscall --
 *  6. still under the hold, the inode table learns what moved and which
 *     file lost its name; then the hold and the credentials are let go;
 *  7. the gate lock ends: a current mark stays current across the ctime
 *     the change moved;
 *  8. after a change, the quota gets back what it freed, the journal
 *     records it, stored marks follow (a removed name's is dropped, a
 *     moved file's goes to its new path); after a failure, the watch is
 *     told the names did not change after all. */
enum name_kind {
	NAME_MAKE,	/* DIR/NAME is made, as the caller */
	NAME_LINK,	/* DIR/NAME becomes a link to FILE */
	NAME_REMOVE,	/* DIR/NAME goes (FLAGS: AT_REMOVEDIR for rmdir) */
	NAME_RENAME,	/* DIR/NAME moves to TO/NEWNAME (FLAGS: renameat2's) */
};

struct name_change {
	/* What changes, filled in by the caller: */
	enum name_kind kind;
	struct inode *dir;
	int dfd;			/* DIR's fd */
	const char *name;
	struct inode *to;		/* NAME_RENAME */
	int tfd;
	const char *newname;
	unsigned int flags;
	struct inode *file;		/* NAME_LINK, with its O_PATH fd */
	int file_fd;
	const char *event;		/* the journal's, on commit; NULL: none */
	/* NAME_MAKE: the umask to apply and the bits to strip (as_caller). */
	struct as_caller caller;
	/* The protocol's own: */
	struct view *v;
	fuse_req_t req;
	struct gate_names g;
	bool gone;			/* the entry removed or replaced, */
	struct stat victim;		/*   seen under the hold */
};

static bool name_exchange(const struct name_change *nc)
{
	return nc->kind == NAME_RENAME && (nc->flags & RENAME_EXCHANGE);
}

/* Step 1: the gate, by kind. */
static int name_change_gate(struct name_change *nc)
{
	switch (nc->kind) {
	case NAME_LINK:
		return gate_link_begin(nc->v, nc->req, &nc->g, nc->file,
				       nc->file_fd, nc->dir);
	case NAME_REMOVE:
		return gate_remove_begin(nc->v, nc->req, &nc->g, nc->dir, nc->dfd,
					 nc->name, nc->flags & AT_REMOVEDIR);
	case NAME_RENAME:
		return gate_rename_begin(nc->v, nc->req, &nc->g, nc->dir, nc->dfd,
					 nc->name, nc->to, nc->tfd, nc->newname,
					 nc->flags);
	case NAME_MAKE:
		break;
	}
	gate_names_none(&nc->g);
	return 0;
}

/* Step 2: the pre-images of the names that go or move. */
static void name_change_preimages(struct name_change *nc)
{
	if (nc->kind == NAME_REMOVE && !(nc->flags & AT_REMOVEDIR))
		journal_preimage_at(nc->v, nc->req, nc->dir, nc->dfd, nc->name,
				    true);
	if (nc->kind != NAME_RENAME)
		return;
	journal_preimage_at(nc->v, nc->req, nc->dir, nc->dfd, nc->name, false);
	if (!(nc->flags & RENAME_NOREPLACE))
		journal_preimage_at(nc->v, nc->req, nc->to, nc->tfd, nc->newname,
				    !name_exchange(nc));
}

/* Steps 3 and 8: the names the change adds and removes, told to the host
 * watch before it (EXPECT) or, if it failed, after it. */
static void name_change_watch(struct name_change *nc, bool expect)
{
	void (*tell)(struct watch *, struct inode *, const char *, bool) =
		expect ? watch_expect : watch_unexpect;
	struct watch *w = nc->v->watch;

	switch (nc->kind) {
	case NAME_MAKE:
	case NAME_LINK:
		tell(w, nc->dir, nc->name, true);
		break;
	case NAME_REMOVE:
		tell(w, nc->dir, nc->name, false);
		break;
	case NAME_RENAME:
		tell(w, nc->dir, nc->name, false);
		tell(w, nc->to, nc->newname, true);
		if (name_exchange(nc)) {
			tell(w, nc->to, nc->newname, false);
			tell(w, nc->dir, nc->name, true);
		}
		break;
	}
}

/* Begins the change NC describes (steps 1 to 5), by the caller of REQ.
 * Returns 0, the caller then makes the syscall and ends with
 * name_change_commit() or name_change_abort(); or -errno (a refusal),
 * with nothing left to end. */
static int name_change_begin(struct view *v, fuse_req_t req,
			     struct name_change *nc)
{
	int r;

	nc->v = v;
	nc->req = req;
	nc->caller = (struct as_caller){ false, 0, 0 };
	nc->gone = false;
	r = name_change_gate(nc);
	if (r < 0)
		return r;
	name_change_preimages(nc);
	name_change_watch(nc, true);
	if (nc->kind == NAME_MAKE)
		nc->caller = caller_enter(v, req);
	view_names_hold(v, nc->dir, nc->to);
	if (nc->kind == NAME_REMOVE)
		nc->gone = fstatat(nc->dfd, nc->name, &nc->victim,
				   AT_SYMLINK_NOFOLLOW) == 0;
	else if (nc->kind == NAME_RENAME &&
		 !(nc->flags & (RENAME_NOREPLACE | RENAME_EXCHANGE)))
		nc->gone = fstatat(nc->tfd, nc->newname, &nc->victim,
				   AT_SYMLINK_NOFOLLOW) == 0;
	return 0;
}

/* Steps 6 and 7; DONE: the syscall succeeded. */
static void name_change_end(struct name_change *nc, bool done)
{
	struct view *v = nc->v;

	if (done && nc->gone && S_ISREG(nc->victim.st_mode))
		inode_note_unnamed(v->inodes, (nc->to ? nc->to : nc->dir)->domain,
				   nc->victim.st_dev, nc->victim.st_ino);
	if (done && nc->kind == NAME_RENAME) {
		note_moved(v, nc->to, nc->tfd, nc->newname);
		if (name_exchange(nc))
			note_moved(v, nc->dir, nc->dfd, nc->name);
	}
	view_names_release(v, nc->dir, nc->to);
	caller_leave(&nc->caller);
	gate_names_end(&nc->g, done);
}

/* Ends the change NC after its syscall succeeded. */
static void name_change_commit(struct name_change *nc)
{
	struct view *v = nc->v;

	name_change_end(nc, true);
	if (nc->kind == NAME_REMOVE && nc->gone && v->quota)
		view_release(v, nc->dir, &nc->victim);
	else if (nc->kind == NAME_RENAME && nc->g.replaces && !name_exchange(nc))
		view_release(v, nc->to, NULL);	/* the replaced file's space */
	if (nc->event)
		journal_note(v, nc->req, nc->event, nc->dir, nc->name, nc->to,
			     nc->newname);
	gate_names_commit(v, &nc->g, nc->dir, nc->dfd, nc->name, nc->to,
			  nc->tfd, nc->newname);
}

/* Ends the change NC after its syscall failed with R; returns R. */
static int name_change_abort(struct name_change *nc, int r)
{
	name_change_end(nc, false);
	name_change_watch(nc, false);
	return r;
}

static void entry_init(struct view *v, struct inode *dir,
		       struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->entry_timeout = entry_timeout(v, dir);
	e->attr_timeout = e->entry_timeout;
}

/* Adds the object at PATH_FD (O_PATH, owned) as DIR/NAME and fills E. */
static int entry_attach(struct view *v, struct inode *dir, const char *name,
			int path_fd, struct fuse_entry_param *e, struct inode **out)
{
	struct timespec born;
	int r;

	entry_init(v, dir, e);
	r = inode_statx(path_fd, "", AT_EMPTY_PATH, &e->attr, &born);
	if (r < 0) {
		close(path_fd);
		return r;
	}
	*out = inode_lookup_add(v->inodes, dir, name, path_fd, &e->attr,
				r ? &born : NULL);
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
			watch_dir(v->watch, ino, p.fd);
	}
	inode_note_attr(v->inodes, ino, &e->attr);
	e->attr_timeout = attr_timeout(v, ino);
	view_map_attr(v, ino, &e->attr);
	e->ino = node_id(v, ino);
	return 0;
}

/* Adds the object at PATH_FD (O_PATH, owned) as DIR/NAME and fills E. */
static int entry_add(struct view *v, struct inode *dir, const char *name,
		     int path_fd, struct fuse_entry_param *e)
{
	struct inode *ino;
	int r = entry_attach(v, dir, name, path_fd, e, &ino);

	return r < 0 ? r : entry_finish(v, dir, ino, e);
}

static int do_lookup(struct view *v, struct inode *dir, const char *name,
		     struct fuse_entry_param *e)
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
		return -ENOENT;		/* the uploader's staging files */
	_pinned_ p = pin(v, dir);
	if (p.fd < 0)
		return p.fd;
	struct inode *ino;
	view_names_lock(v, dir, false);
	int r = confine_lookup(p.fd, name);
	if (r >= 0)
		r = entry_attach(v, dir, name, r, e, &ino);
	view_names_unlock(v, dir);
	return r < 0 ? r : entry_finish(v, dir, ino, e);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct view *v = userdata;

	/* Locks are kept by the kernel (no getlk/setlk/flock callbacks),
	 * which is exact for every process using the view. */
	conn->want &= ~(unsigned)FUSE_CAP_HANDLE_KILLPRIV;
	channel_init(v->channel, conn);		/* FUSE_HANDLE_KILLPRIV_V2 */
	if (v->writeback && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	else
		conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	conn->want &= ~(unsigned)FUSE_CAP_EXPORT_SUPPORT;
	if (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) {
		conn->want |= FUSE_CAP_NO_OPENDIR_SUPPORT;
		v->no_opendir = true;
	}
	/* Receive the caller's umask instead of a pre-masked mode, so a
	 * default ACL can override it as it does natively. */
	if ((conn->capable & FUSE_CAP_DONT_MASK) && unshare_thread_fs()) {
		conn->want |= FUSE_CAP_DONT_MASK;
		v->caller_umask = true;
	}
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
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

static void op_forget(fuse_req_t req, fuse_ino_t id, uint64_t nlookup)
{
	struct view *v = req_view(req);

	inode_forget(v->inodes, node(v, id), nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	struct view *v = req_view(req);

	for (size_t i = 0; i < count; i++)
		inode_forget(v->inodes, node(v, forgets[i].ino),
			     forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi)
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
		if (r == 0) {
			inode_note_attr(v->inodes, ino, &st);
			view_map_attr(v, ino, &st);
		}
	} else {
		r = inode_stat(v, ino, &st);
	}
	if (r < 0)
		reply_status(req, r);
	else
		fuse_reply_attr(req, &st, attr_timeout(v, ino));
}

/* With FUSE_HANDLE_KILLPRIV_V2 (channel.c) the kernel leaves to us what
 * its file_remove_privs() does before a write or truncate by a caller
 * without CAP_FSETID: clear set-uid, and set-gid where it means execution
 * (group-exec set, or the caller outside the group). The backing write,
 * made by us, does the rest: the backing kernel drops a file capability
 * whoever writes, but keeps set-id bits for a root daemon. FD is an open
 * file, or an O_PATH fd if OPATH. */
static int drop_privs(struct view *v, fuse_req_t req, int fd, bool opath)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char path[CONFINE_FD_PATH_MAX];
	struct stat st;
	mode_t mode, keep;

	if (!channel_killpriv(v->channel))
		return 0;
	if (opath)
		confine_fd_path(fd, path);
	if ((opath ? stat(path, &st) : fstat(fd, &st)) < 0)
		return neg_errno();
	if (!S_ISREG(st.st_mode) || !(st.st_mode & (S_ISUID | S_ISGID)) ||
	    proc_capable(ctx->pid, CAP_FSETID))
		return 0;
	mode = st.st_mode & 07777;
	keep = mode & ~(mode_t)S_ISUID;
	if ((keep & S_ISGID) && ((keep & S_IXGRP) || ctx->gid != st.st_gid))
		keep &= ~(mode_t)S_ISGID;
	if (keep != mode && (opath ? chmod(path, keep) : fchmod(fd, keep)) < 0)
		return neg_errno();
	return 0;
}

static int set_times(int pfd, int fh, const struct stat *attr, int valid)
{
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT },
				  { .tv_nsec = UTIME_OMIT } };
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
static int apply_setattr(struct view *v, fuse_req_t req, int pfd, int fh,
			 struct stat *attr, int valid)
{
	char path[CONFINE_FD_PATH_MAX];
	int r;

	confine_fd_path(pfd, path);
	if (valid & FUSE_SET_ATTR_MODE) {
		r = fh >= 0 ? fchmod(fh, attr->st_mode)
			    : chmod(path, attr->st_mode);
		if (r < 0)
			return neg_errno();
	}
	if (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		uid_t uid = valid & FUSE_SET_ATTR_UID ? attr->st_uid : (uid_t)-1;
		gid_t gid = valid & FUSE_SET_ATTR_GID ? attr->st_gid : (gid_t)-1;

		r = fh >= 0 ? fchown(fh, uid, gid)
			    : fchownat(pfd, "", uid, gid,
				       AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
		if (r < 0)
			return neg_errno();
	}
	if (valid & FUSE_SET_ATTR_SIZE) {
		r = drop_privs(v, req, fh >= 0 ? fh : pfd, fh < 0);
		if (r < 0)
			return r;
		r = fh >= 0 ? ftruncate(fh, attr->st_size)
			    : truncate(path, attr->st_size);
		if (r < 0)
			return neg_errno();
	}
	if (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
		     FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW)) {
		r = set_times(pfd, fh, attr, valid);
		if (r < 0)
			return r;
	}
	return fh >= 0 ? (fstat(fh, attr) < 0 ? neg_errno() : 0)
		       : stat_fd(pfd, attr);
}

/* --map-owner: the sandbox's ids in a chown are the daemon's user's on
 * the host, and a set-id bit it asks for would be that user's (root's,
 * under a root broker): refused. */
static int map_setattr(struct view *v, fuse_req_t req, struct inode *ino,
		       struct stat *attr, int valid)
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

static int do_setattr(struct view *v, fuse_req_t req, struct inode *ino,
		      struct stat *attr, int valid, struct fuse_file_info *fi)
{
	bool resize = valid & FUSE_SET_ATTR_SIZE;
	struct gate_ticket t;
	struct change c;
	struct stat st;
	int r;

	r = view_may_modify(v, ino);
	if (r < 0 || (r = map_setattr(v, req, ino, attr, valid)) < 0)
		return r;
	_pinned_ p = pin(v, ino);
	if (p.fd < 0)
		return p.fd;
	if (!v->default_permissions && v->creds_switch &&
	    (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID | FUSE_SET_ATTR_MODE |
		      FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) &&
	    ((r = stat_fd(p.fd, &st)) < 0 || (r = caller_may_setattr(v, req, &st, attr, valid)) < 0))
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
		r = gate_file_begin(v, req, &t, ino, target,
				    resize ? "truncate" : NULL);
		if (r < 0)
			return r;
		r = apply_setattr(v, req, p.fd, io.fd, attr, valid);
		if (r == 0 && content && io.locked)
			stage_note_change(ino, attr);
		gate_unlock(&t, r == 0 ? attr : NULL, resize);
		if (r == 0 && (resize || (valid & FUSE_SET_ATTR_MODE)))
			journal_note(v, req, resize ? "modify" : "chmod", ino, NULL,
				     NULL, NULL);
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

static void op_setattr(fuse_req_t req, fuse_ino_t id, struct stat *attr,
		       int valid, struct fuse_file_info *fi)
{
	struct view *v = req_view(req);
	int r = do_setattr(v, req, node(v, id), attr, valid, fi);

	if (r < 0)
		reply_status(req, r);
	else
		fuse_reply_attr(req, attr, attr_timeout(v, node(v, id)));
}

static void op_readlink(fuse_req_t req, fuse_ino_t id)
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
static void make_entry(fuse_req_t req, fuse_ino_t parent, const char *name,
		       enum make_kind kind, mode_t mode, dev_t rdev,
		       const char *target)
{
	static const char *const op_names[] = { "mknod", "mkdir", "symlink" };
	struct view *v = req_view(req);
	struct inode *dir = node(v, parent);
	struct fuse_entry_param e;
	int r, fd;

	r = view_may_modify(v, dir);
	if (r < 0)
		return reply_status(req, r);
	_pinned_ p = pin(v, dir);
	if (p.fd < 0)
		return reply_status(req, p.fd);
	r = check_new_name(v, req, dir, p.fd, name, op_names[kind]);
	if (r == 0)
		r = charge(v, req, dir, name, kind == MAKE_DIR ? 4096 : 0, 1, op_names[kind]);
	if (r < 0)
		return reply_status(req, r);

	struct name_change nc = {
		.kind = NAME_MAKE, .dir = dir, .dfd = p.fd, .name = name,
		.event = kind == MAKE_DIR ? NULL
			 : kind == MAKE_SYMLINK ? "symlink" : "create",
	};
	r = name_change_begin(v, req, &nc);
	if (r < 0)
		return reply_status(req, r);
	switch (kind) {
	case MAKE_NODE:
		r = mknodat(p.fd, name, mode & ~nc.caller.umask & ~nc.caller.strip,
			    rdev);
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
	if (fuse_reply_entry(req, &e) != 0)
		inode_forget(v->inodes, node(v, e.ino), 1);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	make_entry(req, parent, name, MAKE_NODE, mode, rdev, NULL);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	make_entry(req, parent, name, MAKE_DIR, mode, 0, NULL);
}

static void op_symlink(fuse_req_t req, const char *target, fuse_ino_t parent,
		       const char *name)
{
	make_entry(req, parent, name, MAKE_SYMLINK, 0, 0, target);
}

static void remove_entry(fuse_req_t req, fuse_ino_t parent, const char *name,
			 int flags)
{
	struct view *v = req_view(req);
	struct inode *dir = node(v, parent);
	int r = view_may_modify(v, dir);

	if (r < 0)
		return reply_status(req, r);
	if (!confine_name_ok(name))
		return reply_status(req, -EINVAL);
	if (stage_area_name(v, dir, name))
		return reply_status(req, -ENOENT);
	_pinned_ p = pin(v, dir);
	if (p.fd < 0)
		return reply_status(req, p.fd);
	struct name_change nc = {
		.kind = NAME_REMOVE, .dir = dir, .dfd = p.fd, .name = name,
		.flags = (unsigned int)flags,
		.event = flags & AT_REMOVEDIR ? NULL : "delete",
	};
	r = name_change_begin(v, req, &nc);
	if (r < 0)
		return reply_status(req, r);
	if (unlinkat(p.fd, name, flags) < 0)
		return reply_status(req, name_change_abort(&nc, neg_errno()));
	name_change_commit(&nc);
	reply_status(req, 0);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, 0);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, AT_REMOVEDIR);
}

static int do_rename(struct view *v, fuse_req_t req, struct inode *from,
		     const char *name, struct inode *to, const char *newname,
		     unsigned int flags)
{
	int r = view_may_modify(v, from);

	if (r == 0)
		r = view_may_modify(v, to);
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
	struct name_change nc = {
		.kind = NAME_RENAME, .dir = from, .dfd = pf.fd, .name = name,
		.to = to, .tfd = pt.fd, .newname = newname, .flags = flags,
		.event = flags & RENAME_EXCHANGE ? "exchange" : "rename",
	};
	r = name_change_begin(v, req, &nc);
	if (r < 0)
		return r;
	if (renameat2(pf.fd, name, pt.fd, newname, flags) < 0)
		return name_change_abort(&nc, neg_errno());
	name_change_commit(&nc);
	return 0;
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	struct view *v = req_view(req);

	reply_status(req, do_rename(v, req, node(v, parent), name,
				    node(v, newparent), newname, flags));
}

static int do_link(struct view *v, fuse_req_t req, struct inode *ino,
		   struct inode *dir, const char *newname,
		   struct fuse_entry_param *e)
{
	char path[CONFINE_FD_PATH_MAX];
	int r, fd;

	if (ino->synth || ino->root)
		return -EPERM;
	r = view_may_modify(v, dir);
	if (r < 0)
		return r;
	if (ino->domain != dir->domain)
		return -EXDEV;
	_pinned_ pd = pin(v, dir);
	if (pd.fd < 0)
		return pd.fd;
	r = check_new_name(v, req, dir, pd.fd, newname, "link");
	if (r < 0)
		return r;
	_pinned_ ps = pin(v, ino);
	if (ps.fd < 0)
		return ps.fd;
	/* linkat(AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH; the fd's proc
	 * link names the same inode and works for everyone. */
	confine_fd_path(ps.fd, path);
	struct name_change nc = {
		.kind = NAME_LINK, .dir = dir, .dfd = pd.fd, .name = newname,
		.file = ino, .file_fd = ps.fd, .event = "create",
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

static void op_link(fuse_req_t req, fuse_ino_t id, fuse_ino_t newparent,
		    const char *newname)
{
	struct view *v = req_view(req);
	struct fuse_entry_param e;
	int r = do_link(v, req, node(v, id), node(v, newparent), newname, &e);

	if (r < 0)
		return reply_status(req, r);
	if (fuse_reply_entry(req, &e) != 0)
		inode_forget(v->inodes, node(v, e.ino), 1);
}

/* Open flags for the backing file. With the writeback cache the kernel
 * reads pages around partial writes and appends by itself. */
static int backing_flags(struct view *v, int flags)
{
	if (v->writeback) {
		if ((flags & O_ACCMODE) == O_WRONLY)
			flags = (flags & ~O_ACCMODE) | O_RDWR;
		flags &= ~O_APPEND;
	}
	/* O_DIRECT stays with the kernel (direct_io on the handle): the
	 * request buffers libfuse hands us are not aligned for the backing
	 * filesystem's O_DIRECT. */
	return flags & ~(O_NOFOLLOW | O_DIRECT);
}

/* Wraps FD in a handle stored in FI; the fd is closed on failure. */
static int fill_open_info(struct view *v, struct inode *ino,
			  struct fuse_file_info *fi, int fd, bool writer,
			  bool authorized)
{
	struct open_file *h = calloc(1, sizeof(*h));

	if (!h) {
		close(fd);
		return -ENOMEM;
	}
	h->ino = ino;
	h->fd = fd;
	h->writer = writer;
	h->authorized = authorized;
	pthread_mutex_lock(&v->open_files_lock);
	h->next = v->open_files;
	if (h->next)
		h->next->prev = h;
	v->open_files = h;
	pthread_mutex_unlock(&v->open_files_lock);
	fi->fh = (uint64_t)(uintptr_t)h;
	/* Page cache survives reopen; auto_inval_data drops it when the
	 * attributes show the file changed. Under the strict gate every
	 * change needs a fresh read, which must reach the daemon. */
	fi->keep_cache = v->timeout > 0 && gate_mode(v->gate) != GATE_STRICT &&
			 !atomic_exchange_explicit(&ino->stale_pages, false, memory_order_acq_rel);
	fi->direct_io = (fi->flags & O_DIRECT) != 0;
	fi->noflush = (fi->flags & O_ACCMODE) == O_RDONLY;
	return 0;
}

static void handle_close(struct view *v, struct fuse_file_info *fi)
{
	struct open_file *h = fh_of(fi);

	pthread_mutex_lock(&v->open_files_lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		v->open_files = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&v->open_files_lock);
	close(h->fd);
	free(h);
}

void ops_refuse_handles(struct view *v, const struct inode *ino)
{
	pthread_mutex_lock(&v->open_files_lock);
	for (struct open_file *h = v->open_files; h; h = h->next)
		if (h->ino == ino)
			atomic_store_explicit(&h->refused, true, memory_order_release);
	pthread_mutex_unlock(&v->open_files_lock);
}

void ops_close_all(struct view *v)
{
	/* An unmount under load can drop RELEASE requests still queued in
	 * the kernel: their handles end here (their data was published at
	 * the FLUSH that close() sent). */
	while (v->open_files) {
		struct open_file *h = v->open_files;
		v->open_files = h->next;
		close(h->fd);
		free(h);
	}
}

static bool opens_for_write(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

/* Write and search access of the caller to directory DFD. A root daemon
 * checks as the caller: its fsuid, and without the capabilities that
 * override permissions (unless the caller holds CAP_DAC_OVERRIDE itself),
 * which it otherwise keeps across fsuid changes (capabilities are per
 * thread, so this touches no other request). The caller's supplementary
 * groups are not applied: the daemon's are. */
static int caller_may_write_dir(struct view *v, fuse_req_t req, int dfd)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct saved[2], drop[2];
	const uint32_t overrides = 1u << CAP_DAC_OVERRIDE |
				   1u << CAP_DAC_READ_SEARCH | 1u << CAP_FOWNER;
	bool dropped = false;
	int r;

	if (v->creds_switch) {
		if (proc_capable(fuse_req_ctx(req)->pid, CAP_DAC_OVERRIDE))
			return 0;
		if (syscall(SYS_capget, &hdr, saved) == 0) {
			memcpy(drop, saved, sizeof(drop));
			drop[0].effective &= ~overrides;
			dropped = syscall(SYS_capset, &hdr, drop) == 0;
		}
	}
	struct as_caller c = caller_enter(v, req);
	r = faccessat(dfd, ".", W_OK | X_OK, AT_EACCESS) < 0 ? neg_errno() : 0;
	caller_leave(&c);
	if (dropped)
		syscall(SYS_capset, &hdr, saved);
	return r;
}

/* Whether the changes of a write-open of INO (FD its O_PATH fd, ST its
 * attributes) may be staged: 0 if so; 1 if staging could not make them
 * as the local disk would, so they go in place; or -errno. Staging cannot
 * replace a set-user-ID, set-group-ID or capability file (its
 * replacement, written by the caller, would either lose the privilege or
 * keep it on content the caller chose; a write in place drops it, as the
 * kernel does for a caller without CAP_FSETID), nor a file in a directory
 * the caller may not write (a replacement is a rename there; POSIX asks
 * only for write access to the file). --staging=strict refuses those
 * opens instead: EPERM, EACCES. */
static int may_stage(struct view *v, fuse_req_t req, struct inode *ino,
		     int fd, const struct stat *st)
{
	char path[CONFINE_FD_PATH_MAX], name[NAME_MAX + 1];
	struct inode *parent;
	const char *why = NULL;
	int dfd, r;

	confine_fd_path(fd, path);
	if (st->st_mode & (S_ISUID | S_ISGID))
		why = "it is set-user-ID or set-group-ID";
	else if (getxattr(path, "security.capability", NULL, 0) >= 0)
		why = "it carries a file capability (security.capability)";
	if (why && stage_strict(v)) {
		log_refusal(v, req, ino, NULL, "write-open", why);
		return -EPERM;
	}
	if (why)
		return 1;
	dfd = inode_parent_fd_get(v->inodes, ino, &parent, name, sizeof(name));
	if (dfd < 0)
		return dfd;
	r = caller_may_write_dir(v, req, dfd);
	inode_unpin(v->inodes, parent);
	if (r == -EACCES && !stage_strict(v))
		return 1;
	return r;
}

/* Opens the existing file INO as FI asks (open, or create of a name that
 * exists). A handle that may write stages the file's changes (stage.h),
 * unless it appends (appends go in place: a log appended to by several
 * writers must not lose any of them to a whole-file replacement) or the
 * file has other hard links (see docs/security-model.md). */
static int open_existing(struct view *v, fuse_req_t req, struct inode *ino,
			 struct fuse_file_info *fi)
{
	bool writer = opens_for_write(fi->flags), trunc = fi->flags & O_TRUNC;
	int flags = backing_flags(v, fi->flags), fd, r;
	struct gate_ticket t;
	struct stat st;

	if (ino->synth)
		return -EISDIR;
	if (writer && (r = view_may_modify(v, ino)) < 0)
		return r;
	_pinned_ p = pin(v, ino);
	if (p.fd < 0)
		return p.fd;
	if (trunc)
		journal_preimage(v, req, ino);
	_io_ io = io_begin(v, ino, NULL, writer);
	int content = io.fd >= 0 ? io.fd : p.fd;	/* the stage, or the file */
	bool stageable = false;
	if (writer && !(fi->flags & O_APPEND) && stage_possible(v, ino)) {
		if ((r = stat_fd(p.fd, &st)) < 0)
			return r;
		stageable = st.st_nlink == 1;
		if (stageable && (r = may_stage(v, req, ino, p.fd, &st)) < 0)
			return r;
		stageable = stageable && r == 0;
		if (stageable)
			stage_note_open(ino, &st);
	}
	/* O_TRUNC empties the stage, never the file itself. */
	int active = io.locked ? stage_active_fd(ino) : -1;
	bool trunc_staged = trunc && (stageable || active >= 0);
	if (trunc_staged)
		flags &= ~O_TRUNC;
	gate_lock(NULL, &t, NULL);
	if (trunc && (r = gate_file_begin(v, req, &t, ino, content,
					  "open with O_TRUNC")) < 0)
		return r;
	fd = confine_reopen(p.fd, flags);
	int changed = fd;	/* where the truncation happened */
	if (fd >= 0 && trunc_staged) {
		changed = active >= 0 ? (ftruncate(active, 0) < 0 ? neg_errno() : active)
				      : stage_for_change(v, ino, fd, true);
		if (changed < 0) {
			close(fd);
			fd = changed;
		}
	}
	if (fd >= 0 && trunc && !trunc_staged && (r = drop_privs(v, req, fd, false)) < 0) {
		close(fd);
		fd = r;
	}
	gate_unlock(&t, fd >= 0 && fstat(changed, &st) == 0 ? &st : NULL, true);
	if (fd < 0)
		return fd;
	r = fill_open_info(v, ino, fi, fd, writer, trunc);
	if (r < 0)
		return r;
	fh_of(fi)->stageable = stageable;
	fh_of(fi)->journaled = trunc;
	if (trunc)
		journal_note(v, req, "modify", ino, NULL, NULL, NULL);
	/* Only a handle that stages has work to do at close(). */
	fi->noflush = !stageable;
	inode_open_ref(v->inodes, ino, writer);
	return 0;
}

/* The kernel lets go of handle FI of INO: the last writer publishes the
 * file's stage (which can no longer report an error: logged), the last
 * handle drops it. */
static void handle_release(struct view *v, struct inode *ino,
			   struct fuse_file_info *fi)
{
	struct open_file *h = fh_of(fi);
	char path[PATH_MAX];
	uint32_t writers, opens;
	struct stat st;
	int r;

	stage_lock(v, ino);
	if (h->flushed)
		ino->flushed_writers--;
	opens = inode_open_count(v->inodes, ino, &writers);
	if (h->writer && writers == 1 && (r = stage_publish(v, ino, false, 0)) < 0)
		log_warn("the last change to '%s' was not saved: %s",
			 view_path(v, ino, NULL, path, sizeof(path)),
			 strerror(-r));
	/* What this handle wrote is what the kernel cached: the host watch
	 * must not take the write events for a host-side change. */
	if (h->writer && !h->refused && fstat(stage_io_fd(ino, h->fd), &st) == 0) {
		inode_note_attr(v->inodes, ino, &st);
		gate_store(v, ino, &st);
	}
	if (opens == 1)
		stage_drop(v, ino);
	bool writer = h->writer;
	handle_close(v, fi);
	inode_open_unref(v->inodes, ino, writer);
	stage_unlock(v, ino);
}

static void op_open(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi)
{
	struct view *v = req_view(req);
	int r = skill_gate(v, req, node(v, id), NULL, "open");

	if (r == 0)
		r = open_existing(v, req, node(v, id), fi);

	if (r < 0)
		return reply_status(req, r);
	if (fuse_reply_open(req, fi) != 0)
		handle_release(v, node(v, id), fi);
}

static int do_create(struct view *v, fuse_req_t req, struct inode *dir,
		     const char *name, mode_t mode, struct fuse_file_info *fi,
		     struct fuse_entry_param *e)
{
	int flags = backing_flags(v, fi->flags) | O_CREAT, r;
	_cleanup_(closep) int fd = -1;
	struct stat st;

	r = view_may_modify(v, dir);
	if (r < 0)
		return r;
	_pinned_ p = pin(v, dir);
	if (p.fd < 0)
		return p.fd;
	r = check_new_name(v, req, dir, p.fd, name, "create");
	if (r < 0 && r != -EEXIST)
		return r;
	/* An existing file is opened as by open(2), gate and stage included. */
	if (!(flags & O_EXCL) && fstatat(p.fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode)) {
		int efd = confine_lookup(p.fd, name);
		r = efd < 0 ? efd : entry_add(v, dir, name, efd, e);
		if (r < 0)
			return r;
		r = open_existing(v, req, node(v, e->ino), fi);
		if (r < 0)
			inode_forget(v->inodes, node(v, e->ino), 1);
		return r;
	}
	if (r < 0 || (r = charge(v, req, dir, name, 0, 1, "create")) < 0)
		return r;

	struct name_change nc = {
		.kind = NAME_MAKE, .dir = dir, .dfd = p.fd, .name = name,
		.event = "create",
	};
	r = name_change_begin(v, req, &nc);
	if (r < 0)
		return r;
	fd = confine_open_at(p.fd, name, flags,
			     mode & ~nc.caller.umask & ~nc.caller.strip);
	if (fd < 0)
		return name_change_abort(&nc, fd);
	name_change_commit(&nc);
	if (fstat(fd, &st) == 0)
		gate_note_created(v->gate, &st);	/* new: no read needed */
	int path_fd = confine_reopen(fd, O_PATH);
	if (path_fd < 0)
		return path_fd;
	r = entry_add(v, dir, name, path_fd, e);
	if (r < 0)
		return r;
	r = fill_open_info(v, node(v, e->ino), fi, TAKE_FD(fd), true, true);
	if (r < 0) {
		inode_forget(v->inodes, node(v, e->ino), 1);
		return r;
	}
	fh_of(fi)->stageable = false;
	fh_of(fi)->journaled = true;
	journal_created(v, node(v, e->ino));
	fi->noflush = true;
	inode_open_ref(v->inodes, node(v, e->ino), true);
	return 0;
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct view *v = req_view(req);
	struct fuse_entry_param e;
	int r = do_create(v, req, node(v, parent), name, mode, fi, &e);

	if (r < 0)
		return reply_status(req, r);
	if (fuse_reply_create(req, &e, fi) != 0) {
		handle_release(v, node(v, e.ino), fi);
		inode_forget(v->inodes, node(v, e.ino), 1);
	}
}

/* A read of a version the thread has not read before (attributes ST):
 * the mark is set before the reply goes out, so a write the caller sends
 * as soon as it has the data finds it. */
static void read_and_mark(struct view *v, fuse_req_t req, struct inode *ino,
			  int fd, const struct stat *st, size_t size, off_t off)
{
	_cleanup_(freep) char *buf = malloc(size ? size : 1);
	char path[PATH_MAX];
	struct stat after;
	ssize_t n;

	if (!buf)
		return reply_status(req, -ENOMEM);
	n = pread(fd, buf, size, off);
	if (n < 0)
		return reply_status(req, neg_errno());
	if (fstat(fd, &after) == 0)
		gate_note_read(v->gate, st, &after, fd,
			       view_path(v, ino, NULL, path, sizeof(path)));
	fuse_reply_buf(req, buf, (size_t)n);
}

static void op_read(fuse_req_t req, fuse_ino_t id, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);
	struct view *v = req_view(req);
	struct stat st;
	_io_ io = io_begin(v, node(v, id), fh_of(fi), false);

	if (v->gate && fstat(io.fd, &st) == 0 && gate_read_is_news(v->gate, &st))
		return read_and_mark(v, req, node(v, id), io.fd, &st, size, off);
	buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	buf.buf[0].fd = io.fd;
	buf.buf[0].pos = off;
	fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
}

static void op_write_buf(fuse_req_t req, fuse_ino_t id, struct fuse_bufvec *in,
			 off_t off, struct fuse_file_info *fi)
{
	struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in));
	struct view *v = req_view(req);
	struct change c;
	struct stat before;
	bool keep_mtime;
	ssize_t n;
	int fd = change_begin(v, req, node(v, id), fi, &c, "write");

	if (fd < 0)
		return reply_status(req, fd);
	int r = v->quota ? charge(v, req, node(v, id), NULL,
				  write_growth(fd, off, fuse_buf_size(in)), 0, "write") : 0;
	if (r < 0) {
		change_end(&c, r, false);
		return reply_status(req, r);
	}
	out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	out.buf[0].fd = fd;
	out.buf[0].pos = off;
	/* With the writeback cache the kernel owns mtime: it sends a setattr
	 * when its clock moved and none when it did not, so a flush of cached
	 * pages must not stamp the backing file with the flush time. */
	keep_mtime = v->writeback && fstat(fd, &before) == 0;
	n = fuse_buf_copy(&out, in, 0);
	if (keep_mtime && n > 0) {
		struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, before.st_mtim };
		futimens(fd, ts);
	}
	change_end(&c, n, n > 0);
	if (n < 0)
		reply_status(req, (int)n);
	else
		fuse_reply_write(req, (size_t)n);
}

/* close(2): the last writer's close publishes the file's stage, so
 * close() returns whatever kept the save from happening. "Last" counts
 * the writers closed before it as gone, though their RELEASE may still
 * be on its way (the kernel sends it after close() returned). */
static void op_flush(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi)
{
	struct view *v = req_view(req);
	struct inode *ino = node(v, id);
	struct open_file *h = fh_of(fi);
	uint32_t writers;
	int r = 0, fd;

	if (h->stageable) {
		stage_lock(v, ino);
		if (!h->flushed) {
			h->flushed = true;
			ino->flushed_writers++;
		}
		inode_open_count(v->inodes, ino, &writers);
		if (writers <= ino->flushed_writers)
			r = stage_publish(v, ino, false, fuse_req_ctx(req)->pid);
		stage_unlock(v, ino);
		if (r < 0)
			return reply_status(req, r);
	}
	/* Closing a duplicate reports delayed write errors (NFS, quota) at
	 * close() without closing the handle, which other fds may share. */
	fd = dup(fd_of(fi));
	if (fd < 0)
		return reply_status(req, neg_errno());
	reply_status(req, close(fd) < 0 ? neg_errno() : 0);
}

static void op_release(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi)
{
	struct view *v = req_view(req);

	handle_release(v, node(v, id), fi);
	fuse_reply_err(req, 0);
}

/* fsync(2) publishes the file's stage durably: the stage is flushed,
 * renamed over the file, and the directory flushed. */
static void op_fsync(fuse_req_t req, fuse_ino_t id, int datasync,
		     struct fuse_file_info *fi)
{
	struct view *v = req_view(req);
	struct inode *ino = node(v, id);
	_io_ io = io_begin(v, ino, fh_of(fi), false);
	struct stat st;
	int r;

	if (io.locked && stage_active_fd(ino) >= 0)
		r = stage_publish(v, ino, true, fuse_req_ctx(req)->pid);
	else
		r = (datasync ? fdatasync(io.fd) : fsync(io.fd)) < 0 ? neg_errno() : 0;
	io.fd = io.locked ? stage_io_fd(ino, fd_of(fi)) : io.fd;
	if (fh_of(fi)->writer && !handle_refused(fh_of(fi)) && fstat(io.fd, &st) == 0)
		gate_store(v, ino, &st);
	reply_status(req, r);
}

/* An open directory: the backing stream, or nothing for a synthetic one. */
struct dir_handle {
	DIR *dp;
	off_t offset;		/* of the next entry readdir() returns */
	struct dirent *pending;	/* read but not yet sent */
	bool uploads;
};

static void op_opendir(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi)
{
	struct view *v = req_view(req);
	struct inode *ino = node(v, id);
	struct dir_handle *d;
	int r = skill_gate(v, req, ino, NULL, "opendir");

	if (r < 0)
		return reply_status(req, r);
	/* Opening a directory needs no state of ours: answering ENOSYS once
	 * makes the kernel stop sending OPENDIR and RELEASEDIR (two round
	 * trips per opendir) and keep listings in its cache, revalidated by
	 * the directory's mtime and by the host watch. */
	if (v->no_opendir)
		return reply_status(req, -ENOSYS);
	d = calloc(1, sizeof(*d));
	if (!d)
		return reply_status(req, -ENOMEM);
	/* The kernel may keep the listing across opens where a watch (or
	 * nothing at all, for synthetic directories) tells it of changes; it
	 * also drops it when the directory's mtime moves. The backing stream
	 * is opened only when a listing is actually read. */
	fi->cache_readdir = fi->keep_cache =
		ino->synth || atomic_load_explicit(&ino->wd, memory_order_relaxed) > 0;
	fi->fh = (uint64_t)(uintptr_t)d;
	inode_open_ref(v->inodes, ino, false);
	if (fuse_reply_open(req, fi) != 0) {
		free(d);
		inode_open_unref(v->inodes, ino, false);
	}
}

/* Opens D's backing stream on first use. */
static int dir_handle_open(struct view *v, struct inode *dir,
			   struct dir_handle *d)
{
	int fd;

	if (d->dp)
		return 0;
	_pinned_ p = pin(v, dir);
	fd = p.fd < 0 ? p.fd : confine_opendir(p.fd);
	if (fd < 0)
		return fd;
	d->dp = fdopendir(fd);
	if (!d->dp) {
		int r = neg_errno();
		close(fd);
		return r;
	}
	d->uploads = in_uploads(v, dir);
	return 0;
}

/* Emits one entry into BUF; returns its size, or 0 if it does not fit (an
 * entry looked up for readdirplus is then forgotten again). */
static size_t emit_entry(struct view *v, fuse_req_t req, struct inode *dir,
			 bool plus, const char *name, ino_t d_ino,
			 unsigned char d_type, off_t next, char *buf,
			 size_t rem)
{
	struct fuse_entry_param e;
	size_t n;
	bool looked_up = false;

	entry_init(v, dir, &e);
	e.attr.st_ino = d_ino;
	e.attr.st_mode = (mode_t)d_type << 12;
	if (!plus)
		return fuse_add_direntry(req, buf, rem, name, &e.attr, next);
	if (strcmp(name, ".") && strcmp(name, "..")) {
		if (do_lookup(v, dir, name, &e) == 0) {
			looked_up = true;
		} else {
			/* No node (e.g. a mount point: EXDEV): a plain entry,
			 * which the kernel still lists and looks up itself. */
			entry_init(v, dir, &e);
			e.attr.st_ino = d_ino;
			e.attr.st_mode = (mode_t)d_type << 12;
		}
	}
	n = fuse_add_direntry_plus(req, buf, rem, name, &e, next);
	if (n > rem && looked_up)
		inode_forget(v->inodes, node(v, e.ino), 1);
	return n;
}

static int readdir_synth(struct view *v, fuse_req_t req, struct inode *dir,
			 bool plus, off_t off, char *buf, size_t size)
{
	const struct synth *s = dir->synth;
	size_t used = 0;

	for (off_t i = off; (size_t)i < s->n + 2; i++) {
		const char *name = i == 0 ? "." : i == 1 ? ".." : s->entry[i - 2].name;
		ino_t d_ino = i < 2 ? s->ino : s->entry[i - 2].inode->ino;
		size_t n = emit_entry(v, req, dir, plus, name, d_ino, DT_DIR,
				      i + 1, buf + used, size - used);

		if (n > size - used)
			break;
		used += n;
	}
	return (int)used;
}

static int readdir_backing(struct view *v, fuse_req_t req, struct inode *dir,
			   struct dir_handle *d, bool plus, off_t off,
			   char *buf, size_t size)
{
	size_t used = 0;
	bool skills = view_skill_holder(v, dir);
	char skill[NAME_MAX + 1];
	int r = dir_handle_open(v, dir, d);

	if (r < 0)
		return r;
	if (off != d->offset) {
		seekdir(d->dp, off);
		d->pending = NULL;
		d->offset = off;
	}
	for (;;) {
		if (!d->pending) {
			errno = 0;
			d->pending = readdir(d->dp);
			if (!d->pending) {
				if (errno && used == 0)
					return neg_errno();
				break;
			}
		}
		struct dirent *de = d->pending;
		if (!(d->uploads && name_is_upload_staging(de->d_name)) &&
		    !stage_area_name(v, dir, de->d_name) &&
		    !(skills && view_skill_check(v, dir, de->d_name, skill,
						 sizeof(skill)) < 0)) {
			size_t n = emit_entry(v, req, dir, plus, de->d_name,
					      de->d_ino, de->d_type, de->d_off,
					      buf + used, size - used);
			if (n > size - used)
				break;
			used += n;
		}
		d->pending = NULL;
		d->offset = de->d_off;
	}
	return (int)used;
}

static void dir_handle_close(struct dir_handle *d)
{
	if (d->dp)
		closedir(d->dp);
}

/* A stream for one request, where the kernel opened the directory without
 * us (no OPENDIR); closed when it leaves scope. */
#define _dir_once_ _cleanup_(dir_handle_close) struct dir_handle

/* The open directory of FI, or ONCE if there is none. */
static struct dir_handle *dir_of(const struct fuse_file_info *fi,
				 struct dir_handle *once)
{
	struct dir_handle *d = (struct dir_handle *)(uintptr_t)fi->fh;

	return d ? d : once;
}

static void do_readdir(fuse_req_t req, fuse_ino_t id, size_t size, off_t off,
		       struct fuse_file_info *fi, bool plus)
{
	struct view *v = req_view(req);
	struct inode *dir = node(v, id);
	_dir_once_ once = { .offset = -1 };
	_cleanup_(freep) char *buf = malloc(size);
	int r;

	if (!buf)
		return reply_status(req, -ENOMEM);
	if ((r = skill_gate(v, req, dir, NULL, "readdir")) < 0)
		return reply_status(req, r);
	r = dir->synth ? readdir_synth(v, req, dir, plus, off, buf, size)
		       : readdir_backing(v, req, dir, dir_of(fi, &once), plus,
					 off, buf, size);
	if (r < 0)
		return reply_status(req, r);
	if (gate_unlink(v->gate) && !dir->synth) {
		struct stat st;
		if (fstat(dirfd(dir_of(fi, &once)->dp), &st) == 0)
			gate_note_listed(v->gate, &st);
	}
	fuse_reply_buf(req, buf, (size_t)r);
}

static void op_readdir(fuse_req_t req, fuse_ino_t id, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	do_readdir(req, id, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t id, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	do_readdir(req, id, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t id,
			  struct fuse_file_info *fi)
{
	struct view *v = req_view(req);
	struct dir_handle *d = (struct dir_handle *)(uintptr_t)fi->fh;

	dir_handle_close(d);
	free(d);
	inode_open_unref(v->inodes, node(v, id), false);
	fuse_reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t id, int datasync,
			struct fuse_file_info *fi)
{
	struct view *v = req_view(req);
	struct inode *dir = node(v, id);
	_dir_once_ once = { .offset = -1 };
	struct dir_handle *d = dir_of(fi, &once);
	int fd, r;

	if (dir->synth)
		return reply_status(req, 0);	/* nothing to persist */
	r = dir_handle_open(v, dir, d);
	if (r == 0) {
		fd = dirfd(d->dp);
		r = (datasync ? fdatasync(fd) : fsync(fd)) < 0 ? neg_errno() : 0;
	}
	reply_status(req, r);
}

static void op_statfs(fuse_req_t req, fuse_ino_t id)
{
	struct view *v = req_view(req);
	struct inode *ino = node(v, id);
	struct statvfs sv;

	/* Synthetic directories report the filesystem of the workspace. */
	_pinned_ p = pin(v, ino->synth ? v->roots[0].top : ino);
	if (p.fd < 0)
		return reply_status(req, p.fd);
	if (fstatvfs(p.fd, &sv) < 0)
		return reply_status(req, neg_errno());
	fuse_reply_statfs(req, &sv);
}

enum xattr_op { XATTR_GET, XATTR_LIST, XATTR_SET, XATTR_REMOVE };

static ssize_t xattr_call(enum xattr_op op, const char *path, bool nofollow,
			  const char *name, void *value, size_t size, int flags)
{
	switch (op) {
	case XATTR_GET:
		return nofollow ? lgetxattr(path, name, value, size)
				: getxattr(path, name, value, size);
	case XATTR_LIST:
		return nofollow ? llistxattr(path, value, size)
				: listxattr(path, value, size);
	case XATTR_SET:
		return nofollow ? lsetxattr(path, name, value, size, flags)
				: setxattr(path, name, value, size, flags);
	default:
		return nofollow ? lremovexattr(path, name) : removexattr(path, name);
	}
}

/* One path for the four xattr calls. An inode is named by its fd's proc
 * link; a symlink cannot be (the link would be followed), so it is named
 * as PARENT/NAME through the parent's proc link, without following. */
static ssize_t do_xattr(struct view *v, fuse_req_t req, struct inode *ino,
			enum xattr_op op, const char *name, void *value,
			size_t size, int flags)
{
	char path[CONFINE_FD_PATH_MAX + NAME_MAX + 1], leaf[NAME_MAX + 1];
	struct inode *parent = NULL;
	ssize_t r;
	int fd;

	if (ino == v->top && (op == XATTR_GET || op == XATTR_SET) &&
	    journal_control(v, req, op == XATTR_SET, name, value, size, value, &r))
		return r;
	if (ino->synth)
		return op == XATTR_GET ? -ENODATA : op == XATTR_LIST ? 0 : -EPERM;
	if ((r = skill_gate(v, req, ino, NULL, "xattr")) < 0)
		return r;
	if (op == XATTR_SET || op == XATTR_REMOVE) {
		int m = view_may_modify(v, ino);
		if (m < 0)
			return m;
	}
	if (S_ISLNK(ino->type)) {
		fd = inode_parent_fd_get(v->inodes, ino, &parent, leaf, sizeof(leaf));
		if (fd < 0)
			return fd;
		confine_fd_path(fd, path);
		strcat(path, "/");
		strcat(path, leaf);
		r = xattr_call(op, path, true, name, value, size, flags);
		r = r < 0 ? neg_errno() : r;
		inode_unpin(v->inodes, parent);
		return r;
	}
	_pinned_ p = pin(v, ino);
	if (p.fd < 0)
		return p.fd;
	/* While the file has a stage, the stage is the file. */
	_io_ io = io_begin(v, ino, NULL, false);
	int target = io.fd >= 0 ? io.fd : p.fd;
	confine_fd_path(target, path);
	/* Setting or removing one moves ctime: carry a current mark. */
	struct gate_ticket t;
	struct stat st;
	bool carry = v->gate && (op == XATTR_SET || op == XATTR_REMOVE) &&
		     stat_fd(target, &st) == 0;
	gate_lock(carry ? v->gate : NULL, &t, &st);
	r = xattr_call(op, path, false, name, value, size, flags);
	r = r < 0 ? neg_errno() : r;
	gate_unlock(&t, r >= 0 && carry && stat_fd(target, &st) == 0 ? &st : NULL,
		    false);
	return r;
}

/* Setting an access ACL changes the mode too. With the writeback cache
 * the kernel keeps its cached attributes after a setxattr, so drop them
 * now. Attributes only (offset -1): no page or inode lock is taken, which
 * is what makes this safe inside a request handler. */
static void acl_changed(struct view *v, fuse_ino_t id, const char *name)
{
	if (v->writeback && v->session &&
	    !strcmp(name, "system.posix_acl_access"))
		fuse_lowlevel_notify_inval_inode(v->session, id, -1, 0);
}

static void reply_xattr_value(fuse_req_t req, struct view *v, fuse_ino_t id,
			      enum xattr_op op, const char *name, size_t size)
{
	_cleanup_(freep) char *buf = size ? malloc(size) : NULL;
	ssize_t r;

	if (size && !buf)
		return reply_status(req, -ENOMEM);
	r = do_xattr(v, req, node(v, id), op, name, buf, size, 0);
	if (r < 0)
		reply_status(req, (int)r);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)r);
	else
		fuse_reply_buf(req, buf, (size_t)r);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t id, const char *name,
			size_t size)
{
	reply_xattr_value(req, req_view(req), id, XATTR_GET, name, size);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t id, size_t size)
{
	reply_xattr_value(req, req_view(req), id, XATTR_LIST, NULL, size);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t id, const char *name,
			const char *value, size_t size, int flags)
{
	struct view *v = req_view(req);
	ssize_t r = do_xattr(v, req, node(v, id), XATTR_SET, name, (void *)value,
			     size, flags);

	if (r == 0)
		acl_changed(v, id, name);
	reply_status(req, (int)r);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t id, const char *name)
{
	struct view *v = req_view(req);
	ssize_t r = do_xattr(v, req, node(v, id), XATTR_REMOVE, name, NULL, 0, 0);

	if (r == 0)
		acl_changed(v, id, name);
	reply_status(req, (int)r);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t id, int mode, off_t off,
			 off_t len, struct fuse_file_info *fi)
{
	struct view *v = req_view(req);
	struct change c;
	int r, fd = change_begin(v, req, node(v, id), fi, &c, "fallocate");

	if (fd < 0)
		return reply_status(req, fd);
	bool frees = mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_COLLAPSE_RANGE);
	r = frees ? 0 : charge(v, req, node(v, id), NULL, (uint64_t)len, 0, "fallocate");
	if (r == 0)
		r = fallocate(fd, mode, off, len) < 0 ? neg_errno() : 0;
	change_end(&c, r, r == 0);
	reply_status(req, r);
}

static void op_copy_file_range(fuse_req_t req, fuse_ino_t id_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t id_out,
			       off_t off_out, struct fuse_file_info *fi_out,
			       size_t len, int flags)
{
	struct view *v = req_view(req);
	struct stat in_before, in_after;
	struct change c;
	char path[PATH_MAX];
	ssize_t n;

	/* Where a stage is involved the kernel copies by reading and
	 * writing (EOPNOTSUPP makes it fall back), which stages properly. */
	if (fh_of(fi_out)->stageable || stage_any(node(v, id_in)))
		return reply_status(req, -EOPNOTSUPP);
	int fd = change_begin(v, req, node(v, id_out), fi_out, &c,
			      "copy_file_range into");
	if (fd < 0)
		return reply_status(req, fd);
	if (fd != fd_of(fi_out)) {
		change_end(&c, 0, false);
		return reply_status(req, -EOPNOTSUPP);
	}
	int r = charge(v, req, node(v, id_out), NULL, write_growth(fd, off_out, len), 0,
		       "copy_file_range into");
	if (r < 0) {
		change_end(&c, r, false);
		return reply_status(req, r);
	}
	bool mark_in = v->gate && fstat(fd_of(fi_in), &in_before) == 0;
	n = copy_file_range(fd_of(fi_in), &off_in, fd, &off_out, len,
			    (unsigned)flags);
	int err = n < 0 ? neg_errno() : 0;
	change_end(&c, n < 0 ? err : n, n > 0);
	/* The source was read: mark it (before replying, as for a read). */
	if (mark_in && n > 0 && fstat(fd_of(fi_in), &in_after) == 0 &&
	    gate_read_is_news(v->gate, &in_before))
		gate_note_read(v->gate, &in_before, &in_after, fd_of(fi_in),
			       view_path(v, node(v, id_in), NULL, path,
					    sizeof(path)));
	if (n < 0)
		reply_status(req, err);
	else
		fuse_reply_write(req, (size_t)n);
}

static void op_lseek(fuse_req_t req, fuse_ino_t id, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	struct view *v = req_view(req);
	_io_ io = io_begin(v, node(v, id), fh_of(fi), false);
	off_t r = lseek(io.fd, off, whence);

	if (r < 0)
		reply_status(req, neg_errno());
	else
		fuse_reply_lseek(req, r);
}

const struct fuse_lowlevel_ops view_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.symlink = op_symlink,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.rename = op_rename,
	.link = op_link,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.write_buf = op_write_buf,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.fallocate = op_fallocate,
	.copy_file_range = op_copy_file_range,
	.lseek = op_lseek,
};
