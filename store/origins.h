/* origins.h - an overlay's origins (docs/try.md): for each project path
 * the agent first touched (a copy-up, a whiteout), the project's object
 * there at that moment.
 *
 * The first touch of a path writes its row and no later one moves it
 * (store_origin_put() keeps the row there), so a row is what the review
 * and the apply judge the project's present against: "changed on the
 * project since". A regular file copied up has the SHA-256 of the content
 * copied, and that content is kept (blobs.c) when it is text a diff can
 * show, the base of a three-way merge; a removed object has its version
 * only (reading it would cost an rm -rf the whole tree).
 */
#ifndef SBX_STORE_ORIGINS_H
#define SBX_STORE_ORIGINS_H

#include "store.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum origin_kind {
	ORIGIN_COPY = 1,     /* copied up before its first change */
	ORIGIN_WHITEOUT = 2, /* removed: the layer whites it out */
};

struct store_origin {
	const char *path; /* below the project, "src/a.c" */
	enum origin_kind kind;
	mode_t mode; /* the project's object's */
	int64_t dev, ino, size, mtime_ns, ctime_ns;
	bool hashed; /* sha256 holds the content copied (a regular file) */
	uint8_t sha256[SHA256_BYTES];
	int64_t at_ns;
};

/* Records O for USER's THREAD unless its path has a row: 1 if written,
 * 0 if one was there, or -errno. */
int store_origin_put(struct store *s, const char *user, const char *thread,
		     const struct store_origin *o);
/* Records O for USER's THREAD in place of its path's row, if any: after
 * an apply wrote the path, its origin is what the apply left there. */
int store_origin_set(struct store *s, const char *user, const char *thread,
		     const struct store_origin *o);
/* Drops PATH's row of USER's THREAD, if any. */
int store_origin_drop(struct store *s, const char *user, const char *thread, const char *path);
/* Calls FN for each row of USER's THREAD, by path; stops at FN's first
 * non-zero return, which becomes the result. FN may not use S. */
int store_origins_each(struct store *s, const char *user, const char *thread,
		       int (*fn)(void *arg, const struct store_origin *o), void *arg);
/* Drops every row of USER's THREAD (the overlay discarded). */
int store_origins_drop(struct store *s, const char *user, const char *thread);

#endif
