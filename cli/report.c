/* report.c - see report.h. */
#include "report.h"
#include "common/hash.h"
#include "common/quote.h"
#include "run/documents.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void report_receipt_print(FILE *out, const json_t *r, long long run, const char *who)
{
	const json_t *produced = json_object_get(r, "produced_paths");
	const json_t *matched = json_object_get(r, "matched_paths");
	const json_t *paths = json_object_get(r, "paths"), *by_tool = json_object_get(r, "by_tool");
	const char *stage = json_string_value(json_object_get(r, "stage"));
	size_t np = json_array_size(produced), i;
	const json_t *v, *tp;
	const char *tool;
	char name[QUOTE_MAX];

	fprintf(out, "run %lld of %s: ", run, who);
	if (json_object_get(r, "verification_skipped"))
		fputs("delivery not verified: the pre-run snapshot was truncated"
		      " (truncated_pre_run_snapshot), so outputs it did not see cannot"
		      " be told from new ones\n",
		      out);
	else if (!stage)
		fputs("no output created or modified: nothing to verify\n", out);
	else if (!strcmp(stage, "presented"))
		fprintf(out, "delivery presented: %zu of %zu produced output%s presented\n",
			json_array_size(matched), np, np == 1 ? "" : "s");
	else
		fprintf(out, "delivery %s: %zu produced output%s, %s\n",
			!strcmp(stage, "mismatched") ? "mismatched" : "not started", np,
			np == 1 ? "" : "s",
			!strcmp(stage, "mismatched") ? "none of them presented by present_files"
						     : "nothing presented");
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

/* ---- HTML --------------------------------------------------------------- */

static void html_text(FILE *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		switch (s[i]) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		case '\'':
			fputs("&#39;", out);
			break;
		default:
			fputc(s[i], out);
		}
	}
}

static void html(FILE *out, const char *s)
{
	html_text(out, s, strlen(s));
}

/* Why an entry shows metadata only, in words for the reader. */
static const char *explain(const char *reason)
{
	static const struct {
		const char *reason, *text;
	} why[] = {
		{ "symlink",
		  "A symbolic link: its target is shown, never the content it points to." },
		{ "sensitive",
		  "The name (.env, *token*, *.pem, id_rsa, ...) or the content (a private key, an API token) looks like it holds a secret: its content is never kept or shown." },
		{ "binary",
		  "Binary content (by its extension, a NUL byte or invalid UTF-8) is not shown." },
		{ "large", "Over 256 KiB: too large to diff, so the summary is marked truncated." },
		{ "truncated",
		  "The diff budget of this report (1 MiB) was used up by the files above; the line counts are still exact." },
		{ "content_unavailable", "The content of one version could not be read back." },
	};

	for (size_t i = 0; i < sizeof(why) / sizeof(*why); i++)
		if (!strcmp(reason, why[i].reason))
			return why[i].text;
	return reason;
}

static void html_diff(FILE *out, const char *d, size_t len)
{
	const char *end = d + len;

	fputs("<pre class=\"diff\">", out);
	for (const char *l = d, *e; l < end; l = e + 1) {
		e = memchr(l, '\n', (size_t)(end - l));
		if (!e)
			e = end;
		bool header = e - l >= 3 && (!strncmp(l, "---", 3) || !strncmp(l, "+++", 3));
		const char *cls = header      ? "h"
				  : *l == '+' ? "a"
				  : *l == '-' ? "d"
				  : *l == '@' ? "k"
					      : "c";
		fprintf(out, "<span class=\"%s\">", cls);
		html_text(out, l, (size_t)(e - l));
		fputs("</span>", out);
	}
	fputs("</pre>\n", out);
}

static void badge(FILE *out, const char *cls, long long n, const char *label)
{
	fprintf(out, "<span class=\"badge %s\">%lld %s</span>\n", cls, n, label);
}

