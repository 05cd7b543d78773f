/* journal.h - the view's change journal: every create, content change,
 * mode change, delete, rename, exchange, symlink, hard link, mkdir and
 * rmdir made through the view under user-data/workspace and
 * user-data/outputs, with its time and caller, queued to the store
 * writer (never written on the request path). Runs read it to name
 * renames and the process behind each change (docs/changes.md).
 * Uploads, skills and other roots are not journaled.
 *
 * While a run of the thread is open, the first change the view makes to
 * an existing file is preceded by its pre-image: the file as a snapshot
 * would record it (metadata; the SHA-256 of a file up to 256 KiB; the text
 * itself, stored by its SHA-256). A run's summary then knows what the file
 * was even where its scans did not reach. `sbx run` opens and closes runs
 * in a mounted view through attributes of its top directory (control.h).
 *
 * Its state (the open run, the last caller's name) is struct journal,
 * private to journal.c: the view holds it (v->journal, from
 * journal_new()), every function below needs it.
 */
#ifndef SBX_JOURNAL_H
#define SBX_JOURNAL_H

#include "ops.h"
#include "common/control.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct view;
struct inode;
struct journal;

/* A journal with no run open, for USER's THREAD in HOME (its store, its
 * directory of pre-images). NULL if out of memory. */
struct journal *journal_new(const char *home, const char *user, const char *thread);
void journal_free(struct journal *j);

/* Records OP on DIR/NAME (NAME NULL: DIR itself), and for "rename" and
 * "exchange" its other name DIR2/NAME2, made by the caller of REQ. */
void journal_note(struct view *v, fuse_req_t req, const char *op, struct inode *dir,
		  const char *name, struct inode *dir2, const char *name2);

/* Before the view first changes file INO, or removes, moves or replaces
 * the file or symlink DIR/NAME (directory fd DFD; GOING: the name is about
 * to be removed or replaced), while a run is open: records its pre-image.
 * Cheap when no run is open or INO's was taken already. */
void journal_preimage(struct view *v, fuse_req_t req, struct inode *ino);
void journal_preimage_at(struct view *v, fuse_req_t req, struct inode *dir, int dfd,
			 const char *name, bool going);

/* INO is a file the view just created: it needs no pre-image (the
 * "create" event says the path was free). */
void journal_created(struct view *v, struct inode *ino);

/* What undo needs (docs/changes.md, "Undo"), kept while a run is open in
 * the run's directory of pre-images ($SBX_HOME/users/U/threads/T/.undo/
 * BEGUN_NS, outside every view) and told to the journal as a "keep" event
 * each. The caller is REQ's, or process PID's where REQ is NULL.
 *
 * Before file INO's content changes in place through FD (the file itself,
 * not a stage): a copy of it with its attributes (a reflink where the
 * filesystem can), once per file and run. */
void journal_keep_content(struct view *v, fuse_req_t req, pid_t pid, struct inode *ino, int fd);
/* Before DIR/NAME (directory fd DFD) loses its name (renamed over,
 * replaced by a publication, a directory removed; a file's removal is
 * journal_remove_kept()'s): the file or symlink itself, by a hard link
 * (the same inode also for a file with other names: what they change of
 * it is kept on its own), or a directory's attributes. */
void journal_keep_going(struct view *v, fuse_req_t req, pid_t pid, struct inode *dir, int dfd,
			const char *name);
/* Removes DIR/NAME (directory fd DFD; VICTIM: what a stat found there,
 * or NULL), as unlinkat() would. While a run is open and NAME is not a
 * directory, the removal is a rename into the run's directory of
 * pre-images (one call where a link and an unlink would be two, and no
 * inode is freed), told to the journal as kept: returns 1. If that rename
 * fails, unlinkat() removes it, and the log says it went unkept: returns
 * 0. A file or symlink the run made through the view at NAME, never
 * renamed and with no other name, is not kept either (0): the run began
 * and ends without it, so undo needs nothing of it. Returns -errno if the
 * removal fails. */
int journal_remove_kept(struct view *v, fuse_req_t req, struct inode *dir, int dfd,
			const char *name, const struct stat *victim);
/* Before the first entry of directory DIR (fd DFD) is made, removed or
 * renamed: its attributes (so its times come back too), once per run. */
void journal_keep_dir(struct view *v, fuse_req_t req, struct inode *dir, int dfd);
/* Before INO (any fd FD of it) gets other attributes: those it has. */
void journal_keep_attrs(struct view *v, fuse_req_t req, struct inode *ino, int fd);
/* Before a publication replaces file INO at DIR/NAME with its stage: the
 * file, unless what it was when the run began is kept already (a file
 * the run made or published before, or one kept by a copy). */
void journal_keep_replaced(struct view *v, pid_t pid, struct inode *ino, struct inode *dir, int dfd,
			   const char *name);
/* The file or directory whose stat is ST (born at *BORN, NULL if not
 * known) was just renamed through the view: if the open run made it, its
 * removal is kept from now on (the rename's undo needs it at its new
 * name). */
void journal_renamed(struct view *v, const struct stat *st, const struct timespec *born);
/* A publication just made a new file (attributes AFTER, birth time BORN;
 * each NULL if not known) of INO, whose identity is still the replaced
 * file's: its content needs no keeping, its pre-image is the replaced
 * one's, and if the run made the replaced one (and never renamed it), the
 * new one is as much the run's own (journal_remove_kept()). The new
 * file's marks (runmarks.h) say so, as INO's fields do, for when the
 * kernel forgets INO. */
void journal_published(struct view *v, struct inode *ino, const struct stat *after,
		       const struct timespec *born);

/* From now on, pre-images are taken for the run opened at SINCE (0: none
 * is open), as the caller of REQ announced (NULL: the daemon itself, at
 * mount). */
void journal_run(struct view *v, fuse_req_t req, int64_t since);

/* Handles the control attributes (control.h): true if NAME is one of
 * them, with the result in *RESULT (a size, or -errno). */
bool journal_control(struct view *v, fuse_req_t req, bool set, const char *name, const char *value,
		     size_t size, char *out, ssize_t *result);

#endif
