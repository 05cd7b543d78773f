/* smallfiles.c - benchmark helper for bench/run-bench.
 *
 *   smallfiles create DIR COUNT [SIZE]   mkdir the subdirectories, then
 *                                        create COUNT new files of SIZE bytes
 *                                        (default 1024): open(O_CREAT|O_EXCL),
 *                                        write, close
 *   smallfiles stat   DIR COUNT          lstat(2) each of the COUNT files
 *   smallfiles delete DIR COUNT          unlink each file, rmdir the
 *                                        subdirectories
 *
 * DIR must exist. Files are DIR/dNN/fNNNNN, 1000 per subdirectory, named
 * by paths relative to DIR (the helper chdirs into DIR first), as a tool
 * working in a project directory would. Prints the elapsed wall time in
 * microseconds (CLOCK_MONOTONIC, excluding process start-up) on stdout;
 * exit status 1 with a message on stderr at the first error.
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

#define PER_DIR 1000

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int fail(const char *what, const char *path)
{
	fprintf(stderr, "smallfiles: %s %s: %s\n", what, path, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	unsigned long count, ndirs, size = 1024;
	char path[64], *data;
	uint64_t t0;

	if (argc < 4 || argc > 5) {
		fprintf(stderr, "usage: smallfiles create|stat|delete DIR COUNT [SIZE]\n");
		return 2;
	}
	count = strtoul(argv[3], NULL, 10);
	if (argc == 5)
		size = strtoul(argv[4], NULL, 10);
	ndirs = (count + PER_DIR - 1) / PER_DIR;
	data = malloc(size ? size : 1);
	if (!data)
		return 1;
	memset(data, 'x', size);

	t0 = now_us();
	if (chdir(argv[2]) < 0)
		return fail("chdir", argv[2]);

	if (!strcmp(argv[1], "create")) {
		for (unsigned long d = 0; d < ndirs; d++) {
			snprintf(path, sizeof(path), "d%02lu", d);
			if (mkdir(path, 0755) < 0)
				return fail("mkdir", path);
		}
		for (unsigned long i = 0; i < count; i++) {
			snprintf(path, sizeof(path), "d%02lu/f%05lu", i / PER_DIR, i);
			int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
			if (fd < 0)
				return fail("create", path);
			if (size && write(fd, data, size) != (ssize_t)size)
				return fail("write", path);
			if (close(fd) < 0)
				return fail("close", path);
		}
	} else if (!strcmp(argv[1], "stat")) {
		struct stat st;

		for (unsigned long i = 0; i < count; i++) {
			snprintf(path, sizeof(path), "d%02lu/f%05lu", i / PER_DIR, i);
			if (lstat(path, &st) < 0)
				return fail("stat", path);
		}
	} else if (!strcmp(argv[1], "delete")) {
		for (unsigned long i = 0; i < count; i++) {
			snprintf(path, sizeof(path), "d%02lu/f%05lu", i / PER_DIR, i);
			if (unlink(path) < 0)
				return fail("unlink", path);
		}
		for (unsigned long d = 0; d < ndirs; d++) {
			snprintf(path, sizeof(path), "d%02lu", d);
			if (rmdir(path) < 0)
				return fail("rmdir", path);
		}
	} else {
		fprintf(stderr, "smallfiles: unknown mode '%s'\n", argv[1]);
		return 2;
	}
	printf("%" PRIu64 "\n", now_us() - t0);
	free(data);
	return 0;
}
