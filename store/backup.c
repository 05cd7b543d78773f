/* backup.c - a copy of a live store (store.h, store_backup()): SQLite's
 * online backup into a file of its own, put in place whole or not at
 * all. A PostgreSQL store is pg_dump's to copy. */
#include "db.h"
#include "store.h"
#include "common/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void db_closep(struct db **db)
{
	db_close(*db);
}

/* Syncs the directory of PATH, so that a name just made there lasts. */
static int sync_dir_of(const char *path)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", path);
	_cleanup_(closep) int fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 || fsync(fd) < 0 ? -errno : 0;
}

/* Puts TMP, a whole copy, in FILE's place: a new name (link), or over
 * one with FORCE (rename). */
static int put_in_place(const char *tmp, const char *file, bool force, char *err, size_t errlen)
{
	int r = force ? rename(tmp, file) : link(tmp, file);

	if (r < 0) {
		r = -errno;
		if (r == -EEXIST)
			snprintf(err, errlen, "%s exists: not replaced (--force replaces it)",
				 file);
		else
			snprintf(err, errlen, "cannot make %s: %s", file, strerror(-r));
		return r;
	}
	if ((r = sync_dir_of(file)) < 0)
		snprintf(err, errlen, "cannot sync the directory of %s: %s", file, strerror(-r));
	return r;
}

int store_backup(const char *target, const char *file, bool force, char *err, size_t errlen)
{
	_cleanup_(db_closep) struct db *db = NULL;
	char tmp[PATH_MAX];
	int r;

	if (store_target_is_postgres(target)) {
		snprintf(err, errlen, "a PostgreSQL store is copied by pg_dump");
		return -ENOTSUP;
	}
	if (access(target, F_OK) < 0) { /* opening would make it */
		r = -errno;
		snprintf(err, errlen, "%s: %s", target,
			 r == -ENOENT ? "no store there yet: nothing to copy" : strerror(-r));
		return r;
	}
	if ((r = db_open(DB_SQLITE, target, &db, err, errlen)) < 0)
		return r;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp-XXXXXX", file) >= sizeof(tmp)) {
		snprintf(err, errlen, "%s: the path is too long", file);
		return -ENAMETOOLONG;
	}
	/* The copy is made under a name of its own: FILE is never a half
	 * copy, whatever happens on the way. */
	_cleanup_(closep) int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot make a file beside %s: %s", file, strerror(-r));
		return r;
	}
	char why[256];
	if ((r = db_backup(db, tmp, why, sizeof(why))) < 0)
		snprintf(err, errlen, "cannot copy %s: %s", target, why);
	else if (fsync(fd) < 0)
		snprintf(err, errlen, "cannot sync %s: %s", tmp, strerror(-(r = -errno)));
	else
		r = put_in_place(tmp, file, force, err, errlen);
	unlink(tmp); /* after a link or on failure; gone already after a rename */
	return r;
}
