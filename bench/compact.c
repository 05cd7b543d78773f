/* compact.c - journal_churn() (store/compact.c) over windows of journal
 * rows as a burst of small files leaves them: each file created,
 * modified, and every other one deleted again, under one directory
 * tree of the view's paths. Prints, per window size, the milliseconds
 * of the best of 5 calls and the rows dropped.
 *
 *   cc -O2 -D_GNU_SOURCE -I. -o compact bench/compact.c store/compact.c && ./compact
 */
#include "store/compact.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double ms_since(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) * 1e3 + (double)(b.tv_nsec - a->tv_nsec) / 1e6;
}

int main(void)
{
	static const char *const ops[] = { "create", "modify", "delete" };
	static const size_t sizes[] = { 4096, 16384, 65536 };

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s];
		struct compact_row *rows = calloc(n, sizeof(*rows));
		double best = -1;
		int dropped = 0;

		if (!rows)
			return 1;
		for (size_t i = 0; i < n; i++) {
			size_t file = i / 3;
			/* Even files are deleted; odd ones are modified twice. */
			size_t step = i % 3 == 2 && file % 2 ? 1 : i % 3;
			char *path;

			if (asprintf(&path, "/mnt/user-data/workspace/src/module%02zu/file%06zu.c",
				     file % 50, file) < 0)
				return 1;
			rows[i] = (struct compact_row){ .id = (int64_t)i + 1,
							.at_ns = (int64_t)i,
							.op = (char *)ops[step],
							.path = path };
		}
		for (int rep = 0; rep < 5; rep++) {
			struct timespec a;

			for (size_t i = 0; i < n; i++)
				rows[i].drop = false;
			clock_gettime(CLOCK_MONOTONIC, &a);
			dropped = journal_churn(rows, n, NULL, 0);
			double ms = ms_since(&a);
			if (best < 0 || ms < best)
				best = ms;
		}
		printf("journal compaction, a window of %6zu rows: %9.2f ms (%d dropped)\n", n,
		       best, dropped);
		for (size_t i = 0; i < n; i++)
			free(rows[i].path);
		free(rows);
	}
	return 0;
}
