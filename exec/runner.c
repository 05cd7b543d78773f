/* runner.c - see runner.h. */
#include "runner.h"
#include "cleanup.h"

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

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

pid_t runner_spawn(char *const *argv, char *const *envp, const char *cwd,
		   int in, int out, int err)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid < 0 ? -errno : pid;
	/* The child, between fork and exec: async-signal-safe calls only. */
	int null = in < 0 ? open("/dev/null", O_RDONLY | O_CLOEXEC) : in;
	if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		_exit(126);
	setsid();
	if (cwd && chdir(cwd) < 0) {
		static const char msg[] = "sbx: cannot enter the working directory\n";
		(void)!write(2, msg, sizeof(msg) - 1);
		_exit(126);
	}
	execve(argv[0], argv, envp);
	static const char msg[] = "sbx: cannot start the command\n";
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(127);
}

/* Reads what pipe FD has for stream STREAM; returns false at its end. */
static bool drain(const struct run_spec *s, struct run_result *r, int fd,
		  int stream)
{
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return false;
	capture_add(stream == 1 ? &r->out : &r->err, buf, (size_t)n);
	if (s->on_output)
		s->on_output(s->arg, stream, buf, (size_t)n);
	return true;
}

int run_command(const struct run_spec *s, struct run_result *r)
{
	int out[2] = { -1, -1 }, err[2] = { -1, -1 };
	_cleanup_(closep) int pidfd = -1;
	int status = 0;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		int e = -errno;
		closep(&out[0]), closep(&out[1]), closep(&err[0]), closep(&err[1]);
		return e;
	}
	pid = runner_spawn(s->argv, s->envp, s->cwd, -1, out[1], err[1]);
	closep(&out[1]);
	closep(&err[1]);
	if (pid < 0) {
		closep(&out[0]), closep(&err[0]);
		return pid;
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);

	int64_t deadline = s->timeout_s ? now_ms() + (int64_t)s->timeout_s * 1000 : INT64_MAX;
	int64_t linger_until = INT64_MAX;
	bool exited = false, open_out = true, open_err = true;
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	fcntl(err[0], F_SETFL, O_NONBLOCK);
	while (open_out || open_err || !exited) {
		struct pollfd p[4] = {
			{ open_out ? out[0] : -1, POLLIN, 0 },
			{ open_err ? err[0] : -1, POLLIN, 0 },
			{ exited ? -1 : pidfd, POLLIN, 0 },
			{ exited ? -1 : s->cancel_fd, POLLIN, 0 },
		};
		int64_t now = now_ms(), until = exited ? linger_until : deadline;
		int wait_ms = until == INT64_MAX ? (exited || pidfd >= 0 ? -1 : 50)
			      : until <= now ? 0 : (int)(until - now < 60000 ? until - now : 60000);
		if (!exited && pidfd < 0 && (wait_ms < 0 || wait_ms > 50))
			wait_ms = 50;	/* no pidfd (old kernel): look now and then */
		int n = poll(p, 4, wait_ms);
		if (n < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			open_out = drain(s, r, out[0], 1);
		if (p[1].revents)
			open_err = drain(s, r, err[0], 2);
		now = now_ms();
		if (exited) {
			if (now >= linger_until)
				break;
			continue;
		}
		bool gone = waitpid(pid, &status, WNOHANG) == pid;
		if (gone) {
			exited = true;
			/* Others of its group may hold the pipes: take what
			 * they write for a moment, not forever. */
			linger_until = kill(-pid, 0) == 0 ? now + LINGER_MS : now + 10000;
			continue;
		}
		bool cancel = p[3].revents != 0;
		if (cancel || now >= deadline) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			exited = true;
			r->timed_out = !cancel;
			r->cancelled = cancel;
			linger_until = now + LINGER_MS;
		}
	}
	/* Whatever of the group is left after a timeout or cancel. */
	if (r->timed_out || r->cancelled)
		kill(-pid, SIGKILL);
	closep(&out[0]);
	closep(&err[0]);
	if (r->timed_out)
		r->code = 124;
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
