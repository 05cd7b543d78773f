/* ids.c - see ids.h. */
#include "ids.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static bool id_char_ok(unsigned char c, bool dot)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || (dot && c == '.');
}

/* ID: 1..MAX bytes of id_char_ok(DOT); TOO_LONG and ALLOWED say why not. */
static int check(const char *id, size_t max, bool dot, const char *too_long, const char *allowed,
		 const char **why)
{
	const char *dummy;
	size_t n;

	if (!why)
		why = &dummy;
	if (!id || !*id) {
		*why = "it is empty";
		return -EINVAL;
	}
	n = strnlen(id, max + 1);
	if (n > max) {
		*why = too_long;
		return -EINVAL;
	}
	if (!strcmp(id, ".") || !strcmp(id, "..")) {
		*why = "\".\" and \"..\" are not ids";
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)id[i];
		if (!id_char_ok(c, dot)) {
			*why = c == '/'		       ? "it contains '/'"
			       : c < 0x20 || c == 0x7f ? "it contains a control character"
						       : allowed;
			return -EINVAL;
		}
	}
	return 0;
}

int user_id_check(const char *id, const char **why)
{
	return check(id, USER_ID_MAX, false, "it is longer than 255 characters",
		     "only letters, digits, '_' and '-' are allowed", why);
}

int thread_id_check(const char *id, const char **why)
{
	return check(id, THREAD_ID_MAX, false, "it is longer than 64 characters",
		     "only letters, digits, '_' and '-' are allowed", why);
}

int name_id_check(const char *id, const char **why)
{
	return check(id, NAME_ID_MAX, true, "it is longer than 128 characters",
		     "only letters, digits, '.', '_' and '-' are allowed", why);
}

/* The length of the UTF-8 sequence at S (1 for an invalid byte), as
 * Python decodes: one character each. */
static size_t utf8_char_len(const unsigned char *s)
{
	size_t n = s[0] < 0x80		   ? 1
		   : (s[0] & 0xe0) == 0xc0 ? 2
		   : (s[0] & 0xf0) == 0xe0 ? 3
		   : (s[0] & 0xf8) == 0xf0 ? 4
					   : 0;

	if (n <= 1 || (n == 2 && s[0] < 0xc2) || (n == 4 && s[0] > 0xf4))
		return 1;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 1;
	/* Overlong three- and four-byte forms, surrogates, past U+10FFFF. */
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
		return 1;
	return n;
}

int user_id_make_safe(const char *raw, char out[USER_ID_MAX + 1])
{
	const unsigned char *s = (const unsigned char *)raw;
	size_t len = 0;
	bool changed = false;

	if (!raw || !*raw)
		return -EINVAL;
	while (*s) {
		size_t n = utf8_char_len(s);
		if (len >= USER_ID_MAX)
			return -ENAMETOOLONG;
		changed |= n > 1 || !id_char_ok(*s, false);
		out[len++] = n == 1 && id_char_ok(*s, false) ? (char)*s : '-';
		s += n;
	}
	if (changed) {
		unsigned char md[EVP_MAX_MD_SIZE];
		unsigned int mdlen = 0;
		if (len + 17 > USER_ID_MAX)
			return -ENAMETOOLONG;
		if (!EVP_Digest(raw, strlen(raw), md, &mdlen, EVP_sha256(), NULL))
			return -ENOMEM;
		out[len++] = '-';
		for (int i = 0; i < 8; i++, len += 2)
			snprintf(out + len, 3, "%02x", md[i]);
	}
	out[len] = '\0';
	return 0;
}

void thread_id_slug(const char *text, size_t max, char *out, size_t size)
{
	size_t n = 0;

	for (; *text && n + 1 < size && n < max; text++)
		if (id_char_ok(*text, false))
			out[n++] = *text;
	if (!n)
		out[n++] = 'p';
	out[n] = '\0';
}

bool env_valid_name(const char *name)
{
	if (!*name || isdigit((unsigned char)*name))
		return false;
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			return false;
	return true;
}
