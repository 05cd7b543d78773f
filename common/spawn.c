/* spawn.c - see spawn.h. */
#include "spawn.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int spawn_wait(const char *const argv[])
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		sigset_t none; /* blocked signals survive exec: not ours to pass on */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "sbx: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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
