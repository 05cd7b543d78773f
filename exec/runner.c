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

void run_watch_init(struct run_watch *w, int info, struct cgroup_leaf *leaf)
{
	w->info = info;
	w->started = info < 0;
	w->leaf = leaf;
	w->next_check_ms = now_ms() + CHECK_MS;
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
	if (ready && !w->started) {
		char buf[256];
		ssize_t n = read(w->info, buf, sizeof(buf));
		if (n > 0)
			w->started = true;
		else if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			return 1;
	}
	if (w->leaf && now_ms() >= w->next_check_ms) {
		w->next_check_ms = now_ms() + CHECK_MS;
		if ((*hit = cgroup_check(w->leaf)) != LIMIT_NONE)
			return 2;
	}
	return 0;
}

/* Reads what pipe FD has for stream STREAM; returns false at its end.
 * Until the sandbox is set up (STARTED), output is only captured. */
static bool drain(const struct run_spec *s, struct run_result *r, int fd, int stream, bool started)
{
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return false;
	capture_add(stream == 1 ? &r->out : &r->err, buf, (size_t)n);
	if (s->on_output && started)
		s->on_output(s->arg, stream, buf, (size_t)n);
	return true;
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

/* Kills the command (its group, and its leaf) and reaps it. */
static void kill_command(const struct run_spec *s, pid_t pid, int *status)
{
	if (s->leaf)
		cgroup_kill(s->leaf);
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
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
	run_watch_init(&w, s->info_fd, s->leaf);

	int64_t deadline = s->timeout_s ? now_ms() + (int64_t)s->timeout_s * 1000 : INT64_MAX;
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
		int64_t now = now_ms(), until = exited ? linger_until : deadline;
		int wait_ms = until == INT64_MAX ? (exited || pidfd >= 0 ? -1 : 50)
			      : until <= now	 ? 0
						 : (int)(until - now < 60000 ? until - now : 60000);
		if (!exited && pidfd < 0 && (wait_ms < 0 || wait_ms > 50))
			wait_ms = 50; /* no pidfd (old kernel): look now and then */
		if (!exited)
			wait_ms = run_watch_wait(&w, wait_ms);
		int n = poll(p, 6, wait_ms);
		if (n < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			open_out = drain(s, r, out[0], 1, w.started);
		if (p[1].revents)
			open_err = drain(s, r, err[0], 2, w.started);
		now = now_ms();
		if (exited) {
			if (now >= linger_until)
				break;
			continue;
		}
		enum limit_hit hit = LIMIT_NONE;
		bool was_started = w.started;
		int event = run_watch_step(&w, p[4].revents != 0, &hit);
		if (w.started && !was_started)
			release_held(s, r);
		bool gone = waitpid(pid, &status, WNOHANG) == pid;
		if (event == 1 && gone)
			r->start_failed = true;
		/* A limit's kill may end the command before the next look. */
		bool sigkilled = (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ||
				 (WIFEXITED(status) && WEXITSTATUS(status) == 137);
		if (gone && s->leaf && !r->start_failed &&
		    (r->killed = cgroup_check_ended(s->leaf, sigkilled)) != LIMIT_NONE)
			kill_command(s, pid, &status);
		if (gone) {
			exited = true;
			/* Others of its group may hold the pipes: take what
			 * they write for a moment, not forever. */
			linger_until = kill(-pid, 0) == 0 ? now + LINGER_MS : now + 10000;
			continue;
		}
		bool cancel = p[3].revents & (POLLHUP | POLLERR), stop = p[5].revents != 0;
		if (cancel || stop || now >= deadline || event == 2) {
			kill_command(s, pid, &status);
			exited = true;
			r->cancelled = cancel;
			r->stopped = stop && !cancel;
			r->timed_out = !cancel && !stop && event != 2;
			r->killed = hit;
			linger_until = now + LINGER_MS;
		}
	}
	/* Whatever of the group is left after a timeout, a limit or cancel. */
	if (r->timed_out || r->cancelled || r->stopped || r->killed)
		kill(-pid, SIGKILL);
	closep(&out[0]);
	closep(&err[0]);
	if (r->stopped)
		r->code = RUN_STOPPED_CODE;
	else if (r->timed_out)
		r->code = 124;
	else if (r->killed)
		r->code = 137;
	else if (WIFEXITED(status))
		r->code = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		r->code = -WTERMSIG(status);
	return 0;
}

void run_result_free(struct run_result *r)
{
	capture_free(&r->out);
	capture_free(&r->err);
}
