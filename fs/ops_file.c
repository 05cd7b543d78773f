/* ops_file.c - requests on regular files and their handles: open,
 * create, read, write, flush, release, fsync, fallocate, copy_file_range,
 * lseek. A handle (struct open_file) owns the backing fd its open made.
 * Content goes through io_begin() (the file's stage while it has one);
 * a change through struct change (ops_change.c): stage lock, gate,
 * backing fd, journal.
 */
#include "confine.h"
#include "journal.h"
#include "ops_int.h"
#include "overlay.h"
#include "stage.h"
#include "watch.h"
#include "common/log.h"
#include "common/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

/* What a write of LEN bytes at OFF may allocate in FD (attributes KNOWN,
 * or NULL: looked at here): what it adds past the end, and the holes it
 * fills inside (a file grown by truncate, or written at scattered offsets,
 * holds holes that take no space until written). Holes are looked for only
 * in a file that has some. */
static uint64_t write_growth(int fd, const struct stat *known, off_t off, size_t len)
{
	struct stat st;
	off_t end = off + (off_t)len, inside = 0;

	if (known)
		st = *known;
	else if (fstat(fd, &st) < 0)
		return len;
	off_t past = end > st.st_size ? end - (off > st.st_size ? off : st.st_size) : 0;
	off_t last = end < st.st_size ? end : st.st_size;
	if (off >= last || (uint64_t)st.st_blocks * 512 >= (uint64_t)st.st_size)
		return (uint64_t)past;
	/* Each hole in [off, last): from a hole's start to the next data. */
	for (off_t at = off; at < last;) {
		off_t hole = lseek(fd, at, SEEK_HOLE);
		if (hole < 0 || hole >= last)
			break;
		off_t data = lseek(fd, hole, SEEK_DATA);
		off_t stop = data < 0 || data > last ? last : data;
		inside += stop - hole;
		at = stop;
	}
	return (uint64_t)(inside + past);
}

/* Open flags for the backing file of a handle that writes through the
 * writeback cache (CACHED): the kernel reads pages around partial writes
 * and appends by itself. */
static int backing_flags(int flags, bool cached)
{
	if (cached) {
		if ((flags & O_ACCMODE) == O_WRONLY)
			flags = (flags & ~O_ACCMODE) | O_RDWR;
		flags &= ~O_APPEND;
	}
	/* O_DIRECT stays with the kernel (direct_io on the handle): the
	 * request buffers libfuse hands us are not aligned for the backing
	 * filesystem's O_DIRECT. */
	return flags & ~(O_NOFOLLOW | O_DIRECT);
}

/* The view's open handles (v->open_files): to refuse a file's handles
 * (ops_refuse_handles()) and to close what the kernel never released;
 * and each worker's buffer for read replies (read_buffer()). */
struct open_files {
	pthread_mutex_t lock;
	struct open_file *first;
	pthread_key_t read_buffers;
};

/* Wraps FD in a handle stored in FI; the fd is closed on failure. */
static int fill_open_info(struct view *v, struct inode *ino, struct fuse_file_info *fi, int fd,
			  bool writer, bool authorized)
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
	pthread_mutex_lock(&v->open_files->lock);
	h->next = v->open_files->first;
	if (h->next)
		h->next->prev = h;
	v->open_files->first = h;
	pthread_mutex_unlock(&v->open_files->lock);
	fi->fh = (uint64_t)(uintptr_t)h;
	/* Page cache survives reopen; auto_inval_data drops it when the
	 * attributes show the file changed. Under the strict gate every
	 * change needs a fresh read, which must reach the daemon. */
	fi->keep_cache = v->timeout > 0 && gate_mode(v->gate) != GATE_STRICT &&
			 !atomic_exchange_explicit(&ino->stale_pages, false, memory_order_acq_rel);
	/* Under the writeback cache, a writer the gate did not let through
	 * at open bypasses the cache: each of its writes reaches the daemon
	 * before write(2) returns, and the gate decides it there. */
	fi->direct_io = (fi->flags & O_DIRECT) || (writer && !authorized && v->writeback);
	fi->noflush = (fi->flags & O_ACCMODE) == O_RDONLY;
	return 0;
}

