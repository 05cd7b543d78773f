/* report.c - see report.h. */
#include "report.h"
#include "common/hash.h"
#include "common/quote.h"
#include "common/cleanup.h"
#include "run/documents.h"
#include "run/page.h"
#include "store/snapshot.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The receipt R's verdict in words, after "delivery ". */
static void receipt_stage(FILE *out, const json_t *r)
{
	const json_t *produced = json_object_get(r, "produced_paths");
	const char *stage = json_string_value(json_object_get(r, "stage"));
	size_t np = json_array_size(produced);

	if (json_object_get(r, "verification_skipped"))
		fputs("not verified: the pre-run snapshot was truncated"
		      " (truncated_pre_run_snapshot), so outputs it did not see cannot"
		      " be told from new ones",
		      out);
	else if (!stage)
		fputs("nothing to verify: no output created or modified", out);
	else if (!strcmp(stage, "presented"))
		fprintf(out, "presented: %zu of %zu produced output%s presented",
			json_array_size(json_object_get(r, "matched_paths")), np,
			np == 1 ? "" : "s");
	else
		fprintf(out, "%s: %zu produced output%s, %s",
			!strcmp(stage, "mismatched") ? "mismatched" : "not started", np,
			np == 1 ? "" : "s",
			!strcmp(stage, "mismatched") ? "none of them presented by present_files"
						     : "nothing presented");
}

void report_receipt_print(FILE *out, const json_t *r, long long run, const char *who)
{
	const json_t *produced = json_object_get(r, "produced_paths");
	const json_t *matched = json_object_get(r, "matched_paths");
	const json_t *paths = json_object_get(r, "paths"), *by_tool = json_object_get(r, "by_tool");
	size_t i;
	const json_t *v, *tp;
	const char *tool;
	char name[QUOTE_MAX];

	fprintf(out, "run %lld of %s: ", run, who);
	if (!json_object_get(r, "verification_skipped") && !json_object_get(r, "stage"))
		fputs("no output created or modified: nothing to verify", out);
	else {
		fputs("delivery ", out);
		receipt_stage(out, r);
	}
	fputc('\n', out);
	json_array_foreach (produced, i, v)
		fprintf(out, "  produced   %s%s\n",
			quote_name(json_string_value(v), name, sizeof(name)),
			report_has_path(matched, json_string_value(v)) ? "  (presented)" : "");
	json_array_foreach (paths, i, v) {
		fprintf(out, "  presented  %s  (by",
			quote_name(json_string_value(v), name, sizeof(name)));
		const char *sep = " ";
		json_object_foreach ((json_t *)by_tool, tool, tp)
			if (report_has_path(tp, json_string_value(v))) {
				fprintf(out, "%s%s", sep, tool);
				sep = ", ";
			}
		fputs(")\n", out);
	}
}

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

