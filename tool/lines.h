/* lines.h - a file's bytes as the reference's text-mode reads see them
 * (Python's open(path, encoding="utf-8")): strict UTF-8, and universal
 * newlines (CRLF and a lone CR read as LF). Fed the file a chunk at a
 * time, it keeps what a read returns: the whole text, or the lines
 * START..END of a ranged read (1-indexed, inclusive, each without its
 * end, joined by "\n"); and it counts the characters of all of it
 * while keeping only the first KEEP_CHARS.
 */
#ifndef SBX_TOOL_LINES_H
#define SBX_TOOL_LINES_H

#include <stdbool.h>
#include <stddef.h>

struct lines {
	/* What to keep (set before the first lines_feed()). */
	long long start, end; /* a ranged read: START >= 1; END 0: to the end */
	size_t keep_chars;    /* keep this many characters (0: all) */

	/* What was read. */
	char *text;	       /* the kept characters, NUL-terminated (malloc'd) */
	size_t len, chars;     /* bytes kept; characters of the whole result */
	long long first, last; /* the lines in it (0 if none) */
	bool done;	       /* a ranged read past END: read no more */
	/* Not UTF-8: the byte offset of the first bad byte, the byte, and
	 * Python's words for what is wrong ("invalid start byte"). */
	const char *invalid;
	size_t bad_at;
	unsigned char bad_byte;

	/* The decoder's state. */
	size_t cap, offset, kept_chars;
	long long line; /* the line being read, from 1 */
	bool line_begun, cr;
	unsigned char part[4];
	size_t npart;
};

/* Takes the next N bytes at P. Returns 0 or -ENOMEM; stop feeding once
 * L->done or L->invalid is set. */
int lines_feed(struct lines *l, const char *p, size_t n);
/* The end of the file. */
void lines_end(struct lines *l);
void lines_free(struct lines *l);

/* The next line of the N bytes at P (universal newlines): its length
 * without its end in *LEN; returns the bytes it takes with its end (0
 * when N is). */
size_t lines_next(const char *p, size_t n, size_t *len);

#endif