static void handle_close(struct view *v, struct fuse_file_info *fi)
{
	struct open_file *h = fh_of(fi);

	pthread_mutex_lock(&v->open_files->lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		v->open_files->first = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&v->open_files->lock);
	close(h->fd);
	free(h);
}

void ops_renew(struct view *v, struct inode *ino, uint32_t held)
{
	char name[NAME_MAX + 1];
	struct inode *dir;

	if (inode_renew(v->inodes, ino, held, &dir, name, sizeof(name)))
		watch_forget_name(v->watch, dir, name);
}

/* After a close or an OPEN: the renewal INO waited for, if nothing of the
 * view has it open or is opening it any more. */
static void renew_if_due(struct view *v, struct inode *ino)
{
	if (inode_renew_due(v->inodes, ino))
		ops_renew(v, ino, 0);
}

void ops_refuse_handles(struct view *v, struct inode *ino, int err)
{
	pthread_mutex_lock(&v->open_files->lock);
	for (struct open_file *h = v->open_files->first; h; h = h->next)
		if (h->ino == ino)
			atomic_store_explicit(&h->refused, err, memory_order_release);
	pthread_mutex_unlock(&v->open_files->lock);
	/* What the kernel holds of the file's attributes may be the stage's
	 * (its size): it must not be used once this request is answered,
	 * whether or not the host watch has told of the person's save yet.
	 * Only attributes (offset -1): no page or inode lock is taken, which
	 * is safe here. */
	if (v->session)
		fuse_lowlevel_notify_inval_inode(v->session, node_id(v, ino), -1, 0);
	/* Under the writeback cache the kernel keeps that size whatever a
	 * GETATTR replies. */
	ops_renew(v, ino, 1);
}

int ops_open_files_new(struct view *v)
{
	struct open_files *of = calloc(1, sizeof(*of));

	if (!of)
		return -ENOMEM;
	if (pthread_key_create(&of->read_buffers, free) != 0) {
		free(of);
		return -EAGAIN;
	}
	pthread_mutex_init(&of->lock, NULL);
	v->open_files = of;
	return 0;
}

void ops_close_all(struct view *v)
{
	struct open_files *of = v->open_files;

	if (!of)
		return;
	/* An unmount under load can drop RELEASE requests still queued in
	 * the kernel: their handles end here (their data was published at
	 * the FLUSH that close() sent). */
	while (of->first) {
		struct open_file *h = of->first;
		of->first = h->next;
		close(h->fd);
		free(h);
	}
	pthread_mutex_destroy(&of->lock);
	/* The workers have ended; the loop may have run on this thread (-s). */
	free(pthread_getspecific(of->read_buffers));
	pthread_key_delete(of->read_buffers);
	free(of);
	v->open_files = NULL;
}

