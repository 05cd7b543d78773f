/* env.c - see env.h. */
#include "env.h"
#include "common/utf8.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const secret_words[] = {
	"KEY", "SECRET", "TOKEN", "PASS", "CREDENTIAL", "DSN",
};

static const char *const secret_names[] = {
	"DATABASE_URL",
	"DATABASE_URI",
	"REDIS_URL",
	"MONGODB_URI",
	"MONGO_URL",
	"AMQP_URL",
	"RABBITMQ_URL",
	"POSTGRES_URL",
	"POSTGRESQL_URL",
	"MYSQL_URL",
	"CLICKHOUSE_URL",
	"CONNECTION_STRING",
	"CONN_STR",
	"GH_PAT",
	"GITHUB_PAT",
	"MYSQL_PWD",
	"REDISCLI_AUTH",
	"REDIS_AUTH",
	"PGSERVICEFILE",
	"SSH_AUTH_SOCK",
	/* The store of sbx's own programs: a PostgreSQL URL may hold a
	 * password, and a command has no business with the records. */
	"SBX_STORE",
};

bool env_secret_name(const char *name)
{
	char upper[256];
	size_t n = strlen(name);

	if (n >= sizeof(upper))
		return true; /* nobody needs such a name; not worth the risk */
	for (size_t i = 0; i <= n; i++)
		upper[i] = (char)toupper((unsigned char)name[i]);
	for (size_t i = 0; i < COUNT(secret_words); i++)
		if (strstr(upper, secret_words[i]))
			return true;
	for (size_t i = 0; i < COUNT(secret_names); i++)
		if (!strcmp(upper, secret_names[i]))
			return true;
	return false;
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

/* The length of the name of "K=V". */
static size_t name_len(const char *kv)
{
	const char *eq = strchr(kv, '=');

	return eq ? (size_t)(eq - kv) : strlen(kv);
}

static bool named_in(const char *kv, char *const *list, size_t n)
{
	size_t len = name_len(kv);

	for (size_t i = 0; i < n; i++)
		if (name_len(list[i]) == len && !strncmp(kv, list[i], len))
			return true;
	return false;
}

char **env_build(char *const *base, char *const *extra, size_t n)
{
	size_t nbase = 0, k = 0;

	while (base && base[nbase])
		nbase++;
	char **env = calloc(nbase + n + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < nbase; i++) {
		char name[256];
		size_t len = name_len(base[i]);
		if (len >= sizeof(name))
			continue;
		memcpy(name, base[i], len);
		name[len] = '\0';
		if (env_secret_name(name) || named_in(base[i], extra, n))
			continue;
		if (!(env[k++] = strdup(base[i])))
			goto fail;
	}
	for (size_t i = 0; i < n; i++)
		if (!(env[k++] = strdup(extra[i])))
			goto fail;
	return env;
fail:
	env_free(env);
	return NULL;
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

/* Characters, not bytes, count against the limit. */
static size_t utf8_chars(const unsigned char *s, size_t n)
{
	size_t chars = 0;

	for (size_t i = 0; i < n; i++)
		chars += (s[i] & 0xc0) != 0x80;
	return chars;
}

int identity_prefix(const char *id, size_t id_len, char **prefix)
{
	const unsigned char *u = (const unsigned char *)id;

	if (!id) {
		*prefix = strdup("");
	} else if (id_len == 0 || !printable_utf8(u, id_len) ||
		   utf8_chars(u, id_len) > IDENTITY_MAX) {
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
