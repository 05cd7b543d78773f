/* retain.h - the retention of a thread's kept files (docs/changes.md,
 * "Retention"): what [undo] in the home's sbx.conf no longer keeps is
 * dropped when a run ends or is undone. Nothing here fails: what could
 * not be done is a warning (common/log.h), and the kept files stay. */
#ifndef SBX_RUN_RETAIN_H
#define SBX_RUN_RETAIN_H

struct store;

/* Drops the kept files of USER's THREAD that [undo] in HOME's sbx.conf
 * no longer keeps; each run dropped, and anything that failed, is logged
 * as "COMMAND: ..." (kept_retain(), run/kept.c, words its lines so). */
void run_retain(struct store *s, const char *home, const char *user, const char *thread,
		const char *command);

#endif
