/* gate_request.c - see gate_request.h. */
#include "gate_request.h"
#include "confine.h"
#include "inode.h"
#include "view.h"
#include "common/cleanup.h"
#include "common/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* The attributes of the object FD refers to (an O_PATH fd: not followed). */
static int fd_stat(int fd, struct stat *st)
{
	return fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0 ? neg_errno() : 0;
}

static bool is_vcs_dir(const char *name)
{
	return !strcmp(name, ".git") || !strcmp(name, ".hg") || !strcmp(name, ".svn");
}

/* Read-before-write: decides a content change of the file DIR/NAME (or
 * DIR itself, NAME NULL) whose attributes are ST, with T locked. A refusal
 * (or, in audit mode, a would-be refusal) is logged and audited. Returns
 * 0 or -EACCES; T stays locked either way.
 *
 * Files inside a version-control directory (.git, .hg, .svn) are not
 * gated: their tool rewrites them without reading them first (FETCH_HEAD,
 * ORIG_HEAD, logs) and guards them with its own lock files; nobody edits
 * them by hand. */
static int gate_decide(struct view *v, fuse_req_t req, struct gate_ticket *t, struct inode *dir,
		       const char *name, const struct stat *st, int fd, const char *op)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char path[PATH_MAX], comm[COMM_MAX];
	bool want = gate_wants_path(v->gate);

	if (inode_within(v->inodes, dir, is_vcs_dir))
		return 0;

	if (want)
		view_path(v, dir, name, path, sizeof(path));
	if (gate_check(t, st, fd, want ? path : NULL) == GATE_OK)
		return 0;
	if (!want)
		view_path(v, dir, name, path, sizeof(path));
	proc_comm(ctx->pid, comm);
	gate_report(v->gate, t, st, fd, path, op, ctx->pid, comm);
	return gate_mode(v->gate) == GATE_AUDIT ? 0 : -EACCES;
}

bool gate_file_passes(struct view *v, struct inode *ino, int fd, const struct stat *st)
{
	char path[PATH_MAX];
	bool want = gate_wants_path(v->gate), pass;
	struct gate_ticket t;
	struct stat now;

	if (!v->gate || inode_within(v->inodes, ino, is_vcs_dir))
		return true;
	if (!st && fd_stat(fd, &now) < 0)
		return false;
	if (want)
		view_path(v, ino, NULL, path, sizeof(path));
	gate_lock(v->gate, &t, st ? st : &now);
	pass = gate_check(&t, st ? st : &now, fd, want ? path : NULL) == GATE_OK;
	gate_unlock(&t, NULL, false);
	return pass;
}

/* Locks T for the file DIR/NAME (attributes ST, FD any fd of it) and, if
 * OP is set, decides a content change OP of it; a refusal unlocks T. */
static int gate_begin(struct view *v, fuse_req_t req, struct gate_ticket *t, struct inode *dir,
		      const char *name, const struct stat *st, int fd, const char *op)
{
	int r = 0;

	gate_lock(v->gate, t, st);
	if (v->gate && op)
		r = gate_decide(v, req, t, dir, name, st, fd, op);
	if (r < 0)
		gate_unlock(t, NULL, false);
	return r;
}

int gate_file_begin(struct view *v, fuse_req_t req, struct gate_ticket *t, struct inode *ino,
		    int fd, const struct stat *st, const char *op)
{
	struct stat now;
	int r;

	gate_lock(NULL, t, NULL);
	if (!v->gate)
		return 0;
	if (!st && (r = fd_stat(fd, &now)) < 0)
		return r;
	return gate_begin(v, req, t, ino, NULL, st ? st : &now, fd, op);
}

/* Like gate_begin(), for the entry DIR/NAME of directory fd DFD, about to
 * be replaced, removed or truncated. *EXISTS tells whether there is one
 * (with the gate off, it is not looked at). *FD receives an O_PATH fd of
 * a regular file: for the hash fallback, and for gate_end_name() to carry
 * the mark of a file that keeps other links. */
