/* report.c - see report.h. */
#include "report.h"
#include "cli.h"
#include "quote.h"

#include <string.h>

static json_t *sha_or_null(const struct snap_file *f)
{
	char hex[65];

	if (!f || !f->hashed)
		return json_null();
	return json_string(sha256_hex(f->sha256, hex));
}

static json_t *size_or_null(const struct snap_file *f)
{
	return f ? json_integer(f->size) : json_null();
}

static json_t *target_or_null(const struct snap_file *f)
{
	return f && f->symlink ? json_string(f->target) : json_null();
}

/* A flag of a change is set if either version has it. */
#define EITHER(c, flag) (((c)->before && (c)->before->flag) || ((c)->after && (c)->after->flag))

static json_t *changed_by(const struct change *c)
{
	return c->by_pid ? json_pack("{s:i, s:s}", "pid", (int)c->by_pid, "command",
				     c->by_comm) : json_null();
}

static json_t *file_json(const struct change *c)
{
	json_t *f = json_pack("{s:s, s:s, s:s, s:b, s:b, s:o, s:o, s:o, s:o, s:s, s:b,"
			 " s:o, s:i, s:i, s:b, s:o, s:o}",
			 "path", c->path, "root", c->root, "status", c->status,
			 "binary", EITHER(c, binary),
			 "sensitive", EITHER(c, sensitive),
			 "size_before", size_or_null(c->before),
			 "size_after", size_or_null(c->after),
			 "sha256_before", sha_or_null(c->before),
			 "sha256_after", sha_or_null(c->after),
			 "diff", c->diff ? c->diff : "",
			 "diff_truncated", c->diff_truncated,
			 "diff_unavailable_reason",
			 c->unavailable ? json_string(c->unavailable) : json_null(),
			 "additions", c->additions, "deletions", c->deletions,
			 "symlink", EITHER(c, symlink),
			 "symlink_target_before", target_or_null(c->before),
			 "symlink_target_after", target_or_null(c->after));

	/* Our additions to the reference shape. */
	if (f && (json_object_set_new(f, "old_path", c->old_path ? json_string(c->old_path)
									 : json_null()) < 0 ||
		  json_object_set_new(f, "changed_by", changed_by(c)) < 0)) {
		json_decref(f);
		return NULL;
	}
	return f;
}

json_t *report_summary(const struct summary *s, int64_t run)
{
	json_t *files = json_array();

	for (size_t i = 0; files && i < s->listed; i++) {
		json_t *f = file_json(&s->changes[i]);
		if (!f || json_array_append_new(files, f) < 0) {
			json_decref(files);
			return NULL;
		}
	}
	if (!files)
		return NULL;
	return json_pack("{s:i, s:I, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:b}, s:o, s:I,"
			 " s:{s:I, s:I, s:I, s:I}}",
			 "version", 1, "run", (json_int_t)run, "summary",
			 "created", (json_int_t)s->created,
			 "modified", (json_int_t)s->modified,
			 "deleted", (json_int_t)s->deleted,
			 "symlink_created", (json_int_t)s->symlink_created,
			 "renamed", (json_int_t)s->renamed,
			 "additions", (json_int_t)s->additions,
			 "deletions", (json_int_t)s->deletions,
			 "truncated", s->truncated, "complete", s->complete, "files", files,
			 "files_total", (json_int_t)s->n, "limits",
			 "max_files", (json_int_t)s->limits.max_files,
			 "max_scanned_files", (json_int_t)s->limits.max_scanned_files,
			 "max_file_bytes_for_diff", (json_int_t)s->limits.max_file_bytes_for_diff,
			 "max_total_diff_bytes", (json_int_t)s->limits.max_total_diff_bytes);
}