static long long num(const json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

static const json_t *ours(const json_t *o)
{
	return json_object_get(o, "sbx");
}

/* A listed file as people see it: the two halves of a rename are one
 * entry "renamed", with the diff from the old content to the new. */
struct entry {
	const char *path, *status, *from, *why;
	bool replaced;	    /* renamed over what the path held when the run began */
	const json_t *diff; /* the diff's JSON string */
	long long additions, deletions;
	const json_t *by;
};

/* What follows the old name of a rename that replaced a file. */
#define REPLACED(e) ((e).replaced ? ", replacing what was there" : "")

static bool is_listed(const json_t *files, const char *path)
{
	size_t i;
	const json_t *f;

	json_array_foreach (files, i, f)
		if (!strcmp(str(f, "path"), path))
			return true;
	return false;
}

/* Describes F of FILES; false if it is the old half of a rename whose
 * new half is listed (shown there). */
static bool entry_of(const json_t *files, const json_t *f, struct entry *e)
{
	const json_t *x = ours(f), *d = json_object_get(x, "rename");
	const json_t *src = d ? d : f;

	if (*str(x, "renamed_to") && is_listed(files, str(x, "renamed_to")))
		return false;
	*e = (struct entry){ .path = str(f, "path"),
			     .status = str(f, "status"),
			     .from = str(x, "renamed_from"),
			     .replaced = *str(x, "renamed_from") &&
					 json_is_integer(json_object_get(f, "size_before")),
			     .why = str(src, "diff_unavailable_reason"),
			     .diff = json_object_get(src, "diff"),
			     .additions = num(src, "additions"),
			     .deletions = num(src, "deletions"),
			     .by = json_object_get(x, "changed_by") };
	if (json_is_true(json_object_get(d ? d : x, "content_unavailable")))
		e->why = "content_unavailable";
	if (d || *str(x, "renamed_to"))
		e->status = "renamed";
	return true;
}

/* The counts people read: a rename once, not as a deletion and a creation
 * or modification (nor as a creation where its old path has a file
 * again: that file is counted as itself). */
struct counts {
	long long files, created, modified, deleted, renamed, symlinks;
};

static struct counts counts_of(const json_t *p)
{
	const json_t *sum = json_object_get(p, "summary");
	long long renamed = num(ours(p), "renamed");
	long long joined = renamed - num(ours(p), "renamed_replaced"); /* two entries as one */
	long long over = num(ours(p), "renamed_modified");
	long long links = num(ours(p), "renamed_symlink_created");

	return (struct counts){ num(ours(p), "files_total") - joined,
				num(sum, "created") - (renamed - over - links),
				num(sum, "modified") - over,
				num(sum, "deleted") - joined,
				renamed,
				num(sum, "symlink_created") - links };
}

/* One line of a diff, colored like git's. */
static void print_diff_line(FILE *out, const char *line, size_t len, bool color)
{
	const char *on = !color		  ? ""
			 : line[0] == '+' ? "\033[32m"
			 : line[0] == '-' ? "\033[31m"
			 : line[0] == '@' ? "\033[36m"
					  : "";
	bool header = len >= 3 && (!strncmp(line, "---", 3) || !strncmp(line, "+++", 3));

	if (color && header)
		on = "\033[1m";
	fputs(on, out);
	fput_visible(out, line, len); /* the diff's bytes never drive the terminal */
	fprintf(out, "%s\n", *on ? "\033[0m" : "");
}

/* A diff's two header lines, "--- aPATH" and "+++ bPATH", printed with
 * the names quoted as git does (a newline in PATH would split them).
 * Returns where the hunks start; D itself if it has no such header. */
static const char *print_diff_header(FILE *out, const char *d, const char *path, bool color)
{
	size_t n = strlen(path);
	char name[QUOTE_MAX], side[PATH_MAX + 2];

	if (strncmp(d, "--- a", 5) || strncmp(d + 5, path, n) || strncmp(d + 5 + n, "\n+++ b", 6) ||
	    strncmp(d + 11 + n, path, n))
		return d;
	for (int b = 0; b < 2; b++) {
		snprintf(side, sizeof(side), "%c%s", "ab"[b], path);
		fprintf(out, "%s%s %s%s\n", color ? "\033[1m" : "", b ? "+++" : "---",
			quote_name(side, name, sizeof(name)), color ? "\033[0m" : "");
	}
	d += 11 + 2 * n;
	return *d == '\n' ? d + 1 : d;
}

void report_print(FILE *out, const json_t *p, const char *who, bool color)
{
	const json_t *sum = json_object_get(p, "summary");
	const json_t *files = json_object_get(p, "files"), *f;
	struct counts n = counts_of(p);
	struct entry e;
	size_t i, width = 0;

	fprintf(out,
		"run %lld of %s: %lld file%s changed (%lld created, %lld modified, %lld deleted, %lld renamed, %lld symlinks), %lld insertion%s(+), %lld deletion%s(-)%s\n",
		num(ours(p), "run"), who, n.files, n.files == 1 ? "" : "s", n.created, n.modified,
		n.deleted, n.renamed, n.symlinks, num(sum, "additions"),
		num(sum, "additions") == 1 ? "" : "s", num(sum, "deletions"),
		num(sum, "deletions") == 1 ? "" : "s",
		!json_is_true(json_object_get(sum, "truncated")) ? ""
		: json_is_true(json_object_get(ours(p), "complete"))
			? "\n  (truncated: not every file or diff is shown; every change is counted)"
			: "\n  (truncated: a scan was cut short, so changes may be missing; see docs/changes.md)");
	char name[QUOTE_MAX]; /* each name quoted in turn */
	json_array_foreach (files, i, f) {
		size_t len = strlen(quote_name(str(f, "path"), name, sizeof(name)));
		if (len > width)
			width = len;
	}
	json_array_foreach (files, i, f) {
		if (!entry_of(files, f, &e))
			continue;
		fprintf(out, " %-*s | %-15s ", (int)width, quote_name(e.path, name, sizeof(name)),
			e.status);
		if (*e.why && strcmp(e.why, "truncated")) {
			fprintf(out, "%s: metadata only", e.why);
		} else {
			fprintf(out, "%lld ", e.additions + e.deletions);
			for (long long k = 0; k < e.additions && k < 40; k++)
				fputs(color ? "\033[32m+\033[0m" : "+", out);
			for (long long k = 0; k < e.deletions && k < 40; k++)
				fputs(color ? "\033[31m-\033[0m" : "-", out);
			fputs(*e.why ? " (diff over the budget)" : "", out);
		}
		if (json_is_object(e.by))
			fprintf(out, "  (by %s)",
				quote_name(str(e.by, "command"), name, sizeof(name)));
		fputc('\n', out);
		if (*e.from)
			fprintf(out, " %-*s   (renamed from %s%s)\n", (int)width, "",
				quote_name(e.from, name, sizeof(name)), REPLACED(e));
		else if (!strcmp(e.status, "renamed"))
			fprintf(out, " %-*s   (renamed to %s)\n", (int)width, "",
				quote_name(str(ours(f), "renamed_to"), name, sizeof(name)));
	}
	if ((long long)json_array_size(files) < num(ours(p), "files_total"))
		fprintf(out, " ... and %lld more\n",
			num(ours(p), "files_total") - (long long)json_array_size(files));
	json_array_foreach (files, i, f) {
		if (!entry_of(files, f, &e) || !json_string_length(e.diff))
			continue;
		fputc('\n', out);
		report_print_diff(out, json_string_value(e.diff), json_string_length(e.diff),
				  e.path, color);
	}
}

void report_print_diff(FILE *out, const char *diff, size_t len, const char *path, bool color)
{
	const char *end = diff + len;

	/* By length: a line may hold a NUL character. */
	for (const char *l = print_diff_header(out, diff, path, color), *e; l < end; l = e + 1) {
		e = memchr(l, '\n', (size_t)(end - l));
		if (!e)
			e = end;
		print_diff_line(out, l, (size_t)(e - l), color);
	}
}

/* ---- HTML: the review page (run/page.h) of a run ---------------------- */

static enum page_why why_of(const struct entry *e)
{
	static const struct {
		const char *reason;
		enum page_why why;
	} map[] = {
		{ "symlink", PAGE_WHY_SYMLINK },
		{ "binary", PAGE_WHY_BINARY },
		{ "large", PAGE_WHY_LARGE },
		{ "truncated", PAGE_WHY_BUDGET },
		{ "content_unavailable", PAGE_WHY_UNREADABLE },
	};

	if (!*e->why)
		return PAGE_WHY_NONE;
	/* The summary says "sensitive" either way: the name rules tell which. */
	if (!strcmp(e->why, "sensitive"))
		return snapshot_path_sensitive(e->path) ? PAGE_WHY_SECRET_NAME
							: PAGE_WHY_SECRET_CONTENT;
	for (size_t i = 0; i < sizeof(map) / sizeof(*map); i++)
		if (!strcmp(e->why, map[i].reason))
			return map[i].why;
	return PAGE_WHY_OTHER;
}

static enum page_kind kind_of(const char *status)
{
	return !strcmp(status, "created")    ? PAGE_ADDED
	       : !strcmp(status, "deleted")  ? PAGE_DELETED
	       : !strcmp(status, "renamed")  ? PAGE_RENAMED
	       : !strcmp(status, "modified") ? PAGE_MODIFIED
					     : PAGE_SYMLINK;
}

static long long size_of(const json_t *f, const char *key)
{
	const json_t *v = json_object_get(f, key);

	return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

/* A listed file of the summary as the page shows it. */
static struct page_file page_file_of(const json_t *f, const struct entry *e)
{
	enum page_why why = why_of(e);
	struct page_file pf = {
		.path = e->path,
		.kind = kind_of(e->status),
		.status = e->status,
		.from = *e->from ? e->from : NULL,
		.to = !*e->from && !strcmp(e->status, "renamed") ? str(ours(f), "renamed_to")
								 : NULL,
		.note = e->replaced ? "replacing what was there" : NULL,
		.by = json_is_object(e->by) ? str(e->by, "command") : NULL,
		.pid = json_is_object(e->by) ? num(e->by, "pid") : 0,
		.additions = e->additions,
		.deletions = e->deletions,
		.size_before = size_of(f, "size_before"),
		.size_after = size_of(f, "size_after"),
		.target = json_string_value(json_object_get(f, "symlink_target_after")),
		.diff = json_string_value(e->diff),
		.diff_len = json_string_length(e->diff),
		.why = why,
		.why_text = why == PAGE_WHY_OTHER ? e->why : NULL,
	};
	return pf;
}

/* A file past the summary's list, as recorded for the page. */
static struct page_file page_unlisted(const json_t *u)
{
	const char *status = json_string_value(json_array_get(u, 1));
	return (struct page_file){
		.path = json_string_value(json_array_get(u, 0)),
		.kind = kind_of(status ? status : ""),
		.status = status,
		.by = json_string_value(json_array_get(u, 4)),
		.additions = (long long)json_integer_value(json_array_get(u, 2)),
		.deletions = (long long)json_integer_value(json_array_get(u, 3)),
		.size_before = -1,
		.size_after = -1,
		.why = PAGE_WHY_UNLISTED,
	};
}

/* What the page says about the run: its metadata, its receipt. */
struct run_meta {
	char title[512], id[32], who[300], kind[64], begun[32], ended[32], took[64], host[256];
	struct page_row run[9];
	struct page_row delivery[64];
	struct page_section sections[2];
	const char *warnings[2];
	char stage[512];
};

void report_duration(int64_t ns, char *buf, size_t size)
{
	long long s = ns / 1000000000;

	if (s < 60)
		snprintf(buf, size, "%.1f s", (double)ns / 1e9);
	else if (s < 3600)
		snprintf(buf, size, "%lld min %lld s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, size, "%lld h %lld min", s / 3600, s / 60 % 60);
	else
		snprintf(buf, size, "%lld d %lld h", s / 86400, s / 3600 % 24);
}

static void run_rows(struct run_meta *m, const struct store_run *r, const char *home)
{
	size_t n = 0;

	snprintf(m->id, sizeof(m->id), "%lld", (long long)r->id);
	m->run[n++] = (struct page_row){ "run", m->id, NULL };
	m->run[n++] = (struct page_row){ "thread", m->who, NULL };
	if (r->kind != RUN_AGENT) {
		if (r->kind == RUN_UNDO)
			snprintf(m->kind, sizeof(m->kind), "the undo of run %lld",
				 (long long)r->undoes);
		else if (r->kind == RUN_APPLY)
			snprintf(m->kind, sizeof(m->kind), "an apply (sbx try apply)");
		else
			snprintf(m->kind, sizeof(m->kind), "a restore (sbx restore)");
		m->run[n++] = (struct page_row){ "kind", m->kind, NULL };
	}
	if (r->begun_ns) {
		report_time(r->begun_ns, m->begun, sizeof(m->begun));
		m->run[n++] = (struct page_row){ "began", m->begun, NULL };
	}
	if (r->ended && r->ended_ns) {
		report_time(r->ended_ns, m->ended, sizeof(m->ended));
		report_duration(r->ended_ns - r->begun_ns, m->took, sizeof(m->took));
		m->run[n++] = (struct page_row){ "ended", m->ended, NULL };
		m->run[n++] = (struct page_row){ "took", m->took, NULL };
	}
	if (gethostname(m->host, sizeof(m->host)) == 0) {
		m->host[sizeof(m->host) - 1] = '\0';
		m->run[n++] = (struct page_row){ "host", m->host, NULL };
	}
	if (home)
		m->run[n++] = (struct page_row){ "home", home, NULL };
	m->sections[0] = (struct page_section){ "Run", m->run, n };
}

/* The delivery receipt's rows; 0 or 1 sections. */
static size_t receipt_rows(struct run_meta *m, const json_t *rc)
{
	const size_t max = sizeof(m->delivery) / sizeof(*m->delivery);
	const json_t *matched = json_object_get(rc, "matched_paths"), *v;
	size_t n = 0, i;

	if (!rc)
		return 0;
	FILE *f = fmemopen(m->stage, sizeof(m->stage), "w");
	if (f) {
		receipt_stage(f, rc);
		fclose(f);
	}
	m->delivery[n++] = (struct page_row){ "stage", m->stage, NULL };
	json_array_foreach (json_object_get(rc, "produced_paths"), i, v)
		if (n < max - 2)
			m->delivery[n++] =
				(struct page_row){ "produced", json_string_value(v),
						   report_has_path(matched, json_string_value(v))
							   ? "(presented)"
							   : NULL };
	json_array_foreach (json_object_get(rc, "paths"), i, v)
		if (n < max - 1)
			m->delivery[n++] = (struct page_row){ "presented", json_string_value(v),
							      NULL };
	if (json_array_size(json_object_get(rc, "produced_paths")) +
		    json_array_size(json_object_get(rc, "paths")) + 1 >
	    n)
		m->delivery[n++] = (struct page_row){ "", "...", "(sbx receipt lists them all)" };
	m->sections[1] = (struct page_section){ "Delivery", m->delivery, n };
	return 1;
}

int report_html(FILE *out, const json_t *p, const struct store_run *r, const char *home)
{
	const json_t *sum = json_object_get(p, "summary");
	const json_t *files = json_object_get(p, "files"), *f;
	const json_t *unlisted = json_object_get(ours(p), RUN_UNLISTED);
	struct counts n = counts_of(p);
	struct run_meta m = { 0 };
	size_t i, nf = 0, nw = 0;
	struct entry e;
	char hint[128], unnamed_why[128];

	json_auto_t *rc = r->receipt ? json_loads(r->receipt, 0, NULL) : NULL;
	_cleanup_(freep) struct page_file *pf =
		calloc(json_array_size(files) + json_array_size(unlisted) + 1, sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	json_array_foreach (files, i, f)
		if (entry_of(files, f, &e))
			pf[nf++] = page_file_of(f, &e);
	json_array_foreach (unlisted, i, f)
		pf[nf++] = page_unlisted(f);

	snprintf(m.who, sizeof(m.who), "%s/%s", r->user, r->thread);
	snprintf(m.title, sizeof(m.title), "Changes of run %lld of %s", (long long)r->id, m.who);
	run_rows(&m, r, home);
	if (json_is_true(json_object_get(sum, "truncated")))
		m.warnings[nw++] =
			json_is_true(json_object_get(ours(p), "complete"))
				? "Truncated: not every file or diff is shown; every change is counted."
				: "Truncated: a scan was cut short, so changes may be missing "
				  "(see docs/changes.md).";
	snprintf(unnamed_why, sizeof(unnamed_why),
		 "A run records the names of the first %d files past its summary's list only.",
		 RUN_UNLISTED_MAX);
	snprintf(hint, sizeof(hint), "sbx changes %lld prints every diff the summary kept.",
		 (long long)r->id);
	/* Every change is one entry of "files" or of the unlisted ones
	 * (the halves of a rename two): the rest are not named. */
	long long listed = (long long)json_array_size(files);
	long long unnamed = num(ours(p), "files_total") - listed -
			    (long long)json_array_size(unlisted);
	const struct page page = {
		.title = m.title,
		.sections = m.sections,
		.n_sections = 1 + receipt_rows(&m, rc),
		.warnings = m.warnings,
		.n_warnings = nw,
		.counts = { [PAGE_ADDED] = n.created,
			    [PAGE_MODIFIED] = n.modified,
			    [PAGE_DELETED] = n.deleted,
			    [PAGE_RENAMED] = n.renamed,
			    [PAGE_SYMLINK] = n.symlinks },
		.additions = num(sum, "additions"),
		.deletions = num(sum, "deletions"),
		.files = pf,
		.n_files = nf,
		.unnamed = unnamed > 0 ? unnamed : 0,
		.unnamed_why = json_array_size(unlisted)
				       ? unnamed_why
				       : "The summary lists the first of them only, and this run "
					 "recorded no names past its list (an sbx older than the "
					 "review page ended it).",
		.by_unknown = "on the host (no view saw it)",
		.omitted_hint = hint,
	};
	return page_render(out, &page);
}

void report_time(int64_t ns, char *buf, size_t size)
{
	time_t sec = (time_t)(ns / 1000000000);
	struct tm tm;

	gmtime_r(&sec, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int report_run(const struct store_run *r, json_t *p, enum format format, const char *home)
{
	char who[300];

	snprintf(who, sizeof(who), "%s/%s", r->user, r->thread);
	if (format == FORMAT_HTML) {
		/* An empty report is still a whole page. */
		json_auto_t *empty = p ? NULL
				       : json_pack("{s:{}, s:[], s:{s:I, s:i}}", "summary", "files",
						   "sbx", "run", (json_int_t)r->id, "files_total",
						   0);
		if ((!p && !empty) || report_html(stdout, p ? p : empty, r, home) < 0)
			return 1;
		return 0;
	}
	if (format == FORMAT_JSON) {
		json_auto_t *d = run_document(r, p);
		if (!d || json_dumpf(d, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0)
			return 1;
		putchar('\n');
		return 0;
	}
	if (!p)
		printf("run %lld of %s/%s: no change could be established\n", (long long)r->id,
		       r->user, r->thread);
	else
		report_print(stdout, p, who, isatty(STDOUT_FILENO));
	return 0;
}

int report_run_recorded(const struct store_run *r, const char *summary, enum format format,
			const char *home)
{
	json_error_t jerr;
	json_auto_t *p = summary ? json_loads(summary, JSON_ALLOW_NUL, &jerr) : NULL;

	if (summary && !p) {
		fprintf(stderr, "sbx: the summary of run %lld is not valid JSON: %s\n",
			(long long)r->id, jerr.text);
		return 1;
	}
	return report_run(r, p, format, home);
}
