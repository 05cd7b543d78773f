/* progress.h - "scanning: N files" on standard error while a long scan
 * runs, if it is a terminal; at most ten updates a second. */
#ifndef SBX_PROGRESS_H
#define SBX_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>

struct scan_progress {
	bool tty;
	long last_ms;
};

void scan_progress_init(struct scan_progress *p);
void scan_progress_show(struct scan_progress *p, size_t files);
/* Clears the line again. */
void scan_progress_done(struct scan_progress *p);

#endif
