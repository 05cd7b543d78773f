/* page.c - the review page (page.h). */
#include "page.h"
#include "common/cleanup.h"
#include "common/base64.h"
#include "common/units.h"
#include "common/utf8.h"

#include <errno.h>
#include <openssl/sha.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[PAGE_KINDS] = { "conflict", "added",   "modified",
						    "deleted",	"renamed", "symlink" };

/* The one style block. Colors are variables so that the dark theme is
 * one rule; filters are :target rules on empty anchors before the index
 * (#only-KIND), so a link is all a filter takes, and navigating to a
 * file's section shows every file again. Changing a byte changes the
 * hash in the Content-Security-Policy, computed from this text. */
static const char css[] =
	":root{color-scheme:light dark;--bg:#fff;--fg:#1f2328;--mu:#59636e;--bd:#d1d9e0;"
	"--hd:#f6f8fa;--ad:#dafbe1;--dl:#ffebe9;--md:#fff8c5;--rn:#ddf4ff;--cf:#ffd8b5;"
	"--ah:#1a7f37;--dh:#cf222e;--hk:#0969da;--ln:#8c959f}\n"
	"@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--mu:#9198a1;"
	"--bd:#3d444d;--hd:#151b23;--ad:#12351f;--dl:#3c1618;--md:#3b2e05;--rn:#0c2d4b;"
	"--cf:#5a2d00;--ah:#3fb950;--dh:#f85149;--hk:#4493f8;--ln:#6e7681}}\n"
	"body{background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,sans-serif;"
	"margin:0 auto;max-width:80em;padding:1em 1.5em}\n"
	"h1{font-size:1.4em;margin:.3em 0}h2{font-size:1.1em;margin:1.2em 0 .4em}"
	"h3{font-size:1em;margin:0;padding:.4em .8em;background:var(--hd);font-weight:400}\n"
	"a{color:var(--hk)}.mu,.dir{color:var(--mu)}.p,.dir,pre{font-family:ui-monospace,monospace}\n"
	".b{display:inline-block;border-radius:1em;padding:.1em .8em;margin:0 .3em .3em 0;"
	"font-weight:600;background:var(--hd);border:1px solid var(--bd);color:var(--fg);"
	"text-decoration:none}\n"
	".added .st,.b.added{background:var(--ad)}.deleted .st,.b.deleted{background:var(--dl)}"
	".modified .st,.b.modified{background:var(--md)}"
	".renamed .st,.symlink .st,.b.renamed,.b.symlink{background:var(--rn)}"
	".conflict .st,.b.conflict,.warn{background:var(--cf)}\n"
	"span.st{border-radius:.3em;padding:0 .4em;font-size:.9em}ins,del{text-decoration:none}"
	"ins{color:var(--ah)}del{color:var(--dh)}.warn{padding:.3em .8em;border-radius:6px}\n"
	".meta{display:flex;flex-wrap:wrap;gap:0 3em}.meta table td,.meta table th{padding:0 .8em 0 0;"
	"text-align:left;vertical-align:top}.meta th{color:var(--mu);font-weight:400}\n"
	"table.idx{border-collapse:collapse;min-width:60%}.idx td{padding:.1em .5em;"
	"vertical-align:top}.idx tr.f:hover{background:var(--hd)}.idx td.n{text-align:right;"
	"white-space:nowrap}.idx tr.dir td{padding-top:.6em}\n"
	"section{border:1px solid var(--bd);border-radius:6px;margin:.8em 0;overflow:hidden}\n"
	"section>p{margin:.4em .8em}.why{color:var(--mu);font-style:italic}\n"
	"summary{cursor:pointer;padding:.3em .8em;color:var(--mu);border-top:1px solid var(--bd)}\n"
	"pre{margin:0;padding:.3em 0;overflow-x:auto;font-size:13px}"
	"pre span{display:block;min-height:1.2em;padding-right:.8em}\n"
	"pre i{display:inline-block;width:3.5em;padding-right:.5em;text-align:right;"
	"color:var(--ln);font-style:normal;user-select:none}\n"
	"pre .a{background:var(--ad)}pre .d{background:var(--dl)}pre .k{color:var(--hk)}"
	"pre .x{color:var(--mu)}\n"
	".flt:target~nav a{background:var(--hd)}\n"
	"#only-conflict:target~nav .conflict,#only-added:target~nav .added,"
	"#only-modified:target~nav .modified,#only-deleted:target~nav .deleted,"
	"#only-renamed:target~nav .renamed,#only-symlink:target~nav .symlink{outline:2px solid var(--hk)}\n"
	"#only-conflict:target~.idx tr.f:not(.conflict),#only-conflict:target~div>section:not(.conflict),"
	"#only-added:target~.idx tr.f:not(.added),#only-added:target~div>section:not(.added),"
	"#only-modified:target~.idx tr.f:not(.modified),#only-modified:target~div>section:not(.modified),"
	"#only-deleted:target~.idx tr.f:not(.deleted),#only-deleted:target~div>section:not(.deleted),"
	"#only-renamed:target~.idx tr.f:not(.renamed),#only-renamed:target~div>section:not(.renamed),"
	"#only-symlink:target~.idx tr.f:not(.symlink),#only-symlink:target~div>section:not(.symlink)"
	"{display:none}\n";

