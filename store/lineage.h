/* lineage.h - where the files at a run's end were when it began, from
 * the changes of names the views' journal recorded during the run, told
 * in their order (docs/changes.md, "The journal").
 *
 * A name is followed as the file it names: a rename moves the file and
 * everything below it (a directory), an exchange swaps two, and the
 * name it left is free: what a removal, a rename away or a creation
 * leaves at a name is new, whatever name it takes later. One exception
 * follows what people call one file: a file made during the run and
 * renamed over another (an editor's save, `sed -i`) continues the file
 * it replaced, if that was one the run began with.
 *
 * A name no change reached is its own: the lineage holds only the names
 * the changes named, and the directories above them, so its cost follows
 * the run's changes of names, not the size of the tree.
 */
#ifndef SBX_LINEAGE_H
#define SBX_LINEAGE_H

#include <limits.h>
#include <stdbool.h>

struct lineage;

/* Whether a name held a file or symlink when the run began (the first
 * snapshot's knowledge): a save continues only what was there. */
typedef bool (*lineage_exists)(void *arg, const char *origin);

/* NULL if out of memory. With EXISTS (and ARG) NULL, every name is taken
 * to have held one. */
struct lineage *lineage_new(lineage_exists exists, void *arg);
void lineage_free(struct lineage *l);
static inline void lineage_freep(struct lineage **l)
{
	lineage_free(*l);
}

/* Records that FROM was renamed to TO (over what was there). Returns 0
 * or -ENOMEM, as do the two below. */
int lineage_rename(struct lineage *l, const char *from, const char *to);
/* Records that A and B were exchanged (RENAME_EXCHANGE). */
int lineage_exchange(struct lineage *l, const char *a, const char *b);
/* Records that PATH was removed, or made anew (a file, symlink, directory
 * or link made there): what it names from now on was not there when the
 * run began. */
int lineage_new_at(struct lineage *l, const char *path);

/* Writes into OUT the name the file at PATH had when the run began and
 * returns 1; returns 0 if the run made it, or -ENAMETOOLONG. */
int lineage_origin(const struct lineage *l, const char *path, char out[PATH_MAX]);

#endif
