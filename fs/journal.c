/* journal.c - see journal.h. */
#include "journal.h"
#include "inode.h"
#include "proc.h"
#include "view.h"
#include "writer.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* True if DIR is under user-data/workspace or user-data/outputs. */
static bool journaled(struct view *v, struct inode *dir)
{
	struct root *root = inode_root(v->inodes, dir);

	return root && root->top->parent == v->user_data &&
	       (!strcmp(root->name, "workspace") || !strcmp(root->name, "outputs"));
}

/* The command name of PID, read from /proc at most every 100 ms for the
 * same process: a tool making thousands of changes pays for one read. */
static void caller_name(struct view *v, pid_t pid, int64_t now, char comm[64])
{
	pthread_mutex_lock(&v->caller.lock);
	bool fresh = v->caller.pid == pid && now - v->caller.at_ns < 100000000;
	if (fresh)
		memcpy(comm, v->caller.comm, 64);
	pthread_mutex_unlock(&v->caller.lock);
	if (fresh)
		return;
	proc_comm(pid, comm);
	pthread_mutex_lock(&v->caller.lock);
	v->caller.pid = pid;
	v->caller.at_ns = now;
	memcpy(v->caller.comm, comm, 64);
	pthread_mutex_unlock(&v->caller.lock);
}

void journal_note(struct view *v, fuse_req_t req, const char *op,
		  struct inode *dir, const char *name, struct inode *dir2,
		  const char *name2)
{
	char path[PATH_MAX], path2[PATH_MAX], comm[64];
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct timespec now;

	if (!v->writer || !journaled(v, dir) || (dir2 && !journaled(v, dir2)))
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	int64_t at = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	view_path(v, dir, name, path, sizeof(path));
	if (dir2)
		view_path(v, dir2, name2, path2, sizeof(path2));
	caller_name(v, ctx->pid, at, comm);
	struct store_event e = {
		.at_ns = at,
		.op = op, .path = path, .path2 = dir2 ? path2 : NULL,
		.pid = ctx->pid, .comm = comm,
	};
	store_writer_event(v->writer, &e);
}
