/* ops_int.h - what the view's FUSE request handlers share; internal to
 * the ops*.c files. The public side is ops.h.
 *
 *   ops.c         the table view_ops, init, and the helpers below
 *   ops_change.c  the order of a change: through a handle (struct
 *                 change), of names (struct name_change), a
 *                 publication (change_publish())
 *   ops_entry.c   names and attributes: lookup ... link
 *   ops_file.c    regular files and their handles: open ... lseek
 *   ops_dir.c     directories as streams, statfs
 *   ops_xattr.c   extended attributes, the control attributes
 *
 * Conventions: helpers return 0/positive or -errno; a callback ends with
 * exactly one reply. Backing fds are pinned with pin() and released by the
 * cleanup attribute, so an early return never leaks a pin.
 */
#ifndef SBX_OPS_INT_H
#define SBX_OPS_INT_H

#include "gate.h"
#include "gate_request.h"
#include "inode.h"
#include "ops.h"
#include "view.h"
#include "common/cleanup.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* ---- a request: its view, its inodes, its reply ---- */

static inline struct view *req_view(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static inline struct inode *node(struct view *v, fuse_ino_t id)
{
	return id == FUSE_ROOT_ID ? v->top : (struct inode *)(uintptr_t)id;
}

static inline fuse_ino_t node_id(struct view *v, struct inode *ino)
{
	return ino == v->top ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)ino;
}

static inline void reply_status(fuse_req_t req, int r)
{
	fuse_reply_err(req, r < 0 ? -r : 0);
}

/* ---- backing fds and handles ---- */

/* A backing fd pinned for the duration of a request. */
struct pinned {
	struct inode_table *table;
	struct inode *ino;
	int fd;
};

static inline struct pinned pin(struct view *v, struct inode *ino)
{
	return (struct pinned){ v->inodes, ino, inode_fd_get(v->inodes, ino) };
}

static inline void unpin(struct pinned *p)
{
	if (p->fd >= 0)
		inode_unpin(p->table, p->ino);
	p->fd = -1;
}

#define _pinned_ _cleanup_(unpin) struct pinned

/* An open regular file. */
struct open_file {
	struct open_file *prev, *next; /* the view's open handles */
	struct inode *ino;
	int fd;
	_Atomic int refused; /* a save through it was refused or failed
			       * (ops_refuse_handles): no more changes,
			       * this errno */
	bool writer;	     /* opened to modify (write access, O_TRUNC, create) */
	bool authorized;     /* the gate let it modify; kept until close */
	bool stageable;	     /* its changes go to a stage (stage.h) */
	bool journaled;	     /* its change is in the journal already */
	bool flushed;	     /* stageable: closed (FLUSH) since its last
				 * change; counted in inode->flushed_writers */
	/* Under the writeback cache, a writer that bypasses it (direct
	 * I/O): the kernel updates neither the times nor, past a host
	 * append, the size its writes leave, so a file it wrote to is
	 * renewed at release (ops_file.c). */
	bool uncached;
	_Atomic bool wrote;
};

static inline struct open_file *fh_of(const struct fuse_file_info *fi)
{
	return (struct open_file *)(uintptr_t)fi->fh;
}

static inline int fd_of(const struct fuse_file_info *fi)
{
	return fh_of(fi)->fd;
}

static inline int stat_fd(int fd, struct stat *st)
{
	return fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0 ? neg_errno() : 0;
}

static inline bool handle_refused(const struct open_file *h)
{
	return h && atomic_load_explicit(&h->refused, memory_order_acquire) != 0;
}

/* Under the writeback cache (inode_table_renew(); ops_file.c): the size
 * the kernel keeps for INO is not the file's, so its name must lead to a
 * new inode (inode_renew(), from a request on HELD of its handles). The
 * kernel is told by the host watch's thread: it may be waiting for this
 * very request with the name's directory locked. */
void ops_renew(struct view *v, struct inode *ino, uint32_t held);

/* ---- the content of a request (ops.c) ---- */

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

