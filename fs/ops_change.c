/* ops_change.c - the order of a change made through the view (ops_int.h):
 * of a file's content through a handle (struct change), and of names
 * (struct name_change), and of a stage replacing a file (a publication).
 * Each order is written once, here; a handler begins, makes its backing
 * syscall, and ends.
 */
#include "confine.h"
#include "journal.h"
#include "ops_int.h"
#include "stage.h"
#include "watch.h"
#include "common/lockcheck.h"
#include "common/log.h"
#include "common/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A change through handle H of INO: H is authorized by its first change
 * and keeps the right until closed. The check and the change it allows
 * are atomic under T (gate_unlock ends both). */
static int handle_change_begin(struct view *v, fuse_req_t req, struct inode *ino,
			       struct open_file *h, int fd, const struct stat *st,
			       struct gate_ticket *t, const char *op)
{
	int r = gate_file_begin(v, req, t, ino, fd, st, h->authorized ? NULL : op);

	if (r == 0 && v->gate)
		h->authorized = true;
	return r;
}

int change_begin(struct view *v, fuse_req_t req, struct inode *ino, struct fuse_file_info *fi,
		 struct change *c, const char *op)
{
	struct open_file *h = fh_of(fi);
	int r, fd;

	/* Its save was refused and kept as a copy, or failed: what it would
	 * write now would have no file to go to that the thread reads back,
	 * or would land on the previous content, past what was lost. */
	if (handle_refused(h))
		return -atomic_load_explicit(&h->refused, memory_order_acquire);
	/* Writes through a descriptor opened before the store failed; not
	 * a mapping's write-back, which only loses what was written. */
	if (!fi->writepage && view_changes_refused(v))
		return -EROFS;
	c->v = v;
	c->req = req;
	c->h = h;
	if (!h->journaled)
		journal_preimage(v, req, ino);
	c->io = io_begin(v, ino, h, true);
	c->have_before = (v->gate || v->quota) && stat_fd(c->io.fd, &c->before) == 0;
	/* The kernel writing back a shared writable mapping is never refused:
	 * the process wrote that memory already, so a refusal could only lose
	 * it; and a mapping's pages were read from the file (a READ, which
	 * sets the mark) when the process first touched them. */
	r = handle_change_begin(v, req, ino, h, c->io.fd, change_before(c), &c->t,
				fi->writepage ? NULL : op);
	if (r < 0) {
		io_end(&c->io);
		return r;
	}
	if (h->flushed && c->io.locked) {
		h->flushed = false; /* written again through a dup */
		ino->flushed_writers--;
	}
	/* Set-id bits go with the change, under its gate lock: the gate must
	 * not take their removal for a change on the host. */
	fd = fi->writepage ? 0 : drop_privs(v, req, c->io.fd, false, change_before(c));
	if (fd == 0)
		fd = io_change_fd(&c->io, h);
	if (fd != c->io.fd)
		c->have_before = false; /* a new stage took the change */
	if (fd >= 0)
		journal_keep_content(v, req, 0, ino, fd); /* under the file's gate lock */
	if (fd < 0) {
		gate_unlock(&c->t, NULL, true);
		io_end(&c->io);
	}
	return fd;
}

/* Ends it with the change's result: a failure that means the data may not
 * be there (no space, quota, I/O error) fails the whole save of a staged
 * file, which then keeps its previous content. */