json_t *report_receipt(const struct summary *s, int64_t run, bool pre_truncated)
{
	json_t *outputs = json_array();

	for (size_t i = 0; outputs && i < s->n; i++) {
		const struct change *c = &s->changes[i];
		bool produced = !strcmp(c->root, "outputs") && c->after &&
				!c->after->symlink &&
				(!strcmp(c->status, "created") || !strcmp(c->status, "modified"));
		if (produced && json_array_append_new(outputs, json_string(c->path)) < 0) {
			json_decref(outputs);
			return NULL;
		}
	}
	if (!outputs)
		return NULL;
	if (pre_truncated)
		return json_pack("{s:I, s:o, s:s}", "run", (json_int_t)run,
				 "produced_outputs", outputs,
				 "verification_skipped", "truncated_pre_run_snapshot");
	return json_pack("{s:I, s:o, s:s}", "run", (json_int_t)run,
			 "produced_outputs", outputs, "verdict",
			 json_array_size(outputs) ? "delivered" : "no_outputs");
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

/* One line of a diff, colored like git's. */
static void print_diff_line(FILE *out, const char *line, size_t len, bool color)
{
	const char *on = !color ? "" : line[0] == '+' ? "\033[32m" : line[0] == '-' ? "\033[31m"
			 : line[0] == '@' ? "\033[36m" : "";
	bool header = len >= 3 && (!strncmp(line, "---", 3) || !strncmp(line, "+++", 3));

	if (color && header)
		on = "\033[1m";
	fputs(on, out);
	fput_visible(out, line, len);	/* the diff's bytes never drive the terminal */
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
	long long total = num(p, "files_total");
	size_t i, width = 0;

	fprintf(out, "run %lld of %s: %lld file%s changed (%lld created, %lld modified, %lld deleted, %lld renamed, %lld symlinks), %lld insertion%s(+), %lld deletion%s(-)%s\n",
		num(p, "run"), who, total, total == 1 ? "" : "s", num(sum, "created"),
		num(sum, "modified"), num(sum, "deleted"), num(sum, "renamed"),
		num(sum, "symlink_created"),
		num(sum, "additions"), num(sum, "additions") == 1 ? "" : "s",
		num(sum, "deletions"), num(sum, "deletions") == 1 ? "" : "s",
		!json_is_true(json_object_get(sum, "truncated")) ? ""
		: json_is_true(json_object_get(sum, "complete"))
			? "\n  (truncated: not every diff is shown; every change is counted)"
			: "\n  (truncated: a scan was cut short, so changes may be missing; see docs/changes.md)");
	char name[QUOTE_MAX];		/* each name quoted in turn */
	json_array_foreach(files, i, f) {
		size_t len = strlen(quote_name(str(f, "path"), name, sizeof(name)));
		if (len > width)
			width = len;
	}
	json_array_foreach(files, i, f) {
		const char *why = str(f, "diff_unavailable_reason");
		long long add = num(f, "additions"), del = num(f, "deletions");

		const json_t *by = json_object_get(f, "changed_by");

		fprintf(out, " %-*s | %-15s ", (int)width, quote_name(str(f, "path"), name, sizeof(name)),
			str(f, "status"));
		if (*why && strcmp(why, "truncated")) {
			fprintf(out, "%s: metadata only", why);
		} else {
			fprintf(out, "%lld ", add + del);
			for (long long k = 0; k < add && k < 40; k++)
				fputs(color ? "\033[32m+\033[0m" : "+", out);
			for (long long k = 0; k < del && k < 40; k++)
				fputs(color ? "\033[31m-\033[0m" : "-", out);
			fputs(*why ? " (diff over the budget)" : "", out);
		}
		if (json_is_object(by))
			fprintf(out, "  (by %s)", quote_name(str(by, "command"), name, sizeof(name)));
		fputc('\n', out);
		if (*str(f, "old_path"))
			fprintf(out, " %-*s   (renamed from %s)\n", (int)width, "",
				quote_name(str(f, "old_path"), name, sizeof(name)));
	}
	if ((long long)json_array_size(files) < total)
		fprintf(out, " ... and %lld more\n", total - (long long)json_array_size(files));
	json_array_foreach(files, i, f) {
		const char *d = str(f, "diff");

		if (!*d)
			continue;
		fputc('\n', out);
		report_print_diff(out, d, str(f, "path"), color);
	}
}

void report_print_diff(FILE *out, const char *diff, const char *path, bool color)
{
	for (const char *l = print_diff_header(out, diff, path, color), *e; *l;
	     l = *e ? e + 1 : e) {
		e = strchr(l, '\n');
		if (!e)
			e = l + strlen(l);
		print_diff_line(out, l, (size_t)(e - l), color);
	}
}

/* ---- HTML --------------------------------------------------------------- */

static void html_text(FILE *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		switch (s[i]) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default: fputc(s[i], out);
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
	static const struct { const char *reason, *text; } why[] = {
		{ "symlink", "A symbolic link: its target is shown, never the content it points to." },
		{ "sensitive", "The name looks like it holds a secret (.env, *token*, *.pem, ...): its content is never read or shown." },
		{ "binary", "Binary content (by its extension, a NUL byte or invalid UTF-8) is not shown." },
		{ "large", "Over 256 KiB: too large to diff, so the summary is marked truncated." },
		{ "truncated", "The diff budget of this report (1 MiB) was used up by the files above; the line counts are still exact." },
		{ "content_unavailable", "The content of one version could not be read back." },
	};

	for (size_t i = 0; i < sizeof(why) / sizeof(*why); i++)
		if (!strcmp(reason, why[i].reason))
			return why[i].text;
	return reason;
}

static void html_diff(FILE *out, const char *d)
{
	fputs("<pre class=\"diff\">", out);
	for (const char *l = d, *e; *l; l = *e ? e + 1 : e) {
		e = strchr(l, '\n');
		if (!e)
			e = l + strlen(l);
		bool header = e - l >= 3 && (!strncmp(l, "---", 3) || !strncmp(l, "+++", 3));
		const char *cls = header ? "h" : *l == '+' ? "a" : *l == '-' ? "d" : *l == '@' ? "k" : "c";
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
	char title[512], dir[4096] = "";
	size_t i;

	snprintf(title, sizeof(title), "Changes of run %lld of %s", num(p, "run"), who);
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n<title>", out);
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
	      "</style></head><body>\n<h1>", out);
	html(out, title);
	fputs("</h1>\n<p>\n", out);
	badge(out, "created", num(sum, "created"), "created");
	badge(out, "modified", num(sum, "modified"), "modified");
	badge(out, "deleted", num(sum, "deleted"), "deleted");
	badge(out, "renamed", num(sum, "renamed"), "renamed");
	badge(out, "symlink_created", num(sum, "symlink_created"), "symlinks");
	fprintf(out, "<span class=\"badge\"><span class=\"plus\">+%lld</span> "
		"<span class=\"minus\">-%lld</span></span>\n",
		num(sum, "additions"), num(sum, "deletions"));
	if (json_is_true(json_object_get(sum, "truncated")))
		fputs(json_is_true(json_object_get(sum, "complete"))
		      ? "<span class=\"badge trunc\">truncated: not every diff is shown; every change is counted</span>\n"
		      : "<span class=\"badge trunc\">truncated: a scan was cut short, so changes may be missing</span>\n",
		      out);
	fputs("</p>\n", out);
	if ((long long)json_array_size(files) < num(p, "files_total"))
		fprintf(out, "<p>%zu of %lld changed files are listed.</p>\n",
			json_array_size(files), num(p, "files_total"));
	json_array_foreach(files, i, f) {
		const char *path = str(f, "path"), *slash = strrchr(path, '/');
		size_t dlen = slash ? (size_t)(slash - path) : 0;
		const char *why = str(f, "diff_unavailable_reason");

		if (dlen != strlen(dir) || strncmp(dir, path, dlen)) {
			snprintf(dir, sizeof(dir), "%.*s", (int)dlen, path);
			fputs("<h2>", out);
			html(out, dir);
			fputs("/</h2>\n", out);
		}
		fputs("<div class=\"file\"><div>", out);
		html(out, slash ? slash + 1 : path);
		fprintf(out, "<span class=\"status %s\">%s</span> <span class=\"plus\">+%lld</span>"
			" <span class=\"minus\">-%lld</span>", str(f, "status"), str(f, "status"),
			num(f, "additions"), num(f, "deletions"));
		if (json_is_string(json_object_get(f, "symlink_target_after"))) {
			fputs(" &rarr; ", out);
			html(out, str(f, "symlink_target_after"));
		}
		if (*str(f, "old_path")) {
			fputs(" <span class=\"by\">from ", out);
			html(out, str(f, "old_path"));
			fputs("</span>", out);
		}
		const json_t *by = json_object_get(f, "changed_by");
		if (json_is_object(by)) {
			fputs(" <span class=\"by\">by ", out);
			html(out, str(by, "command"));
			fprintf(out, " (pid %lld)</span>", num(by, "pid"));
		}
		fputs("</div>\n", out);
		if (*why) {
			fputs("<p class=\"why\">", out);
			html(out, explain(why));
			fputs("</p>\n", out);
		}
		if (*str(f, "diff"))
			html_diff(out, str(f, "diff"));
		fputs("</div>\n", out);
	}
	fputs("</body></html>\n", out);
}
