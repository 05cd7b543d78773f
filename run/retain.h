/* retain.h - the retention of a thread's pre-images (docs/changes.md,
 * "Retention"): what [undo] in the home's sbx.conf no longer keeps is
 * dropped when a run ends or is undone. Nothing here fails: what could
 * not be done is a warning (common/log.h), and the pre-images stay. */
#ifndef SBX_RUN_RETAIN_H
#define SBX_RUN_RETAIN_H

struct store;

/* Drops the pre-images of USER's THREAD that [undo] in HOME's sbx.conf
 * no longer keeps; each run dropped, and anything that failed, is said
 * as "COMMAND: ..." (the undo engine's kept_retain() words its lines
 * so until it moves into run/). */
void run_retain(struct store *s, const char *home, const char *user, const char *thread,
		const char *command);

#endif
