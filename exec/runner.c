/* runner.c - see runner.h. */
#include "runner.h"
#include "common/cleanup.h"
#include "common/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long output is still taken after the command's first process
 * exits while others of its group live on (and keep the pipes open). */
#define LINGER_MS 200
/* How often a leaf's limits are read while its command runs. */
#define CHECK_MS 100

int run_sandbox_init(const char *info, size_t len, pid_t bwrap)
{
	char text[512], stat[512];
	size_t n = len < sizeof(text) - 1 ? len : sizeof(text) - 1;
	const char *at;
	char *end;

	memcpy(text, info, n);
	text[n] = '\0';
	if (!(at = strstr(text, "\"child-pid\"")) || !(at = strchr(at, ':')))
		return -1;
	long child = strtol(at + 1, &end, 10);
	if (end == at + 1 || child <= 1 || child > INT32_MAX)
		return -1;
	int fd = (int)syscall(SYS_pidfd_open, (pid_t)child, 0);
	if (fd < 0)
		return -1;
	/* Its parent is bwrap, and it still lives once that is read: the
	 * number was not another process's when it was read. */
	snprintf(text, sizeof(text), "/proc/%ld/stat", child);
	_cleanup_(closep) int sfd = open(text, O_RDONLY | O_CLOEXEC);
	ssize_t got = sfd < 0 ? -1 : read(sfd, stat, sizeof(stat) - 1);
	const char *paren = got > 0 ? (stat[got] = '\0', strrchr(stat, ')')) : NULL;
	int ppid = 0;
	if (!paren || sscanf(paren, ") %*c %d", &ppid) != 1 || ppid != bwrap ||
	    syscall(SYS_pidfd_send_signal, fd, 0, NULL, 0) < 0) {
		closep(&fd);
		return -1;
	}
	return fd;
}

void run_kill_tree(struct cgroup_leaf *leaf, int init, pid_t pid, int pidfd)
{
	if (leaf)
		cgroup_kill(leaf);
	if (init >= 0)
		syscall(SYS_pidfd_send_signal, init, SIGKILL, NULL, 0);
	kill(-pid, SIGKILL);
	/* By its pidfd where there is one: PID may be reaped by now. */
	if (pidfd >= 0)
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	else
		kill(pid, SIGKILL);
}

void run_watch_init(struct run_watch *w, int info, pid_t bwrap, struct cgroup_leaf *leaf)
{
	w->info = info;
	w->bwrap = bwrap;
	w->started = info < 0;
	w->init = -1;
	w->leaf = leaf;
	w->next_check_ms = now_ms() + CHECK_MS;
}

void run_watch_end(struct run_watch *w)
{
	closep(&w->init);
	w->init = -1;
}

/* Reads bwrap's report of the sandbox if it has come: 0 (or not yet), or
 * 1 if the descriptor was closed unwritten (it failed to set up). */
static int take_info(struct run_watch *w)
{
	char buf[256];
	ssize_t n = w->started ? 1 : read(w->info, buf, sizeof(buf));

	if (n > 0 && !w->started) {
		w->started = true;
		w->init = run_sandbox_init(buf, (size_t)n, w->bwrap);
	}
	return n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN) ? 1 : 0;
}

/* Takes bwrap's report if it is there now; true if its descriptor was
 * closed unwritten instead (bwrap failed to set up the sandbox). */
static bool report_closed(struct run_watch *w)
{
	struct pollfd p = { w->info, POLLIN, 0 };

	return !w->started && poll(&p, 1, 0) == 1 && take_info(w) == 1;
}

void run_clock_init(struct run_clock *c, unsigned timeout_s, unsigned idle_s)
{
	int64_t now = now_ms();

	c->deadline = timeout_s ? now + (int64_t)timeout_s * 1000 : INT64_MAX;
	c->idle_ms = (int64_t)idle_s * 1000;
	c->idle_until = idle_s ? now + c->idle_ms : INT64_MAX;
	c->seen = 0;
}

