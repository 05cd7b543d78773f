/* launcher.c - see launcher.h. */
#include "launcher.h"
#include "env.h"
#include "launcher_proto.h"
#include "spawner.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long a launcher may take to start, and to put its sandbox back
 * after a command (a tree of a million files takes a while). */
#define START_MS 30000
#define READY_MS 10000
/* Output still taken after the status: every process is gone by then,
 * so the pipes end at once; this only bounds a misbehaving launcher. */
#define LINGER_MS 200
/* After a launcher failed to start, one-offs run afresh this long. */
#define RETRY_MS 60000

struct launcher {
	struct launcher *next;
	char *user, *thread, *mount, *mounts; /* its sandbox, and what it binds */
	uid_t uid;
	dev_t view; /* the view's device when it started: a view mounted
		     * again since is another, which it does not bind */
	bool network;
	bool busy;  /* a command runs in it, or it is starting */
	bool ready; /* its READY has been read: a command may be sent */
	pid_t pid;  /* bwrap */
	int pidfd;
	int init; /* the launcher: its namespace's first process (pidfd) */
	int ctl;  /* our end of its socket */
	int err;  /* bwrap's and the launcher's stderr (a pipe's read end) */
	struct cgroup_leaf *leaf;
};

struct launcher_pool {
	pthread_mutex_t lock;
	struct launcher *list;
	int program; /* sbx-launcher, opened once */
	struct spawner *spawner;
	/* After a launcher failed to start: none is tried before then
	 * (every one-off would pay for a start that fails again). */
	int64_t retry_ms;
};

