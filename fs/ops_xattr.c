/* ops_xattr.c - extended attributes: getxattr, listxattr, setxattr,
 * removexattr; on the top directory, also the control attributes by
 * which sbx run tells the view about runs (journal_control()).
 */
#include "confine.h"
#include "journal.h"
#include "ops_int.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

enum xattr_op { XATTR_GET, XATTR_LIST, XATTR_SET, XATTR_REMOVE };

static ssize_t xattr_call(enum xattr_op op, const char *path, bool nofollow, const char *name,
			  void *value, size_t size, int flags)
{
	switch (op) {
	case XATTR_GET:
		return nofollow ? lgetxattr(path, name, value, size)
				: getxattr(path, name, value, size);
	case XATTR_LIST:
		return nofollow ? llistxattr(path, value, size) : listxattr(path, value, size);
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
static ssize_t do_xattr(struct view *v, fuse_req_t req, struct inode *ino, enum xattr_op op,
			const char *name, void *value, size_t size, int flags)
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
		int m = may_modify(v, req, ino);
		if (m < 0)
			return m;
	}
	/* What the filesystem may allocate for it: on ext4 a whole block of
	 * the inode's (st_blocks counts it; the next scan sees one shared by
	 * several attributes). */
	if (op == XATTR_SET &&
	    (r = charge(v, req, ino, NULL, (strlen(name) + size + 4095) / 4096 * 4096, 0,
			"setxattr")) < 0)
		return r;
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
	if ((op == XATTR_SET || op == XATTR_REMOVE) && target == p.fd)
		journal_keep_attrs(v, req, ino, p.fd);
	r = xattr_call(op, path, false, name, value, size, flags);
	r = r < 0 ? neg_errno() : r;
	gate_unlock(&t, r >= 0 && carry && stat_fd(target, &st) == 0 ? &st : NULL, false);
	return r;
}

/* Setting an access ACL changes the mode too. With the writeback cache
 * the kernel keeps its cached attributes after a setxattr, so drop them
 * now. Attributes only (offset -1): no page or inode lock is taken, which
 * is what makes this safe inside a request handler. */
static void acl_changed(struct view *v, fuse_ino_t id, const char *name)
{
	if (v->writeback && v->session && !strcmp(name, "system.posix_acl_access"))
		fuse_lowlevel_notify_inval_inode(v->session, id, -1, 0);
}

static void reply_xattr_value(fuse_req_t req, struct view *v, fuse_ino_t id, enum xattr_op op,
			      const char *name, size_t size)
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

void op_getxattr(fuse_req_t req, fuse_ino_t id, const char *name, size_t size)
{
	reply_xattr_value(req, req_view(req), id, XATTR_GET, name, size);
}

void op_listxattr(fuse_req_t req, fuse_ino_t id, size_t size)
{
	reply_xattr_value(req, req_view(req), id, XATTR_LIST, NULL, size);
}

void op_setxattr(fuse_req_t req, fuse_ino_t id, const char *name, const char *value, size_t size,
		 int flags)
{
	struct view *v = req_view(req);
	ssize_t r = do_xattr(v, req, node(v, id), XATTR_SET, name, (void *)value, size, flags);

	if (r == 0)
		acl_changed(v, id, name);
	reply_status(req, (int)r);
}

void op_removexattr(fuse_req_t req, fuse_ino_t id, const char *name)
{
	struct view *v = req_view(req);
	ssize_t r = do_xattr(v, req, node(v, id), XATTR_REMOVE, name, NULL, 0, 0);

	if (r == 0)
		acl_changed(v, id, name);
	reply_status(req, (int)r);
}