int run_clock_wait(const struct run_clock *c, int max_ms)
{
	int64_t until = c->deadline < c->idle_until ? c->deadline : c->idle_until;

	if (until == INT64_MAX)
		return max_ms;
	int64_t left = until - now_ms();
	left = left < 0 ? 0 : left > 60000 ? 60000 : left;
	return max_ms >= 0 && max_ms < left ? max_ms : (int)left;
}

enum run_clock_end run_clock_check(struct run_clock *c, size_t output)
{
	int64_t now = now_ms();

	if (c->idle_ms && output != c->seen) {
		c->seen = output;
		c->idle_until = now + c->idle_ms;
	}
	return now >= c->deadline     ? RUN_CLOCK_TIMEOUT
	       : now >= c->idle_until ? RUN_CLOCK_IDLE
				      : RUN_CLOCK_RUNS;
}

bool run_cut_short(const struct run_result *r)
{
	return r->timed_out || r->idle_timed_out || r->cancelled || r->stopped || r->killed;
}

int run_watch_fd(const struct run_watch *w)
{
	return w->started ? -1 : w->info;
}

int run_watch_wait(const struct run_watch *w, int wait_ms)
{
	if (!w->leaf)
		return wait_ms;
	int64_t left = w->next_check_ms - now_ms();
	int bound = left < 0 ? 0 : (int)left;
	return wait_ms < 0 || wait_ms > bound ? bound : wait_ms;
}

int run_watch_step(struct run_watch *w, bool ready, enum limit_hit *hit)
{
	if (ready && take_info(w))
		return 1;
	if (w->leaf && now_ms() >= w->next_check_ms) {
		w->next_check_ms = now_ms() + CHECK_MS;
		if ((*hit = cgroup_check(w->leaf)) != LIMIT_NONE)
			return 2;
	}
	return 0;
}

bool run_take_output(const struct run_spec *s, struct run_result *r, int fd, int stream, bool hold)
{
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return false;
	capture_add(stream == 1 ? &r->out : &r->err, buf, (size_t)n);
	if (s->on_output && !hold)
		s->on_output(s->arg, stream, buf, (size_t)n);
	return true;
}

void run_mark_cut_short(struct run_result *r, bool cancel, bool stop, enum run_clock_end late,
			enum limit_hit hit)
{
	bool timeout = !cancel && !stop && hit == LIMIT_NONE;

	r->cancelled = cancel;
	r->stopped = stop && !cancel;
	r->timed_out = timeout && late == RUN_CLOCK_TIMEOUT;
	r->idle_timed_out = timeout && late == RUN_CLOCK_IDLE;
	r->killed = hit;
}

