/* as.c - tool_call_as() and tool_open_as() (tool.h): a call on a thread
 * of its own, with the sandbox's filesystem identity and a command name
 * that says which tool it is. */
#include "aio.h"
#include "tool_int.h"
#include "common/cleanup.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* What a thread of its own does as an identity: a tool's call, or (FD
 * not NULL) an open. */
struct call_as {
	const struct tool_view *v;
	const struct tool_identity *id;
	char comm[TOOL_COMM_MAX + 1];
	const char *name, *vpath;
	json_t *args;
	int *fd;
	struct tool_result *out;
	int r;
};

/* The calling thread's filesystem ids and groups become ID's. Raw
 * syscalls: they change this thread alone (glibc's setgroups() changes
 * every thread's). setfsuid() reports the id it had, not an error, so
 * each switch is checked by asking again. */
static int become(const struct tool_identity *id)
{
	if (id->uid == geteuid() && id->gid == getegid())
		return 0;
	if (syscall(SYS_setgroups, 0, NULL) < 0)
		return neg_errno();
	syscall(SYS_setfsgid, id->gid);
	if ((gid_t)syscall(SYS_setfsgid, (gid_t)-1) != id->gid)
		return -EPERM;
	/* Leaving fsuid 0 drops the thread's filesystem capabilities
	 * (CAP_DAC_OVERRIDE and the like): the view sees a plain user. */
	syscall(SYS_setfsuid, id->uid);
	if ((uid_t)syscall(SYS_setfsuid, (uid_t)-1) != id->uid)
		return -EPERM;
	return 0;
}

static void *call_main(void *arg)
{
	struct call_as *c = arg;

	c->r = become(c->id);
	if (c->r == 0 && prctl(PR_SET_NAME, c->comm, 0, 0, 0) < 0)
		c->r = neg_errno();
	if (c->r == 0)
		c->r = c->fd ? tool_aio_open(c->v, c->vpath, c->fd, c->out)
			     : tool_call(c->v, c->name, c->args, c->out);
	return NULL;
}

/* C on a thread of its own as ID, named VIA:NAME: its value, or -errno
 * if the thread or the identity could not be had. */
static int run_as(struct call_as *c, const char *via)
{
	pthread_t t;

	memset(c->out, 0, sizeof(*c->out));
	/* Cut to what the kernel keeps (tool.h: every tool fits). */
	snprintf(c->comm, sizeof(c->comm), "%s:%s", via, c->name);
	int r = -pthread_create(&t, NULL, call_main, c);
	if (r < 0)
		return r;
	pthread_join(t, NULL);
	return c->r;
}

int tool_call_as(const struct tool_view *v, const struct tool_identity *id, const char *via,
		 const char *name, json_t *args, struct tool_result *out)
{
	struct call_as c = { .v = v, .id = id, .name = name, .args = args, .out = out };

	if (!tool_set_find(v->set, name)) {
		memset(out, 0, sizeof(*out));
		return -ENOENT;
	}
	return run_as(&c, via);
}

int tool_open_as(const struct tool_view *v, const struct tool_identity *id, const char *via,
		 const char *vpath, int *fd, struct tool_result *out)
{
	struct call_as c = {
		.v = v, .id = id, .name = "open", .vpath = vpath, .fd = fd, .out = out
	};

	*fd = -1;
	return run_as(&c, via);
}
