/* walk.h - the entries of a directory, one call each. */
#ifndef SBX_WALK_H
#define SBX_WALK_H

#include <sys/stat.h>

/* Calls FN(ARG, DIRFD, NAME, ST) for each entry of directory DIRFD but
 * "." and "..", with the entry's attributes (links not followed); an
 * entry whose attributes cannot be read is skipped. DIRFD, opened for
 * reading, is taken: it is closed at the end. FN returns 0 to go on.
 * Returns 0, FN's non-zero value, or -errno if DIRFD cannot be read. */
int dir_each(int dirfd, int (*fn)(void *arg, int dirfd, const char *name, const struct stat *st),
	     void *arg);

#endif
