/* quote.c - see quote.h. */
#include "quote.h"
#include "utf8.h"

#include <string.h>

/* The escape for byte C (a control character, or any byte of a sequence
 * that is escaped as a whole) into OUT (5 bytes). Returns its length. */
static size_t escape_byte(unsigned char c, char out[5])
{
	static const char named[] = "\a"
				    "a"
				    "\b"
				    "b"
				    "\t"
				    "t"
				    "\n"
				    "n"
				    "\v"
				    "v"
				    "\f"
				    "f"
				    "\r"
				    "r";

	for (size_t i = 0; i + 1 < sizeof(named); i += 2)
		if ((unsigned char)named[i] == c) {
			out[0] = '\\';
			out[1] = named[i + 1];
			return 2;
		}
	out[0] = '\\';
	out[1] = (char)('0' + (c >> 6));
	out[2] = (char)('0' + ((c >> 3) & 7));
	out[3] = (char)('0' + (c & 7));
	return 4;
}

/* How many bytes at S (N left) form the next unit, and whether it must be
 * escaped: a control character (TAB too unless KEEP_TAB), a C1 control,
 * a byte that is not UTF-8; with QUOTE also '"' and '\'. */
static size_t next_unit(const unsigned char *s, size_t n, bool quote, bool keep_tab, bool *escape)
{
	int len = utf8_seq(s, n);

	if (len <= 0) {
		*escape = true;
		return 1;
	}
	if (len == 1)
		*escape = (s[0] < 0x20 && !(keep_tab && s[0] == '\t')) || s[0] == 0x7f ||
			  (quote && (s[0] == '"' || s[0] == '\\'));
	else
		*escape = len == 2 && s[0] == 0xc2 && s[1] < 0xa0; /* U+0080-U+009F */
	return (size_t)len;
}

/* The escaped form of S (N bytes) as a sequence of pieces handed to EMIT. */
static void escape_each(const char *s, size_t n, bool quote, bool keep_tab,
			void (*emit)(void *arg, const char *piece, size_t len), void *arg)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t plain = 0;

	for (size_t i = 0; i < n;) {
		bool esc;
		size_t len = next_unit(p + i, n - i, quote, keep_tab, &esc);

		if (!esc) {
			plain += len;
			i += len;
			continue;
		}
		if (plain)
			emit(arg, s + i - plain, plain);
		plain = 0;
		for (size_t k = 0; k < len; k++, i++) {
			char e[5];
			if (quote && (p[i] == '"' || p[i] == '\\')) {
				e[0] = '\\';
				e[1] = (char)p[i];
				emit(arg, e, 2);
			} else {
				emit(arg, e, escape_byte(p[i], e));
			}
		}
	}
	if (plain)
		emit(arg, s + n - plain, plain);
}

struct sink {
	char *buf;
	size_t size, len;
	bool cut;
};

static void to_buf(void *arg, const char *piece, size_t len)
{
	struct sink *k = arg;

	if (k->cut)
		return;
	if (k->len + len >= k->size) {
		/* What fits, not ending inside a UTF-8 sequence or an escape. */
		len = piece[0] == '\\' && len <= 4 ? 0 : k->size - 1 - k->len;
		while (len > 0 && ((unsigned char)piece[len] & 0xc0) == 0x80)
			len--;
		k->cut = true;
	}
	memcpy(k->buf + k->len, piece, len);
	k->len += len;
}

static void to_file(void *arg, const char *piece, size_t len)
{
	fwrite(piece, 1, len, arg);
}

static bool needs_quotes(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < n;) {
		bool esc;
		i += next_unit(p + i, n - i, true, false, &esc);
		if (esc)
			return true;
	}
	return false;
}

const char *quote_name(const char *s, char *buf, size_t size)
{
	size_t n = strlen(s);

	if (!needs_quotes(s, n) || size < 8)
		return s;
	/* Room for the closing quote and a "..." if it is cut short. */
	struct sink k = { buf, size - 4, 1, false };
	buf[0] = '"';
	escape_each(s, n, true, false, to_buf, &k);
	memcpy(buf + k.len, k.cut ? "...\"" : "\"", k.cut ? 5 : 2);
	return buf;
}

void fput_visible(FILE *out, const char *s, size_t n)
{
	escape_each(s, n, false, true, to_file, out);
}

size_t visible_text(const char *s, size_t n, char *buf, size_t size)
{
	struct sink k = { buf, size, 0, false };

	escape_each(s, n, false, true, to_buf, &k);
	buf[k.len] = '\0';
	return k.len;
}
