/* refusal.c - see refusal.h. */
#include "refusal.h"
#include "common/cleanup.h"
#include "common/hash.h"
#include "store/diff.h"
#include "store/snapshot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

char *refusal_diff(struct store *s, const struct store_audit *a, const char **why)
{
	_cleanup_(freep) char *old = NULL, *new = NULL;
	size_t oldlen, newlen;
	struct diff d;

	if (!a->base.hashed || store_blob_get(s, a->base.sha256, &old, &oldlen) < 0) {
		*why = "the text of the version read was not kept (binary, sensitive, over 256 KiB, or not hashed yet)";
		return NULL;
	}
	if (!a->current.hashed || store_blob_get(s, a->current.sha256, &new, &newlen) < 0) {
		*why = "the text of the version found was not kept (binary, sensitive or over 256 KiB)";
		return NULL;
	}
	/* A text is kept by its hash, whichever file had it, and a store may
	 * hold texts kept before the content rules: the rules of a change
	 * summary again, on the name and on both texts. */
	if (snapshot_sensitive(a->path) || snapshot_text_secret(old, oldlen) ||
	    snapshot_text_secret(new, newlen)) {
		*why = "sensitive: the name or the content looks like it holds a secret";
		return NULL;
	}
	if (diff_unified(old, oldlen, new, newlen, a->path, &d) < 0) {
		*why = "out of memory";
		return NULL;
	}
	if (!*d.text)
		*why = "the same lines (only metadata changed)";
	return d.text;
}

/* The latest refusal of a path: a copy of the row, its strings owned. */
struct latest {
	const char *path;
	struct store_audit a;
	bool found;
};

static int take_latest(void *arg, const struct store_audit *a)
{
	struct latest *l = arg;

	if (a->allowed || strcmp(a->path, l->path) || (l->found && a->last_ns < l->a.last_ns))
		return 0;
	l->a = *a;
	l->a.user = l->a.thread = l->a.op = l->a.comm = l->a.reason = l->a.mode = NULL;
	l->a.path = l->path;
	l->found = true;
	return 0;
}

/* V as "N bytes, modified TIME" into BUF. */
static const char *version_text(const struct store_version *v, char *buf, size_t size)
{
	time_t t = (time_t)(v->mtime_ns / 1000000000);
	struct tm tm;
	char when[32];

	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
	snprintf(buf, size, "%lld bytes, modified %s", (long long)v->size, when);
	return buf;
}

int refusal_explain(struct store *s, const char *user, const char *thread, const char *path,
		    char **text)
{
	struct latest l = { .path = path };
	const char *why = NULL;
	char read[64], found[64];

	*text = NULL;
	int r = store_audit_each(s, user, thread, take_latest, &l);
	if (r < 0 || !l.found || !l.a.base.known || !l.a.current.known)
		return r < 0 ? r : 0;
	_cleanup_(freep) char *diff = refusal_diff(s, &l.a, &why);
	if (asprintf(text, "The version you read: %s. The version there now: %s.\n%s%s%s",
		     version_text(&l.a.base, read, sizeof(read)),
		     version_text(&l.a.current, found, sizeof(found)),
		     diff && *diff ? "What changed since:\n" : "(no diff: ",
		     diff && *diff ? diff
		     : why	   ? why
				   : "the same lines",
		     diff && *diff ? "" : ")") < 0) {
		*text = NULL;
		return -ENOMEM;
	}
	return 0;
}
