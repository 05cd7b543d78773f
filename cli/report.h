/* report.h - change summaries as JSON (the reference payload, what is
 * ours under "sbx" keys) and as text for people (a git-style stat, then
 * the diffs; colored on a terminal). See docs/changes.md. */
#ifndef SBX_REPORT_H
#define SBX_REPORT_H

#include "store/summary.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* {"version":1, "summary":{...}, "files":[...], "limits":{...}, "sbx":{"run",
 * "files_total", "renamed", "complete", "end_scan_limit"}}, each file with
 * its own "sbx" (docs/changes.md). END_SCAN_LIMIT: the second scan's
 * limit. NULL without memory. */
json_t *report_summary(const struct summary *s, int64_t run, size_t end_scan_limit);

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
/* Prints a receipt for people: its stage, the produced outputs (those
 * presented marked), the presented paths by tool. */
void report_receipt_print(FILE *out, const json_t *receipt, long long run, const char *who);

/* Prints a summary payload (as from report_summary) for people. */
void report_print(FILE *out, const json_t *payload, const char *who, bool color);
/* Prints DIFF (diff_unified()'s text for PATH, LEN bytes) for people: names quoted,
 * control characters made visible, colored like git's if COLOR. */
void report_print_diff(FILE *out, const char *diff, size_t len, const char *path, bool color);

/* Writes it as one self-contained HTML page (no scripts, no network):
 * summary badges, files grouped by directory, the diffs, and on every
 * metadata-only entry an explanation of why. */
void report_html(FILE *out, const json_t *payload, const char *who);

/* The time NS (CLOCK_REALTIME) as ISO 8601 UTC, to the second. */
void report_time(int64_t ns, char *buf, size_t size);

#endif
