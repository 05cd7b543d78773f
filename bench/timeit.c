/* timeit.c - benchmark helper for bench/anchor-bench.
 *
 *   timeit [-C DIR] CMD [ARG...]
 *
 * Runs CMD (in DIR if given) with its standard output on /dev/null and
 * prints the microseconds from just before the fork to the child's exit,
 * on CLOCK_MONOTONIC, on stdout. The clock is read here rather than by
 * the script because bash's clock ($EPOCHREALTIME) is the wall clock,
 * which NTP may step or slew during a run. Exit status: CMD's (nothing
 * printed) if it fails, 128 + the signal if it is killed, 127 if it
 * cannot run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	int argi = 1, status, null_fd;
	uint64_t t0, t1;
	pid_t pid;

	if (argc > 2 && !strcmp(argv[1], "-C")) {
		dir = argv[2];
		argi = 3;
	}
	if (argi >= argc) {
		fprintf(stderr, "usage: timeit [-C DIR] CMD [ARG...]\n");
		return 2;
	}
	null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null_fd < 0) {
		fprintf(stderr, "timeit: /dev/null: %s\n", strerror(errno));
		return 127;
	}

	t0 = now_us();
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "timeit: fork: %s\n", strerror(errno));
		return 127;
	}
	if (pid == 0) {
		if (dir && chdir(dir) < 0) {
			fprintf(stderr, "timeit: chdir %s: %s\n", dir, strerror(errno));
			_exit(127);
		}
		if (dup2(null_fd, STDOUT_FILENO) < 0)
			_exit(127);
		execvp(argv[argi], argv + argi);
		fprintf(stderr, "timeit: %s: %s\n", argv[argi], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "timeit: waitpid: %s\n", strerror(errno));
			return 127;
		}
	}
	t1 = now_us();

	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	if (WEXITSTATUS(status) != 0)
		return WEXITSTATUS(status);
	printf("%" PRIu64 "\n", t1 - t0);
	return 0;
}