bool run_sigkilled(int status)
{
	return (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ||
	       (WIFEXITED(status) && WEXITSTATUS(status) == 137);
}

void run_set_code(struct run_result *r, int status)
{
	if (r->stopped)
		r->code = RUN_STOPPED_CODE;
	else if (r->timed_out || r->idle_timed_out)
		r->code = 124;
	else if (r->killed)
		r->code = 137;
	else if (WIFEXITED(status))
		r->code = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		r->code = -WTERMSIG(status);
}

/* The sandbox is set up: what was held back goes out. */
static void release_held(const struct run_spec *s, const struct run_result *r)
{
	if (!s->on_output)
		return;
	if (r->out.len)
		s->on_output(s->arg, 1, r->out.data, r->out.len);
	if (r->err.len)
		s->on_output(s->arg, 2, r->err.data, r->err.len);
}

/* Kills the command's tree and reaps it. A report of its sandbox not yet
 * read is read first: the sandbox may not die with bwrap yet. */
static void kill_command(const struct run_spec *s, struct run_watch *w, pid_t pid, int pidfd,
			 int *status)
{
	struct pollfd p = { w->info, POLLIN, 0 };

	if (!w->started && poll(&p, 1, 0) > 0)
		take_info(w);
	run_kill_tree(s->leaf, w->init, pid, pidfd);
	waitpid(pid, status, 0);
}

int run_command(const struct run_spec *s, struct run_result *r)
{
	int out[2] = { -1, -1 }, err[2] = { -1, -1 };
	_cleanup_(closep) int pidfd = -1;
	struct run_watch w;
	int status = 0;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		int e = -errno;
		closep(&out[0]), closep(&out[1]), closep(&err[0]), closep(&err[1]);
		return e;
	}
	pid = launch_spawn(s->argv, s->envp, s->cwd, -1, out[1], err[1], s->launch);
	if (s->after_spawn)
		s->after_spawn(s->after_spawn_arg);
	closep(&out[1]);
	closep(&err[1]);
	if (pid < 0) {
		closep(&out[0]), closep(&err[0]);
		return pid;
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	run_watch_init(&w, s->info_fd, pid, s->leaf);

	struct run_clock clock;
	run_clock_init(&clock, s->timeout_s, s->idle_timeout_s);
	int64_t linger_until = INT64_MAX;
	bool exited = false, open_out = true, open_err = true;
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	fcntl(err[0], F_SETFL, O_NONBLOCK);
	while (open_out || open_err || !exited) {
		struct pollfd p[6] = {
			{ open_out ? out[0] : -1, POLLIN, 0 },
			{ open_err ? err[0] : -1, POLLIN, 0 },
			{ exited ? -1 : pidfd, POLLIN, 0 },
			{ exited ? -1 : s->cancel_fd, 0, 0 }, /* POLLHUP */
			{ exited ? -1 : run_watch_fd(&w), POLLIN, 0 },
			{ exited ? -1 : s->stop_fd, POLLIN, 0 },
		};
		int64_t now = now_ms();
		/* Without a pidfd (an old kernel): a look now and then. */
		int wait_ms = exited ? (linger_until <= now ? 0 : (int)(linger_until - now))
				     : run_watch_wait(&w,
						      run_clock_wait(&clock, pidfd >= 0 ? -1 : 50));
		int n = poll(p, 6, wait_ms);
		if (n < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			open_out = run_take_output(s, r, out[0], 1, !w.started);
		if (p[1].revents)
			open_err = run_take_output(s, r, err[0], 2, !w.started);
		now = now_ms();
		if (exited) {
			if (now >= linger_until)
				break;
			continue;
		}
		enum limit_hit hit = LIMIT_NONE;
		bool was_started = w.started;
		int event = run_watch_step(&w, p[4].revents != 0, &hit);
		bool gone = waitpid(pid, &status, WNOHANG) == pid;
		/* It may have exited after the poll: its report is looked at
		 * once more, or a sandbox that never started would pass for a
		 * command that failed, its reason held back. */
		if (gone && event != 1 && report_closed(&w))
			event = 1;
		if (w.started && !was_started)
			release_held(s, r);
		if (event == 1 && gone)
			r->start_failed = true;
		/* A limit's kill may end the command before the next look, or
		 * be what this very look saw (counted as seen: not asked
		 * again). */
		if (gone && s->leaf && !r->start_failed &&
		    (r->killed = hit != LIMIT_NONE
					 ? hit
					 : cgroup_check_ended(s->leaf, run_sigkilled(status))) !=
			    LIMIT_NONE)
			kill_command(s, &w, pid, pidfd, &status);
		if (gone) {
			exited = true;
			/* Others of its group may hold the pipes: take what
			 * they write for a moment, not forever. */
			linger_until = kill(-pid, 0) == 0 ? now + LINGER_MS : now + 10000;
			continue;
		}
		bool cancel = p[3].revents & (POLLHUP | POLLERR), stop = p[5].revents != 0;
		enum run_clock_end late = run_clock_check(&clock, r->out.total + r->err.total);
		if (cancel || stop || late != RUN_CLOCK_RUNS || event == 2) {
			kill_command(s, &w, pid, pidfd, &status);
			exited = true;
			run_mark_cut_short(r, cancel, stop, late, hit);
			linger_until = now + LINGER_MS;
		}
	}
	/* Whatever of the group is left after a timeout, a limit or cancel. */
	if (run_cut_short(r))
		run_kill_tree(NULL, w.init, pid, pidfd);
	run_watch_end(&w);
	closep(&out[0]);
	closep(&err[0]);
	run_set_code(r, status);
	return 0;
}

void run_result_free(struct run_result *r)
{
	capture_free(&r->out);
	capture_free(&r->err);
}