void report_html(FILE *out, const json_t *p, const char *who)
{
	const json_t *sum = json_object_get(p, "summary");
	const json_t *files = json_object_get(p, "files"), *f;
	struct counts n = counts_of(p);
	struct entry e;
	char title[512], dir[4096] = "";
	size_t i;

	snprintf(title, sizeof(title), "Changes of run %lld of %s", num(ours(p), "run"), who);
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n<title>",
	      out);
	html(out, title);
	fputs("</title>\n<style>\n"
	      "body{font:15px/1.45 system-ui,sans-serif;margin:2em auto;max-width:70em;padding:0 1em;color:#1f2328}\n"
	      "h1{font-size:1.4em} h2{font-size:1.05em;margin:1.6em 0 .4em;font-family:monospace;color:#57606a}\n"
	      ".badge{display:inline-block;border-radius:1em;padding:.15em .8em;margin:0 .3em .3em 0;font-weight:600;background:#eaeef2}\n"
	      ".created{background:#dafbe1}.modified{background:#fff8c5}.deleted{background:#ffebe9}"
	      ".symlink_created{background:#ddf4ff}.trunc{background:#ffd8b5}\n"
	      ".file{border:1px solid #d0d7de;border-radius:6px;margin:.5em 0;overflow:hidden}\n"
	      ".file>div{padding:.4em .8em;background:#f6f8fa;font-family:monospace}\n"
	      ".why{padding:.5em .8em;color:#57606a;font-style:italic}\n"
	      ".status{font-weight:600;margin-left:.6em} .plus{color:#1a7f37} .minus{color:#cf222e}"
	      " .by{color:#57606a}\n"
	      "pre.diff{margin:0;padding:.5em .8em;overflow-x:auto;font-size:13px}\n"
	      "pre.diff span{display:block;min-height:1.2em}"
	      " pre.diff .a{background:#e6ffec} pre.diff .d{background:#ffebe9}\n"
	      "pre.diff .k{color:#0969da} pre.diff .h{font-weight:600}\n"
	      "</style></head><body>\n<h1>",
	      out);
	html(out, title);
	fputs("</h1>\n<p>\n", out);
	badge(out, "created", n.created, "created");
	badge(out, "modified", n.modified, "modified");
	badge(out, "deleted", n.deleted, "deleted");
	badge(out, "renamed", n.renamed, "renamed");
	badge(out, "symlink_created", n.symlinks, "symlinks");
	fprintf(out,
		"<span class=\"badge\"><span class=\"plus\">+%lld</span> "
		"<span class=\"minus\">-%lld</span></span>\n",
		num(sum, "additions"), num(sum, "deletions"));
	if (json_is_true(json_object_get(sum, "truncated")))
		fputs(json_is_true(json_object_get(ours(p), "complete"))
			      ? "<span class=\"badge trunc\">truncated: not every file or diff is shown; every change is counted</span>\n"
			      : "<span class=\"badge trunc\">truncated: a scan was cut short, so changes may be missing</span>\n",
		      out);
	fputs("</p>\n", out);
	if ((long long)json_array_size(files) < num(ours(p), "files_total"))
		fprintf(out, "<p>%zu of %lld changed files are listed.</p>\n",
			json_array_size(files), num(ours(p), "files_total"));
	json_array_foreach (files, i, f) {
		if (!entry_of(files, f, &e))
			continue;
		const char *slash = strrchr(e.path, '/');
		size_t dlen = slash ? (size_t)(slash - e.path) : 0;

		if (dlen != strlen(dir) || strncmp(dir, e.path, dlen)) {
			snprintf(dir, sizeof(dir), "%.*s", (int)dlen, e.path);
			fputs("<h2>", out);
			html(out, dir);
			fputs("/</h2>\n", out);
		}
		fputs("<div class=\"file\"><div>", out);
		html(out, slash ? slash + 1 : e.path);
		fprintf(out,
			"<span class=\"status %s\">%s</span> <span class=\"plus\">+%lld</span>"
			" <span class=\"minus\">-%lld</span>",
			e.status, e.status, e.additions, e.deletions);
		if (json_is_string(json_object_get(f, "symlink_target_after"))) {
			fputs(" &rarr; ", out);
			html(out, str(f, "symlink_target_after"));
		}
		if (*e.from || !strcmp(e.status, "renamed")) {
			fputs(*e.from ? " <span class=\"by\">from " : " <span class=\"by\">to ",
			      out);
			html(out, *e.from ? e.from : str(ours(f), "renamed_to"));
			fprintf(out, "%s</span>", REPLACED(e));
		}
		if (json_is_object(e.by)) {
			fputs(" <span class=\"by\">by ", out);
			html(out, str(e.by, "command"));
			fprintf(out, " (pid %lld)</span>", num(e.by, "pid"));
		}
		fputs("</div>\n", out);
		if (*e.why) {
			fputs("<p class=\"why\">", out);
			html(out, explain(e.why));
			fputs("</p>\n", out);
		}
		if (json_string_length(e.diff))
			html_diff(out, json_string_value(e.diff), json_string_length(e.diff));
		fputs("</div>\n", out);
	}
	fputs("</body></html>\n", out);
}

void report_time(int64_t ns, char *buf, size_t size)
{
	time_t sec = (time_t)(ns / 1000000000);
	struct tm tm;

	gmtime_r(&sec, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int report_run(const struct store_run *r, json_t *p, enum format format)
{
	char who[300];

	snprintf(who, sizeof(who), "%s/%s", r->user, r->thread);
	if (!p && format == FORMAT_HTML) {
		/* An empty report, still a whole page. */
		json_auto_t *empty = json_pack("{s:{}, s:[], s:{s:I, s:i}}", "summary", "files",
					       "sbx", "run", (json_int_t)r->id, "files_total", 0);
		if (!empty)
			return 1;
		report_html(stdout, empty, who);
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
	else if (format == FORMAT_HTML)
		report_html(stdout, p, who);
	else
		report_print(stdout, p, who, isatty(STDOUT_FILENO));
	return 0;
}

int report_run_recorded(const struct store_run *r, const char *summary, enum format format)
{
	json_error_t jerr;
	json_auto_t *p = summary ? json_loads(summary, JSON_ALLOW_NUL, &jerr) : NULL;

	if (summary && !p) {
		fprintf(stderr, "sbx: the summary of run %lld is not valid JSON: %s\n",
			(long long)r->id, jerr.text);
		return 1;
	}
	return report_run(r, p, format);
}
