/* cmd.c - see cmd.h. */
#include "cmd.h"

#include "common/clock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

char *fmt_cmd(const char *fmt, ...)
{
	va_list ap;
	char *cmd;

	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) < 0)
		abort();
	va_end(ap);
	return cmd;
}

/* Runs "sh -c CMD"; returns its standard output (stderr passes through)
 * and stores its exit status (-1 if it did not exit) in *status. */
char *capture(const char *cmd, int *status)
{
	FILE *p = popen(cmd, "r");
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	size_t n;
	int st;

	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(buf);
	while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (cap - len < 2) {
			cap *= 2;
			buf = realloc(buf, cap);
			ck_assert_ptr_nonnull(buf);
		}
	}
	buf[len] = '\0';
	st = pclose(p);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return buf;
}

/* The parent of process PID (/proc/PID/stat), or 0 if it is gone. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512];
	FILE *f;
	size_t n;
	char *close_paren;
	int ppid = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses. */
	close_paren = strrchr(buf, ')');
	if (!close_paren || sscanf(close_paren + 1, " %*c %d", &ppid) != 1)
		return 0;
	return ppid;
}

/* Adds to TREE (N of them, room for MAX) every process whose parent is
 * in it, until none is new. */
static size_t add_descendants(pid_t *tree, size_t n, size_t max)
{
	for (bool grew = true; grew;) {
		DIR *d = opendir("/proc");
		struct dirent *e;

		grew = false;
		ck_assert_ptr_nonnull(d);
		while ((e = readdir(d)) && n < max) {
			pid_t pid = (pid_t)atoi(e->d_name), ppid;
			bool known = false;

			if (pid <= 0)
				continue;
			for (size_t i = 0; i < n && !known; i++)
				known = tree[i] == pid;
			ppid = known ? 0 : parent_of(pid);
			for (size_t i = 0; i < n && ppid && !known; i++)
				if (tree[i] == ppid) {
					tree[n++] = pid;
					grew = true;
					break;
				}
		}
		closedir(d);
	}
	return n;
}

/* Kills PID and every process below it. Each is stopped as it is found,
 * so that none forks a child the walk would miss or exits and leaves its
 * children to init before they are found; then all are killed. */
static void kill_tree(pid_t pid)
{
	pid_t tree[4096] = { pid };
	size_t n = 1, before;

	kill(pid, SIGSTOP);
	do {
		before = n;
		n = add_descendants(tree, n, sizeof(tree) / sizeof(*tree));
		for (size_t i = before; i < n; i++)
			kill(tree[i], SIGSTOP);
	} while (n != before);
	for (size_t i = 0; i < n; i++)
		kill(tree[i], SIGKILL);
	kill(-pid, SIGKILL);
}

static double timeout_multiplier(void)
{
	const char *m = getenv("CK_TIMEOUT_MULTIPLIER");
	double x = m ? atof(m) : 1;

	return x > 0 ? x : 1;
}

