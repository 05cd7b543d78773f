/* diff.h - unified diffs of text files, for change summaries.
 *
 * Lines are split as Python's str.splitlines() splits them (the
 * reference summaries are made that way): at "\n", "\r\n", "\r", "\v",
 * "\f", "\x1c", "\x1d", "\x1e" and, in UTF-8, U+0085, U+2028 and
 * U+2029. They are compared with Myers' algorithm after the common head
 * and tail and the lines with no equal on the other side are set aside
 * (a minimal diff still; each run of changes has its deletions first, as
 * difflib has them), and the diff is printed as a unified diff with three
 * lines of context, headers
 * "--- a/PATH" and "+++ b/PATH", lines joined by "\n" without line
 * terminators (difflib's lineterm=""). When the two versions differ in
 * more than DIFF_MAX_EDITS lines, the diff shows the changed region as
 * removed and added whole: still a correct diff, not a minimal one.
 */
#ifndef SBX_DIFF_H
#define SBX_DIFF_H

#include <stdbool.h>
#include <stddef.h>

#define DIFF_CONTEXT 3
#define DIFF_MAX_EDITS 2000

struct diff {
	char *text; /* "" when the versions have the same lines */
	size_t len;
	int additions, deletions;
	bool over; /* diff_unified_within(): longer than its MAX, TEXT NULL */
};

/* Diffs OLD (OLDLEN bytes) against NEW. Returns 0, or -ENOMEM. */
int diff_unified(const char *old, size_t oldlen, const char *new, size_t newlen, const char *path,
		 struct diff *out);
/* The same, the text kept only if it is at most MAX bytes long: the
 * counts of a diff too long to show, without the cost of its text. */
int diff_unified_within(const char *old, size_t oldlen, const char *new, size_t newlen,
			const char *path, size_t max, struct diff *out);
/* The same as git's: lines split at "\n" only and printed with it ("\
 * No newline at end of file" after a last line without one), headers
 * "--- FROM" and "+++ TO" ("a/PATH", "b/PATH" or "/dev/null"): what git
 * apply takes. */
int diff_git(const char *old, size_t oldlen, const char *new, size_t newlen, const char *from,
	     const char *to, size_t max, struct diff *out);
void diff_free(struct diff *d);

/* The lines of TEXT (LEN bytes) as diff_unified() counts them: what a
 * diff against nothing adds or deletes. */
size_t diff_lines(const char *text, size_t len);

#endif
