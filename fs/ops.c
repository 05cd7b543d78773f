/* ops.c - the table of the view's FUSE low-level operations (ops.h), the
 * session's init, and what every handler shares (ops_int.h): the content
 * fd of a request, the view's rules for changes and new names, refusals
 * in the log, the caller's credentials. The handlers are in ops_entry.c,
 * ops_file.c, ops_dir.c and ops_xattr.c, the orders of a change in
 * ops_change.c.
 */
#include "channel.h"
#include "confine.h"
#include "names.h"
#include "overlay.h"
#include "ops_int.h"
#include "skills.h"
#include "stage.h"
#include "common/log.h"
#include "common/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/stat.h>

struct io io_begin(struct view *v, struct inode *ino, const struct open_file *h, bool change)
{
	struct io io = { v, ino, h ? h->fd : -1, false };

	if (S_ISREG(ino->type) && !handle_refused(h) &&
	    (stage_any(ino) || (change && stage_possible(v, ino)))) {
		stage_lock(v, ino);
		if (handle_refused(h)) { /* while we waited for the lock */
			stage_unlock(v, ino);
			return io;
		}
		io.locked = true;
		io.fd = stage_io_fd(ino, io.fd);
	}
	return io;
}

void io_end(struct io *io)
{
	if (io->locked)
		stage_unlock(io->v, io->ino);
	io->locked = false;
}

/* For a change through handle H (IO from io_begin): the fd the change
 * goes to, staging the file first if H stages; or -errno. */
int io_change_fd(struct io *io, struct open_file *h)
{
	if (!h->stageable || !io->locked)
		return io->fd;
	int fd = stage_for_change(io->v, io->ino, io->fd, NULL, false);
	if (fd >= 0)
		io->fd = fd;
	return fd;
}

bool in_uploads(struct view *v, struct inode *dir)
{
	struct root *root = inode_root(v->inodes, dir);

	return root && root->uploads;
}

/* Logs a refused request with enough context to act on it. */
void log_refusal(struct view *v, fuse_req_t req, struct inode *dir, const char *name,
		 const char *op, const char *why)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char path[PATH_MAX], comm[COMM_MAX];

	proc_comm(ctx->pid, comm);
	log_warn("refused %s of '%s': %s (pid %d, %s)", op,
		 inode_path(v->inodes, dir, name, path, sizeof(path)), why, (int)ctx->pid, comm);
}

/* EACCES for DIR/NAME (NAME may be NULL) if it is or is in a disabled
 * skill, logged in the reference's words: nothing of such a skill is
 * served, whatever the kernel still holds of it (a cached name, an open
 * directory). */
int skill_gate(struct view *v, fuse_req_t req, struct inode *dir, const char *name, const char *op)
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
int charge(struct view *v, fuse_req_t req, struct inode *ino, const char *name, uint64_t bytes,
	   uint64_t inodes, const char *op)
{
	char why[128];
	int r = view_charge(v, ino, bytes, inodes, why, sizeof(why));

	if (r < 0)
		log_refusal(v, req, ino, name, op, why);
	return r;
}

/* Checks a name about to be created in DIR (fd DFD). Returns 0, -EINVAL
 * for a refused name (logged), or -EEXIST if a refused name already exists
 * (nothing new would be created, so replacing it is not refused). */
int check_new_name(struct view *v, fuse_req_t req, struct inode *dir, int dfd, const char *name,
		   const char *op)
{
	const char *why = NULL;
	struct stat st;

	if (!confine_name_ok(name))
		return -EINVAL;
	if (stage_area_name(v, dir, name)) {
		log_refusal(v, req, dir, name, op, "the name is the view's staging area");
		return -EINVAL;
	}
	if (overlay_hidden_name(dir, name)) {
		log_refusal(v, req, dir, name, op, "the name is the overlay's mark of a directory");
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

static __thread bool thread_fs_unshared;
static __thread mode_t thread_umask; /* valid once unshared */

static bool unshare_thread_fs(void)
{
	if (!thread_fs_unshared && unshare(CLONE_FS) == 0) {
		thread_umask = umask(0);
		umask(thread_umask);
		thread_fs_unshared = true;
	}
	return thread_fs_unshared;
}

struct as_caller caller_enter(struct view *v, fuse_req_t req)
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
			c.umask = ctx->umask; /* default ACLs then lose */
	}
	uid_t uid = view_caller_uid(v, ctx->uid);
	gid_t gid = mapped ? v->gid : ctx->gid;
	if (v->creds_switch && (uid != 0 || gid != 0)) {
		setfsgid(gid);
		setfsuid(uid);
		c.switched = true;
	}
	return c;
}

void caller_leave(struct as_caller *c)
{
	if (c->switched) {
		setfsuid(0);
		setfsgid(0);
	}
}

int ops_enable_creds_switch(void)
{
	int bits = prctl(PR_GET_SECUREBITS);

	if (bits < 0 || prctl(PR_SET_SECUREBITS, bits | SECBIT_NO_SETUID_FIXUP) < 0)
		return neg_errno();
	return 0;
}

/* With FUSE_HANDLE_KILLPRIV_V2 (channel.c) the kernel leaves to us what
 * its file_remove_privs() does before a write or truncate by a caller
 * without CAP_FSETID: clear set-uid, and set-gid where it means execution
 * (group-exec set, or the caller outside the group). The backing write,
 * made by us, does the rest: the backing kernel drops a file capability
 * whoever writes, but keeps set-id bits for a root daemon. FD is an open
 * file, or an O_PATH fd if OPATH. */
int drop_privs(struct view *v, fuse_req_t req, int fd, bool opath, const struct stat *known)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char path[CONFINE_FD_PATH_MAX];
	struct stat st;
	mode_t mode, keep;

	if (!channel_killpriv(v->channel))
		return 0;
	if (opath)
		confine_fd_path(fd, path);
	if (known)
		st = *known;
	else if ((opath ? stat(path, &st) : fstat(fd, &st)) < 0)
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

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct view *v = userdata;

	/* Locks are kept by the kernel (no getlk/setlk/flock callbacks),
	 * which is exact for every process using the view. */
	conn->want &= ~(unsigned)FUSE_CAP_HANDLE_KILLPRIV;
	channel_init(v->channel, conn); /* KILLPRIV_V2, DIRECT_IO_ALLOW_MMAP */
	/* The writeback cache needs, with the gate on, that a handle opened
	 * for direct I/O can still be mapped shared (ops_file.c). Without
	 * it the kernel keeps each file's size as its own writes left it: a
	 * changed file gets a new inode (inode_table_renew()). */
	if (v->writeback && !(conn->capable & FUSE_CAP_WRITEBACK_CACHE)) {
		log_info("the kernel offers no writeback cache: writes go through to the files");
		v->writeback = false;
	} else if (v->writeback && v->gate && !channel_dio_mmap(v->channel)) {
		log_info("no writeback cache: with the read-before-write gate on it needs "
			 "FUSE_DIRECT_IO_ALLOW_MMAP (Linux 6.6), which this kernel does not offer");
		v->writeback = false;
	}
	if (v->writeback)
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	else
		conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
	inode_table_renew(v->inodes, v->writeback);
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