void page_text(FILE *out, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0; i < n;) {
		int len = utf8_seq(u + i, n - i);
		unsigned char c = u[i];

		if (len > 1) {
			/* C1 controls (U+0080-U+009F) are as invisible as C0's. */
			if (c == 0xc2 && u[i + 1] < 0xa0)
				fprintf(out, "\\x%02x\\x%02x", c, u[i + 1]);
			else
				fwrite(u + i, 1, (size_t)len, out);
			i += (size_t)len;
			continue;
		}
		i++;
		if (len <= 0 || (c < 0x20 && c != '\t') || c == 0x7f)
			fprintf(out, "\\x%02x", c);
		else if (c == '&')
			fputs("&amp;", out);
		else if (c == '<')
			fputs("&lt;", out);
		else if (c == '>')
			fputs("&gt;", out);
		else if (c == '"')
			fputs("&quot;", out);
		else if (c == '\'')
			fputs("&#39;", out);
		else
			fputc(c, out);
	}
}

static void text(FILE *out, const char *s)
{
	if (s)
		page_text(out, s, strlen(s));
}

static bool digit(char c)
{
	return c >= '0' && c <= '9';
}

int page_natural_cmp(const char *a, const char *b)
{
	const char *x = a, *y = b;

	while (*x && *y) {
		if (digit(*x) && digit(*y)) {
			while (*x == '0' && digit(x[1]))
				x++;
			while (*y == '0' && digit(y[1]))
				y++;
			size_t nx = 0, ny = 0;
			while (digit(x[nx]))
				nx++;
			while (digit(y[ny]))
				ny++;
			if (nx != ny)
				return nx < ny ? -1 : 1;
			int c = memcmp(x, y, nx);
			if (c)
				return c;
			x += nx;
			y += ny;
			continue;
		}
		if (*x != *y)
			return (unsigned char)*x < (unsigned char)*y ? -1 : 1;
		x++;
		y++;
	}
	if (*x || *y)
		return *x ? 1 : -1;
	return strcmp(a, b);
}

/* An entry with where it stands in the page. */
struct item {
	const struct page_file *f;
	size_t lines;	  /* of its diff as shown */
	const char *body; /* where the diff's hunks begin */
	bool listed;	  /* it has a section */
	bool shown, collapsed;
};

static int item_cmp(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if ((x->f->kind == PAGE_CONFLICT) != (y->f->kind == PAGE_CONFLICT))
		return x->f->kind == PAGE_CONFLICT ? -1 : 1;
	return page_natural_cmp(x->f->path ? x->f->path : "", y->f->path ? y->f->path : "");
}

/* Where a diff's hunks begin: past its "--- a/PATH" and "+++ b/PATH"
 * lines, if it has them (a newline in PATH makes them more lines). */
static const char *hunks(const char *d, size_t len)
{
	if (len < 4 || strncmp(d, "--- ", 4))
		return d;
	const char *at = memmem(d, len, "\n@@", 3);
	return at ? at + 1 : d;
}