struct io io_begin(struct view *v, struct inode *ino, const struct open_file *h, bool change);
void io_end(struct io *io);

#define _io_ _cleanup_(io_end) struct io

/* For a change through handle H (IO from io_begin): the fd the change
 * goes to, staging the file first if H stages; or -errno. */
int io_change_fd(struct io *io, struct open_file *h);

/* ---- the view's rules (ops.c) ---- */

/* True for a directory of an uploads root: its .upload-*.part files are
 * the uploader's, not part of the view. */
bool in_uploads(struct view *v, struct inode *dir);

/* Logs a refused request with enough context to act on it. */
void log_refusal(struct view *v, fuse_req_t req, struct inode *dir, const char *name,
		 const char *op, const char *why);

/* EACCES (logged) for DIR/NAME (NAME may be NULL) if it is or is in a
 * disabled skill. */
int skill_gate(struct view *v, fuse_req_t req, struct inode *dir, const char *name, const char *op);

/* Charges the thread's quota for a change of INO (or a new entry NAME of
 * it); a refusal is logged. */
int charge(struct view *v, fuse_req_t req, struct inode *ino, const char *name, uint64_t bytes,
	   uint64_t inodes, const char *op);

/* Checks a name about to be created in DIR (fd DFD): 0, -EINVAL for a
 * refused name (logged), or -EEXIST if a refused name already exists. */
int check_new_name(struct view *v, fuse_req_t req, struct inode *dir, int dfd, const char *name,
		   const char *op);

/* ---- as the caller (ops.c) ---- */

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
	mode_t umask; /* to apply by hand where the thread could not unshare */
	mode_t strip; /* bits a new file may not have */
};

struct as_caller caller_enter(struct view *v, fuse_req_t req);
void caller_leave(struct as_caller *c);

/* Clears set-id bits before a write or truncate as the kernel's
 * file_remove_privs() would (FUSE_HANDLE_KILLPRIV_V2). FD is an open file,
 * or an O_PATH fd if OPATH; ST its attributes if the caller just took
 * them, else NULL. */
int drop_privs(struct view *v, fuse_req_t req, int fd, bool opath, const struct stat *st);

/* ---- a change through a handle (ops_change.c) ---- */

/* A change of file content through a handle (write, fallocate, ftruncate,
 * copy_file_range): the file's stage lock, then its gate; the change goes
 * to the fd change_begin() returns (a stage if the handle stages). */
struct change {
	struct io io;
	struct gate_ticket t;
	struct view *v;
	fuse_req_t req;
	struct open_file *h;
	bool have_before;   /* where the gate or the quota needs them: */
	struct stat before; /*   the attributes of the fd returned, as the change found them */
};

int change_begin(struct view *v, fuse_req_t req, struct inode *ino, struct fuse_file_info *fi,
		 struct change *c, const char *op);
/* Ends it with the change's result (CHANGED: content changed). */
void change_end(struct change *c, ssize_t result, bool changed);

/* The attributes of C's fd as the change found them, or NULL. */
static inline const struct stat *change_before(const struct change *c)
{
	return c->have_before ? &c->before : NULL;
}

/* ---- a change of names (ops_change.c) ---- */

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
	NAME_MAKE,   /* DIR/NAME is made, as the caller */
	NAME_LINK,   /* DIR/NAME becomes a link to FILE */
	NAME_REMOVE, /* DIR/NAME goes (FLAGS: AT_REMOVEDIR for rmdir) */
	NAME_RENAME, /* DIR/NAME moves to TO/NEWNAME (FLAGS: renameat2's) */
};

struct name_change {
	/* What changes, filled in by the caller: */
	enum name_kind kind;
	struct inode *dir;
	int dfd; /* DIR's fd */
	const char *name;
	struct inode *to; /* NAME_RENAME */
	int tfd;
	const char *newname;
	unsigned int flags;
	struct inode *file; /* NAME_LINK, with its O_PATH fd */
	int file_fd;
	const char *event; /* the journal's on commit, or NULL */
	/* NAME_MAKE: the umask to apply and the bits to strip (as_caller). */
	struct as_caller caller;
	/* The protocol's own: */
	struct view *v;
	fuse_req_t req;
	struct gate_names g;
	bool gone;	    /* an entry is removed or replaced */
	struct stat victim; /* its attributes, seen under the hold */
	bool kept;	    /* moved into the run's pre-images: its space
			     * stays taken */
};

