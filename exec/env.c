/* env.c - see env.h. */
#include "env.h"
#include "identity.h"
#include "common/cleanup.h"
#include "common/utf8.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The sandbox describes itself: the broker's home, user and PATH are
 * host paths and names it does not have. */
static const char *const sandbox_own[] = {
	"PATH=" ENV_SANDBOX_PATH,
	"HOME=" SANDBOX_HOME,
	"USER=" SANDBOX_USER,
	"LOGNAME=" SANDBOX_USER,
};

/* On the host, the command runs as the broker's user, in its home. */
static const char *const host_kept[] = { "PATH", "HOME", "USER", "LOGNAME" };

/* Either way: the locale, the terminal, the time zone; the reference's
 * identity variables. NAME, or PREFIX* for every name starting so. */
static const char *const kept[] = {
	"LANG", "LC_*", "TERM", "TZ", "DEERFLOW_CHANNEL_USER_ID", "DEERFLOW_USER_ID",
};

/* The length of the name of "K=V". */
static size_t name_len(const char *kv)
{
	const char *eq = strchr(kv, '=');

	return eq ? (size_t)(eq - kv) : strlen(kv);
}

static bool same_name(const char *a, const char *b)
{
	size_t len = name_len(a);

	return name_len(b) == len && !strncmp(a, b, len);
}

/* Whether the name of "K=V" is PATTERN: NAME, or PREFIX* for every name
 * starting so. */
static bool name_matches(const char *kv, const char *pattern)
{
	size_t len = strlen(pattern);

	if (len && pattern[len - 1] == '*')
		return name_len(kv) >= len - 1 && !strncmp(kv, pattern, len - 1);
	return same_name(kv, pattern);
}

static bool named_in(const char *kv, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (name_matches(kv, list[i]))
			return true;
	return false;
}

/* Sets "K=V" (a copy) in ENV of *N entries, over one of the same name. */
static int put(char **env, size_t *n, const char *kv)
{
	char *copy = strdup(kv);
	size_t i = 0;

	if (!copy)
		return -ENOMEM;
	while (i < *n && !same_name(env[i], kv))
		i++;
	if (i == *n)
		(*n)++;
	free(env[i]);
	env[i] = copy;
	return 0;
}

char **env_build(char *const *base, bool host, char *const *pass, char *const *extra, size_t n)
{
	size_t nbase = 0, npass = 0, k = 0;
	int r = 0;

	while (base && base[nbase])
		nbase++;
	while (pass && pass[npass])
		npass++;
	/* One entry a name: at most the sandbox's own, BASE's and EXTRA's. */
	_cleanup_(env_freep) char **env = calloc(COUNT(sandbox_own) + nbase + n + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; !host && i < COUNT(sandbox_own) && r == 0; i++)
		r = put(env, &k, sandbox_own[i]);
	for (size_t i = 0; i < nbase && r == 0; i++)
		if (strchr(base[i], '=') &&
		    ((host && named_in(base[i], host_kept, COUNT(host_kept))) ||
		     named_in(base[i], kept, COUNT(kept)) ||
		     named_in(base[i], (const char *const *)pass, npass)))
			r = put(env, &k, base[i]);
	for (size_t i = 0; i < n && r == 0; i++)
		r = put(env, &k, extra[i]);
	return r == 0 ? TAKE_PTR(env) : NULL;
}

void env_free(char **env)
{
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}

char *env_exports(char *const *env)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	for (size_t i = 0; env && env[i]; i++) {
		size_t n = name_len(env[i]);
		char *q = env[i][n] ? shell_quote(env[i] + n + 1) : NULL;
		if (q)
			fprintf(f, "export %.*s=%s; ", (int)n, env[i], q);
		free(q);
	}
	if (fclose(f) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

char *shell_quote(const char *s)
{
	size_t n = 2;

	for (const char *p = s; *p; p++)
		n += *p == '\'' ? 4 : 1;
	char *q = malloc(n + 1), *o = q;
	if (!q)
		return NULL;
	*o++ = '\'';
	for (const char *p = s; *p; p++) {
		if (*p == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else {
			*o++ = *p;
		}
	}
	*o++ = '\'';
	*o = '\0';
	return q;
}

/* Valid UTF-8 without control characters. */
static bool printable_utf8(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		int len = utf8_seq(s + i, n - i);
		if (len <= 0 || (len == 1 && (s[i] < 0x20 || s[i] == 0x7f)))
			return false;
		i += (size_t)len;
	}
	return true;
}

int identity_prefix(const char *id, size_t id_len, char **prefix)
{
	const unsigned char *u = (const unsigned char *)id;

	if (!id) {
		*prefix = strdup("");
	} else if (id_len == 0 || !printable_utf8(u, id_len) ||
		   utf8_nchars(id, id_len) > IDENTITY_MAX) { /* characters, not bytes */
		*prefix = strdup("unset DEERFLOW_CHANNEL_USER_ID; ");
	} else {
		/* Exactly ID_LEN bytes: ID need not end there. */
		char *copy = strndup(id, id_len);
		char *q = copy ? shell_quote(copy) : NULL;
		if (!q || asprintf(prefix, "export DEERFLOW_CHANNEL_USER_ID=%s; ", q) < 0)
			*prefix = NULL;
		free(q);
		free(copy);
	}
	return *prefix ? 0 : -ENOMEM;
}