struct launcher_pool *launchers_new(const char *program, char *err, size_t errlen)
{
	struct launcher_pool *p = calloc(1, sizeof(*p));

	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if ((p->program = open(program, O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "cannot open %s: %s", program, strerror(errno));
		free(p);
		return NULL;
	}
	if (!(p->spawner = spawner_new())) {
		snprintf(err, errlen, "out of memory");
		close(p->program);
		free(p);
		return NULL;
	}
	pthread_mutex_init(&p->lock, NULL);
	return p;
}

/* Kills L's sandbox (its leaf, its first process, bwrap) and frees L. */
static void launcher_free(struct launcher *l)
{
	if (l->pid > 0) {
		run_kill_tree(l->leaf, l->init, l->pid, l->pidfd);
		waitpid(l->pid, NULL, 0);
	}
	cgroup_leaf_free(l->leaf);
	int *fds[] = { &l->pidfd, &l->init, &l->ctl, &l->err };
	for (size_t i = 0; i < sizeof(fds) / sizeof(*fds); i++)
		closep(fds[i]);
	free(l->user);
	free(l->thread);
	free(l->mount);
	free(l->mounts);
	free(l);
}

void launchers_free(struct launcher_pool *p)
{
	if (!p)
		return;
	spawner_free(p->spawner);
	while (p->list) {
		struct launcher *l = p->list;
		p->list = l->next;
		launcher_free(l);
	}
	close(p->program);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* Under the lock: takes L out of the list. */
static void unlink_launcher(struct launcher_pool *p, struct launcher *l)
{
	for (struct launcher **at = &p->list; *at; at = &(*at)->next)
		if (*at == l) {
			*at = l->next;
			return;
		}
}

/* Ends L, which the caller holds (busy), taken out of the list. */
static void drop(struct launcher_pool *p, struct launcher *l, const char *why)
{
	pthread_mutex_lock(&p->lock);
	unlink_launcher(p, l);
	pthread_mutex_unlock(&p->lock);
	if (why)
		log_info("launcher %s/%s (pid %d): %s; ended", l->user, l->thread, (int)l->pid,
			 why);
	launcher_free(l);
}

/* The extra mounts of SS, one per line: part of what a launcher must
 * match. */
static char *mounts_key(const struct start_spec *ss)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	for (size_t i = 0; ss->cmd.extra && ss->cmd.extra[i]; i++)
		fprintf(f, "%s\n", ss->cmd.extra[i]);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static bool same_sandbox(const struct launcher *l, const struct start_spec *ss)
{
	return !strcmp(l->user, ss->user) && !strcmp(l->thread, ss->thread);
}

/* Whether L can run SS's command: the same sandbox, view, identity,
 * network and mounts. */
static bool fits(const struct launcher *l, const struct start_spec *ss, const char *mounts,
		 dev_t view)
{
	return same_sandbox(l, ss) && !strcmp(l->mount, ss->cmd.mount) && l->view == view &&
	       l->uid == ss->cmd.id->uid && l->network == ss->cmd.network &&
	       !strcmp(l->mounts, mounts);
}

/* Reads one message of L's launcher within MS: the kind, and an int32
 * after a status. 0, or -ETIMEDOUT, -EPIPE (it ended), -EPROTO. */
static int read_message(struct launcher *l, int ms, char *kind, int32_t *status)
{
	struct pollfd p = { l->ctl, POLLIN, 0 };
	char buf[16];
	int n;

	while ((n = poll(&p, 1, ms)) < 0 && errno == EINTR)
		;
	if (n == 0)
		return -ETIMEDOUT;
	ssize_t got = recv(l->ctl, buf, sizeof(buf), MSG_DONTWAIT);
	if (got < 0 && (errno == EAGAIN || errno == EINTR))
		return -ETIMEDOUT;
	if (got <= 0)
		return -EPIPE;
	*kind = buf[0];
	if (buf[0] == LAUNCHER_READY && got == 1)
		return 0;
	if (buf[0] == LAUNCHER_STATUS && got == 1 + (ssize_t)sizeof(*status)) {
		memcpy(status, buf + 1, sizeof(*status));
		return 0;
	}
	return -EPROTO;
}

/* ---- starting one ------------------------------------------------------ */

/* Waits for bwrap's report on INFO (read whole: bwrap dies of SIGPIPE
 * if a later write finds it closed): the launcher's pidfd, or -1. */
static int wait_report(int info, pid_t bwrap)
{
	struct pollfd p = { info, POLLIN, 0 };
	char buf[512], rest[512];
	size_t got = 0;
	ssize_t n = 1;

	while (n > 0 && poll(&p, 1, START_MS) > 0) {
		bool room = got < sizeof(buf);
		if ((n = read(info, room ? buf + got : rest,
			      room ? sizeof(buf) - got : sizeof(rest))) > 0)
			got += room ? (size_t)n : 0;
	}
	return got ? run_sandbox_init(buf, got, bwrap) : -1;
}

/* Starts L's sandbox as SS describes it, with the launcher in it. */
static int start(struct launcher_pool *p, struct launcher *l, const struct start_spec *ss,
		 char *err, size_t errlen)
{
	struct start_spec spec = *ss;
	struct start st;
	int sv[2], pipefd[2], r;
	char program[32];

	snprintf(program, sizeof(program), "/proc/self/fd/%d", LAUNCHER_PROGRAM_FD);
	spec.cmd.command = NULL;
	spec.cmd.env = NULL; /* each command brings its own */
	spec.cmd.cwd = NULL;
	spec.cmd.program = program;
	if ((r = start_prepare(&st, &spec, err, errlen)) < 0)
		return r;
	if (st.sb.launch.npass != LAUNCHER_PROGRAM_FD - 3) {
		start_free(&st);
		snprintf(err, errlen, "the launcher's descriptors are not where it looks");
		return -EINVAL;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		r = -errno;
		start_free(&st);
		snprintf(err, errlen, "socketpair: %s", strerror(-r));
		return r;
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		r = -errno;
		close(sv[0]), close(sv[1]);
		start_free(&st);
		snprintf(err, errlen, "pipe: %s", strerror(-r));
		return r;
	}
	st.sb.launch.pass[st.sb.launch.npass++] = p->program;
	st.sb.launch.pass[st.sb.launch.npass++] = sv[1];
	l->pid = spawner_spawn(p->spawner, &st, -1, pipefd[1], pipefd[1]);
	start_spawned(&st);
	close(sv[1]);
	close(pipefd[1]);
	l->ctl = sv[0];
	l->err = pipefd[0];
	if (l->pid < 0) {
		r = l->pid;
		start_free(&st);
		snprintf(err, errlen, "cannot start the launcher: %s", strerror(-r));
		return r;
	}
	l->pidfd = (int)syscall(SYS_pidfd_open, l->pid, 0);
	l->init = wait_report(st.info, l->pid);
	l->leaf = start_take_leaf(&st);
	start_free(&st);
	char kind = 0;
	int32_t unused;
	r = l->init < 0 ? -EIO : read_message(l, START_MS, &kind, &unused);
	if (r == 0 && kind != LAUNCHER_READY)
		r = -EPROTO;
	if (r < 0) {
		char said[512];
		fcntl(l->err, F_SETFL, O_NONBLOCK);
		ssize_t n = read(l->err, said, sizeof(said));
		start_failure(said, n > 0 ? (size_t)n : 0, err, errlen);
		return r;
	}
	fcntl(l->err, F_SETFL, O_NONBLOCK);
	l->ready = true;
	return 0;
}

int launcher_add(struct launcher_pool *p, const struct start_spec *ss, char *err, size_t errlen)
{
	struct launcher *l = calloc(1, sizeof(*l));
	unsigned have = 0;
	int r;

	if (!l) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	l->pid = -1;
	l->pidfd = l->init = l->ctl = l->err = -1;
	l->uid = ss->cmd.id->uid;
	l->network = ss->cmd.network;
	struct stat st;
	l->view = stat(ss->cmd.mount, &st) == 0 ? st.st_dev : 0;
	l->busy = true; /* until it is started */
	if (!(l->user = strdup(ss->user)) || !(l->thread = strdup(ss->thread)) ||
	    !(l->mount = strdup(ss->cmd.mount)) || !(l->mounts = mounts_key(ss))) {
		launcher_free(l);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_lock(&p->lock);
	for (struct launcher *o = p->list; o; o = o->next)
		have += same_sandbox(o, ss);
	if (now_ms() < p->retry_ms)
		have = LAUNCHERS_PER_SANDBOX;
	if (have < LAUNCHERS_PER_SANDBOX) {
		l->next = p->list;
		p->list = l;
	}
	pthread_mutex_unlock(&p->lock);
	if (have >= LAUNCHERS_PER_SANDBOX) {
		launcher_free(l);
		return 0;
	}
	if ((r = start(p, l, ss, err, errlen)) < 0) {
		drop(p, l, NULL);
		pthread_mutex_lock(&p->lock);
		p->retry_ms = now_ms() + RETRY_MS;
		pthread_mutex_unlock(&p->lock);
		return r;
	}
	log_info("launcher %s/%s: started (pid %d)", l->user, l->thread, (int)l->pid);
	pthread_mutex_lock(&p->lock);
	l->busy = false;
	pthread_mutex_unlock(&p->lock);
	return 1;
}

unsigned launchers_end(struct launcher_pool *p, const char *user, const char *thread)
{
	struct launcher *gone = NULL;
	unsigned n = 0;

	pthread_mutex_lock(&p->lock);
	for (struct launcher **at = &p->list; *at;) {
		struct launcher *l = *at;
		if (l->busy || strcmp(l->user, user) || strcmp(l->thread, thread)) {
			at = &l->next;
			continue;
		}
		*at = l->next;
		l->next = gone;
		gone = l;
		n++;
	}
	pthread_mutex_unlock(&p->lock);
	while (gone) {
		struct launcher *l = gone;
		gone = l->next;
		log_info("launcher %s/%s (pid %d): ended with its view", l->user, l->thread,
			 (int)l->pid);
		launcher_free(l);
	}
	return n;
}

/* ---- one command ------------------------------------------------------- */

/* An idle launcher that fits SS, taken (busy), and ready for a command;
 * NULL if none. */
static struct launcher *take(struct launcher_pool *p, const struct start_spec *ss)
{
	_cleanup_(freep) char *mounts = mounts_key(ss);
	struct launcher *l = NULL;
	struct stat st;

	if (!mounts || stat(ss->cmd.mount, &st) < 0)
		return NULL;
	for (;;) {
		struct launcher *stale = NULL;
		pthread_mutex_lock(&p->lock);
		/* The idle launchers of a view mounted before this one. */
		for (struct launcher **at = &p->list; *at;) {
			struct launcher *o = *at;
			if (o->busy || !same_sandbox(o, ss) ||
			    (o->view == st.st_dev && !strcmp(o->mount, ss->cmd.mount))) {
				at = &o->next;
				continue;
			}
			*at = o->next;
			o->next = stale;
			stale = o;
		}
		for (l = p->list; l; l = l->next)
			if (!l->busy && fits(l, ss, mounts, st.st_dev))
				break;
		if (l)
			l->busy = true;
		pthread_mutex_unlock(&p->lock);
		while (stale) {
			struct launcher *o = stale;
			stale = o->next;
			log_info("launcher %s/%s (pid %d): its view was mounted again; ended",
				 o->user, o->thread, (int)o->pid);
			launcher_free(o);
		}
		if (!l || l->ready)
			return l;
		/* Still putting its sandbox back after its last command. */
		char kind = 0;
		int32_t unused;
		int r = read_message(l, READY_MS, &kind, &unused);
		if (r == 0 && kind == LAUNCHER_READY) {
			l->ready = true;
			return l;
		}
		drop(p, l,
		     r == -ETIMEDOUT ? "not ready in time"
		     : r == -EPIPE   ? "it exited"
				     : "it broke the protocol");
	}
}

/* The request for SS's command in a memfd: cwd, shell, command, then the
 * environment, built as for a fresh sandbox (env.h). */
static int request_fd(const struct start_spec *ss)
{
	size_t nenv = 0, len = 0;

	while (ss->cmd.env && ss->cmd.env[nenv])
		nenv++;
	_cleanup_(env_freep) char **env = env_build(ss->base_env, false, ss->env_pass, ss->cmd.env,
						    nenv);
	if (!env)
		return -ENOMEM;
	const char *head[3] = { ss->cmd.cwd ? ss->cmd.cwd : SANDBOX_CWD, sandbox_shell(),
				ss->cmd.command };
	for (int i = 0; i < 3; i++)
		len += strlen(head[i]) + 1;
	/* bubblewrap sets PWD to its --chdir, over any the request gives. */
	_cleanup_(freep) char *pwd = NULL;
	if (asprintf(&pwd, "PWD=%s", head[0]) < 0) {
		pwd = NULL;
		return -ENOMEM;
	}
	len += strlen(pwd) + 1;
	for (size_t i = 0; env[i]; i++)
		len += strncmp(env[i], "PWD=", 4) ? strlen(env[i]) + 1 : 0;
	_cleanup_(freep) char *buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	size_t at = 0;
	for (int i = 0; i < 3; i++) {
		memcpy(buf + at, head[i], strlen(head[i]) + 1);
		at += strlen(head[i]) + 1;
	}
	for (size_t i = 0; env[i]; i++) {
		if (strncmp(env[i], "PWD=", 4)) {
			memcpy(buf + at, env[i], strlen(env[i]) + 1);
			at += strlen(env[i]) + 1;
		}
	}
	memcpy(buf + at, pwd, strlen(pwd) + 1);
	int fd = memfd_create("sbx-request", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, buf + off, len - off);
		if (n <= 0) {
			int e = n < 0 ? -errno : -EIO;
			close(fd);
			return e;
		}
		off += (size_t)n;
	}
	return fd;
}

/* Sends L the request REQ with the command's stdout OUT and stderr ERR. */
static int send_request(struct launcher *l, int req, int out, int err)
{
	char what = LAUNCHER_RUN;
	int fds[3] = { req, out, err };
	char cbuf[CMSG_SPACE(sizeof(fds))];
	struct iovec iov = { &what, 1 };
	struct msghdr m = { .msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };

	memset(cbuf, 0, sizeof(cbuf));
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	return sendmsg(l->ctl, &m, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

/* Runs the command in L: 0 with R filled; false in *KEEP if L is to be
 * ended (the command was cut short, or L failed). -errno if nothing ran
 * (L is to be ended). */
static int run_in(struct launcher *l, const struct start_spec *ss, const struct run_spec *s,
		  struct run_result *r, bool *keep)
{
	int out[2] = { -1, -1 }, err[2] = { -1, -1 };
	_cleanup_(closep) int req = request_fd(ss);
	int32_t status = 0;
	int rc;

	*keep = false;
	if (req < 0)
		return req;
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		rc = -errno;
		closep(&out[0]), closep(&out[1]), closep(&err[0]), closep(&err[1]);
		return rc;
	}
	rc = send_request(l, req, out[1], err[1]);
	closep(&out[1]);
	closep(&err[1]);
	if (rc < 0) {
		closep(&out[0]), closep(&err[0]);
		return rc;
	}
	l->ready = false;
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	fcntl(err[0], F_SETFL, O_NONBLOCK);

	struct run_watch w;
	struct run_clock clock;
	run_watch_init(&w, -1, 0, l->leaf);
	run_clock_init(&clock, s->timeout_s, s->idle_timeout_s);
	bool open_out = true, open_err = true, ended = false, gone = false;
	int64_t linger_until = INT64_MAX;
	while (open_out || open_err || !ended) {
		struct pollfd p[6] = {
			{ open_out ? out[0] : -1, POLLIN, 0 },
			{ open_err ? err[0] : -1, POLLIN, 0 },
			{ ended ? -1 : l->ctl, POLLIN, 0 },
			{ ended ? -1 : s->cancel_fd, 0, 0 }, /* POLLHUP */
			{ ended ? -1 : s->stop_fd, POLLIN, 0 },
			{ ended ? -1 : l->pidfd, POLLIN, 0 },
		};
		int64_t now = now_ms();
		int wait_ms = ended ? (linger_until <= now ? 0 : (int)(linger_until - now))
				    : run_watch_wait(&w, run_clock_wait(&clock, -1));
		if (poll(p, 6, wait_ms) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			open_out = run_take_output(s, r, out[0], 1, false);
		if (p[1].revents)
			open_err = run_take_output(s, r, err[0], 2, false);
		if (ended) {
			if (now_ms() >= linger_until)
				break;
			continue;
		}
		if (p[2].revents || p[5].revents) {
			char kind = 0;
			int m = read_message(l, 0, &kind, &status);
			if (m == -ETIMEDOUT && !p[5].revents)
				continue;
			ended = true;
			linger_until = now_ms() + LINGER_MS;
			/* Anything but its status: the launcher is gone (its
			 * command killed it, which ended the sandbox) or is
			 * not to be believed. */
			gone = m < 0 || kind != LAUNCHER_STATUS;
			if (gone)
				run_kill_tree(l->leaf, l->init, l->pid, l->pidfd);
			continue;
		}
		enum limit_hit hit = LIMIT_NONE;
		bool cancel = p[3].revents & (POLLHUP | POLLERR), stop = p[4].revents != 0;
		enum run_clock_end late = run_clock_check(&clock, r->out.total + r->err.total);
		int event = run_watch_step(&w, false, &hit);
		if (cancel || stop || late != RUN_CLOCK_RUNS || event == 2) {
			run_kill_tree(l->leaf, l->init, l->pid, l->pidfd);
			ended = true;
			run_mark_cut_short(r, cancel, stop, late, hit);
			linger_until = now_ms() + LINGER_MS;
		}
	}
	run_watch_end(&w);
	closep(&out[0]);
	closep(&err[0]);
	if (gone)
		status = SIGKILL; /* as a wait status: killed by SIGKILL */
	if (!run_cut_short(r) && l->leaf)
		r->killed = cgroup_check_ended(l->leaf, run_sigkilled(status));
	run_set_code(r, status);
	*keep = !gone && !run_cut_short(r);
	return 0;
}

int launcher_run(struct launcher_pool *p, const struct start_spec *ss, const struct run_spec *run,
		 struct run_result *r)
{
	struct launcher *l = take(p, ss);
	bool keep = false;

	memset(r, 0, sizeof(*r));
	if (!l)
		return -EAGAIN;
	int rc = run_in(l, ss, run, r, &keep);
	if (rc < 0) {
		/* Nothing ran: the caller runs it afresh. */
		drop(p, l, strerror(-rc));
		run_result_free(r);
		memset(r, 0, sizeof(*r));
		return -EAGAIN;
	}
	if (!keep) {
		drop(p, l, NULL);
		return 0;
	}
	pthread_mutex_lock(&p->lock);
	l->busy = false;
	pthread_mutex_unlock(&p->lock);
	return 0;
}