static bool starts(const char *l, const char *e, const char *prefix)
{
	size_t n = strlen(prefix);
	return (size_t)(e - l) >= n && !memcmp(l, prefix, n);
}

/* How the diff line from L to E is shown: its class, or NULL where it is
 * left out. Outside a hunk (*IN_HUNK, kept from line to line) a git
 * diff's block header: its "diff --git", "---" and "+++" lines name the
 * file the section names already, and are left out; its other lines (a
 * mode, a rename, "Binary files ... differ") are shown muted, without
 * numbers. In a hunk, "diff --git" begins the next block (of a type
 * change: git's removal, then addition). */
static const char *line_class(const char *l, const char *e, bool *in_hunk)
{
	if (starts(l, e, "@@")) {
		*in_hunk = true;
		return "k";
	}
	if (*in_hunk && !starts(l, e, "diff --git ")) {
		char c = l < e ? *l : ' ';
		return c == '+' ? "a" : c == '-' ? "d" : c == '\\' ? "x" : "c";
	}
	*in_hunk = false;
	if (starts(l, e, "diff --git ") || starts(l, e, "--- ") || starts(l, e, "+++ "))
		return NULL;
	return "h";
}

/* The lines of the diff from S to END that are shown. */
static size_t count_lines(const char *s, const char *end)
{
	size_t n = 0;
	bool in_hunk = false;

	for (const char *l = s, *e; l < end; l = e + 1) {
		e = memchr(l, '\n', (size_t)(end - l));
		if (!e)
			e = end;
		n += line_class(l, e, &in_hunk) != NULL;
	}
	return n;
}

static const char *status_of(const struct page_file *f)
{
	return f->status ? f->status : kind_names[f->kind];
}

static void size_words(FILE *out, long long n)
{
	char buf[32];

	fputs(size_text((uint64_t)n, buf, sizeof(buf)), out);
}

/* "12 lines, 3.4 KiB" of an item's diff. */
static void diff_size(FILE *out, const struct item *it)
{
	fprintf(out, "%zu line%s, ", it->lines, it->lines == 1 ? "" : "s");
	size_words(out, (long long)it->f->diff_len);
}

static const char *why_words(const struct page_file *f)
{
	if (f->why_text)
		return f->why_text;
	switch (f->why) {
	case PAGE_WHY_SYMLINK:
		return "A symbolic link: its target is shown, never the content it points to.";
	case PAGE_WHY_SECRET_NAME:
		return "Redacted by its name: it looks like a file that holds a secret (.env, "
		       "*token*, *.pem, id_rsa, ...), so its content is never kept or shown.";
	case PAGE_WHY_SECRET_CONTENT:
		return "Redacted by its content: it holds what looks like a credential (a private "
		       "key, an API token), so its content is never kept or shown.";
	case PAGE_WHY_BINARY:
		return "Binary content (by its extension, a NUL byte or invalid UTF-8) is not "
		       "shown.";
	case PAGE_WHY_LARGE:
		return "Too large to diff (over 256 KiB).";
	case PAGE_WHY_BUDGET:
		return "Its diff was not kept: the summary's diff budget (1 MiB) was used up by "
		       "other files. The line counts are exact.";
	case PAGE_WHY_UNREADABLE:
		return "The content of one version could not be read back.";
	case PAGE_WHY_UNLISTED:
		return "Past the files the summary lists: counted and named, no diff kept.";
	case PAGE_WHY_OTHER:
	case PAGE_WHY_NONE:
		break;
	}
	return "";
}

/* The index's word for an entry without a diff shown. */
static const char *why_short(const struct item *it)
{
	static const char *const w[] = {
		[PAGE_WHY_SYMLINK] = "symlink",
		[PAGE_WHY_SECRET_NAME] = "redacted: name",
		[PAGE_WHY_SECRET_CONTENT] = "redacted: content",
		[PAGE_WHY_BINARY] = "binary",
		[PAGE_WHY_LARGE] = "too large to diff",
		[PAGE_WHY_BUDGET] = "diff not kept",
		[PAGE_WHY_UNREADABLE] = "unreadable",
		[PAGE_WHY_UNLISTED] = "not listed",
		[PAGE_WHY_OTHER] = "no diff",
	};

	if (!it->listed)
		return w[PAGE_WHY_UNLISTED];
	if (it->f->why != PAGE_WHY_NONE)
		return w[it->f->why];
	if (it->f->diff_len && !it->shown)
		return "diff omitted";
	return it->collapsed ? "collapsed" : "";
}