static int gate_begin_name(struct view *v, fuse_req_t req, struct gate_ticket *t, struct inode *dir,
			   int dfd, const char *name, const char *op, bool *exists, int *fd)
{
	struct stat st;
	int r;

	*exists = false;
	*fd = -1;
	gate_lock(NULL, t, NULL);
	if (!v->gate || fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	*exists = true;
	if (S_ISREG(st.st_mode) && (op || st.st_nlink > 1))
		*fd = confine_lookup(dfd, name);
	r = gate_begin(v, req, t, dir, name, &st, *fd, op);
	if (r < 0)
		closep(fd);
	return r;
}

/* Ends it after the name was replaced or removed: other hard links of the
 * file saw their ctime move, and a current mark stays current. */
static void gate_end_name(struct gate_ticket *t, int *fd)
{
	struct stat after;

	gate_unlock(t, *fd >= 0 && fstat(*fd, &after) == 0 ? &after : NULL, false);
	closep(fd);
}

/* Decides a content change OP of the entry DIR/NAME (fd DFD) on its own:
 * locks, decides, unlocks. */
static int gate_name_ok(struct view *v, fuse_req_t req, struct inode *dir, int dfd,
			const char *name, const char *op)
{
	struct gate_ticket t;
	_cleanup_(closep) int fd = -1;
	bool exists;
	int r = gate_begin_name(v, req, &t, dir, dfd, name, op, &exists, &fd);

	if (r == 0)
		gate_end_name(&t, &fd);
	return r;
}

/* True if an entry of directory FROM named NAME (NULL: FROM itself)
 * arriving in directory TO enters a version-control directory from
 * outside one. */
static bool enters_vcs(struct view *v, struct inode *from, const char *name, struct inode *to)
{
	return v->gate && !(name && is_vcs_dir(name)) && inode_within(v->inodes, to, is_vcs_dir) &&
	       !inode_within(v->inodes, from, is_vcs_dir);
}

/* Files in a version-control directory are not gated (gate_decide), so a
 * file moved there from outside would shed its gate: the move passes the
 * gate as if it replaced the file. A directory, whose files cannot all be
 * looked at, is refused with EXDEV (mv then copies it, and removing the
 * originals follows the unlink rule). */
static int gate_vcs_entry(struct view *v, fuse_req_t req, struct inode *from, int ffd,
			  const char *name, struct inode *to)
{
	struct stat st;

	if (!enters_vcs(v, from, name, to) || fstatat(ffd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (S_ISDIR(st.st_mode))
		return gate_mode(v->gate) == GATE_AUDIT ? 0 : -EXDEV;
	return gate_name_ok(v, req, from, ffd, name, "move into a VCS directory");
}

/* After the view renamed FROM/NAME (attributes SRC before) to TO/NEWNAME
 * (in directory fd TFD): its current mark stays current and is stored
 * under the new path (the old path's row dropped unless SWAPPED: an
 * exchange stores the other file's there). */
static void gate_carry_moved(struct view *v, const struct stat *src, struct inode *from,
			     const char *name, struct inode *to, int tfd, const char *newname,
			     bool swapped)
{
	struct gate_ticket t;
	struct stat after;
	char path[PATH_MAX];

	if (fstatat(tfd, newname, &after, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	gate_lock(v->gate, &t, src);
	gate_unlock(&t, &after, false);
	if (gate_dirty(v->gate, &after)) {
		if (!swapped)
			gate_forget_path(v->gate, view_path(v, from, name, path, sizeof(path)));
		gate_persist(v->gate, &after, -1, view_path(v, to, newname, path, sizeof(path)));
	}
}

void gate_names_none(struct gate_names *g)
{
	*g = (struct gate_names){ .fd = -1 };
	gate_lock(NULL, &g->t, NULL);
}

int gate_link_begin(struct view *v, fuse_req_t req, struct gate_names *g, struct inode *file,
		    int fd, struct inode *dir)
{
	struct stat st;

	gate_names_none(g);
	/* A new link moves the file's ctime: carry a current mark. A link
	 * into a version-control directory is gated (see gate_vcs_entry). */
	if (!v->gate || fd_stat(fd, &st) < 0)
		return 0;
	g->fd = fd;
	return gate_begin(v, req, &g->t, file, NULL, &st, fd,
			  enters_vcs(v, file, NULL, dir) ? "link into a VCS directory" : NULL);
}

int gate_remove_begin(struct view *v, fuse_req_t req, struct gate_names *g, struct inode *dir,
		      int dfd, const char *name, bool rmdir)
{
	bool exists;

	*g = (struct gate_names){ .fd = -1, .fd_owned = true, .forget = !rmdir };
	return gate_begin_name(v, req, &g->t, dir, dfd, name,
			       !gate_unlink(v->gate) ? NULL
			       : rmdir		     ? "rmdir"
						     : "unlink",
			       &exists, &g->fd);
}

int gate_rename_begin(struct view *v, fuse_req_t req, struct gate_names *g, struct inode *from,
		      int ffd, const char *name, struct inode *to, int tfd, const char *newname,
		      unsigned int flags)
{
	bool exchange = flags & RENAME_EXCHANGE;
	int r;

	gate_names_none(g);
	g->fd_owned = true;
	g->exchange = exchange;
	/* Replacing an existing file overwrites it: gated. The moved file's
	 * ctime changes, so a current mark of it is carried across; an
	 * exchange moves the other file too, and its mark goes with it. */
	g->carry = v->gate && fstatat(ffd, name, &g->src, AT_SYMLINK_NOFOLLOW) == 0;
	g->carry_dst = v->gate && exchange &&
		       fstatat(tfd, newname, &g->dst, AT_SYMLINK_NOFOLLOW) == 0;
	/* An exchange replaces the content at both names: the source's side
	 * is decided first, on its own (one gate lock at a time). */
	if ((r = gate_vcs_entry(v, req, from, ffd, name, to)) < 0 ||
	    (exchange && (r = gate_vcs_entry(v, req, to, tfd, newname, from)) < 0))
		return r;
	if (flags & RENAME_NOREPLACE)
		return 0;
	if (exchange && (r = gate_name_ok(v, req, from, ffd, name, "exchange")) < 0)
		return r;
	return gate_begin_name(v, req, &g->t, to, tfd, newname,
			       exchange ? "exchange" : "rename onto", &g->replaces, &g->fd);
}

void gate_names_end(struct gate_names *g, bool done)
{
	struct stat after;

	if (g->fd_owned) {
		gate_end_name(&g->t, &g->fd);
		return;
	}
	/* A link: the caller's fd, looked at if the link was made. */
	gate_unlock(&g->t, done && g->fd >= 0 && fd_stat(g->fd, &after) == 0 ? &after : NULL,
		    false);
	g->fd = -1;
}

void gate_names_commit(struct view *v, struct gate_names *g, struct inode *from, int ffd,
		       const char *name, struct inode *to, int tfd, const char *newname)
{
	char path[PATH_MAX];

	/* A removed file's stored mark names nothing now. */
	if (g->forget && v->gate && v->writer)
		gate_forget_path(v->gate, view_path(v, from, name, path, sizeof(path)));
	if (g->carry)
		gate_carry_moved(v, &g->src, from, name, to, tfd, newname, g->exchange);
	if (g->carry_dst)
		gate_carry_moved(v, &g->dst, to, newname, from, ffd, name, true);
}

void gate_store(struct view *v, struct inode *ino, int fd, const struct stat *st)
{
	char path[PATH_MAX];

	if (gate_dirty(v->gate, st))
		gate_persist(v->gate, st, fd, view_path(v, ino, NULL, path, sizeof(path)));
}
