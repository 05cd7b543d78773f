/* report.h - change summaries and receipts for people: text (a
 * git-style stat, then the diffs; colored on a terminal) and HTML (the
 * review page of run/page.h), from the documents run/documents.h makes.
 * See docs/changes.md. */
#ifndef SBX_REPORT_H
#define SBX_REPORT_H

#include "args.h"
#include "store/store.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Prints a receipt for people: its stage, the produced outputs (those
 * presented marked), the presented paths by tool. */
void report_receipt_print(FILE *out, const json_t *receipt, long long run, const char *who);

/* Prints a summary payload (as from report_summary) for people. */
void report_print(FILE *out, const json_t *payload, const char *who, bool color);
/* Prints DIFF (diff_unified()'s text for PATH, LEN bytes) for people: names quoted,
 * control characters made visible, colored like git's if COLOR. */
void report_print_diff(FILE *out, const char *diff, size_t len, const char *path, bool color);

/* Writes run R's summary PAYLOAD as the review page (run/page.h): R's
 * metadata (HOME, where it is kept, NULL if unknown) and delivery
 * receipt at the top, every file it changed named in the index (those
 * the summary lists and those recorded past its list), the diffs.
 * Returns 0, or -errno (-ENOMEM, -EIO). */
int report_html(FILE *out, const json_t *payload, const struct store_run *r, const char *home);

/* Prints run R's summary SUMMARY (NULL if it has none) on stdout as
 * FORMAT: JSON as run/documents.h's run_document(), HTML as
 * report_html() (HOME for it); 0, or 1 without memory. */
int report_run(const struct store_run *r, json_t *summary, enum format format, const char *home);
/* The same for a summary as recorded (JSON text, NULL if there is none);
 * 1 after an error (said). */
int report_run_recorded(const struct store_run *r, const char *summary, enum format format,
			const char *home);

/* The time NS (CLOCK_REALTIME) as ISO 8601 UTC, to the second. */
void report_time(int64_t ns, char *buf, size_t size);
/* A duration of NS nanoseconds for people: "4.2 s", "3 min 20 s",
 * "2 h 5 min", "3 d 4 h". */
void report_duration(int64_t ns, char *buf, size_t size);

#endif
