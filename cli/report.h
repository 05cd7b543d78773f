/* report.h - change summaries as JSON (the reference payload, what is
 * ours under "sbx" keys) and as text for people (a git-style stat, then
 * the diffs; colored on a terminal). See docs/changes.md. */
#ifndef SBX_REPORT_H
#define SBX_REPORT_H

#include "summary.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* {"version":1, "summary":{...}, "files":[...], "limits":{...}, "sbx":{"run",
 * "files_total", "renamed", "complete", "end_scan_limit"}}, each file with
 * its own "sbx" (docs/changes.md). END_SCAN_LIMIT: the second scan's
 * limit. NULL without memory. */
json_t *report_summary(const struct summary *s, int64_t run, size_t end_scan_limit);

/* The run's delivery receipt: produced outputs (created or modified
 * regular files under outputs) and a verdict, or verification_skipped
 * when the pre-run snapshot was truncated. */
json_t *report_receipt(const struct summary *s, int64_t run, bool pre_truncated);

/* Prints a summary payload (as from report_summary) for people. */
void report_print(FILE *out, const json_t *payload, const char *who, bool color);
/* Prints DIFF (diff_unified()'s text for PATH, LEN bytes) for people: names quoted,
 * control characters made visible, colored like git's if COLOR. */
void report_print_diff(FILE *out, const char *diff, size_t len, const char *path,
		       bool color);

/* Writes it as one self-contained HTML page (no scripts, no network):
 * summary badges, files grouped by directory, the diffs, and on every
 * metadata-only entry an explanation of why. */
void report_html(FILE *out, const json_t *payload, const char *who);

#endif
