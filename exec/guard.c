/* guard.c - see guard.h. The rules are the reference's
 * (validate_local_bash_command_paths); the tokenizer is a C rendering of
 * Python's shlex in POSIX mode with punctuation_chars and whitespace_split.
 */
#include "guard.h"
#include "common/cleanup.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define USE_VIRTUAL ". Use paths under /mnt/user-data"
#define PUNCT "();<>|&"
#define PATH_END " \t\r\n\v\f\"'`;&|<>()"

struct token {
	char *text;
	bool punct;
};

struct tokens {
	struct token *v;
	size_t n, cap;
};

static void tokens_free(struct tokens *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].text);
	free(t->v);
}

static int push(struct tokens *t, const char *s, size_t len, bool punct)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 32;
		struct token *v = realloc(t->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	if (!(t->v[t->n].text = strndup(s, len)))
		return -ENOMEM;
	t->v[t->n++].punct = punct;
	return 0;
}

/* shlex.split(posix=True, punctuation_chars=True, whitespace_split=True,
 * commenters="") of S, newlines counted as " ; ". -EINVAL for an open
 * quote (the caller then splits on blanks, as the reference does). */
static int tokenize(const char *s, struct tokens *t)
{
	size_t cap = strlen(s) + 1;
	_cleanup_(freep) char *word = malloc(cap);

	if (!word)
		return -ENOMEM;
	for (const char *p = s; *p;) {
		if (*p == '\n') {
			if (push(t, ";", 1, true) < 0)
				return -ENOMEM;
			p++;
			continue;
		}
		if (isspace((unsigned char)*p)) {
			p++;
			continue;
		}
		if (strchr(PUNCT, *p)) {
			size_t n = strspn(p, PUNCT);
			if (push(t, p, n, true) < 0)
				return -ENOMEM;
			p += n;
			continue;
		}
		size_t n = 0;
		while (*p && !isspace((unsigned char)*p) && !strchr(PUNCT, *p)) {
			if (*p == '\'') {
				const char *end = strchr(p + 1, '\'');
				if (!end)
					return -EINVAL;
				memcpy(word + n, p + 1, (size_t)(end - p - 1));
				n += (size_t)(end - p - 1);
				p = end + 1;
			} else if (*p == '"') {
				for (p++; *p && *p != '"'; p++) {
					if (*p == '\\' && p[1] && strchr("\\\"$`\n", p[1]))
						p++;
					word[n++] = *p;
				}
				if (!*p)
					return -EINVAL;
				p++;
			} else if (*p == '\\' && p[1]) {
				word[n++] = p[1];
				p += 2;
			} else {
				word[n++] = *p++;
			}
		}
		if (push(t, word, n, false) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int split_blanks(const char *s, struct tokens *t)
{
	for (const char *p = s; *p;) {
		p += strspn(p, " \t\r\n\v\f");
		size_t n = strcspn(p, " \t\r\n\v\f");
		if (n && push(t, p, n, false) < 0)
			return -ENOMEM;
		p += n;
	}
	return 0;
}

static bool word_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* Where a URL (scheme://...) starts in S at or after FROM, its length in
 * *LEN; NULL if none. */
static const char *find_url(const char *s, const char *from, size_t *len)
{
	for (const char *p = strstr(from, "://"); p; p = strstr(p + 3, "://")) {
		const char *q = p;
		while (q > s && (isalnum((unsigned char)q[-1]) || strchr("+.-", q[-1])))
			q--;
		while (q < p && !isalpha((unsigned char)*q))
			q++; /* the scheme starts with a letter */
		if (q == p || (q > s && word_char(q[-1])))
			continue;
		size_t tail = strcspn(p + 3, PATH_END);
		if (!tail)
			continue;
		*len = (size_t)(p + 3 + tail - q);
		return q;
	}
	return NULL;
}

/* A ".." segment: "..", "../x", "x/..", "--opt=../x". */
static bool has_dotdot(const char *s)
{
	for (const char *p = strstr(s, ".."); p; p = strstr(p + 1, ".."))
		if ((p == s || strchr("/\\=", p[-1])) && (!p[2] || strchr("/\\", p[2])))
			return true;
	return false;
}

static bool under(const char *path, const char *root)
{
	size_t n = strlen(root);

	return !strncmp(path, root, n) && (!path[n] || path[n] == '/');
}

/* True if PATH is one of the virtual roots, or below one. */
static bool virtual_path(const char *path, const char *const *extra)
{
	static const char *const roots[] = { "/mnt/user-data", "/mnt/skills",
					     "/mnt/acp-workspace" };
	char name[300];

	if (has_dotdot(path))
		return false;
	for (size_t i = 0; i < sizeof(roots) / sizeof(*roots); i++)
		if (under(path, roots[i]))
			return true;
	for (size_t i = 0; extra && extra[i]; i++) {
		snprintf(name, sizeof(name), "/mnt/%s", extra[i]);
		if (under(path, name))
			return true;
	}
	return false;
}

static bool allowed_path(const char *path, const char *const *extra)
{
	static const char *const system[] = {
		"/bin/", "/usr/bin/", "/usr/sbin/", "/sbin/", "/opt/homebrew/bin/", "/dev/",
	};

	if (virtual_path(path, extra))
		return true;
	for (size_t i = 0; i < sizeof(system) / sizeof(*system); i++)
		if (!strncmp(path, system[i], strlen(system[i])) && !has_dotdot(path))
			return true;
	return false;
}

/* Text that only looks like a path: non-ASCII ("/端口"), or a template
 * whose every {...} is one identifier ("/devices/{id}/port"). */
static bool is_text(const char *path)
{
	bool braces = false;

	for (const char *p = path; *p; p++)
		if ((unsigned char)*p >= 0x80)
			return true;
	if (strstr(path, "${"))
		return false;
	for (const char *p = path; *p; p++) {
		if (*p == '}')
			return false; /* unbalanced */
		if (*p != '{')
			continue;
		const char *end = strchr(p + 1, '}'), *q = p + 1;
		if (!end || !(isalpha((unsigned char)*q) || *q == '_'))
			return false;
		for (; q < end; q++)
			if (!word_char(*q))
				return false;
		braces = true;
		p = end;
	}
	return braces;
}

static int compare(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The absolute-path scan of the raw COMMAND. */
static int scan_paths(const char *command, const char *const *extra, char *why, size_t whylen)
{
	char *bad[64];
	size_t nbad = 0, url_len = 0;
	const char *url = find_url(command, command, &url_len);

	for (const char *p = command; *p; p++) {
		while (url && p >= url + url_len)
			url = find_url(command, url + url_len, &url_len);
		if (*p != '/' || (url && p >= url))
			continue;
		if (p > command && (p[-1] == ':' || word_char(p[-1])))
			continue;
		if (p - command >= 2 && p[-2] == ':' && p[-1] == '/')
			continue;
		size_t n = strcspn(p + 1, PATH_END);
		if (!n)
			continue;
		char *path = strndup(p, n + 1);
		p += n;
		if (!path)
			return -ENOMEM;
		bool dup = false;
		for (size_t i = 0; i < nbad && !dup; i++)
			dup = !strcmp(bad[i], path);
		if (dup || is_text(path) || allowed_path(path, extra) || nbad == 64)
			free(path);
		else
			bad[nbad++] = path;
	}
	if (!nbad)
		return 0;
	qsort(bad, nbad, sizeof(*bad), compare);
	size_t len = (size_t)snprintf(why, whylen, "Unsafe absolute paths in command: ");
	for (size_t i = 0; i < nbad; i++) {
		if (len < whylen)
			len += (size_t)snprintf(why + len, whylen - len, "%s%s", i ? ", " : "",
						bad[i]);
		free(bad[i]);
	}
	if (len < whylen)
		snprintf(why + len, whylen - len, USE_VIRTUAL);
	return -EPERM;
}

static bool in_list(const char *s, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (!strcmp(s, list[i]))
			return true;
	return false;
}

static bool is_assignment(const char *s)
{
	if (!(isalpha((unsigned char)*s) || *s == '_'))
		return false;
	while (word_char(*s))
		s++;
	return *s == '=';
}

/* cd and pushd may only go to a relative directory or a virtual root. */
static int check_cd(const char *cmd, const struct tokens *t, size_t i, size_t end,
		    const char *const *extra, char *why, size_t whylen)
{
	static const char *const flags[] = { "-L", "-P", "-e", "-@", "--", NULL };
	const char *target = NULL;

	for (; i < end && !target; i++)
		if (!t->v[i].punct && !in_list(t->v[i].text, flags))
			target = t->v[i].text;
	if (target && strcmp(target, "-") && !strchr("$`~", target[0]) &&
	    (target[0] != '/' || virtual_path(target, extra)))
		return 0;
	snprintf(why, whylen, "Unsafe working directory change in command: %s%s%s" USE_VIRTUAL, cmd,
		 target ? " " : "", target ? target : "");
	return -EPERM;
}

/* The token rules: traversal, cd/pushd targets, a bare "/" for tools. */
static int check_tokens(const struct tokens *t, const char *const *extra, char *why, size_t whylen)
{
	static const char *const keywords[] = {
		"!",	"{",	"case",	 "do",	  "elif", "else", "for",  "if", "select",
		"then", "time", "until", "while", "}",	  "done", "esac", "fi", NULL,
	};
	static const char *const tools[] = {
		"awk", "cat",  "cp", "du", "find", "grep", "head", "less", "ln",
		"ls",  "more", "mv", "rm", "sed",  "tail", "tar",  NULL,
	};
	size_t url_len;

	for (size_t i = 0; i < t->n; i++)
		if (!t->v[i].punct && has_dotdot(t->v[i].text) &&
		    !find_url(t->v[i].text, t->v[i].text, &url_len)) {
			snprintf(why, whylen, "Access denied: path traversal detected");
			return -EPERM;
		}
	bool command_pos = true;
	for (size_t i = 0; i < t->n; i++) {
		const struct token *k = &t->v[i];
		if (k->punct) {
			if (strpbrk(k->text, "<>"))
				i++; /* a redirection: its target is no command */
			else
				command_pos = true;
			continue;
		}
		if (!command_pos)
			continue;
		if (in_list(k->text, keywords) || is_assignment(k->text) ||
		    !strcmp(k->text, "command") || !strcmp(k->text, "builtin"))
			continue;
		command_pos = false;
		size_t end = i + 1;
		while (end < t->n && !(t->v[end].punct && !strpbrk(t->v[end].text, "<>")))
			end++;
		if (!strcmp(k->text, "cd") || !strcmp(k->text, "pushd")) {
			if (check_cd(k->text, t, i + 1, end, extra, why, whylen) < 0)
				return -EPERM;
		} else if (in_list(k->text, tools)) {
			for (size_t a = i + 1; a < end; a++)
				if (!t->v[a].punct && !strcmp(t->v[a].text, "/")) {
					snprintf(why, whylen,
						 "Unsafe absolute paths in command: /" USE_VIRTUAL);
					return -EPERM;
				}
		}
	}
	return 0;
}

/* "file://..." anywhere, any case, not inside a word. */
static const char *find_file_url(const char *s)
{
	for (const char *p = s; (p = strcasestr(p, "file://")); p++)
		if ((p == s || !word_char(p[-1])) && p[7] && !isspace((unsigned char)p[7]))
			return p;
	return NULL;
}

/* "$( ... cd" or pushd before the first ')'. */
static bool cd_in_substitution(const char *s)
{
	static const char *const words[] = { "cd", "pushd" };

	for (const char *p = strstr(s, "$("); p; p = strstr(p + 2, "$(")) {
		const char *end = strchr(p + 2, ')');
		size_t span = end ? (size_t)(end - p - 2) : strlen(p + 2);
		for (size_t w = 0; w < 2; w++) {
			size_t n = strlen(words[w]);
			for (const char *q = p + 2; q + n <= p + 2 + span; q++)
				if (!strncmp(q, words[w], n) && (q == p + 2 || !word_char(q[-1])) &&
				    !word_char(q[n]))
					return true;
		}
	}
	return false;
}

int guard_check(const char *command, const char *const *extra, char *why, size_t whylen)
{
	const char *url = find_file_url(command);
	struct tokens t = { 0 };
	int r;

	if (url) {
		snprintf(why, whylen, "Unsafe file:// URL in command: %.*s" USE_VIRTUAL,
			 (int)strcspn(url, " \t\r\n\v\f"), url);
		return -EPERM;
	}
	if (cd_in_substitution(command)) {
		snprintf(why, whylen,
			 "Unsafe working directory change in command substitution" USE_VIRTUAL);
		return -EPERM;
	}
	r = tokenize(command, &t);
	if (r == -EINVAL) {
		tokens_free(&t);
		t = (struct tokens){ 0 };
		r = split_blanks(command, &t);
	}
	if (r == 0)
		r = check_tokens(&t, extra, why, whylen);
	tokens_free(&t);
	if (r == -ENOMEM) {
		snprintf(why, whylen, "out of memory");
		return -EPERM;
	}
	return r < 0 ? r : scan_paths(command, extra, why, whylen);
}