static void counts_cell(FILE *out, const struct page_file *f)
{
	if (f->additions >= 0)
		fprintf(out, "<ins>+%lld</ins> ", f->additions);
	if (f->deletions >= 0)
		fprintf(out, "<del>-%lld</del>", f->deletions);
}

/* The path as DIR (muted) and name. */
static void path_parts(FILE *out, const char *path, bool dir)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	if (dir && slash) {
		fputs("<span class=\"dir\">", out);
		page_text(out, path, (size_t)(slash - path + 1));
		fputs("</span>", out);
	}
	text(out, slash ? slash + 1 : path);
}

/* The Content-Security-Policy's hash of the style block. */
static int style_hash(char out[64])
{
	unsigned char h[SHA256_DIGEST_LENGTH];
	_cleanup_(freep) char *b64 = NULL;

	SHA256((const unsigned char *)css, strlen(css), h);
	if (!(b64 = base64_encode(h, sizeof(h))))
		return -ENOMEM;
	snprintf(out, 64, "%s", b64);
	return 0;
}

static void head(FILE *out, const struct page *p, const char *hash)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta name=\"color-scheme\" content=\"light dark\">\n"
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; ",
	      out);
	fprintf(out, "style-src 'sha256-%s'; base-uri 'none'; form-action 'none'\">\n<title>",
		hash);
	text(out, p->title);
	fprintf(out, "</title>\n<style>%s</style>\n</head><body>\n<header id=\"top\"><h1>", css);
	text(out, p->title);
	fputs("</h1>\n", out);
}

static void badges(FILE *out, const struct page *p)
{
	long long total = 0;

	for (int k = 0; k < PAGE_KINDS; k++)
		total += p->counts[k];
	fprintf(out, "<p><span class=\"b\">%lld file%s</span>", total, total == 1 ? "" : "s");
	for (int k = 0; k < PAGE_KINDS; k++)
		if (p->counts[k])
			fprintf(out, "<span class=\"b %s\">%lld %s</span>", kind_names[k],
				p->counts[k], kind_names[k]);
	fprintf(out, "<span class=\"b\"><ins>+%lld</ins> <del>-%lld</del></span></p>\n",
		p->additions, p->deletions);
	for (size_t i = 0; i < p->n_warnings; i++) {
		fputs("<p class=\"warn\">", out);
		text(out, p->warnings[i]);
		fputs("</p>\n", out);
	}
}

static void section_table(FILE *out, const struct page_section *s)
{
	fputs("<div><h2>", out);
	text(out, s->title);
	fputs("</h2><table>\n", out);
	for (size_t i = 0; i < s->n; i++) {
		fputs("<tr><th>", out);
		text(out, s->rows[i].label);
		fputs("</th><td>", out);
		text(out, s->rows[i].value);
		if (s->rows[i].note) {
			fputs(" <span class=\"mu\">", out);
			text(out, s->rows[i].note);
			fputs("</span>", out);
		}
		fputs("</td></tr>\n", out);
	}
	fputs("</table></div>\n", out);
}

static int by_cmp(const void *a, const void *b)
{
	const struct page_file *x = *(const struct page_file *const *)a;
	const struct page_file *y = *(const struct page_file *const *)b;

	return strcmp(x->by ? x->by : "", y->by ? y->by : "");
}

struct group {
	const char *by;
	size_t n;
};

static int group_cmp(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return strcmp(x->by, y->by);
}

