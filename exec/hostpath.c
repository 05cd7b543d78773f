/* hostpath.c - see hostpath.h. */
#include "hostpath.h"
#include "common/home.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NAMES 19

/* True if C may continue a path name (so "/mnt/skills2" is not
 * "/mnt/skills"). */
static bool name_char(char c)
{
	return c && c != '/' && c != ' ' && c != '\t' && c != '\n' && c != '\'' && c != '"' &&
	       c != ';' && c != ':' && c != ')' && c != '|' && c != '&' && c != '>' && c != '<' &&
	       c != '`' && c != '$' && c != '=';
}

/* S with every whole-name occurrence of FROM[i] replaced by TO[i]. */
static char *replace_all(const char *s, const char *const *from, const char *const *to, size_t n)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	for (const char *p = s; *p;) {
		size_t hit = n;
		for (size_t i = 0; i < n && hit == n; i++) {
			size_t k = strlen(from[i]);
			if (!strncmp(p, from[i], k) && !name_char(p[k]))
				hit = i;
		}
		if (hit < n) {
			fputs(to[hit], f);
			p += strlen(from[hit]);
		} else {
			fputc(*p++, f);
		}
	}
	if (fclose(f) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/* The view's top names, its own and then EXTRA, in NAMES; how many. */
static size_t view_names(const char *names[MAX_NAMES], const char *const *extra)
{
	static const char *const own[] = VIEW_TOP_NAMES;
	size_t n = 0;

	for (; n < sizeof(own) / sizeof(own[0]); n++)
		names[n] = own[n];
	for (size_t i = 0; extra && extra[i] && n < MAX_NAMES; i++)
		names[n++] = extra[i];
	return n;
}

bool hostpath_is_virtual(const char *path, const char *const *extra)
{
	const char *names[MAX_NAMES];
	size_t n = view_names(names, extra), len = strlen(path);
	char p[PATH_MAX];

	if (len >= sizeof(p) || strncmp(path, "/mnt/", 5))
		return false;
	memcpy(p, path, len + 1);
	while (len > 5 && p[len - 1] == '/') /* a directory's trailing slashes */
		p[--len] = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t k = strlen(names[i]);
		if (!strncmp(p + 5, names[i], k) && (!p[5 + k] || p[5 + k] == '/'))
			return home_plain_below(p + 5 + k);
	}
	return false;
}

char *hostpath_rewrite(const char *command, const char *mount, const char *const *extra)
{
	const char *names[MAX_NAMES];
	char from[MAX_NAMES][PATH_MAX], to[MAX_NAMES][PATH_MAX];
	const char *f[MAX_NAMES], *t[MAX_NAMES];
	size_t n = view_names(names, extra);

	for (size_t i = 0; i < n; i++) {
		snprintf(from[i], PATH_MAX, "/mnt/%s", names[i]);
		snprintf(to[i], PATH_MAX, "%s/%s", mount, names[i]);
		f[i] = from[i];
		t[i] = to[i];
	}
	return replace_all(command, f, t, n);
}

char *hostpath_mask(const char *text, const struct hostpath_mask *masks)
{
	const char *from[8], *to[8];
	size_t n = 0;

	for (; masks[n].from && n < 8; n++) {
		from[n] = masks[n].from;
		to[n] = masks[n].to;
	}
	return replace_all(text, from, to, n);
}
