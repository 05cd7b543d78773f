/* walk.h - a directory tree of the view walked as the reference's
 * os.walk(top) walks it for glob and grep: top-down, ignored names
 * (tool/ignore.h) left out unless the walk chooses its own, each directory's subdirectories (symlinks
 * to directories among them, not entered) before its other entries, then
 * each subdirectory in turn. Entries come sorted by name (os.walk's
 * order is the directory's: sorted, a truncated result is the same on
 * every run). A directory that cannot be read is passed over, as
 * os.walk does. */
#ifndef SBX_TOOL_WALK_H
#define SBX_TOOL_WALK_H

#include <stdbool.h>

struct walk_entry {
	const char *rel; /* below the view's root */
	const char *sub; /* below the walk's top: what patterns match */
	const char *name;
	int dirfd;   /* its directory, open while the callback runs */
	bool is_dir; /* a directory, or a symlink to one */
	bool is_link;
};

/* A callback's non-zero return stops the walk: tree_walk() returns it. */
typedef int (*walk_fn)(void *arg, const struct walk_entry *e);

/* Whether entry E is walked at all: a directory not kept is not entered. */
typedef bool (*walk_keep_fn)(void *arg, const struct walk_entry *e);

struct tree_walk {
	int root;	 /* the view's mount point */
	walk_fn on_dir;	 /* each subdirectory (NULL: none) */
	walk_fn on_file; /* each other entry */
	void *arg;
	int max_depth;	   /* the levels to read (1: TOP's entries); 0: all */
	walk_keep_fn keep; /* NULL: all but the ignored names (ignore.h) */
};

/* Walks TOP (resolved, below the root). Returns 0, a callback's value,
 * or -ENOMEM. */
int tree_walk(const struct tree_walk *w, const char *top);

#endif