void change_end(struct change *c, ssize_t result, bool changed)
{
	if (c->io.locked &&
	    (result == -ENOSPC || result == -EDQUOT || result == -EIO || result == -EFBIG))
		stage_failed(c->io.ino, (int)-result); /* an unlocked io has no stage */
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

/* Tells the inode table, and the journal, where the object now called
 * DIR/NAME, which was FROM/FROM_NAME, lives. */
static void note_moved(struct view *v, struct inode *from, const char *from_name, struct inode *dir,
		       int dfd, const char *name)
{
	struct stat st;
	struct timespec born;
	int r = inode_statx(dfd, name, 0, &st, &born);

	if (r >= 0) {
		inode_moved(v->inodes, dir->domain, &st, from, from_name, dir, name);
		journal_renamed(v, &st, r ? &born : NULL);
	}
}

static bool name_exchange(const struct name_change *nc)
{
	return nc->kind == NAME_RENAME && (nc->flags & RENAME_EXCHANGE);
}

/* Step 1: the gate, by kind. */
static int name_change_gate(struct name_change *nc)
{
	switch (nc->kind) {
	case NAME_LINK:
		return gate_link_begin(nc->v, nc->req, &nc->g, nc->file, nc->file_fd, nc->dir);
	case NAME_REMOVE:
		return gate_remove_begin(nc->v, nc->req, &nc->g, nc->dir, nc->dfd, nc->name,
					 nc->flags & AT_REMOVEDIR);
	case NAME_RENAME:
		return gate_rename_begin(nc->v, nc->req, &nc->g, nc->dir, nc->dfd, nc->name, nc->to,
					 nc->tfd, nc->newname, nc->flags);
	case NAME_MAKE:
		break;
	}
	gate_names_none(&nc->g);
	return 0;
}

/* Step 2: the pre-images of the names that go or move, and what undo
 * keeps of the files that lose their names. */
static void name_change_preimages(struct name_change *nc)
{
	journal_keep_dir(nc->v, nc->req, nc->dir, nc->dfd);
	if (nc->to && nc->to != nc->dir)
		journal_keep_dir(nc->v, nc->req, nc->to, nc->tfd);
	if (nc->kind == NAME_REMOVE) {
		/* A file's removal keeps the file itself (journal_remove_kept()). */
		if (!(nc->flags & AT_REMOVEDIR))
			journal_preimage_at(nc->v, nc->req, nc->dir, nc->dfd, nc->name, true);
		else
			journal_keep_going(nc->v, nc->req, 0, nc->dir, nc->dfd, nc->name);
	}
	if (nc->kind != NAME_RENAME)
		return;
	journal_preimage_at(nc->v, nc->req, nc->dir, nc->dfd, nc->name, false);
	if (!(nc->flags & RENAME_NOREPLACE))
		journal_preimage_at(nc->v, nc->req, nc->to, nc->tfd, nc->newname,
				    !name_exchange(nc));
	if (!(nc->flags & (RENAME_NOREPLACE | RENAME_EXCHANGE)))
		journal_keep_going(nc->v, nc->req, 0, nc->to, nc->tfd, nc->newname);
}

/* Steps 3 and 8: the names the change adds and removes, told to the host
 * watch before it (EXPECT) or, if it failed, after it. */
static void name_change_watch(struct name_change *nc, bool expect)
{
	void (*tell)(struct watch *, struct inode *, const char *, bool) = expect ? watch_expect
										  : watch_unexpect;
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
int name_change_begin(struct view *v, fuse_req_t req, struct name_change *nc)
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
		nc->gone = fstatat(nc->dfd, nc->name, &nc->victim, AT_SYMLINK_NOFOLLOW) == 0;
	else if (nc->kind == NAME_RENAME && !(nc->flags & (RENAME_NOREPLACE | RENAME_EXCHANGE)))
		nc->gone = fstatat(nc->tfd, nc->newname, &nc->victim, AT_SYMLINK_NOFOLLOW) == 0;
	return 0;
}

/* Steps 6 and 7; DONE: the syscall succeeded. */
static void name_change_end(struct name_change *nc, bool done)
{
	struct view *v = nc->v;

	struct inode *at = nc->kind == NAME_RENAME ? nc->to : nc->dir;
	if (done && nc->gone && S_ISREG(nc->victim.st_mode))
		inode_note_unnamed(v->inodes, at->domain, nc->victim.st_dev, nc->victim.st_ino);
	/* A file that keeps other names: the table must not know it by the
	 * one that went (its changes would be journaled under it). */
	if (done && nc->gone && !S_ISDIR(nc->victim.st_mode) && nc->victim.st_nlink > 1)
		inode_name_gone(v->inodes, at->domain, nc->victim.st_dev, nc->victim.st_ino, at,
				nc->kind == NAME_RENAME ? nc->newname : nc->name);
	if (done && nc->kind == NAME_RENAME) {
		note_moved(v, nc->dir, nc->name, nc->to, nc->tfd, nc->newname);
		if (name_exchange(nc))
			note_moved(v, nc->to, nc->newname, nc->dir, nc->dfd, nc->name);
	}
	view_names_release(v, nc->dir, nc->to);
	caller_leave(&nc->caller);
	gate_names_end(&nc->g, done);
}

/* Ends the change NC after its syscall succeeded. */
void name_change_commit(struct name_change *nc)
{
	struct view *v = nc->v;

	name_change_end(nc, true);
	if (nc->kind == NAME_REMOVE && nc->gone && !nc->kept && v->quota)
		view_release(v, nc->dir, &nc->victim);
	else if (nc->kind == NAME_RENAME && nc->g.replaces && !name_exchange(nc))
		view_release(v, nc->to, NULL); /* the replaced file's space */
	if (nc->event)
		journal_note(v, nc->req, nc->event, nc->dir, nc->name, nc->to, nc->newname);
	gate_names_commit(v, &nc->g, nc->dir, nc->dfd, nc->name, nc->to, nc->tfd, nc->newname);
}

/* Ends the change NC after its syscall failed with R; returns R. */
int name_change_abort(struct name_change *nc, int r)
{
	name_change_end(nc, false);
	name_change_watch(nc, false);
	return r;
}

/* ---- a publication (ops_int.h) ---------------------------------------- */

static void log_refused_save(struct view *v, struct inode *ino, const char *reason, pid_t pid)
{
	char path[PATH_MAX], comm[COMM_MAX];

	proc_comm(pid, comm);
	view_path(v, ino, NULL, path, sizeof(path));
	log_warn("refused save of '%s': %s (pid %d, %s)", path, reason, (int)pid, comm);
	gate_record_refusal(v->gate, path, "save", reason, pid, comm);
}

/* Step 2, a conflict: the file at the name is not the version the stage
 * may replace (a person saved it on the host while the thread had it
 * open). Their version stays and is what the view shows from now on,
 * through the handles open on the file too, which take no more changes
 * (the kernel has one page cache per file: they cannot read one version
 * and write another). The stage is kept as a copy next to NAME in PARENT
 * (directory fd PFD, or -1: then it cannot be kept). Returns -EACCES. */
static int publish_conflict(struct view *v, struct inode *ino, struct inode *parent, int pfd,
			    const char *name, pid_t pid)
{
	char copy[NAME_MAX + 1], kept[PATH_MAX], reason[PATH_MAX + 64];
	struct stat st;
	/* The kernel learns of the new name from the host watch, as of a
	 * host-side creation: it may hold a negative entry for it. */
	int r = stage_keep_conflict(v, ino, pfd, name, copy, &st);

	if (r == 0) {
		gate_note_created(v->gate, &st); /* the thread made it */
		snprintf(reason, sizeof(reason),
			 "changed on the host while open; the agent's version is kept as %s",
			 view_path(v, parent, copy, kept, sizeof(kept)));
	} else {
		snprintf(
			reason, sizeof(reason),
			"changed on the host while open; the agent's version could not be kept (%s)",
			strerror(-r));
	}
	ops_refuse_handles(v, ino, EACCES);
	stage_discard(v, ino);
	log_refused_save(v, ino, reason, pid);
	return -EACCES;
}

/* Step 2, the name went away or holds something else (NAME in PARENT,
 * directory fd PFD or -1; REPLACED: it holds another file). Where the
 * file itself still has a name (a hard link of it was removed, or it was
 * renamed while the view knew it by another name), the changes reach it
 * in place, as writes would natively, unless it changed since the stage
 * was taken. A file with no name left keeps them nowhere, as on a local
 * disk, unless a person's new file replaced it (not the thread's own
 * unlink or rename, inode_note_unnamed()): a conflict. */
static int publish_in_place(struct view *v, struct inode *ino, bool durable, struct inode *parent,
			    int pfd, const char *name, bool replaced, pid_t pid)
{
	struct stat cur, after;
	struct gate_ticket t;
	int ofd = inode_fd_get(v->inodes, ino);

	if (ofd < 0 || fstat(ofd, &cur) < 0 || cur.st_nlink == 0) {
		if (ofd >= 0)
			inode_unpin(v->inodes, ino);
		if (replaced && !atomic_load_explicit(&ino->unnamed, memory_order_acquire))
			return publish_conflict(v, ino, parent, pfd, name, pid);
		stage_orphan(ino);
		return 0;
	}
	if (!stage_replaces(ino, &cur)) {
		inode_unpin(v->inodes, ino);
		return publish_conflict(v, ino, parent, pfd, name, pid);
	}
	_cleanup_(closep) int fd = confine_reopen(ofd, O_WRONLY);
	inode_unpin(v->inodes, ino);
	int r = fd;
	if (fd >= 0) {
		journal_keep_content(v, NULL, pid, ino, fd);
		gate_lock(v->gate, &t, &cur);
		r = stage_write_back(v, ino, fd, durable);
		gate_unlock(&t, r == 0 && fstat(fd, &after) == 0 ? &after : NULL, true);
	}
	if (r < 0) {
		stage_discard(v, ino);
		return r;
	}
	bool have_after = fstat(fd, &after) == 0;
	if (have_after)
		inode_note_attr(v->inodes, ino, &after);
	stage_written_back(ino, have_after ? &after : NULL);
	return 0;
}

/* Steps 6 and 7, after the rename: the stage is the file at the name. */
static void publish_done(struct view *v, struct inode *ino, struct gate_ticket *t)
{
	int sfd = stage_io_fd(ino, -1);
	char vpath[PATH_MAX];
	struct stat after;
	struct timespec born;
	int known = inode_statx(sfd, "", AT_EMPTY_PATH, &after, &born), r = 0;
	bool have_after = known >= 0;

	journal_published(v, ino, have_after ? &after : NULL, known > 0 ? &born : NULL);
	view_release(v, ino, NULL); /* the replaced version's space */
	/* A stage its mark did not follow (one the strict gate does not mark,
	 * or changed otherwise) takes the publication as a change of content. */
	gate_unlock(t, have_after ? &after : NULL, !t->was_current);
	/* The view's inode is the new file from now on. */
	int path_fd = have_after ? confine_reopen(sfd, O_PATH) : -1;
	if (have_after)
		stage_published(ino, &after);
	if (path_fd >= 0 &&
	    (r = inode_rekey(v->inodes, ino, path_fd, &after, known > 0 ? &born : NULL)) == 0)
		inode_note_attr(v->inodes, ino, &after);
	else
		log_warn("published '%s', but the view could not follow it to its new inode: %s",
			 inode_path(v->inodes, ino, NULL, vpath, sizeof(vpath)),
			 strerror(path_fd < 0 ? (have_after ? -path_fd : EIO) : -r));
}

static int sync_dir(int dfd)
{
	_cleanup_(closep) int fd = confine_reopen(dfd, O_RDONLY | O_DIRECTORY);

	if (fd < 0)
		return fd;
	return fsync(fd) < 0 ? neg_errno() : 0;
}

/* Steps 3 to 8: the stage replaces the file at NAME in PARENT (PFD). */
static int publish_over(struct view *v, struct inode *ino, bool durable, struct inode *parent,
			int pfd, const char *name, pid_t pid)
{
	char vpath[PATH_MAX];
	struct stat before;
	struct gate_ticket t;
	int r = fstat(stage_io_fd(ino, -1), &before) < 0 ? neg_errno() : 0;

	/* Its mtime, name and rename change the stage's metadata only: under
	 * its gate lock, its mark follows (publish_done()), and so does the
	 * hash its writes made. */
	if (r == 0) {
		gate_lock(v->gate, &t, &before);
		if ((r = stage_link(v, ino)) < 0)
			gate_unlock(&t, NULL, true);
	}
	if (r < 0) {
		stage_discard(v, ino);
		return r;
	}
	watch_expect(v->watch, parent, name, true);
	view_names_lock(v, parent, true);
	journal_keep_replaced(v, pid, ino, parent, pfd, name);
	r = stage_rename_over(v, ino, pfd, name);
	if (r < 0) {
		view_names_unlock(v, parent);
		watch_unexpect(v->watch, parent, name, true);
		gate_unlock(&t, NULL, true);
		stage_discard(v, ino);
		return r;
	}
	publish_done(v, ino, &t);
	view_names_unlock(v, parent);
	if (durable && (r = sync_dir(pfd)) < 0)
		log_warn("published '%s' but could not fsync its directory: %s",
			 inode_path(v->inodes, ino, NULL, vpath, sizeof(vpath)), strerror(-r));
	return 0;
}

int change_publish(struct view *v, struct inode *ino, bool durable, pid_t pid)
{
	assert_held(LOCK_STAGE);
	char name[NAME_MAX + 1], vpath[PATH_MAX];
	struct inode *parent;
	struct stat cur;
	int r = stage_pending(ino);

	if (r == 0)
		return 0;
	if (r < 0) {
		log_warn("a save of '%s' failed (%s); the file keeps its previous content, and"
			 " its open handles make no more changes",
			 inode_path(v->inodes, ino, NULL, vpath, sizeof(vpath)), strerror(-r));
		/* What they would write now would land on the previous
		 * content, past what was lost: a mix of both. */
		ops_refuse_handles(v, ino, -r);
		stage_discard(v, ino);
		return r;
	}
	if ((r = stage_ready(v, ino, durable)) < 0)
		return r;
	int pfd = inode_parent_fd_get(v->inodes, ino, &parent, name, sizeof(name));
	if (pfd < 0)
		return publish_in_place(v, ino, durable, NULL, -1, NULL, false, pid);
	/* Only over the version that was staged: a name that went away or
	 * now holds something else (a symlink, another file) is left alone,
	 * and so is a file changed on the host since. (A host save in the
	 * microseconds between this check and the rename is not seen: Linux
	 * has no rename-if-unchanged.) */
	bool there = fstatat(pfd, name, &cur, AT_SYMLINK_NOFOLLOW) == 0;
	bool same = there && cur.st_dev == ino->dev && cur.st_ino == ino->ino;
	if (same && stage_replaces(ino, &cur))
		r = publish_over(v, ino, durable, parent, pfd, name, pid);
	else if (same)
		r = publish_conflict(v, ino, parent, pfd, name, pid);
	else
		r = publish_in_place(v, ino, durable, parent, pfd, name, there, pid);
	inode_unpin(v->inodes, parent);
	return r;
}
