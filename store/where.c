/* where.c - where a home's records are kept (store.h, store_where()):
 * $SBX_STORE, else `store` in HOME/sbx.conf (common/config.c reads it),
 * else HOME/sbx.db; and a store's name as it may be shown. */
#include "store.h"
#include "common/cleanup.h"
#include "common/home.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int store_where(const char *home, char *target, size_t size, char *err, size_t errlen)
{
	_cleanup_(config_free) struct config c = { 0 };
	const char *set = getenv(STORE_ENV);
	char conf[PATH_MAX];
	const char *from = STORE_ENV;

	if (!set || !*set) {
		snprintf(conf, sizeof(conf), "%s/" HOME_CONFIG, home);
		/* What else the file says is not the store's: a file that is not
		 * there, or cannot be read, names none. */
		if (config_load_top(conf, &c, err, errlen) == -ENOMEM)
			return -ENOMEM;
		set = c.store;
		from = conf;
	}
	bool too_long = set && strlen(set) >= STORE_TARGET_MAX;
	if (set && (too_long || !store_target_ok(set))) {
		snprintf(err, errlen,
			 "store in %s: expected sqlite, a postgresql:// URL or a libpq keyword "
			 "string%s",
			 from, too_long ? " (this one is too long)" : "");
		return -EINVAL;
	}
	if (set && strcmp(set, "sqlite")) {
		if (strlen(set) >= size)
			return -ENAMETOOLONG;
		snprintf(target, size, "%s", set);
		return 0;
	}
	if ((size_t)snprintf(target, size, "%s/%s", home, HOME_STORE) >= size) {
		snprintf(err, errlen, "the home path is too long");
		return -ENAMETOOLONG;
	}
	return 0;
}
