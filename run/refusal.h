/* refusal.h - what a write the read-before-write gate refused missed:
 * the diff between the version of the file the thread read and the one
 * the gate found (docs/security-model.md, "Refusals").
 *
 * The view keeps the texts of what a thread reads, under the change
 * summaries' rules (up to 256 KiB, not binary, nothing sensitive by name
 * or content), and a refusal keeps the text of the version it found:
 * the diff is there when both are. sbx audit --diff prints it, and the
 * broker's file tools tell it with a refused write.
 */
#ifndef SBX_RUN_REFUSAL_H
#define SBX_RUN_REFUSAL_H

#include "store/store.h"

/* The unified diff of the version audit row A's thread read to the one
 * it found (malloc'd; "" when only metadata changed); else NULL, and
 * *WHY says why there is none. */
char *refusal_diff(struct store *s, const struct store_audit *a, const char **why);

/* What changed in virtual PATH of USER's THREAD since the thread read
 * it, as the latest refusal of it in S tells it: a line on each version
 * and the diff, in *TEXT (malloc'd; NULL if S has no refusal of PATH).
 * 0, or -errno. */
int refusal_explain(struct store *s, const char *user, const char *thread, const char *path,
		    char **text);

#endif