/* Who changed how many files: the commands, the most files first. */
#define PAGE_BY_SHOWN 12
static int changed_by(FILE *out, const struct page *p)
{
	_cleanup_(freep) const struct page_file **v = calloc(p->n_files + 1, sizeof(*v));
	_cleanup_(freep) struct group *g = calloc(p->n_files + 1, sizeof(*g));
	size_t n = 0, ng = 0, unknown = 0;

	if (!v || !g)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_files; i++)
		if (p->files[i].by)
			v[n++] = &p->files[i];
		else
			unknown++;
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), by_cmp);
	for (size_t i = 0; i < n; i++) {
		if (!ng || strcmp(g[ng - 1].by, v[i]->by))
			g[ng++] = (struct group){ v[i]->by, 0 };
		g[ng - 1].n++;
	}
	qsort(g, ng, sizeof(*g), group_cmp);
	fputs("<div><h2>Changed by</h2><table>\n", out);
	for (size_t i = 0; i < ng && i < PAGE_BY_SHOWN; i++) {
		fputs("<tr><th>", out);
		text(out, g[i].by);
		fprintf(out, "</th><td>%zu file%s</td></tr>\n", g[i].n, g[i].n == 1 ? "" : "s");
	}
	if (ng > PAGE_BY_SHOWN)
		fprintf(out, "<tr><th>%zu other commands</th><td></td></tr>\n", ng - PAGE_BY_SHOWN);
	if (p->by_unknown && unknown) {
		fputs("<tr><th>", out);
		text(out, p->by_unknown);
		fprintf(out, "</th><td>%zu file%s</td></tr>\n", unknown, unknown == 1 ? "" : "s");
	}
	fputs("</table></div>\n", out);
	return 0;
}

static void filters(FILE *out, const struct page *p, const size_t have[PAGE_KINDS])
{
	for (int k = 0; k < PAGE_KINDS; k++)
		if (have[k])
			fprintf(out, "<span class=\"flt\" id=\"only-%s\"></span>\n", kind_names[k]);
	fprintf(out, "<nav>Show: <a class=\"b\" href=\"#top\">all %zu</a>", p->n_files);
	for (int k = 0; k < PAGE_KINDS; k++)
		if (have[k])
			fprintf(out, "<a class=\"b %s\" href=\"#only-%s\">%s %zu</a>",
				kind_names[k], kind_names[k], kind_names[k], have[k]);
	fputs("</nav>\n", out);
}

static void dir_of(const char *path, const char **dir, size_t *len)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	*dir = path;
	*len = slash ? (size_t)(slash - path + 1) : 0;
}

static void index_table(FILE *out, const struct item *v, size_t n)
{
	const char *dir = NULL;
	size_t dlen = 0;

	fputs("<table class=\"idx\">\n", out);
	for (size_t i = 0; i < n; i++) {
		const struct page_file *f = v[i].f;
		const char *d;
		size_t len;

		dir_of(f->path, &d, &len);
		if (!dir || len != dlen || memcmp(d, dir, len)) {
			fputs("<tr class=dir><td colspan=4 class=dir>", out);
			if (len)
				page_text(out, d, len);
			else
				fputs("./", out); /* a top-level name of a relative path */
			fputc('\n', out);
			dir = d;
			dlen = len;
		}
		/* The end tags a table's cells and rows may leave out are
		 * left out: a third of the index's bytes. */
		fprintf(out, "<tr class=\"f %s\"><td><span class=st>", kind_names[f->kind]);
		text(out, status_of(f));
		fputs("</span><td class=p>", out);
		if (v[i].listed)
			fprintf(out, "<a href=#f%zu>", i + 1);
		path_parts(out, f->path, false);
		fputs(v[i].listed ? "</a><td class=n>" : "<td class=n>", out);
		counts_cell(out, f);
		fputs("<td class=mu>", out);
		/* A conflict's reason is what the index is read for. */
		if (f->kind == PAGE_CONFLICT && f->note) {
			text(out, f->note);
			fputs(*why_short(&v[i]) ? "; " : "", out);
		}
		fprintf(out, "%s\n", why_short(&v[i]));
	}
	fputs("</table>\n", out);
}