static bool opens_for_write(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

/* True if the caller of REQ owns directory DFD, which gives its owner write
 * and search access and is not immutable: the owner's access is its mode's
 * owner bits, which neither ACLs nor capabilities change (the kernel's
 * generic_permission()), so the answer needs no look at the caller's
 * capabilities and no check as the caller. One statx, where those take
 * five to ten system calls. */
static bool caller_owns_writable_dir(struct view *v, fuse_req_t req, int dfd)
{
	const unsigned want = STATX_TYPE | STATX_MODE | STATX_UID;
	uid_t uid = view_caller_uid(v, fuse_req_ctx(req)->uid);
	struct statx sx;

	return statx(dfd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, want, &sx) == 0 &&
	       (sx.stx_mask & want) == want && S_ISDIR(sx.stx_mode) && sx.stx_uid == uid &&
	       uid != v->overflow_uid &&
	       (sx.stx_mode & (S_IWUSR | S_IXUSR)) == (S_IWUSR | S_IXUSR) &&
	       (sx.stx_attributes_mask & STATX_ATTR_IMMUTABLE) &&
	       !(sx.stx_attributes & STATX_ATTR_IMMUTABLE);
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
	const uint32_t overrides = 1u << CAP_DAC_OVERRIDE | 1u << CAP_DAC_READ_SEARCH |
				   1u << CAP_FOWNER;
	bool dropped = false;
	int r;

	if (caller_owns_writable_dir(v, req, dfd))
		return 0;
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
static int may_stage(struct view *v, fuse_req_t req, struct inode *ino, int fd,
		     const struct stat *st)
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

/* An OPEN in progress (inode_open_begin()), ended on return. */
struct opening {
	struct view *v;
	struct inode *ino; /* NULL: none */
};

static void opening_end(struct opening *o)
{
	if (!o->ino)
		return;
	inode_open_end(o->v->inodes, o->ino);
	renew_if_due(o->v, o->ino); /* a failed OPEN held it */
}

/* Opens the existing file INO as FI asks (open, or create of a name that
 * exists). A handle that may write stages the file's changes (stage.h),
 * unless it appends (appends go in place: a log appended to by several
 * writers must not lose any of them to a whole-file replacement) or the
 * file has other hard links (see docs/security-model.md).
 *
 * Under the writeback cache the gate decides at open: a write reaches
 * the daemon long after write(2) returned, too late to refuse, and the
 * kernel reads the page around a partial write first, which would set
 * the mark. So a handle writes through the cache only if the gate lets
 * its changes through now; the others write directly, each write
 * decided as it comes (fill_open_info()), and can still read the file
 * first and then write it (a database opened read-write). A change on
 * the host after such an open is caught where the handle's changes are
 * saved (change_publish()). */
static int open_existing(struct view *v, fuse_req_t req, struct inode *ino,
			 struct fuse_file_info *fi)
{
	bool writer = opens_for_write(fi->flags), trunc = fi->flags & O_TRUNC;
	bool appends = writer && (fi->flags & O_APPEND) && !trunc;
	int flags, fd, r;
	struct gate_ticket t;
	struct stat st;

	if (ino->synth)
		return -EISDIR;
	if (writer && (r = may_modify(v, req, ino)) < 0)
		return r;
	_pinned_ p = pin(v, ino);
	if (p.fd < 0)
		return p.fd;
	/* Under the writeback cache: not an inode the kernel must drop. */
	if (v->writeback && (r = inode_open_begin(v->inodes, ino)) < 0)
		return r;
	_cleanup_(opening_end) struct opening opening = { v, v->writeback ? ino : NULL };
	if (trunc)
		journal_preimage(v, req, ino);
	_io_ io = io_begin(v, ino, NULL, writer);
	int content = io.fd >= 0 ? io.fd : p.fd; /* the stage, or the file */
	bool stageable = false, have_st = false;
	if (writer && !(fi->flags & O_APPEND) && stage_possible(v, ino)) {
		if ((r = stat_fd(p.fd, &st)) < 0)
			return r;
		have_st = true;
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
	/* The file's attributes, taken once under its stage lock, serve the
	 * gate and the stage too: being older than a look of their own would
	 * be only makes them stricter (a host change since is refused at
	 * publication). */
	const struct stat *known = have_st ? &st : NULL;
	/* An O_APPEND handle writes directly: the kernel would append at
	 * the size it keeps, past which the host may have appended. */
	bool authorized = trunc ||
			  (writer && v->writeback && !appends &&
			   gate_file_passes(v, ino, content, content == p.fd ? known : NULL));
	flags = backing_flags(fi->flags, v->writeback && (authorized || !writer));
	if (trunc_staged)
		flags &= ~O_TRUNC;
	gate_lock(NULL, &t, NULL);
	if (trunc && (r = gate_file_begin(v, req, &t, ino, content, content == p.fd ? known : NULL,
					  "open with O_TRUNC")) < 0)
		return r;
	if (trunc && !trunc_staged)
		journal_keep_content(v, req, 0, ino, p.fd);
	fd = confine_reopen(p.fd, flags);
	int changed = fd; /* where the truncation happened */
	if (fd >= 0 && trunc_staged) {
		changed = stage_for_change(v, ino, fd, known, true);
		if (changed < 0) {
			close(fd);
			fd = changed;
		}
	}
	if (fd >= 0 && trunc && !trunc_staged && (r = drop_privs(v, req, fd, false, NULL)) < 0) {
		close(fd);
		fd = r;
	}
	/* Only a truncation changed anything for the gate to note: every
	 * other open skips the fstat (a warm read of many files is opens). */
	gate_unlock(&t, trunc && fd >= 0 && fstat(changed, &st) == 0 ? &st : NULL, true);
	if (fd < 0)
		return fd;
	r = fill_open_info(v, ino, fi, fd, writer, authorized);
	if (r < 0)
		return r;
	fh_of(fi)->uncached = writer && v->writeback && fi->direct_io;
	fh_of(fi)->stageable = stageable;
	if (stageable)
		ino->stage_writers++; /* io holds the stage lock */
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
static void handle_release(struct view *v, struct inode *ino, struct fuse_file_info *fi)
{
	struct open_file *h = fh_of(fi);
	char path[PATH_MAX];
	uint32_t writers, opens;
	struct stat st;
	int r;

	stage_lock(v, ino);
	if (h->flushed)
		ino->flushed_writers--;
	if (h->stageable)
		ino->stage_writers--;
	opens = inode_open_count(v->inodes, ino, &writers);
	if (h->writer && writers == 1 && (r = change_publish(v, ino, false, 0)) < 0)
		log_warn("the last change to '%s' was not saved: %s",
			 view_path(v, ino, NULL, path, sizeof(path)), strerror(-r));
	/* What the kernel reads of the file now is what this fd shows: what
	 * the handle wrote, or, after a refused or failed save, the file as
	 * it is (ops_refuse_handles() had the kernel forget the stage's
	 * size). The host watch must not take this handle's writes, or the
	 * close of its fd below, for a change on the host: its invalidation
	 * would race the next GETATTR, and a reply the kernel drops as stale
	 * leaves it with the size of the O_TRUNC (0): an empty file. */
	int wfd = stage_io_fd(ino, h->fd);
	if (h->writer && fstat(wfd, &st) == 0) {
		inode_note_attr(v->inodes, ino, &st);
		if (!handle_refused(h))
			gate_store(v, ino, wfd, &st);
	}
	if (atomic_load_explicit(&h->wrote, memory_order_relaxed))
		ops_renew(v, ino, 1);
	if (opens == 1)
		stage_drop(v, ino);
	bool writer = h->writer;
	handle_close(v, fi);
	inode_open_unref(v->inodes, ino, writer);
	renew_if_due(v, ino); /* the last close of a file that waited */
	stage_unlock(v, ino);
}

void op_open(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi)
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

static int do_create(struct view *v, fuse_req_t req, struct inode *dir, const char *name,
		     mode_t mode, struct fuse_file_info *fi, struct fuse_entry_param *e)
{
	int flags = backing_flags(fi->flags, v->writeback) | O_CREAT, r;
	_cleanup_(closep) int fd = -1;
	struct stat st;

	r = may_modify(v, req, dir);
	if (r < 0)
		return r;
	_pinned_ p = pin(v, dir);
	if (p.fd < 0)
		return p.fd;
	r = check_new_name(v, req, dir, p.fd, name, "create");
	if (r < 0 && r != -EEXIST)
		return r;
	/* An existing file is opened as by open(2), gate and stage included
	 * (in an overlay, the project's too). */
	struct inode_layer layer;
	int efd = -ENOENT;
	if (!(flags & O_EXCL) && dir->overlay)
		efd = overlay_lookup(dir, p.fd, name, &layer);
	else if (!(flags & O_EXCL))
		efd = confine_lookup(p.fd, name);
	if (efd >= 0 && (stat_fd(efd, &st) < 0 || !S_ISREG(st.st_mode))) {
		close(efd);
		if (dir->overlay && layer.lower_fd >= 0)
			close(layer.lower_fd);
		efd = -ENOENT;
	}
	if (efd >= 0) {
		r = entry_add_layer(v, dir, name, efd, dir->overlay ? &layer : NULL, e);
		if (r < 0)
			return r;
		r = open_existing(v, req, node(v, e->ino), fi);
		if (r < 0)
			inode_forget(v->inodes, node(v, e->ino), 1);
		return r;
	}
	if (r < 0 || (r = charge(v, req, dir, name, 0, 1, "create")) < 0 ||
	    (r = overlay_unwhite(v, req, dir, p.fd, name)) < 0)
		return r;

	struct name_change nc = {
		.kind = NAME_MAKE,
		.dir = dir,
		.dfd = p.fd,
		.name = name,
		.event = "create",
	};
	r = name_change_begin(v, req, &nc);
	if (r < 0)
		return r;
	fd = confine_open_at(p.fd, name, flags, mode & ~nc.caller.umask & ~nc.caller.strip);
	if (fd < 0)
		return name_change_abort(&nc, fd);
	name_change_commit(&nc);
	if (fstat(fd, &st) == 0)
		gate_note_created(v->gate, &st); /* new: no read needed */
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

void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	       struct fuse_file_info *fi)
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

struct read_buffer {
	size_t size;
	char data[];
};

/* The calling worker's buffer of at least SIZE bytes for a read's reply,
 * kept while the thread lives (the key's destructor frees it); NULL if
 * out of memory. A buffer per READ, as libfuse's copy of an fd's bytes
 * allocates, is mapped, faulted in and unmapped each time: 4 ms of CPU
 * per megabyte read on the 2-vCPU VM of docs/performance.md. */
static char *read_buffer(struct view *v, size_t size)
{
	pthread_key_t key = v->open_files->read_buffers;
	struct read_buffer *b = pthread_getspecific(key), *grown;

	if (b && b->size >= size)
		return b->data;
	grown = malloc(sizeof(*grown) + size);
	if (!grown || pthread_setspecific(key, grown) != 0) {
		free(grown);
		return NULL;
	}
	free(b);
	grown->size = size;
	return grown->data;
}

/* Replies to a READ of SIZE bytes at OFF of FD. A version the thread has
 * not read before (attributes ST, ino INO) gets its mark before the reply
 * goes out, so a write the caller sends as soon as it has the data finds
 * it. */
static void read_reply(struct view *v, fuse_req_t req, struct inode *ino, int fd,
		       const struct stat *st, bool news, size_t size, off_t off)
{
	char *buf = read_buffer(v, size);
	char path[PATH_MAX];
	struct stat after;
	ssize_t n;

	if (!buf)
		return reply_status(req, -ENOMEM);
	n = pread(fd, buf, size, off);
	if (n < 0)
		return reply_status(req, neg_errno());
	if (news && fstat(fd, &after) == 0)
		gate_note_read(v->gate, st, &after, fd,
			       view_path(v, ino, NULL, path, sizeof(path)));
	fuse_reply_buf(req, buf, (size_t)n);
}

void op_read(fuse_req_t req, fuse_ino_t id, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct view *v = req_view(req);
	struct stat st;
	_io_ io = io_begin(v, node(v, id), fh_of(fi), false);
	bool news = v->gate && fstat(io.fd, &st) == 0 && gate_read_is_news(v->gate, &st);

	read_reply(v, req, node(v, id), io.fd, &st, news, size, off);
}

/* The bytes of IN if they are in the daemon's memory, for the file's
 * written hash; NULL if libfuse spliced them into a pipe (not with the
 * custom I/O of fs/channel.c): that write then ends the hash, and the
 * hasher reads the file back. */
static const void *write_bytes(const struct fuse_bufvec *in)
{
	if (in->count != 1 || (in->buf[0].flags & FUSE_BUF_IS_FD))
		return NULL;
	return (const char *)in->buf[0].mem + in->off;
}

void op_write_buf(fuse_req_t req, fuse_ino_t id, struct fuse_bufvec *in, off_t off,
		  struct fuse_file_info *fi)
{
	size_t size = fuse_buf_size(in);
	struct fuse_bufvec out = FUSE_BUFVEC_INIT(size);
	struct view *v = req_view(req);
	const void *bytes = NULL;
	struct change c;
	struct stat before;
	bool keep_mtime;
	ssize_t n;
	int fd = change_begin(v, req, node(v, id), fi, &c, "write");

	if (fd < 0)
		return reply_status(req, fd);
	int r = v->quota ? charge(v, req, node(v, id), NULL,
				  write_growth(fd, change_before(&c), off, size), 0, "write")
			 : 0;
	if (r < 0) {
		change_end(&c, r, false);
		return reply_status(req, r);
	}
	if (gate_hashes_write(&c.t, off, size))
		bytes = write_bytes(in);
	out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	out.buf[0].fd = fd;
	out.buf[0].pos = off;
	/* With the writeback cache the kernel owns mtime: it sends a setattr
	 * when its clock moved and none when it did not, so a flush of cached
	 * pages must not stamp the backing file with the flush time. A
	 * direct write moves it as a write would. */
	keep_mtime = v->writeback && fi->writepage && fstat(fd, &before) == 0;
	n = fuse_buf_copy(&out, in, 0);
	if (keep_mtime && n > 0) {
		struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, before.st_mtim };
		futimens(fd, ts);
	}
	if (bytes && n > 0)
		gate_note_written(&c.t, off, bytes, (size_t)n);
	if (fh_of(fi)->uncached && n > 0)
		atomic_store_explicit(&fh_of(fi)->wrote, true, memory_order_relaxed);
	change_end(&c, n, n > 0);
	if (n < 0)
		reply_status(req, (int)n);
	else
		fuse_reply_write(req, (size_t)n);
}

/* close(2): the last writer's close publishes the file's stage, so
 * close() returns whatever kept the save from happening. "Last" counts
 * the writers closed before it as gone, though their RELEASE may still
 * be on its way (the kernel sends it after close() returned), and only
 * the handles that stage: one that writes in place (the handle that
 * created the file, O_APPEND) sends no FLUSH, so its close is not known
 * before that RELEASE, and what it writes goes to the file as it is
 * then, the stage or the file it was published as. A stage an
 * O_TRUNC emptied, while the closing process still writes it through a
 * duplicate, waits (stage_close_defers(): a shell's redirection). */
/* After a close's save (R its result): a file renewed by a refused or
 * failed save, or written by a handle that bypasses the writeback cache
 * (whose times the kernel did not move), is what the caller finds once
 * close() returned. FLUSH holds no lock the event thread's invalidation
 * may wait for: the kernel sends it from close() with none held. */
static void flush_renewals(struct view *v, struct inode *ino, struct open_file *h, int r)
{
	bool wrote = atomic_exchange_explicit(&h->wrote, false, memory_order_relaxed);

	if (wrote)
		ops_renew(v, ino, 1);
	if (wrote || r < 0)
		watch_forget_wait(v->watch);
}

void op_flush(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi)
{
	struct view *v = req_view(req);
	struct inode *ino = node(v, id);
	struct open_file *h = fh_of(fi);
	int r = 0, fd;

	if (h->stageable) {
		stage_lock(v, ino);
		if (!h->flushed) {
			h->flushed = true;
			ino->flushed_writers++;
		}
		pid_t pid = fuse_req_ctx(req)->pid;
		if (ino->stage_writers <= ino->flushed_writers && !stage_close_defers(v, ino, pid))
			r = change_publish(v, ino, false, pid);
		stage_unlock(v, ino);
		flush_renewals(v, ino, h, r);
		/* Its writes went to stages, never to its fd. */
		return reply_status(req, r);
	}
	/* Closing a duplicate reports delayed write errors (NFS, quota) at
	 * close() without closing the handle, which other fds may share. */
	fd = dup(fd_of(fi));
	if (fd < 0)
		return reply_status(req, neg_errno());
	r = close(fd) < 0 ? neg_errno() : 0;
	flush_renewals(v, ino, h, r);
	reply_status(req, r);
}

void op_release(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi)
{
	struct view *v = req_view(req);

	handle_release(v, node(v, id), fi);
	fuse_reply_err(req, 0);
}

/* fsync(2) publishes the file's stage durably: the stage is flushed,
 * renamed over the file, and the directory flushed. */
void op_fsync(fuse_req_t req, fuse_ino_t id, int datasync, struct fuse_file_info *fi)
{
	struct view *v = req_view(req);
	struct inode *ino = node(v, id);
	_io_ io = io_begin(v, ino, fh_of(fi), false);
	struct stat st;
	int r;

	if (io.locked && stage_active_fd(ino) >= 0)
		r = change_publish(v, ino, true, fuse_req_ctx(req)->pid);
	else
		r = (datasync ? fdatasync(io.fd) : fsync(io.fd)) < 0 ? neg_errno() : 0;
	io.fd = io.locked ? stage_io_fd(ino, fd_of(fi)) : io.fd;
	if (fh_of(fi)->writer && !handle_refused(fh_of(fi)) && fstat(io.fd, &st) == 0)
		gate_store(v, ino, io.fd, &st);
	reply_status(req, r);
}

void op_fallocate(fuse_req_t req, fuse_ino_t id, int mode, off_t off, off_t len,
		  struct fuse_file_info *fi)
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

void op_copy_file_range(fuse_req_t req, fuse_ino_t id_in, off_t off_in,
			struct fuse_file_info *fi_in, fuse_ino_t id_out, off_t off_out,
			struct fuse_file_info *fi_out, size_t len, int flags)
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
	int fd = change_begin(v, req, node(v, id_out), fi_out, &c, "copy_file_range into");
	if (fd < 0)
		return reply_status(req, fd);
	if (fd != fd_of(fi_out)) {
		change_end(&c, 0, false);
		return reply_status(req, -EOPNOTSUPP);
	}
	int r = charge(v, req, node(v, id_out), NULL,
		       write_growth(fd, change_before(&c), off_out, len), 0,
		       "copy_file_range into");
	if (r < 0) {
		change_end(&c, r, false);
		return reply_status(req, r);
	}
	bool mark_in = v->gate && fstat(fd_of(fi_in), &in_before) == 0;
	n = copy_file_range(fd_of(fi_in), &off_in, fd, &off_out, len, (unsigned)flags);
	int err = n < 0 ? neg_errno() : 0;
	change_end(&c, n < 0 ? err : n, n > 0);
	/* The source was read: mark it (before replying, as for a read). */
	if (mark_in && n > 0 && fstat(fd_of(fi_in), &in_after) == 0 &&
	    gate_read_is_news(v->gate, &in_before))
		gate_note_read(v->gate, &in_before, &in_after, fd_of(fi_in),
			       view_path(v, node(v, id_in), NULL, path, sizeof(path)));
	if (n < 0)
		reply_status(req, err);
	else
		fuse_reply_write(req, (size_t)n);
}

void op_lseek(fuse_req_t req, fuse_ino_t id, off_t off, int whence, struct fuse_file_info *fi)
{
	struct view *v = req_view(req);
	_io_ io = io_begin(v, node(v, id), fh_of(fi), false);
	off_t r = lseek(io.fd, off, whence);

	if (r < 0)
		reply_status(req, neg_errno());
	else
		fuse_reply_lseek(req, r);
}
