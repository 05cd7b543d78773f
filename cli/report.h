/* report.h - change summaries as JSON (the reference payload shape, plus
 * "run" and "files_total") and as text for people (a git-style stat, then
 * the diffs; colored on a terminal). See docs/changes.md. */
#ifndef SBX_REPORT_H
#define SBX_REPORT_H

#include "summary.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* {"version":1, "run", "summary":{...}, "files":[...], "files_total",
 * "limits":{...}}. NULL without memory. */
json_t *report_summary(const struct summary *s, int64_t run);

/* The run's delivery receipt: produced outputs (created or modified
 * regular files under outputs) and a verdict, or verification_skipped
 * when the pre-run snapshot was truncated. */
json_t *report_receipt(const struct summary *s, int64_t run, bool pre_truncated);

/* Prints a summary payload (as from report_summary) for people. */
void report_print(FILE *out, const json_t *payload, const char *who, bool color);
/* Prints DIFF (diff_unified()'s text for PATH) for people: names quoted,
 * control characters made visible, colored like git's if COLOR. */
void report_print_diff(FILE *out, const char *diff, const char *path, bool color);

/* Writes it as one self-contained HTML page (no scripts, no network):
 * summary badges, files grouped by directory, the diffs, and on every
 * metadata-only entry an explanation of why. */
void report_html(FILE *out, const json_t *payload, const char *who);

#endif