/* Begins the change NC describes. Returns 0, or -errno (a refusal, with
 * nothing to end). After the syscall, exactly one of commit or abort
 * follows; abort returns R, the syscall's -errno. */
int name_change_begin(struct view *v, fuse_req_t req, struct name_change *nc);
void name_change_commit(struct name_change *nc);
int name_change_abort(struct name_change *nc, int r);

/* ---- a publication (ops_change.c) ---- */

/* Publishes INO's unpublished stage (stage.h), if it has one, in this
 * order:
 *
 *  1. a save that failed (stage_failed()) ends here: its error, the stage
 *     discarded, the file's handles refused; else the stage is readied (a
 *     fresh mtime; with DURABLE, flushed);
 *  2. where the file's name went away, holds another file, or holds the
 *     staged file changed on the host, the stage is not renamed: the
 *     file itself gets it in place (a file with other names left), it
 *     becomes an orphan (no name left), or it is kept as a conflict copy
 *     beside the name and the handles are refused (-EACCES, audited);
 *  3. the stage gets a name in its area, then the gate lock of the file
 *     at the name is taken (the check and the rename are one step);
 *  4. the host watch is told the name changes (before: a faster watch
 *     thread would take it for a host change); the name is locked (no
 *     lookup sees it between the rename and the inode table's update);
 *  5. the journal keeps the version the rename replaces;
 *     -- one renameat() --
 *  6. the journal records the new version, the quota gets the replaced
 *     version's space back, the gate lock ends with the new version's
 *     mark;
 *  7. the view's inode is re-keyed to the new file, and the name
 *     unlocked;
 *  8. with DURABLE, the directory is flushed.
 *
 * Returns 0 or -errno: on failure the file at the name is as it was. PID
 * is the process a refusal is audited for (0: unknown). Called with INO's
 * stage lock held. */
int change_publish(struct view *v, struct inode *ino, bool durable, pid_t pid);

/* ---- overlay roots (ops_overlay.c; docs/try.md) ---- */

/* view_may_modify() of INO for a change by REQ, and where INO is a
 * project's object in an overlay root, its copy-up first: the change
 * then goes to the copy. Its content is copied even for a truncation:
 * the gate, after, may refuse that. */
int may_modify(struct view *v, fuse_req_t req, struct inode *ino);
/* Copies INO, a project's object, up into the layer (its directories
 * first); the inode designates the copy after. No-op for others. */
int overlay_copy_up(struct view *v, fuse_req_t req, struct inode *ino);
/* A whiteout of NAME in layer directory DIR (fd DFD), where DIR is
 * merged and its project directory has NAME: after NAME was removed from
 * the layer, or to remove the project's. */
int overlay_white_out(struct view *v, fuse_req_t req, struct inode *dir, int dfd, const char *name);
/* Before a name is made in DIR: removes a whiteout of NAME. Returns 1 if
 * there was one (a directory made there is to be opaque), 0, or -errno. */
int overlay_unwhite(struct view *v, fuse_req_t req, struct inode *dir, int dfd, const char *name);
/* Before FROM/NAME (fd FFD) moves to TO/NEWNAME (fd TFD) in an overlay
 * root: a project's file (and with RENAME_EXCHANGE the other one) is
 * copied up; a directory whose project directory shows (lower or
 * merged: its path is its project's) answers -EXDEV, as does one to be
 * replaced; a project's name with RENAME_NOREPLACE, -EEXIST. */
int overlay_rename_prepare(struct view *v, fuse_req_t req, struct inode *from, int ffd,
			   const char *name, struct inode *to, int tfd, const char *newname,
			   unsigned int flags);