/* The numbers of a hunk header "@@ -O[,n] +N[,n] @@". */
static void hunk_start(const char *l, const char *end, long *o, long *n)
{
	char buf[64];
	size_t len = (size_t)(end - l) < sizeof(buf) - 1 ? (size_t)(end - l) : sizeof(buf) - 1;

	memcpy(buf, l, len);
	buf[len] = '\0';
	const char *minus = strchr(buf, '-'), *plus = strchr(buf, '+');
	*o = minus ? strtol(minus + 1, NULL, 10) : 0;
	*n = plus ? strtol(plus + 1, NULL, 10) : 0;
}

static void number(FILE *out, long n)
{
	if (n > 0)
		fprintf(out, "<i>%ld</i>", n);
	else
		fputs("<i></i>", out);
}

/* The diff's lines with old and new line numbers. */
static void diff_lines(FILE *out, const struct item *it, size_t idx)
{
	const char *end = it->f->diff + it->f->diff_len;
	long o = 0, n = 0;
	bool in_hunk = false;

	fprintf(out, "<pre id=\"f%zu-d\">", idx);
	for (const char *l = it->body, *e; l < end; l = e + 1) {
		e = memchr(l, '\n', (size_t)(end - l));
		if (!e)
			e = end;
		const char *cls = line_class(l, e, &in_hunk);
		long on = 0, nn = 0;

		if (!cls)
			continue;
		if (*cls == 'k') {
			hunk_start(l, e, &o, &n);
		} else if (*cls == 'a') {
			nn = n++;
		} else if (*cls == 'd') {
			on = o++;
		} else if (*cls == 'c') {
			on = o++;
			nn = n++;
		}
		fprintf(out, "<span class=%s>", *cls == 'h' ? "x" : cls);
		number(out, on);
		number(out, nn);
		page_text(out, l, (size_t)(e - l));
		fputs("</span>", out);
	}
	fputs("</pre>", out);
}

static void file_section(FILE *out, const struct page *p, const struct item *it, size_t idx)
{
	const struct page_file *f = it->f;
	const char *sep = "";
	/* A conflict's reason stands out, in the conflicts' color. */
	const char *note = f->kind == PAGE_CONFLICT ? NULL : f->note;

	fprintf(out, "<section id=\"f%zu\" class=\"%s\"><h3><span class=\"st\">", idx,
		kind_names[f->kind]);
	text(out, status_of(f));
	fputs("</span> <span class=\"p\">", out);
	path_parts(out, f->path, true);
	fputs("</span> ", out);
	counts_cell(out, f);
	fputs("</h3>\n", out);
	if (f->kind == PAGE_CONFLICT && f->note) {
		fputs("<p class=\"warn\">Conflict: ", out);
		text(out, f->note);
		fputs("</p>\n", out);
	}
	if (f->from || f->to || note || f->target || f->by || f->size_before >= 0 ||
	    f->size_after >= 0)
		fputs("<p class=\"mu\">", out);
	if (f->from || f->to) {
		fputs(f->from ? "renamed from <span class=\"p\">" : "renamed to <span class=\"p\">",
		      out);
		text(out, f->from ? f->from : f->to);
		fputs("</span>", out);
		sep = "; ";
	}
	if (note) {
		fputs(sep, out);
		text(out, note);
		sep = "; ";
	}
	if (f->target) {
		fprintf(out, "%starget <span class=\"p\">", sep);
		text(out, f->target);
		fputs("</span>", out);
		sep = "; ";
	}
	if (f->by) {
		fprintf(out, "%sby ", sep);
		text(out, f->by);
		if (f->pid > 0)
			fprintf(out, " (pid %lld)", f->pid);
		sep = "; ";
	}
	if (f->size_before >= 0 || f->size_after >= 0) {
		fprintf(out, "%s", sep);
		if (f->size_before >= 0)
			size_words(out, f->size_before);
		else
			fputs("new", out);
		fputs(" &rarr; ", out);
		if (f->size_after >= 0)
			size_words(out, f->size_after);
		else
			fputs("gone", out);
	}
	if (*sep || f->size_before >= 0 || f->size_after >= 0)
		fputs("</p>\n", out);
	if (f->why != PAGE_WHY_NONE) {
		fputs("<p class=\"why\">", out);
		text(out, why_words(f));
		fputs("</p>\n", out);
	}
	if (f->diff_len && !it->shown) {
		size_t budget = p->diff_budget ? p->diff_budget : PAGE_DIFF_BUDGET;
		fputs("<p class=\"why\">Its diff (", out);
		diff_size(out, it);
		fputs(f->diff_len > budget
			      ? ") is not in this page: it is over the page's budget of "
			      : ") is not in this page: the files before it used the "
				"page's budget of ",
		      out);
		size_words(out, (long long)budget);
		fputs(" of diffs.", out);
		if (p->omitted_hint) {
			fputc(' ', out);
			text(out, p->omitted_hint);
		}
		fputs("</p>\n", out);
	} else if (f->diff_len) {
		fputs(it->collapsed ? "<details><summary>" : "<details open><summary>", out);
		fputs(it->collapsed ? "large diff, collapsed: " : "diff: ", out);
		diff_size(out, it);
		fputs("</summary>", out);
		diff_lines(out, it, idx);
		fputs("</details>\n", out);
	}
	fputs("</section>\n", out);
}

