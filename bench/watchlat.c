/* watchlat.c - benchmark helper for bench/watch-bench.
 *
 *   watchlat SBX HOME USER THREAD SINCE DIR COUNT
 *
 * Starts `SBX --home HOME watch --user USER --thread THREAD --since SINCE
 * --format json` on a pipe, then COUNT times creates DIR/wNNNNN (DIR is
 * user-data/workspace of a mounted view, or below it), closes it, and
 * reads the watcher's lines until the event of that file comes. Prints
 * the delay from close() returning to the line read, in milliseconds:
 * "p50 P p95 P max P mean P" on stdout. Exit status 1 with a message on
 * stderr at the first error, or when an event takes more than 10 s.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static char buf[1 << 20];
static size_t len;

/* Reads lines from FD until one holds WANT; 0, or -1 (EOF, 10 s). */
static int wait_for(int fd, const char *want)
{
	double until = now_ms() + 10000;

	for (;;) {
		char *nl;
		while ((nl = memchr(buf, '\n', len))) {
			*nl = '\0';
			int found = strstr(buf, want) != NULL;
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len);
			if (found)
				return 0;
		}
		struct pollfd p = { fd, POLLIN, 0 };
		int left = (int)(until - now_ms());
		if (left <= 0 || poll(&p, 1, left) <= 0)
			return -1;
		ssize_t n = read(fd, buf + len, sizeof(buf) - len);
		if (n <= 0)
			return -1;
		len += (size_t)n;
	}
}

int main(int argc, char **argv)
{
	int p[2];

	if (argc != 8) {
		fprintf(stderr, "usage: watchlat SBX HOME USER THREAD SINCE DIR COUNT\n");
		return 2;
	}
	int count = atoi(argv[7]);
	double *lat = calloc((size_t)count, sizeof(*lat));
	if (!lat || count < 1 || pipe(p) < 0)
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		execl(argv[1], argv[1], "--home", argv[2], "watch", "--user", argv[3], "--thread",
		      argv[4], "--since", argv[5], "--format", "json", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	for (int i = 0; i < count; i++) {
		char path[4096], want[64];

		snprintf(path, sizeof(path), "%s/w%05d", argv[6], i);
		snprintf(want, sizeof(want), "/w%05d\",", i);
		int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0 || close(fd) < 0) {
			fprintf(stderr, "watchlat: %s: %s\n", path, strerror(errno));
			return 1;
		}
		double t0 = now_ms();
		if (wait_for(p[0], want) < 0) {
			fprintf(stderr, "watchlat: no event for %s within 10 s\n", path);
			kill(pid, SIGTERM);
			return 1;
		}
		lat[i] = now_ms() - t0;
	}
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	double sum = 0;
	for (int i = 0; i < count; i++)
		sum += lat[i];
	qsort(lat, (size_t)count, sizeof(*lat), cmp);
	printf("p50 %.2f p95 %.2f max %.2f mean %.2f\n", lat[(count - 1) / 2],
	       lat[(int)((count - 1) * 0.95)], lat[count - 1], sum / count);
	return 0;
}
