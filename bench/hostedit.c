/* hostedit.c - benchmark helper for bench/many-views: how long a change
 * made on the host, in a view's backing directory, takes to be seen
 * through the view.
 *
 *   hostedit new VIEWDIR HOSTDIR NAME [TIMEOUT_MS]
 *	stats VIEWDIR/NAME through the view first (absent: the kernel may
 *	now cache the absent name), creates HOSTDIR/NAME on the host, then
 *	polls stat(VIEWDIR/NAME) until it succeeds.
 *   hostedit rewrite VIEWFILE HOSTFILE [TIMEOUT_MS]
 *	reads VIEWFILE through the view (as cat does: the kernel may now
 *	cache its attributes and pages), rewrites HOSTFILE in place on the
 *	host (O_TRUNC, content of another size), then polls reading
 *	VIEWFILE whole (open, read, close) until it has the new content.
 *   hostedit replace VIEWFILE HOSTFILE [TIMEOUT_MS]
 *	the same, but the host's new version is written beside the file and
 *	renamed over it (as sed -i and many editors do).
 *
 * Polls every 1 ms. Prints the delay from the host's close() (or
 * rename()) returning to the first poll that saw the change, in
 * milliseconds ("12.345"), or "timeout" after TIMEOUT_MS (default 10000).
 * Exit status 1 with a message on stderr on an unexpected error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void nap(void)
{
	struct timespec ts = { 0, 1000000 };

	nanosleep(&ts, NULL);
}

static void die(const char *what, const char *path)
{
	fprintf(stderr, "hostedit: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static void put(const char *path, const char *data, int flags)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | flags, 0644);

	if (fd < 0)
		die("cannot open", path);
	if (write(fd, data, strlen(data)) != (ssize_t)strlen(data))
		die("cannot write", path);
	if (close(fd) < 0)
		die("cannot close", path);
}

/* Reads PATH whole into BUF (NUL-terminated); -1 on an error. */
static ssize_t slurp(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	ssize_t n, len = 0;

	buf[0] = '\0';
	if (fd < 0)
		return -1;
	while ((size_t)len < size - 1 && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += n;
	close(fd);
	buf[len] = '\0';
	return len;
}

int main(int argc, char **argv)
{
	static char buf[4096], want[4096 + 64], path[4096], tmp[4096];
	struct stat st;
	double t0, deadline;

	if (argc < 4 || (strcmp(argv[1], "new") == 0 && argc < 5)) {
		fprintf(stderr, "usage: hostedit new VIEWDIR HOSTDIR NAME [TIMEOUT_MS]\n"
				"       hostedit rewrite|replace VIEWFILE HOSTFILE [TIMEOUT_MS]\n");
		return 2;
	}
	if (strcmp(argv[1], "new") == 0) {
		double limit = argc > 5 ? atof(argv[5]) : 10000;
		snprintf(path, sizeof(path), "%s/%s", argv[2], argv[4]);
		if (stat(path, &st) == 0 || errno != ENOENT) {
			fprintf(stderr, "hostedit: %s: expected absent\n", path);
			return 1;
		}
		snprintf(tmp, sizeof(tmp), "%s/%s", argv[3], argv[4]);
		put(tmp, "made on the host\n", O_EXCL);
		t0 = now_ms();
		deadline = t0 + limit;
		while (stat(path, &st) < 0) {
			if (errno != ENOENT)
				die("cannot stat", path);
			if (now_ms() > deadline) {
				puts("timeout");
				return 0;
			}
			nap();
		}
	} else if (strcmp(argv[1], "rewrite") == 0 || strcmp(argv[1], "replace") == 0) {
		const char *view = argv[2], *host = argv[3];
		double limit = argc > 4 ? atof(argv[4]) : 10000;
		ssize_t len = slurp(view, buf, sizeof(buf));
		if (len < 0)
			die("cannot read", view);
		/* Another size than what the view read: a line more. */
		if ((size_t)len + 40 > sizeof(want)) {
			fprintf(stderr, "hostedit: %s: too long for the test\n", view);
			return 1;
		}
		snprintf(want, sizeof(want), "%srewritten on the host\n", buf);
		if (argv[1][2] == 'w') {
			put(host, want, 0);
		} else {
			snprintf(tmp, sizeof(tmp), "%s.new", host);
			put(tmp, want, 0);
			if (rename(tmp, host) < 0)
				die("cannot rename over", host);
		}
		t0 = now_ms();
		deadline = t0 + limit;
		for (;;) {
			if (slurp(view, buf, sizeof(buf)) < 0 && errno != ENOENT && errno != ESTALE)
				die("cannot read", view);
			if (strcmp(buf, want) == 0)
				break;
			if (now_ms() > deadline) {
				puts("timeout");
				return 0;
			}
			nap();
		}
	} else {
		fprintf(stderr, "hostedit: unknown mode %s\n", argv[1]);
		return 2;
	}
	printf("%.3f\n", now_ms() - t0);
	return 0;
}