char *capture_for(const char *cmd, int secs, int *status, bool *timed_out)
{
	int64_t deadline = now_ms() + (int64_t)(secs * timeout_multiplier() * 1000);
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	bool late = false, eof = false;
	int fds[2], st = 0;
	pid_t pid;

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		setpgid(0, 0);
		dup2(fds[1], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	setpgid(pid, pid); /* also here: no race with a kill(-pid) */
	close(fds[1]);
	/* Until the output ends (every process holding the pipe is gone) or
	 * the deadline. */
	while (!eof) {
		struct pollfd p = { .fd = fds[0], .events = POLLIN };
		int64_t left = deadline - now_ms();
		ssize_t r;

		if (!late && left <= 0) {
			kill_tree(pid);
			late = true;
		}
		if (poll(&p, 1, late ? 1000 : (int)left) == 0) {
			if (late) /* killed, yet the pipe is held: no more waiting */
				break;
			continue;
		}
		if (cap - len < 4096) {
			cap *= 2;
			buf = realloc(buf, cap);
			ck_assert_ptr_nonnull(buf);
		}
		r = read(fds[0], buf + len, cap - len - 1);
		if (r > 0)
			len += (size_t)r;
		else if (r == 0 || errno != EINTR)
			eof = true;
	}
	close(fds[0]);
	/* The shell may outlive the pipe's end (it closed its outputs). */
	while (waitpid(pid, &st, late ? 0 : WNOHANG) == 0) {
		if (now_ms() >= deadline) {
			kill_tree(pid);
			late = true;
		} else {
			poll(NULL, 0, 10);
		}
	}
	buf[len] = '\0';
	if (late) {
		char *more = fmt_cmd("%s%s[killed after %d s with every process below it]\n", buf,
				     len && buf[len - 1] != '\n' ? "\n" : "", secs);

		free(buf);
		buf = more;
	}
	*status = !late && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	if (timed_out)
		*timed_out = late;
	return buf;
}

/* "diff -u" of two texts, at most about 3 KB of it (Check's messages
 * are bounded). */
char *text_diff(const char *got, const char *want)
{
	char *dir = strdup(test_dir("diff"));
	char a[PATH_MAX + 8], b[PATH_MAX + 8];
	char *cmd, *out;
	int st;

	snprintf(a, sizeof(a), "%s/want", dir);
	snprintf(b, sizeof(b), "%s/got", dir);
	ck_assert_int_eq(write_file(a, want), 0);
	ck_assert_int_eq(write_file(b, got), 0);
	if (asprintf(&cmd, "cd '%s' && diff -u want got | head -c 3000; rm -rf '%s'", dir, dir) < 0)
		abort();
	out = capture(cmd, &st);
	free(cmd);
	free(dir);
	return out;
}

const char *broker_start_with(const char *tag, const char *conf, const char *env)
{
	const char *home = test_dir(tag);

	test_home_store(home);
	if (conf)
		ck_assert_int_eq(append_file(fmt_cmd("%s/sbx.conf", home), conf), 0);
	OK("%s '%s' broker --home '%s' >/dev/null", env, test_bin("sbx"), home);
	return home;
}

const char *broker_start(const char *tag, const char *conf)
{
	return broker_start_with(tag, conf, "");
}

void broker_stop(const char *home)
{
	sh("'%s' broker --home '%s' --shutdown >/dev/null 2>&1", test_bin("sbx"), home);
}

const char *serve_start_in(const char *home, const char *args)
{
	/* Under SANITIZE=1 its leaks at exit are reported as a daemon's
	 * (the sanitizers suite). */
	const char *asan = getenv("SBX_DAEMON_ASAN_OPTIONS");

	OK("%s%s%s'%s' serve --home '%s' %s 2>'%s/serve.log' & echo $! >'%s/serve.pid'",
	   asan ? "ASAN_OPTIONS='" : "", asan ? asan : "", asan ? "' " : "", test_bin("sbx"), home,
	   args, home, home);
	ck_assert_msg(
		STATUS("for i in $(seq 300); do grep -qs 'listening on' '%s/serve.log' && exit 0;"
		       " kill -0 $(cat '%s/serve.pid') 2>/dev/null || exit 1; sleep 0.1; done;"
		       " exit 1",
		       home, home) == 0,
		"sbx serve did not start:\n%s", read_file(fmt_cmd("%s/serve.log", home)));
	char *p = OUT(
		"sed -n 's|.*listening on https*://[^ ]*:\\([0-9][0-9]*\\)/.*|\\1|p' '%s/serve.log'",
		home);
	p[strcspn(p, "\n")] = '\0';
	return p;
}

char *sbxfs_refusal(const char *home, const char *opts)
{
	int st;
	char *out = capture(fmt_cmd("'%s' --home '%s' --user alice --thread t1 %s '%s' 2>&1",
				    test_bin("sbxfs"), home, opts, test_dir("refused-mnt")),
			    &st);

	ck_assert_int_eq(st, 1);
	return out;
}

int serve_stop_in(const char *home)
{
	char *pid = read_file(fmt_cmd("%s/serve.pid", home));

	if (!pid)
		return 0;
	pid[strcspn(pid, "\n")] = '\0';
	sh("kill -TERM %s 2>/dev/null", pid);
	return eventually(has_exited_pid, pid) ? 0 : -1;
}

void tool_env(void)
{
	setenv("LC_ALL", "C", 1);
	unsetenv("PYTHONDONTWRITEBYTECODE");
	setenv("TZ", "UTC", 1);
	setenv("HOME", test_dir("tool-home"), 1);
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
	setenv("GIT_AUTHOR_NAME", "Tools Test", 1);
	setenv("GIT_AUTHOR_EMAIL", "tools@example.com", 1);
	setenv("GIT_COMMITTER_NAME", "Tools Test", 1);
	setenv("GIT_COMMITTER_EMAIL", "tools@example.com", 1);
}

/* Builds tests/tools/NAME.c into the test's scratch directory. */
static const char *shim(const char *name)
{
	const char *so = fmt_cmd("%s/%s.so", test_dir("shim"), name);

	OK("cc -shared -fPIC -o '%s' tests/tools/%s.c -ldl", so, name);
	return so;
}

const char *killshim(void)
{
	return shim("killshim");
}

const char *slowshim(void)
{
	return shim("slowshim");
}

bool gone(const char *pattern)
{
	return STATUS("for i in $(seq %d); do pgrep -f '%s' >/dev/null || exit 0; sleep 0.1;"
		      " done; exit 1",
		      EVENTUALLY_S * 10, pattern) == 0;
}

char *running(const char *pattern)
{
	return OUT("for p in $(pgrep -f '%s'); do"
		   " ps -o pid=,ppid=,pgid=,sid=,stat=,wchan:24=,args= -p $p;"
		   " grep NSpid /proc/$p/status; readlink /proc/$p/ns/pid;"
		   " ps -o args= -p $(ps -o ppid= -p $p); done; true",
		   pattern);
}
