/* progress.c - a long scan's progress on a terminal (progress.h). */
#include "progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void scan_progress_init(struct scan_progress *p)
{
	p->tty = isatty(STDERR_FILENO);
	p->last_ms = now_ms();
}

void scan_progress_show(struct scan_progress *p, size_t files)
{
	long now = now_ms();

	if (!p->tty || now - p->last_ms < 100)
		return;
	p->last_ms = now;
	fprintf(stderr, "\rscanning: %zu files", files);
}

void scan_progress_done(struct scan_progress *p)
{
	if (p->tty)
		fputs("\r\033[K", stderr);
}
