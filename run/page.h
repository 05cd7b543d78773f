/* page.h - the review page: a set of changed files as one self-contained
 * HTML file for people to read in a browser. A caller fills in a model
 * (its own metadata, its counts, one entry per changed file: a run's
 * report for sbx changes, an overlay's diff for sbx try diff) and the
 * page orders, caps and escapes it. docs/changes.md, "HTML", says what
 * people see.
 *
 * What the page promises:
 *  - one file that needs nothing else: no script, nothing fetched. Its
 *    Content-Security-Policy is default-src 'none', with its one style
 *    block allowed by SHA-256 (so no injected style or script could run
 *    either); light and dark themes by prefers-color-scheme;
 *  - every text of the model is escaped: markup characters as entities,
 *    control characters and bytes that are not UTF-8 as visible \xNN, so
 *    no name, target or diff line adds an element or an attribute;
 *  - at the top the caller's sections (run or overlay metadata, a
 *    receipt), its counts and warnings, and who changed how many files;
 *  - an index naming every entry, conflicts first, then by path in
 *    natural order (f2 before f10), with filters by kind (links to
 *    :target anchors, no script), a conflict's reason (its NOTE) in its
 *    row; each entry of the index links to its section, except those
 *    the caller marks PAGE_WHY_UNLISTED (counted, named, no diff kept)
 *    and those past the first LISTED_MAX, which the index alone shows;
 *  - a section per listed entry: status, a conflict's reason, rename,
 *    who, sizes, why there is no diff, or the diff with old and new line
 *    numbers in a <details>, closed when it is over COLLAPSE_LINES lines
 *    or COLLAPSE_BYTES bytes, its size in the line that opens it. A git
 *    diff's block headers are not diff lines: its "diff --git", "---"
 *    and "+++" lines are left out (the section names the file), its
 *    other ones (modes, a rename, "Binary files ... differ") shown muted;
 *  - at most DIFF_BUDGET bytes of diff text in all: a diff that does not
 *    fit in what is left is omitted (its counts stay), with the
 *    caller's OMITTED_HINT saying how to see it; smaller ones after it
 *    are still shown.
 */
#ifndef SBX_RUN_PAGE_H
#define SBX_RUN_PAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The defaults of struct page's caps. */
#define PAGE_COLLAPSE_LINES 200
#define PAGE_COLLAPSE_BYTES (16 * 1024)
#define PAGE_DIFF_BUDGET (256 * 1024)

/* What an entry is, for its filter and badge; conflicts sort first. */
enum page_kind {
	PAGE_CONFLICT,
	PAGE_ADDED,
	PAGE_MODIFIED,
	PAGE_DELETED,
	PAGE_RENAMED,
	PAGE_SYMLINK,
	PAGE_KINDS
};

/* Why an entry shows no diff; the page says it in words. */
enum page_why {
	PAGE_WHY_NONE,
	PAGE_WHY_SYMLINK,	 /* a symlink: its target, never what it points to */
	PAGE_WHY_SECRET_NAME,	 /* redacted: the name looks like a secret's */
	PAGE_WHY_SECRET_CONTENT, /* redacted: the content holds a credential */
	PAGE_WHY_BINARY,
	PAGE_WHY_LARGE,	     /* too large to diff */
	PAGE_WHY_BUDGET,     /* the source's own diff budget was used up */
	PAGE_WHY_UNREADABLE, /* a version's content could not be read back */
	PAGE_WHY_UNLISTED,   /* past the source's list: named and counted only */
	PAGE_WHY_OTHER,	     /* WHY_TEXT says */
};

/* One changed file. Strings are any bytes, NUL-ended (DIFF: DIFF_LEN
 * bytes, may hold NULs); NULL where there is none. */
struct page_file {
	const char *path;
	enum page_kind kind;
	const char *status;		   /* the word shown; NULL: the kind's */
	const char *from, *to;		   /* a rename's other name */
	const char *note;		   /* a clause after the status or rename;
					    * a conflict's reason */
	const char *by;			   /* the command that changed it */
	long long pid;			   /* its pid, 0 if unknown */
	long long additions, deletions;	   /* lines; -1 if unknown */
	long long size_before, size_after; /* bytes; -1 where absent */
	const char *target;		   /* a symlink's target */
	const char *diff;		   /* a unified diff ("--- a/..." header
					    * optional), or a git diff */
	size_t diff_len;
	enum page_why why;
	const char *why_text; /* the words for WHY (PAGE_WHY_OTHER's own);
			       * NULL: the page's, which are a run's */
};

/* A row of a metadata section: LABEL, VALUE, and a muted NOTE after it. */
struct page_row {
	const char *label, *value, *note;
};

struct page_section {
	const char *title;
	const struct page_row *rows;
	size_t n;
};

struct page {
	const char *title;
	const struct page_section *sections; /* at the top, in this order */
	size_t n_sections;
	const char *const *warnings; /* sentences shown under the counts */
	size_t n_warnings;
	long long counts[PAGE_KINDS]; /* the badges: the caller's counts,
				       * which may cover more than FILES */
	long long additions, deletions;
	const struct page_file *files; /* in any order */
	size_t n_files;
	long long unnamed;	  /* changes counted but not among FILES */
	const char *unnamed_why;  /* why (a sentence), if UNNAMED */
	const char *by_unknown;	  /* who changed the files without BY, for
				     * the "changed by" section; NULL: not counted */
	const char *omitted_hint; /* how to see a diff the page omits */
	size_t listed_max;	  /* sections at most (in page order): the
				   * entries after them are in the index
				   * only; 0: no cap */
	size_t collapse_lines;	  /* 0: PAGE_COLLAPSE_LINES */
	size_t collapse_bytes;	  /* 0: PAGE_COLLAPSE_BYTES */
	size_t diff_budget;	  /* 0: PAGE_DIFF_BUDGET */
};

/* Writes P to OUT as one HTML page. Returns 0, -ENOMEM, or -EIO if OUT
 * failed. */
int page_render(FILE *out, const struct page *p);

/* The order of the index: runs of ASCII digits compare as numbers (f2
 * before f10, leading zeros ignored), everything else bytewise; paths
 * equal that way are ordered by their bytes. < 0, 0 or > 0. */
int page_natural_cmp(const char *a, const char *b);

/* Writes the N bytes at S as HTML text: & < > " ' as entities, control
 * characters (but tab) and bytes that are not UTF-8 as \xNN, each NUL
 * too. */
void page_text(FILE *out, const char *s, size_t n);

#endif
