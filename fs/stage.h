/* stage.h - atomic staged writes.
 *
 * A change to an existing regular file through a handle that may stage
 * (opened for writing without O_APPEND, one link, staging on, and what
 * ops_file.c's may_stage() asks: not set-id, a directory the writer may write)
 * goes to a private copy, the stage, made in a staging area on the same
 * filesystem as the file: an O_TMPFILE (no name, so a crash leaves nothing behind)
 * holding the original's owner, group, mode, ACLs and other xattrs, then
 * its content (FICLONE where the filesystem can, else copy_file_range).
 * Publication (change_publish(), ops_change.c, in the order written
 * there) renames the stage over the file's name: at the last close
 * of the file's write handles that stage (FLUSH, so close() returns its
 * error; one writing in place sends none and does not count), at
 * fsync, or at the last release (mmap writers). Until then the host sees
 * the old file, and every reader through the view the stage: reads,
 * attributes and further writes of any handle of the file use it.
 *
 * A save never replaces a version its writers did not start from: the
 * version the file had when a writer opened it while it had no
 * unpublished stage, moved along by the view's own changes to it. If,
 * when the stage is made or published, the file at the name is another
 * version (a person saved it on the host, in place or by renaming a new
 * file over it), the save is refused (EACCES), the person's version
 * stays, and the stage is kept next to it as NAME.sbx-conflict-STAMP
 * (logged, audited): the file's handles then show the person's version
 * and take no more changes.
 *
 * After publication the view's inode designates the new file (inode_rekey)
 * and keeps the stage's fd as the file's content until its last handle is
 * closed; the next change through a handle stages again. If the name no
 * longer designates the original at publication (unlinked, renamed over),
 * the stage becomes an orphan: written and read like an unlinked file,
 * never published.
 *
 * A stage's life. It is in one of three states while it exists (struct
 * stage); each arrow is made by the function named on it:
 *
 *   stage_for_change() --> ACTIVE --stage_rename_over()--> PUBLISHED
 *                           |  ^                               |
 *                           |  +------- stage_for_change() ----+
 *                           |           (the next change stages again)
 *                           +--stage_orphan()--> ORPHAN (no name left)
 *
 * and it ends (the inode has no stage any more) in one of these ways:
 *
 *   ACTIVE --stage_write_back(), stage_written_back()--> written back:
 *            the file itself took the changes (renamed or linked away)
 *   ACTIVE --stage_keep_conflict(), stage_discard()--> a conflict copy
 *            beside the name; the file stays the person's
 *   ACTIVE --stage_discard()--> discarded: a failed save or publication,
 *            the file as it was
 *   any    --stage_drop() (the last handle), stage_close()--> gone
 *
 * Every function with "locked" in its contract needs stage_lock() held on
 * that inode. The lock is one of a fixed set of striped mutexes; take it
 * before the file's gate lock (publication takes the gate lock inside
 * it), never the other way round, and hold one at a time.
 *
 * The locks, the staging areas (one per read-write domain) and the mode
 * are this module's own (struct stager, private to stage.c): the view
 * holds a pointer to them, made by stage_setup() and freed by
 * stage_close().
 */
#ifndef SBX_STAGE_H
#define SBX_STAGE_H

#include <stdbool.h>
#include <limits.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

struct view;
struct inode;
struct view_config;

/* The name of the staging area at the top of a read-write --mount root
 * that is not on the thread's filesystem (hidden from the view). */
#define STAGE_HIDDEN_NAME ".sbxfs-stage"

/* Sets up V's staging (v->stager), after view_open(): opens (creating if
 * missing) the staging area of every read-write domain. A domain without
 * an area writes in place (logged). Unstaged (--staging=off), the areas
 * that exist are opened for the sweep only. Returns 0 or -errno with a
 * reason in ERR (v->stager is then NULL). */
int stage_setup(struct view *v, const struct view_config *cfg, char *err, size_t errlen);
/* Removes what an interrupted save left in the areas of CFG's thread,
 * logging each, whether this mount stages or not. */
void stage_sweep(struct view *v, const struct view_config *cfg);
/* Ends V's staging, before view_close() and once no request can run any
 * more (after the loop, or before it started): the stages of handles the
 * kernel never released (a lazy unmount) are dropped, their unpublished
 * changes lost as with a crash; the areas are closed. No-op without
 * stage_setup(). */
void stage_close(struct view *v);

/* True if changes to INO (a regular file in a read-write root) through
 * a handle may be staged. */
bool stage_possible(struct view *v, struct inode *ino);
/* --staging=strict: what cannot be staged is refused, not written in
 * place. */
bool stage_strict(const struct view *v);
/* True if NAME in DIR is a staging area (STAGE_HIDDEN_NAME at the top of
 * a --mount root): it is not part of the view. */
bool stage_area_name(const struct view *v, const struct inode *dir, const char *name);

void stage_lock(struct view *v, struct inode *ino);
void stage_unlock(struct view *v, struct inode *ino);
/* True if INO has a stage (cheap, unlocked: a hint for fast paths). */
bool stage_any(struct inode *ino);

/* (locked) The fd holding INO's content for I/O through handle fd HFD:
 * the stage's if there is one, else HFD. */
