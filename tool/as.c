/* as.c - tool_call_as() and tool_open_as() (tool.h): a call with the
 * sandbox's filesystem identity and a command name that says which tool
 * it is; a tool that writes on a thread of its own, a read-only one (and
 * an open) on the caller's. */
#include "aio.h"
#include "tool_int.h"
#include "common/cleanup.h"
#include "common/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* What is done as an identity: a tool's call, or (FD not NULL) an
 * open of VPATH. */
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

/* A thread's identity and name as they were before a call, to be put
 * back after it. */
struct saved {
	uid_t fsuid;
	gid_t fsgid;
	int ngroups;
	gid_t *groups; /* malloc'd */
	char comm[TOOL_COMM_MAX + 1];
};

static int save(struct saved *s)
{
	*s = (struct saved){ .fsuid = (uid_t)syscall(SYS_setfsuid, (uid_t)-1),
			     .fsgid = (gid_t)syscall(SYS_setfsgid, (gid_t)-1) };
	int n = getgroups(0, NULL);

	if (n < 0 || prctl(PR_GET_NAME, s->comm, 0, 0, 0) < 0)
		return neg_errno();
	if (n && !(s->groups = calloc((size_t)n, sizeof(gid_t))))
		return -ENOMEM;
	s->ngroups = n ? getgroups(n, s->groups) : 0;
	return s->ngroups < 0 ? neg_errno() : 0;
}

/* Whether the calling thread's groups are still S's. */
static bool same_groups(const struct saved *s)
{
	if (getgroups(0, NULL) != s->ngroups)
		return false;
	if (s->ngroups == 0)
		return true;
	_cleanup_(freep) gid_t *now = calloc((size_t)s->ngroups, sizeof(gid_t));
	return now && getgroups(s->ngroups, now) == s->ngroups &&
	       !memcmp(now, s->groups, (size_t)s->ngroups * sizeof(gid_t));
}

/* Puts back what S saved, each switch checked: 0, or -EPERM. Going back
 * to fsuid 0 gives the filesystem capabilities back. Only what changed
 * is put back: a caller without privilege (whose call was refused, or
 * took its own ids) may not set its groups, even to what they are. */
static int restore(const struct saved *s)
{
	prctl(PR_SET_NAME, s->comm, 0, 0, 0);
	syscall(SYS_setfsuid, s->fsuid);
	syscall(SYS_setfsgid, s->fsgid);
	if ((uid_t)syscall(SYS_setfsuid, (uid_t)-1) != s->fsuid ||
	    (gid_t)syscall(SYS_setfsgid, (gid_t)-1) != s->fsgid)
		return -EPERM;
	if (!same_groups(s) && syscall(SYS_setgroups, (size_t)s->ngroups, s->groups) < 0)
		return -EPERM;
	return 0;
}

/* Becomes C's identity and name, and calls its tool or opens. */
static void call(struct call_as *c)
{
	c->r = become(c->id);
	if (c->r == 0 && prctl(PR_SET_NAME, c->comm, 0, 0, 0) < 0)
		c->r = neg_errno();
	if (c->r == 0)
		c->r = c->fd ? tool_aio_open(c->v, c->vpath, c->fd, c->out)
			     : tool_call(c->v, c->name, c->args, c->out);
}

static void *call_main(void *arg)
{
	call(arg);
	return NULL;
}

/* C on the calling thread, which is then put back as it was. A thread
 * that cannot be put back would do its caller's later work (a broker's,
 * as root) with a sandbox's identity: the process stops instead. */
static int call_here(struct call_as *c)
{
	struct saved s;
	int r = save(&s);

	if (r == 0) {
		call(c);
		if (restore(&s) < 0) {
			log_error("cannot put back a thread's identity after %s: stopping",
				  c->comm);
			abort();
		}
		r = c->r;
	}
	free(s.groups);
	return r;
}

/* C named VIA:NAME, on the calling thread if it only reads, else on a
 * thread of its own (the view's journal takes a thread's name for a
 * while: a reused one could name a write after an earlier tool). Its
 * value, or -errno if the thread or the identity could not be had. */
static int run(struct call_as *c, const char *via, bool read_only)
{
	pthread_t t;

	memset(c->out, 0, sizeof(*c->out));
	/* Cut to what the kernel keeps (tool.h: every tool fits). */
	snprintf(c->comm, sizeof(c->comm), "%s:%s", via, c->name);
	if (read_only)
		return call_here(c);
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
	const struct tool_spec *spec = tool_set_find(v->set, name);

	if (!spec) {
		memset(out, 0, sizeof(*out));
		return -ENOENT;
	}
	return run(&c, via, spec->read_only);
}

int tool_open_as(const struct tool_view *v, const struct tool_identity *id, const char *via,
		 const char *vpath, int *fd, struct tool_result *out)
{
	struct call_as c = {
		.v = v, .id = id, .name = "open", .vpath = vpath, .fd = fd, .out = out
	};

	*fd = -1;
	return run(&c, via, true);
}
