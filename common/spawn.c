/* spawn.c - see spawn.h. */
#include "spawn.h"
#include "cleanup.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs ARGV with ERR (>= 0) as its stderr, and waits. */
static int run(const char *const argv[], int err)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		sigset_t none; /* blocked signals survive exec: not ours to pass on */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (err >= 0 && dup2(err, STDERR_FILENO) < 0)
			_exit(127);
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "sbx: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int spawn_wait(const char *const argv[])
{
	return run(argv, -1);
}

/* The last line of TEXT, without a leading "WORD: " (the program's
 * name), into WHY. */
static void last_line(char *text, char *why, size_t size)
{
	size_t n = strlen(text);

	while (n && text[n - 1] == '\n')
		text[--n] = '\0';
	char *line = strrchr(text, '\n');
	line = line ? line + 1 : text;
	char *colon = strstr(line, ": ");
	if (colon && !memchr(line, ' ', (size_t)(colon - line)))
		line = colon + 2;
	snprintf(why, size, "%s", line);
}

int spawn_wait_why(const char *const argv[], char *why, size_t size)
{
	/* A file, not a pipe: a daemon the program leaves behind may keep
	 * its stderr open, and a long message never blocks the program. */
	_cleanup_(closep) int err = memfd_create("sbx-stderr", MFD_CLOEXEC);
	char text[4096];
	ssize_t n;
	off_t at = 0;

	why[0] = '\0';
	if (err < 0)
		return spawn_wait(argv);
	int r = run(argv, err);
	while ((n = pread(err, text, sizeof(text), at)) > 0) {
		if (write(STDERR_FILENO, text, (size_t)n) != n)
			break; /* the log is best effort; WHY still says it */
		at += n;
	}
	at = lseek(err, 0, SEEK_END);
	n = at > 0 ? pread(err, text, sizeof(text) - 1,
			   at > (off_t)sizeof(text) - 1 ? at - (off_t)sizeof(text) + 1 : 0)
		   : 0;
	if (n > 0) {
		text[n] = '\0';
		last_line(text, why, size);
	}
	return r;
}

void sibling_program(const char *name, char *buf, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		self[n] = '\0';
		snprintf(buf, size, "%s/%s", dirname(self), name);
		if (access(buf, X_OK) == 0)
			return;
	}
	snprintf(buf, size, "%s", name);
}