int stage_io_fd(struct inode *ino, int hfd);
/* (locked) Corrects ST, just taken from stage_io_fd(), to what the view
 * shows: the inode number the file had when its handles opened, and the
 * link count of the file an unpublished stage will replace. */
void stage_attr(struct inode *ino, struct stat *st);

/* (locked) The stage's fd if INO has an unpublished one, else -1. */
int stage_active_fd(struct inode *ino);

/* (locked) A handle that may stage opens INO for writing; ST is the
 * file now. Without an unpublished stage, saves start from ST. */
void stage_note_open(struct inode *ino, const struct stat *st);

/* (locked) The view changed INO's content; ST is what it left. If that
 * was the file itself, not an unpublished stage (an append, a truncation
 * by name), saves start from it. */
void stage_note_change(struct inode *ino, const struct stat *st);

/* (locked) Before a change through a handle that may stage: makes sure INO
 * has an unpublished stage, a copy of its current content (IO_FD, a
 * descriptor of the file open for reading or writing; ST its attributes
 * if the caller has them, else NULL), and returns its fd; or -errno
 * (nothing changed). With EMPTY (an O_TRUNC) the stage is made or left
 * empty instead. */
int stage_for_change(struct view *v, struct inode *ino, int io_fd, const struct stat *st,
		     bool empty);

/* (locked) True if a close (FLUSH) by process PID of the last writing
 * handle of INO is not the end of its save: the stage was emptied by an
 * O_TRUNC, nothing changed it since, and PID still has a descriptor
 * writing the file (a duplicate of the handle, as the only writer).
 * A shell opens a redirection's file, gives the descriptor to the
 * command as a duplicate and closes the first before the command
 * writes: that close must not replace the file with nothing (on a full
 * disk, for good). The last release, or an fsync, publishes it. */
bool stage_close_defers(const struct view *v, struct inode *ino, pid_t pid);

/* (locked) A write, truncate or allocation on the stage failed with ERR:
 * the save fails with it, and the file stays as it was. */
void stage_failed(struct inode *ino, int err);

/* ---- publication's steps ----
 * Their order, with the gate, the host watch, the journal and the quota
 * around them, is written once: change_publish() in ops_change.c. */

/* (locked) What a publication of INO finds: 0, nothing to publish (no
 * stage, or none ACTIVE); 1, an ACTIVE stage; or the -errno of a failed
 * save (stage_failed()): the stage is then to be discarded, unpublished. */
int stage_pending(struct inode *ino);
/* (locked) Readies INO's ACTIVE stage: with DURABLE its data flushed.
 * Returns 0, or -errno with the stage discarded. */
int stage_ready(struct view *v, struct inode *ino, bool durable);
/* (locked) True if ST, the file at the name now, is the version INO's
 * stage may replace. */
bool stage_replaces(struct inode *ino, const struct stat *st);
/* (locked) Gives INO's stage the save's fresh mtime (unless the writeback
 * cache sets it) and a name in its area (an O_TMPFILE has none), which
 * the rename needs: changes of its metadata only. Returns 0 or -errno
 * (its name unchanged). */
int stage_link(struct view *v, struct inode *ino);
/* (locked) Renames INO's linked stage over NAME in directory PFD:
 * ACTIVE -> PUBLISHED. Returns 0, or -errno with nothing changed. */
int stage_rename_over(struct view *v, struct inode *ino, int pfd, const char *name);
/* (locked) The published stage's file is AFTER now: the next saves start
 * from it. */
void stage_published(struct inode *ino, const struct stat *after);
/* (locked) The file has no name left: ACTIVE -> ORPHAN, written and read
 * like an unlinked file until its last handle goes. */
void stage_orphan(struct inode *ino);
/* (locked) Writes INO's ACTIVE stage back into the file itself, open for
 * writing as FD: its content, size, mode and atime, and the save's fresh
 * mtime (the stage's with the writeback cache); with DURABLE, FD is
 * flushed. Returns 0 or -errno (the file may be half written: the caller
 * discards the stage). */
int stage_write_back(struct view *v, struct inode *ino, int fd, bool durable);
/* (locked) After stage_write_back(): the stage goes; the next saves
 * start from AFTER (the file now), unless it is NULL. */
void stage_written_back(struct inode *ino, const struct stat *after);
/* (locked) Moves INO's ACTIVE stage next to NAME in directory PFD (-1:
 * there is none) as a conflict copy, NAME.sbx-conflict-STAMP: its name
 * into COPY, its attributes into ST. Returns 0, or -errno if it could not
 * be kept. Either way the caller then discards the stage (stage_discard()). */
int stage_keep_conflict(struct view *v, struct inode *ino, int pfd, const char *name,
			char copy[NAME_MAX + 1], struct stat *st);
/* (locked) Drops INO's stage at once, whatever its state: an ACTIVE one's
 * changes are lost and the file keeps its content. The kernel's page
 * cache of the file may hold the dropped bytes: the next open drops it
 * (ops_file.c). */
void stage_discard(struct view *v, struct inode *ino);

/* (locked) INO's last handle went away: drops the stage (an unpublished
 * one is discarded). */
void stage_drop(struct view *v, struct inode *ino);

#endif
