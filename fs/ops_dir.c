/* ops_dir.c - requests on directories as streams: opendir, readdir,
 * readdirplus, releasedir, fsyncdir; and statfs. Synthetic directories
 * are listed from the view's tree; backing ones from their stream, less
 * what the view hides (upload staging files, the staging area, disabled
 * skills).
 */
#include "confine.h"
#include "names.h"
#include "ops_int.h"
#include "overlay.h"
#include "stage.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* One entry of an overlay's layer directory, as listed (overlay_list()). */
struct listed {
	char *name;
	ino_t d_ino;
	unsigned char d_type;
};

/* An open directory: the backing stream, or nothing for a synthetic one.
 * A layer directory of an overlay root is listed whole at its first read
 * (LISTED: the layer's entries and the project's it shows), the offset
 * of an entry being its index plus one. */
struct dir_handle {
	DIR *dp;
	off_t offset;		/* of the next entry readdir() returns */
	struct dirent *pending; /* read but not yet sent */
	bool uploads;
	struct listed *listed;
	size_t nlisted, listed_cap;
	bool is_listed;
};

void op_opendir(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi)
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
static int dir_handle_open(struct view *v, struct inode *dir, struct dir_handle *d)
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
static size_t emit_entry(struct view *v, fuse_req_t req, struct inode *dir, bool plus,
			 const char *name, ino_t d_ino, unsigned char d_type, off_t next, char *buf,
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

static int readdir_synth(struct view *v, fuse_req_t req, struct inode *dir, bool plus, off_t off,
			 char *buf, size_t size)
{
	const struct synth *s = dir->synth;
	size_t used = 0;

	for (off_t i = off; (size_t)i < s->n + 2; i++) {
		const char *name = i == 0 ? "." : i == 1 ? ".." : s->entry[i - 2].name;
		ino_t d_ino = i < 2 ? s->ino : s->entry[i - 2].inode->ino;
		size_t n = emit_entry(v, req, dir, plus, name, d_ino, DT_DIR, i + 1, buf + used,
				      size - used);

		if (n > size - used)
			break;
		used += n;
	}
	return (int)used;
}

static int readdir_backing(struct view *v, fuse_req_t req, struct inode *dir, struct dir_handle *d,
			   bool plus, off_t off, char *buf, size_t size)
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
		/* "." and ".." are never a skill's: a listing with neither,
		 * empty, is one the kernel keeps past every invalidation. */
		if (!(d->uploads && name_is_upload_staging(de->d_name)) &&
		    !stage_area_name(v, dir, de->d_name) &&
		    !(skills && confine_name_ok(de->d_name) &&
		      view_skill_check(v, dir, de->d_name, skill, sizeof(skill)) < 0)) {
			size_t n = emit_entry(v, req, dir, plus, de->d_name, de->d_ino, de->d_type,
					      de->d_off, buf + used, size - used);
			if (n > size - used)
				break;
			used += n;
		}
		d->pending = NULL;
		d->offset = de->d_off;
	}
	return (int)used;
}

/* Lists layer directory DIR of an overlay root into D, once. */
static int add_listed(void *arg, const char *name, ino_t d_ino, unsigned char d_type)
{
	struct dir_handle *d = arg;

	if (d->nlisted == d->listed_cap) {
		size_t cap = d->listed_cap ? 2 * d->listed_cap : 32;
		struct listed *l = realloc(d->listed, cap * sizeof(*l));
		if (!l)
			return -ENOMEM;
		d->listed = l;
		d->listed_cap = cap;
	}
	char *copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	d->listed[d->nlisted++] = (struct listed){ copy, d_ino, d_type };
	return 0;
}

static int readdir_layer(struct view *v, fuse_req_t req, struct inode *dir, struct dir_handle *d,
			 bool plus, off_t off, char *buf, size_t size)
{
	size_t used = 0;
	int r = dir_handle_open(v, dir, d);

	if (r == 0 && !d->is_listed) {
		_pinned_ p = pin(v, dir);
		r = p.fd < 0 ? p.fd : overlay_list(dir, p.fd, add_listed, d);
		d->is_listed = r == 0;
	}
	if (r < 0)
		return r;
	for (size_t i = (size_t)off; i < d->nlisted; i++) {
		const struct listed *l = &d->listed[i];
		size_t n = emit_entry(v, req, dir, plus, l->name, l->d_ino, l->d_type, (off_t)i + 1,
				      buf + used, size - used);
		if (n > size - used)
			break;
		used += n;
	}
	return (int)used;
}

static void dir_handle_close(struct dir_handle *d)
{
	if (d->dp)
		closedir(d->dp);
	for (size_t i = 0; i < d->nlisted; i++)
		free(d->listed[i].name);
	free(d->listed);
}

/* A stream for one request, where the kernel opened the directory without
 * us (no OPENDIR); closed when it leaves scope. */
#define _dir_once_ _cleanup_(dir_handle_close) struct dir_handle

/* The open directory of FI, or ONCE if there is none. */
static struct dir_handle *dir_of(const struct fuse_file_info *fi, struct dir_handle *once)
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
	    : dir->overlay && !dir->lower
		    ? readdir_layer(v, req, dir, dir_of(fi, &once), plus, off, buf, size)
		    : readdir_backing(v, req, dir, dir_of(fi, &once), plus, off, buf, size);
	if (r < 0)
		return reply_status(req, r);
	if (gate_unlink(v->gate) && !dir->synth) {
		struct stat st;
		if (fstat(dirfd(dir_of(fi, &once)->dp), &st) == 0)
			gate_note_listed(v->gate, &st);
	}
	fuse_reply_buf(req, buf, (size_t)r);
}

void op_readdir(fuse_req_t req, fuse_ino_t id, size_t size, off_t off, struct fuse_file_info *fi)
{
	do_readdir(req, id, size, off, fi, false);
}

void op_readdirplus(fuse_req_t req, fuse_ino_t id, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	do_readdir(req, id, size, off, fi, true);
}

void op_releasedir(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi)
{
	struct view *v = req_view(req);
	struct dir_handle *d = (struct dir_handle *)(uintptr_t)fi->fh;

	dir_handle_close(d);
	free(d);
	inode_open_unref(v->inodes, node(v, id), false);
	fuse_reply_err(req, 0);
}

void op_fsyncdir(fuse_req_t req, fuse_ino_t id, int datasync, struct fuse_file_info *fi)
{
	struct view *v = req_view(req);
	struct inode *dir = node(v, id);
	_dir_once_ once = { .offset = -1 };
	struct dir_handle *d = dir_of(fi, &once);
	int fd, r;

	if (dir->synth)
		return reply_status(req, 0); /* nothing to persist */
	r = dir_handle_open(v, dir, d);
	if (r == 0) {
		fd = dirfd(d->dp);
		r = (datasync ? fdatasync(fd) : fsync(fd)) < 0 ? neg_errno() : 0;
	}
	reply_status(req, r);
}

void op_statfs(fuse_req_t req, fuse_ino_t id)
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
