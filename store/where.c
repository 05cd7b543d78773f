/* where.c - where a home's records are kept (store.h, store_where()):
 * $SBX_STORE, else `store` in HOME/sbx.conf, else HOME/sbx.db. */
#include "store.h"

#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct found {
	char value[STORE_TARGET_MAX];
	bool set, too_long;
};

/* The top-level `store` key (before any section); the rest of the file
 * is the broker's (exec/config.c checks all of it). */
static int on_pair(void *arg, const char *section, const char *name, const char *value)
{
	struct found *f = arg;

	if (!*section && !strcmp(name, "store")) {
		f->set = true;
		f->too_long = strlen(value) >= sizeof(f->value);
		snprintf(f->value, sizeof(f->value), "%s", value);
	}
	return 1;
}

bool store_target_is_postgres(const char *target)
{
	return !strncmp(target, "postgresql://", 13) || !strncmp(target, "postgres://", 11) ||
	       (target[0] != '/' && strchr(target, '=') != NULL);
}

/* TARGET with its passwords (user:PASSWORD@ in a URI, password=VALUE in
 * a keyword string or a URI's query) replaced by MASK, or dropped with
 * their key where MASK is NULL. */
static void without_password(const char *target, const char *mask, char *out, size_t size)
{
	const char *at = NULL, *colon = NULL;
	char buf[STORE_TARGET_MAX];
	bool uri = !strncmp(target, "postgres", 8) && strstr(target, "://");
	/* A URI's parameters end at '&' (one in a value is %26). */
	const char *ends = uri ? " \t&" : " \t";

	if (uri) {
		const char *auth = strstr(target, "://") + 3;
		at = strchr(auth, '@');
		colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
	}
	if (colon) /* postgresql://user:PASSWORD@host */
		snprintf(buf, sizeof(buf), "%.*s%s%s%s", (int)(colon - target), target,
			 mask ? ":" : "", mask ? mask : "", at);
	else
		snprintf(buf, sizeof(buf), "%s", target);
	const char *pw = strstr(buf, "password=");
	if (pw && mask) /* password=VALUE, to the parameter's end */
		snprintf(out, size, "%.*s%s%s", (int)(pw + 9 - buf), buf, mask,
			 pw + 9 + strcspn(pw + 9, ends));
	else if (pw) { /* the pair and one separator go */
		const char *end = pw + 9 + strcspn(pw + 9, ends);
		if (*end)
			end++;
		else if (pw > buf && strchr(" \t&?", pw[-1]))
			pw--;
		snprintf(out, size, "%.*s%s", (int)(pw - buf), buf, end);
	} else
		snprintf(out, size, "%s", buf);
}

void store_target_shown(const char *target, char *out, size_t size)
{
	without_password(target, "***", out, size);
}

void store_target_public(const char *target, char *out, size_t size)
{
	without_password(target, NULL, out, size);
}

bool store_target_ok(const char *value)
{
	return !strcmp(value, "sqlite") || store_target_is_postgres(value);
}

int store_where(const char *home, char *target, size_t size, char *err, size_t errlen)
{
	const char *env = getenv(STORE_ENV);
	struct found f = { 0 };
	char conf[PATH_MAX];
	const char *from = STORE_ENV;

	if (env && *env) {
		f.set = true;
		f.too_long = strlen(env) >= sizeof(f.value);
		snprintf(f.value, sizeof(f.value), "%s", env);
	} else {
		snprintf(conf, sizeof(conf), "%s/sbx.conf", home);
		FILE *fp = fopen(conf, "re");
		if (fp) {
			ini_parse_file(fp, on_pair, &f); /* syntax: exec/config.c's to say */
			fclose(fp);
		}
		from = conf;
	}
	if (f.set && (f.too_long || !store_target_ok(f.value))) {
		snprintf(err, errlen,
			 "store in %s: expected sqlite, a postgresql:// URL or a libpq keyword "
			 "string%s",
			 from, f.too_long ? " (this one is too long)" : "");
		return -EINVAL;
	}
	if (f.set && strcmp(f.value, "sqlite")) {
		if (strlen(f.value) >= size)
			return -ENAMETOOLONG;
		snprintf(target, size, "%s", f.value);
		return 0;
	}
	if ((size_t)snprintf(target, size, "%s/%s", home, STORE_FILE) >= size) {
		snprintf(err, errlen, "the home path is too long");
		return -ENAMETOOLONG;
	}
	return 0;
}
