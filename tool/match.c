/* match.c - see match.h. */
#include "match.h"
#include "common/utf8.h"

#include <string.h>

/* The code point at *P (a stray byte counts as one), moving *P past. */
static unsigned next_char(const char **p)
{
	const unsigned char *s = (const unsigned char *)*p;
	int len = utf8_seq(s, strnlen(*p, 4));
	unsigned c = s[0];

	if (len <= 1) {
		(*p)++;
		return c;
	}
	c &= 0xff >> (len + 1);
	for (int k = 1; k < len; k++)
		c = (c << 6) | (s[k] & 0x3f);
	*p += len;
	return c;
}

/* A bracket set at P (just after its "["): whether C is in it; *END is
 * set past its "]", or NULL if it has none ("[" is then literal). */
static bool in_set(const char *p, unsigned c, const char **end)
{
	bool negate = *p == '!', found = false;

	p += negate;
	for (bool first = true; *p && (first || *p != ']'); first = false) {
		unsigned lo = next_char(&p), hi = lo;
		if (p[0] == '-' && p[1] && p[1] != ']') {
			p++;
			hi = next_char(&p);
		}
		found |= lo <= c && c <= hi;
	}
	*end = *p == ']' ? p + 1 : NULL;
	return found != negate;
}

/* Whether the pattern element at *PP matches character C; if so, *PP
 * moves past it. */
static bool match_one(const char **pp, unsigned c)
{
	const char *p = *pp, *end;

	if (!*p)
		return false;
	if (*p == '?') {
		*pp = p + 1;
		return true;
	}
	if (*p == '[') {
		bool in = in_set(p + 1, c, &end);
		if (end) {
			*pp = in ? end : *pp;
			return in;
		}
	}
	if (next_char(&p) != c)
		return false;
	*pp = p;
	return true;
}

bool match_fnmatch(const char *pattern, const char *name)
{
	const char *p = pattern, *n = name, *star = NULL, *star_name = NULL;

	while (*n) {
		if (*p == '*') {
			star = ++p;
			star_name = n;
			continue;
		}
		if (match_one(&p, next_char(&n)))
			continue;
		if (!star)
			return false;
		/* The last "*" takes one more character, and the rest is tried
		 * again after it. */
		p = star;
		n = star_name;
		next_char(&n);
		star_name = n;
	}
	while (*p == '*')
		p++;
	return !*p;
}

/* The last component of S[0..*END) that is neither empty nor ".": its
 * start and length; *END moves before it. False when there is none. */
static bool last_component(const char *s, size_t *end, const char **comp, size_t *len)
{
	while (*end) {
		size_t e = *end, b = e;
		while (b && s[b - 1] != '/')
			b--;
		*end = b ? b - 1 : 0;
		if (e > b && !(e - b == 1 && s[b] == '.')) {
			*comp = s + b;
			*len = e - b;
			return true;
		}
	}
	return false;
}

/* PurePosixPath(REL).match(PATTERN): PATTERN's components against REL's
 * last ones, each by fnmatch. */
static bool match_components(const char *pattern, const char *rel)
{
	size_t pe = strlen(pattern), re = strlen(rel), plen, rlen;
	const char *pc, *rc;
	char pbuf[256], rbuf[256];
	bool any = false;

	if (pattern[0] == '/')
		return false; /* anchored at a root that REL has not */
	while (last_component(pattern, &pe, &pc, &plen)) {
		any = true;
		if (!last_component(rel, &re, &rc, &rlen) || plen >= sizeof(pbuf) ||
		    rlen >= sizeof(rbuf))
			return false;
		memcpy(pbuf, pc, plen);
		pbuf[plen] = '\0';
		memcpy(rbuf, rc, rlen);
		rbuf[rlen] = '\0';
		if (!match_fnmatch(pbuf, rbuf))
			return false;
	}
	return any;
}

bool match_path(const char *pattern, const char *rel)
{
	if (match_components(pattern, rel))
		return true;
	return !strncmp(pattern, "**/", 3) && match_components(pattern + 3, rel);
}

bool match_pattern_valid(const char *pattern)
{
	size_t end = strlen(pattern), len;
	const char *comp;

	return pattern[0] == '/' || last_component(pattern, &end, &comp, &len);
}
