/* randread.c - benchmark helper for bench/run-bench.
 *
 *   randread FILE COUNT [SEED]
 *
 * Opens FILE, reads COUNT 4 KiB blocks at random 4 KiB-aligned offsets
 * with pread(2) (a fixed xorshift sequence, so native and view runs read
 * the same blocks), closes it, and prints the elapsed wall time in
 * microseconds (open to close, CLOCK_MONOTONIC) on stdout. Exit status 1
 * with a message on stderr on any error or short read.
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

#define BLOCK 4096

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t xorshift64(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

int main(int argc, char **argv)
{
	static char buf[BLOCK] __attribute__((aligned(4096)));
	uint64_t seed, t0, t1, nblocks;
	unsigned long count;
	struct stat st;
	int fd;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: randread FILE COUNT [SEED]\n");
		return 2;
	}
	count = strtoul(argv[2], NULL, 10);
	seed = argc == 4 ? strtoull(argv[3], NULL, 10) : 1;
	seed = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
	if (!seed)
		seed = 1;

	t0 = now_us();
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "randread: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	nblocks = (uint64_t)st.st_size / BLOCK;
	if (!nblocks) {
		fprintf(stderr, "randread: %s: smaller than %d bytes\n", argv[1], BLOCK);
		return 1;
	}
	for (unsigned long i = 0; i < count; i++) {
		off_t off = (off_t)(xorshift64(&seed) % nblocks) * BLOCK;
		ssize_t n = pread(fd, buf, BLOCK, off);

		if (n != BLOCK) {
			fprintf(stderr, "randread: %s: pread at %jd: %s\n", argv[1], (intmax_t)off,
				n < 0 ? strerror(errno) : "short read");
			return 1;
		}
	}
	if (close(fd) < 0) {
		fprintf(stderr, "randread: %s: close: %s\n", argv[1], strerror(errno));
		return 1;
	}
	t1 = now_us();
	printf("%" PRIu64 "\n", t1 - t0);
	return 0;
}
