/* editsave.c - edit-and-save workloads for bench/run-bench.
 *
 *   editsave prep    DIR COUNT          create COUNT files of 4 KiB, DIR/eNNNNN
 *   editsave rewrite DIR COUNT          rewrite each: open(O_TRUNC), write 4 KiB,
 *                                       close
 *   editsave patch   FILE               write 4 KiB in the middle of FILE
 *                                       (open O_RDWR, pwrite, close)
 *   editsave append  FILE COUNT         COUNT times: open(O_APPEND|O_CREAT),
 *                                       write one line, close
 *
 * Prints the elapsed wall time in microseconds (CLOCK_MONOTONIC, without
 * process start-up); exit status 1 with a message at the first error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int fail(const char *what, const char *path)
{
	fprintf(stderr, "editsave: %s %s: %s\n", what, path, strerror(errno));
	return 1;
}

/* open, write LEN bytes of BUF at OFF (-1: at the end), close. */
static int save(const char *path, int flags, const char *buf, size_t len, off_t off)
{
	int fd = open(path, flags, 0644);

	if (fd < 0)
		return fail("open", path);
	if ((off < 0 ? write(fd, buf, len) : pwrite(fd, buf, len, off)) != (ssize_t)len)
		return fail("write", path);
	if (close(fd) < 0)
		return fail("close", path);
	return 0;
}

int main(int argc, char **argv)
{
	static char block[4096];
	char path[4096];
	unsigned long count = argc > 3 ? strtoul(argv[3], NULL, 10) : 0;
	uint64_t t0;
	int r = 0;

	if (argc < 3) {
		fprintf(stderr,
			"usage: editsave prep|rewrite DIR COUNT | patch FILE | append FILE COUNT\n");
		return 2;
	}
	memset(block, 'e', sizeof(block));
	t0 = now_us();
	if (!strcmp(argv[1], "prep") || !strcmp(argv[1], "rewrite")) {
		int flags = O_WRONLY | O_TRUNC | (argv[1][0] == 'p' ? O_CREAT | O_EXCL : 0);

		for (unsigned long i = 0; i < count && !r; i++) {
			snprintf(path, sizeof(path), "%s/e%05lu", argv[2], i);
			block[0] = (char)('a' + i % 26);
			r = save(path, flags, block, sizeof(block), -1);
		}
	} else if (!strcmp(argv[1], "patch")) {
		struct stat st;

		if (stat(argv[2], &st) < 0)
			return fail("stat", argv[2]);
		r = save(argv[2], O_RDWR, block, sizeof(block), st.st_size / 2);
	} else if (!strcmp(argv[1], "append")) {
		for (unsigned long i = 0; i < count && !r; i++)
			r = save(argv[2], O_WRONLY | O_APPEND | O_CREAT, "a line of the log\n", 18,
				 -1);
	} else {
		fprintf(stderr, "editsave: unknown mode '%s'\n", argv[1]);
		return 2;
	}
	if (r)
		return r;
	printf("%" PRIu64 "\n", now_us() - t0);
	return 0;
}
