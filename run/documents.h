/* documents.h - a run's documents: its change summary as JSON (the
 * reference payload, what is ours under "sbx" keys), what sbx run end
 * --format json prints and the broker's run_end returns of it, and its
 * delivery receipt. See docs/changes.md. Printing them for people is
 * the command line's (cli/report.h). */
#ifndef SBX_RUN_DOCUMENTS_H
#define SBX_RUN_DOCUMENTS_H

#include "store/store.h"
#include "store/summary.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* {"version":1, "summary":{...}, "files":[...], "limits":{...}, "sbx":{"run",
 * "files_total", "renamed", "complete", "end_scan_limit"}}, each file with
 * its own "sbx" (docs/changes.md). END_SCAN_LIMIT: the second scan's
 * limit. Where more files changed than are listed, "sbx" also has
 * RUN_UNLISTED: the first RUN_UNLISTED_MAX of the others, each [path,
 * status, additions, deletions, command or null], recorded so that the
 * HTML page names them; run_document() leaves it out. NULL without
 * memory. */
#define RUN_UNLISTED "unlisted"
#define RUN_UNLISTED_MAX 10000
json_t *report_summary(const struct summary *s, int64_t run, size_t end_scan_limit);

/* What sbx run end --format json prints of run R whose summary is
 * SUMMARY (NULL if it has none): SUMMARY marked "available" (and without
 * RUN_UNLISTED), or an empty one marked unavailable. A new reference,
 * NULL without memory. */
json_t *run_document(const struct store_run *r, json_t *summary);

/* The run's delivery receipt, the reference's "run.delivery" content
 * (docs/changes.md): report_receipt_new() makes its journal {"presented":
 * 0, "paths": [], "by_tool": {}}, report_receipt_add() (a callback of
 * store_presented_each(), ARG the receipt) adds each presentation in
 * order, report_receipt_verify() completes it from the run's summary:
 * with changed outputs, "verification", "produced_paths",
 * "presented_paths", "matched_paths", "stage" and "satisfied"; when the
 * pre-run snapshot was truncated, "verification_skipped" instead.
 * -ENOMEM (NULL) without memory. */
json_t *report_receipt_new(void);
int report_receipt_add(void *arg, const char *tool, const char *path);
int report_receipt_verify(json_t *receipt, const struct summary *s, bool pre_truncated);
/* True if the receipt says outputs were produced and none was presented
 * (stage not_started or mismatched): the reference's run error. */
bool report_receipt_incomplete(const json_t *receipt);
/* Whether the array of paths PATHS (a receipt's) holds PATH. */
bool report_has_path(const json_t *paths, const char *path);

#endif
