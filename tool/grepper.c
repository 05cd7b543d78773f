/* grepper.c - see grepper.h. */
#include "grepper.h"
#include "beneath.h"
#include "common/cleanup.h"
#include "common/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int grepper_compile(struct grepper *g, const char *pattern, size_t len, unsigned flags,
		    char msg[256], size_t *at)
{
	/* PCRE2_LITERAL takes no PCRE2_UCP: it has no classes to apply it
	 * to, and UTF alone folds the case of every character. */
	uint32_t opts = PCRE2_UTF | (flags & GREP_CASELESS ? PCRE2_CASELESS : 0) |
			(flags & GREP_LITERAL ? PCRE2_LITERAL : PCRE2_UCP) |
			(flags & GREP_MULTILINE ? PCRE2_MULTILINE : 0);
	PCRE2_SIZE where;
	int code;

	g->re = pcre2_compile((PCRE2_SPTR)pattern, len, opts, &code, &where, NULL);
	if (!g->re) {
		pcre2_get_error_message(code, (PCRE2_UCHAR *)msg, 256);
		*at = (size_t)where;
		return 1;
	}
	pcre2_jit_compile(g->re, PCRE2_JIT_COMPLETE); /* faster where it can */
	g->md = pcre2_match_data_create_from_pattern(g->re, NULL);
	g->mc = pcre2_match_context_create(NULL);
	if (!g->md || !g->mc)
		return -ENOMEM;
	pcre2_set_match_limit(g->mc, GREP_MATCH_LIMIT);
	return 0;
}

void grepper_free(struct grepper *g)
{
	pcre2_match_context_free(g->mc);
	pcre2_match_data_free(g->md);
	pcre2_code_free(g->re);
	free(g->buf);
	memset(g, 0, sizeof(*g));
}

int grepper_load(struct grepper *g, int dirfd, const char *name, size_t max, size_t *n)
{
	_cleanup_(closep) int fd = beneath_open(dirfd, name, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > max)
		return 1;
	/* One byte more than the file had: it may have grown past MAX. */
	size_t want = (size_t)st.st_size + 1;
	if (want > g->cap) {
		char *b = realloc(g->buf, want);
		if (!b)
			return -ENOMEM;
		g->buf = b;
		g->cap = want;
	}
	ssize_t got = pread(fd, g->buf, want, 0);
	if (got < 0 || (size_t)got > max)
		return 1;
	if (memchr(g->buf, '\0',
		   (size_t)got < GREP_BINARY_SAMPLE ? (size_t)got : GREP_BINARY_SAMPLE))
		return 1;
	*n = (size_t)got;
	return 0;
}

/* Matches the line of N bytes at S (valid UTF-8, without NUL, its LF
 * after it if ENDED), with its end. */
static int match(struct grepper *g, const char *s, size_t n, bool ended, char **text)
{
	if (utf8_nchars(s, n) + ended > GREP_MAX_LINE_CHARS ||
	    pcre2_match(g->re, (PCRE2_SPTR)s, n + ended, 0, PCRE2_NO_UTF_CHECK, g->md, g->mc) < 0)
		return 0;
	return !text || (*text = strndup(s, n)) ? 1 : -ENOMEM;
}

int grepper_line(struct grepper *g, const char *p, size_t n, bool ended, char **text)
{
	/* In place when it is clean UTF-8 ending in LF (most lines), else
	 * read as Python reads it (bad bytes as U+FFFD, its end an LF) into
	 * a copy. */
	if ((!ended || p[n] == '\n') && !memchr(p, '\0', n) && utf8_valid(p, n))
		return match(g, p, n, ended, text);
	_cleanup_(freep) char *clean = utf8_clean(p, n, NULL);
	if (!clean)
		return -ENOMEM;
	size_t len = strlen(clean);
	_cleanup_(freep) char *subject = malloc(len + 2);
	if (!subject)
		return -ENOMEM;
	memcpy(subject, clean, len);
	subject[len] = '\n';
	return match(g, subject, len, ended, text);
}
