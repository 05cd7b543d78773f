/* secrets.c - see secrets.h. */
#include "secrets.h"

#include <stdbool.h>
#include <string.h>

/* Byte classes. */
enum {
	C_UPPER = 1,  /* A-Z 0-9: AWS key ids */
	C_ALNUM = 2,  /* A-Z a-z 0-9 */
	C_WORD = 4,   /* A-Z a-z 0-9 _ -: base64url, and what a token is cut from */
	C_PAT = 8,    /* A-Z a-z 0-9 _ */
	C_SLACK = 16, /* A-Z a-z 0-9 - */
	C_DIGIT = 32,
	C_LABEL = 64, /* A-Z 0-9 space: a PEM label */
};

static const unsigned char cls[256] = {
	['0' ... '9'] = C_UPPER | C_ALNUM | C_WORD | C_PAT | C_SLACK | C_DIGIT | C_LABEL,
	['A' ... 'Z'] = C_UPPER | C_ALNUM | C_WORD | C_PAT | C_SLACK | C_LABEL,
	['a' ... 'z'] = C_ALNUM | C_WORD | C_PAT | C_SLACK,
	['_'] = C_WORD | C_PAT,
	['-'] = C_WORD | C_SLACK,
	[' '] = C_LABEL,
};

/* How many of the first N bytes of S are of class C. */
static size_t span(const unsigned char *s, size_t n, unsigned c)
{
	size_t i = 0;

	while (i < n && (cls[s[i]] & c))
		i++;
	return i;
}

/* Every credential but a private key starts a word of at least RUN
 * bytes: its prefix and the shortest body (the rules below, a JWT's
 * header). */
#define RUN 20

/* A prefix, then a body of MIN or more bytes of class BODY (exactly MIN
 * if EXACT: the fixed-length formats), holding a digit if DIGIT. */
static const struct rule {
	const char *kind, *prefix;
	unsigned char body;
	unsigned char min;
	bool exact, digit;
} rules[] = {
	{ "aws_access_key_id", "AKIA", C_UPPER, 16, true, false },
	{ "aws_access_key_id", "ASIA", C_UPPER, 16, true, false },
	{ "google_api_key", "AIza", C_WORD, 35, true, false },
	{ "github_token", "ghp_", C_ALNUM, 36, false, false },
	{ "github_token", "gho_", C_ALNUM, 36, false, false },
	{ "github_token", "ghu_", C_ALNUM, 36, false, false },
	{ "github_token", "ghs_", C_ALNUM, 36, false, false },
	{ "github_token", "ghr_", C_ALNUM, 36, false, false },
	{ "github_token", "github_pat_", C_PAT, 22, false, false },
	{ "gitlab_token", "glpat-", C_WORD, 20, false, false },
	{ "slack_token", "xoxa-", C_SLACK, 15, false, false },
	{ "slack_token", "xoxb-", C_SLACK, 15, false, false },
	{ "slack_token", "xoxp-", C_SLACK, 15, false, false },
	{ "slack_token", "xoxr-", C_SLACK, 15, false, false },
	{ "slack_token", "xoxs-", C_SLACK, 15, false, false },
	{ "stripe_key", "sk_live_", C_ALNUM, 16, false, false },
	{ "stripe_key", "rk_live_", C_ALNUM, 16, false, false },
	{ "openai_key", "sk-", C_WORD, 20, false, true },
	{ "npm_token", "npm_", C_ALNUM, 36, false, false },
};

static bool has_prefix(const unsigned char *s, size_t n, const char *prefix, size_t k)
{
	return n >= k && !memcmp(s, prefix, k);
}

static bool rule_at(const struct rule *r, const unsigned char *s, size_t n)
{
	size_t k = strlen(r->prefix);

	if (!has_prefix(s, n, r->prefix, k))
		return false;
	/* The body class of a fixed-length format is narrower than a word,
	 * so "exactly" also means no word byte right after it. */
	size_t body = span(s + k, n - k, r->body);
	if (body < r->min ||
	    (r->exact && (body > r->min || (k + body < n && (cls[s[k + body]] & C_ALNUM)))))
		return false;
	if (!r->digit)
		return true;
	for (size_t i = k; i < k + body; i++)
		if (cls[s[i]] & C_DIGIT)
			return true;
	return false;
}

static bool ends_with(const unsigned char *s, size_t n, const char *end)
{
	size_t k = strlen(end);

	return n >= k && !memcmp(s + n - k, end, k);
}

/* -----BEGIN [LABEL ]PRIVATE KEY----- (or PGP's PRIVATE KEY BLOCK). */
static bool private_key_at(const unsigned char *s, size_t n)
{
	static const char begin[] = "-----BEGIN ";
	const size_t k = sizeof(begin) - 1;

	if (!has_prefix(s, n, begin, k))
		return false;
	size_t label = span(s + k, n - k < 64 ? n - k : 64, C_LABEL);
	return has_prefix(s + k + label, n - k - label, "-----", 5) &&
	       (ends_with(s + k, label, "PRIVATE KEY") ||
		ends_with(s + k, label, "PRIVATE KEY BLOCK"));
}

/* A signed JWT: header "eyJ...", payload "ey...", signature. */
static bool jwt_at(const unsigned char *s, size_t n)
{
	static const size_t min[] = { RUN, 10, 16 };

	if (!has_prefix(s, n, "eyJ", 3))
		return false;
	for (size_t seg = 0; seg < 3; seg++) {
		size_t len = span(s, n, C_WORD);

		if (len < min[seg] || (seg == 1 && !has_prefix(s, n, "ey", 2)))
			return false;
		if (seg == 2)
			return true;
		if (len == n || s[len] != '.')
			return false;
		s += len + 1;
		n -= len + 1;
	}
	return false;
}

/* The kind of credential that starts at S (N bytes) with a word of RUN
 * or more bytes, or NULL. */
static const char *token_at(const unsigned char *s, size_t n)
{
	if (s[0] == 'e')
		return jwt_at(s, n) ? "jwt" : NULL;
	for (size_t i = 0; i < sizeof(rules) / sizeof(*rules); i++)
		if (rules[i].prefix[0] == s[0] && rule_at(&rules[i], s, n))
			return rules[i].kind;
	return NULL;
}

static bool is_word(unsigned char c)
{
	return cls[c] & C_WORD;
}

const char *secrets_find(const char *text, size_t len)
{
	static const char begin[] = "-----BEGIN ";
	const unsigned char *s = (const unsigned char *)text;

	/* This runs over every text file of a scan, so most bytes are never
	 * looked at. A private key's header is found by memmem; every other
	 * credential starts a word of RUN or more bytes, which holds one of
	 * the bytes at RUN - 1, 2 * RUN - 1, ...: a probe there that is not
	 * in a word rules out RUN starts at once, one that is finds its word
	 * and the next probe comes RUN after its end. */
	for (const unsigned char *p = s, *end = s + len;
	     (p = memmem(p, (size_t)(end - p), begin, sizeof(begin) - 1)); p++)
		if ((p == s || !is_word(p[-1])) && private_key_at(p, (size_t)(end - p)))
			return "private_key";
	for (size_t q = RUN - 1; q < len;) {
		if (!is_word(s[q])) {
			q += RUN;
			continue;
		}
		size_t start = q, end = q + 1;
		while (start > 0 && is_word(s[start - 1]))
			start--;
		while (end < len && is_word(s[end]))
			end++;
		const char *kind = end - start >= RUN ? token_at(s + start, len - start) : NULL;
		if (kind)
			return kind;
		q = end + RUN;
	}
	return NULL;
}