/* Marks layer directory DIR, just made where a whiteout was, opaque. */
int overlay_make_opaque(struct view *v, fuse_req_t req, struct inode *dir);

/* Removes NAME from DIR (fd DFD) as unlink (FLAGS 0) or rmdir
 * (AT_REMOVEDIR) does, in the order of a change of names (ops_entry.c). */
int remove_name(struct view *v, fuse_req_t req, struct inode *dir, int dfd, const char *name,
		int flags);

/* ---- entries (ops_entry.c) ---- */

/* Starts the reply E to a lookup in DIR: timeouts, nothing found. */
void entry_init(struct view *v, struct inode *dir, struct fuse_entry_param *e);
/* Adds the object at PATH_FD (O_PATH, owned) as DIR/NAME and fills E;
 * in an overlay root, where LAYER says it belongs (NULL: made by the
 * view, the layer's). */
int entry_add(struct view *v, struct inode *dir, const char *name, int path_fd,
	      struct fuse_entry_param *e);
int entry_add_layer(struct view *v, struct inode *dir, const char *name, int path_fd,
		    struct inode_layer *layer, struct fuse_entry_param *e);
/* Looks NAME up in DIR for a reply E; -ENOENT for what the view hides. */
int do_lookup(struct view *v, struct inode *dir, const char *name, struct fuse_entry_param *e);

/* ---- the handlers in view_ops ---- */

/* ops_entry.c */
void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void op_forget(fuse_req_t req, fuse_ino_t id, uint64_t nlookup);
void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets);
void op_getattr(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi);
void op_setattr(fuse_req_t req, fuse_ino_t id, struct stat *attr, int valid,
		struct fuse_file_info *fi);
void op_readlink(fuse_req_t req, fuse_ino_t id);
void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev);
void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void op_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name);
void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
	       const char *newname, unsigned int flags);
void op_link(fuse_req_t req, fuse_ino_t id, fuse_ino_t newparent, const char *newname);

/* ops_file.c */
void op_open(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi);
void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	       struct fuse_file_info *fi);
void op_read(fuse_req_t req, fuse_ino_t id, size_t size, off_t off, struct fuse_file_info *fi);
void op_write_buf(fuse_req_t req, fuse_ino_t id, struct fuse_bufvec *in, off_t off,
		  struct fuse_file_info *fi);
void op_flush(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi);
void op_release(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi);
void op_fsync(fuse_req_t req, fuse_ino_t id, int datasync, struct fuse_file_info *fi);
void op_fallocate(fuse_req_t req, fuse_ino_t id, int mode, off_t off, off_t len,
		  struct fuse_file_info *fi);
void op_copy_file_range(fuse_req_t req, fuse_ino_t id_in, off_t off_in,
			struct fuse_file_info *fi_in, fuse_ino_t id_out, off_t off_out,
			struct fuse_file_info *fi_out, size_t len, int flags);
void op_lseek(fuse_req_t req, fuse_ino_t id, off_t off, int whence, struct fuse_file_info *fi);

/* ops_dir.c */
void op_opendir(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi);
void op_readdir(fuse_req_t req, fuse_ino_t id, size_t size, off_t off, struct fuse_file_info *fi);
void op_readdirplus(fuse_req_t req, fuse_ino_t id, size_t size, off_t off,
		    struct fuse_file_info *fi);
void op_releasedir(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi);
void op_fsyncdir(fuse_req_t req, fuse_ino_t id, int datasync, struct fuse_file_info *fi);
void op_statfs(fuse_req_t req, fuse_ino_t id);

/* ops_xattr.c */
void op_getxattr(fuse_req_t req, fuse_ino_t id, const char *name, size_t size);
void op_listxattr(fuse_req_t req, fuse_ino_t id, size_t size);
void op_setxattr(fuse_req_t req, fuse_ino_t id, const char *name, const char *value, size_t size,
		 int flags);
void op_removexattr(fuse_req_t req, fuse_ino_t id, const char *name);

#endif