/* Which diffs are shown and collapsed, in page order: each one that
 * fits in what is left of the budget. */
static void plan(const struct page *p, struct item *v, size_t n)
{
	size_t left = p->diff_budget ? p->diff_budget : PAGE_DIFF_BUDGET;
	size_t max_lines = p->collapse_lines ? p->collapse_lines : PAGE_COLLAPSE_LINES;
	size_t max_bytes = p->collapse_bytes ? p->collapse_bytes : PAGE_COLLAPSE_BYTES;

	for (size_t i = 0; i < n; i++) {
		const struct page_file *f = v[i].f;
		if (!f->diff || !f->diff_len || !v[i].listed)
			continue;
		v[i].body = hunks(f->diff, f->diff_len);
		v[i].lines = count_lines(v[i].body, f->diff + f->diff_len);
		v[i].shown = f->diff_len <= left;
		if (v[i].shown)
			left -= f->diff_len;
		v[i].collapsed = v[i].lines > max_lines || f->diff_len > max_bytes;
	}
}

int page_render(FILE *out, const struct page *p)
{
	_cleanup_(freep) struct item *v = calloc(p->n_files + 1, sizeof(*v));
	size_t have[PAGE_KINDS] = { 0 };
	char hash[64];
	int r;

	if (!v || (r = style_hash(hash)) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_files; i++) {
		v[i].f = &p->files[i];
		have[p->files[i].kind]++;
	}
	qsort(v, p->n_files, sizeof(*v), item_cmp);
	size_t listed = 0, past = 0;
	for (size_t i = 0; i < p->n_files; i++) {
		if (v[i].f->why == PAGE_WHY_UNLISTED)
			continue;
		v[i].listed = !p->listed_max || listed < p->listed_max;
		listed += v[i].listed;
		past += !v[i].listed;
	}
	plan(p, v, p->n_files);

	head(out, p, hash);
	badges(out, p);
	fputs("<div class=\"meta\">\n", out);
	for (size_t i = 0; i < p->n_sections; i++)
		section_table(out, &p->sections[i]);
	if ((r = changed_by(out, p)) < 0)
		return r;
	fputs("</div>\n</header>\n<main>\n<h2>Files</h2>\n", out);
	filters(out, p, have);
	index_table(out, v, p->n_files);
	if (p->unnamed > 0) {
		fprintf(out, "<p class=\"why\">%lld more changed file%s, not named here. ",
			p->unnamed, p->unnamed == 1 ? "" : "s");
		text(out, p->unnamed_why);
		fputs("</p>\n", out);
	}
	if (past) {
		fprintf(out,
			"<p class=\"why\">The first %zu files of this list have a section below; the"
			" %zu after them are named here only.",
			listed, past);
		if (p->omitted_hint) {
			fputc(' ', out);
			text(out, p->omitted_hint);
		}
		fputs("</p>\n", out);
	}
	fputs("<div>\n", out);
	for (size_t i = 0; i < p->n_files; i++)
		if (v[i].listed)
			file_section(out, p, &v[i], i + 1);
	fputs("</div>\n</main></body></html>\n", out);
	return fflush(out) || ferror(out) ? -EIO : 0;
}
