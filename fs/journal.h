/* journal.h - the view's change journal: every create, content change,
 * mode change, delete, rename and symlink made through the view under
 * user-data/workspace and user-data/outputs, with its time and caller,
 * queued to the store writer (never written on the request path). Runs
 * read it to name renames and the process behind each change
 * (docs/changes.md). Uploads, skills and other roots are not journaled. */
#ifndef SBX_JOURNAL_H
#define SBX_JOURNAL_H

#include "ops.h"

struct view;
struct inode;

/* Records OP on DIR/NAME (NAME NULL: DIR itself), and for "rename" its
 * new name DIR2/NAME2, made by the caller of REQ. */
void journal_note(struct view *v, fuse_req_t req, const char *op,
		  struct inode *dir, const char *name, struct inode *dir2,
		  const char *name2);

#endif
