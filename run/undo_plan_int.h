/* undo_plan_int.h - what the undo's files share (run/undo_plan.h): the steps'
 * kinds and log lines, and struct undo_plan itself. Private to
 * run/undo_*.c and run/kept.c.
 *
 *   undo_plan.c       the plan and its steps, shadows included
 *   undo_conflicts.c  the paths changed after the run
 *   undo_log.c        the crash log: every step logged before it is taken
 *   undo_names.c      the paths the run's events name, by the file each
 *                     holds now, and a walk of the thread where those
 *                     hold none: another name of a file a take unlinks
 *   undo_journal.c    the undo's own journal, from its log
 *   undo_copy.c       copies: of a kept object, of a directory whole
 *   kept.c            a run's directory of kept files: bytes, drop,
 *                     retention, whether a run can be undone
 */
#ifndef SBX_RUN_UNDO_PLAN_INT_H
#define SBX_RUN_UNDO_PLAN_INT_H

#include "undo_plan.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The steps, by the word the log gives each. */
enum step_kind {
	STEP_RESTORE,	/* an object kept by the run over what is there (kept) */
	STEP_PUT,	/* an object kept by the run on a free name */
	STEP_TAKE,	/* what the run made goes (kept) */
	STEP_RMDIR,	/* a directory the run made goes (its attributes kept) */
	STEP_MOVE,	/* a rename reversed */
	STEP_EXCHANGE,	/* an exchange reversed */
	STEP_ATTR,	/* attributes the run changed back (the others kept) */
	STEP_MKDIR,	/* a directory the run removed made again */
	STEP_SWAP,	/* a rename over a file reversed: the kept file exchanged
			* back over the name, the renamed one to its old name */
	STEP_SWAP_KEEP, /* the same where the run made the renamed file: it goes
			 * into the undo's directory (kept) */
	STEP_INPLACE,	/* a kept file's content and attributes written back into
			 * a file with other names (kept: copied, first) */
	STEP_OVER,	/* a rename reversed over what the run made at its old
			 * name after it (kept: linked, first): mv f f.bak;
			 * echo new > f */
	STEP_MOVE_KEPT, /* a rename reversed where the run then replaced or
			 * removed what it renamed, the kept file going back
			 * to the old name (PATH): mv a b; echo new > b */
	STEP_DIR,	/* not a step: the attributes of the directory PATH
			* before the undo first changed its entries */
	STEP_FAIL,	/* the step before it failed: with its errno */
	STEP_SHADOW,	/* not a step: PATH's shadow begins (OBJECT its name,
			 * ERR its state, INO the file linked); see "shadows" */
	STEP_PUBLISH,	/* not a step: PATH gets what its shadow holds (INO:
			 * that inode, 0: nothing) */
	STEP_KINDS
};

/* One log line: step SEQ (the index of the event it undoes). */
struct logged {
	size_t seq;
	enum step_kind kind;
	int64_t at_ns;
	char object[40]; /* what it kept in the undo's directory, or "";
			  * a take's copy of a name of a file with others
			  * says that file's inode (object_name_of()) */
	uint64_t ino;	 /* STEP_EXCHANGE: the inode that was at path2;
			  * STEP_OVER: the one renamed back; STEP_MOVE_KEPT:
			  * the kept one put back at the new name (0: none) */
	uint8_t *meta;	 /* STEP_RMDIR, STEP_ATTR, STEP_DIR: the attributes it replaced */
	size_t meta_len;
	int err;    /* STEP_FAIL */
	char *path; /* STEP_DIR: the directory; a step taken early: its path;
		     * STEP_OVER: the name renamed back from; STEP_MOVE_KEPT:
		     * the old name */
	char *link; /* STEP_TAKE of a name of a file with others, STEP_PUT of
		     * such a name again: another of the file's names (a
		     * STEP_PUT's may be an object of the undo's directory:
		     * no slash first) */
	enum { PUT_UNKNOWN, PUT_FILE, PUT_SYMLINK } put; /* STEP_PUT, this attempt's */
};

struct touched {
	char *path;
	uint64_t ino;
};

struct undo_plan {
	const struct runlog *log;
	int64_t ended_ns;
	int ws, out, from;
	struct undo_conflict *conflicts;
	size_t nconflicts, ccap;
	char **finals; /* the conflicting paths (sorted), owned */
	bool *skip;    /* per event */
	bool *done;    /* per event: another's step took it (STEP_SWAP, STEP_OVER) */
	size_t *over;  /* per event: the rename its step reverses too, or SIZE_MAX */
	size_t *order; /* the events in the order their steps go (steps_order()) */
	size_t *pos;   /* per event: its place in ORDER */
	char **early;  /* per event: the path of a step taken early, or NULL */
	struct logged *steps;
	size_t nsteps, scap;
	int more[UNDO_SOURCES]; /* other directories of objects */
	size_t nmore;
	bool copy;		 /* objects are copied, not moved */
	struct touched *touched; /* the directories whose attributes are logged */
	size_t ntouched, tcap;
	struct { /* the last two parent directories steps used */
		char path[PATH_MAX];
		int fd;
		unsigned long used;
	} dirs[2];
	unsigned long uses;
	char last_touched[PATH_MAX]; /* the directory touch_dir() saw last, or "" */
	uint64_t next_name;	     /* object_name()'s */
	struct seen *seen;	     /* what undo_plan_check() found, by path */
	size_t nseen;
	struct shadow *shadows; /* by path, then window (shadows_plan()) */
	size_t nshadows;
	size_t *by_first, *by_last; /* their indexes, by where their windows end */
	int to;			    /* undo_plan_apply()'s directory, where the shadows are */
	uint64_t *held;		    /* files with other names that takes moved into TO */
	size_t nheld, hcap;
	struct undo_names *names; /* undo_names.c's, once a take needs it */
	unsigned long dir_moves;  /* the steps that moved or removed a directory */
};

extern const char *const step_words[STEP_KINDS];

/* ---- shared by the undo's files ---- */

/* A rename or exchange seen from one of its names: what was at FROM
 * went to TO at event AT. */
struct move {
	const char *from, *to;
	size_t at;
};

struct moves {
	struct move *v;
	size_t n;
	struct move *over; /* the renames by their target: FROM is the target */
	size_t nover;
};

/* The directory of virtual PATH and its leaf; DFD is one of RW's cached
 * directories (a step names at most two), not the place's own. */
struct place {
	int dfd;
	const char *leaf;
	bool shadow; /* LEAF is the shadow of the path, in the undo's directory */
};

/* A path as undo_plan_check() found it (the thread as the run left it). */
struct seen {
	char *path;
	bool there;
	struct stat st;
};

void moves_free(struct moves *m);

/* LOG's renames and exchanges by their names (an exchange under both),
 * in the order of their names, then of time; and its renames by their
 * targets. */
int moves_index(const struct runlog *log, struct moves *m);

int moves_undone(const struct undo_plan *rw, struct moves *m);

/* Where NAME (as event AT named it) is when the run ended: moved on by
 * each later move of a directory above it, and if OBJECT (something is
 * there at AT, not a name left empty) of the name itself. False if a
 * later rename put something in its place, or a directory above it (over
 * an empty one, or where there was none): nothing event AT did is seen
 * there any more. */
bool final_name_at(const struct moves *m, size_t at, const char *name, bool object,
		   char out[PATH_MAX], size_t *last);

/* final_name_at(), the last move that renamed NAME (SIZE_MAX: none) left
 * out. */
bool final_name(const struct moves *m, size_t at, const char *name, bool object,
		char out[PATH_MAX]);

int path_stat(struct undo_plan *rw, const char *path, struct stat *st);

/* The same on a directory fd of its own (none of RW's cached ones, which
 * a live place may be using), through the shadows in their window. */
int name_stat(const struct undo_plan *rw, const char *path, struct stat *st);

/* Another name than PATH, now, of the file ST (a name any event of the
 * run names, that of the latest event first), or NULL (none, or out of
 * memory). */
char *names_other(struct undo_plan *rw, const char *path, const struct stat *st);

/* Calls FN(ARG, DFD, LEAF, PATH) for what each shadow in its window
 * holds (LEAF in DFD), which virtual PATH is: the shadow in the undo's
 * directory at the shadow's path; and a directory that the window's
 * first step renamed away, still at the shadow's path, at the name it
 * goes to (SHADOW_MOVED). */
void shadows_each(struct undo_plan *rw,
		  void (*fn)(void *arg, int dfd, const char *leaf, const char *path), void *arg);

/* How many names of inode INO the undo moved into its directory whole. */
nlink_t held_links(const struct undo_plan *rw, uint64_t ino);

/* What is at PATH, or below it, may have changed: the next names_other()
 * looks again. */
void names_changed(struct undo_plan *rw, const char *path);

struct undo_names;
void names_free(struct undo_names *x);

/* Reads what a first attempt logged into RW's steps. A line cut short
 * (a crash in its write) never had its step taken: it is cut off, so
 * that what is logged next starts a line of its own. */
int log_read(struct undo_plan *rw, int log_fd);

/* Appends L to the log LOG_FD in one write, and to RW's steps. */
int log_step(struct undo_plan *rw, int log_fd, const struct logged *l);

/* True if step I of the log failed (its next line says so). */
bool step_failed(const struct undo_plan *rw, size_t i);

bool op_is(const struct store_event *e, const char *op);

void seen_forget(struct undo_plan *rw);

/* The directory holding OBJECT (its attributes in ST), or -1. */
int source_of(const struct undo_plan *rw, const char *object, struct stat *st);

/* A copy of OBJECT in directory FROM as NAME in TO: a file with its
 * content (reflinked where the filesystem can) and attributes, a symlink
 * to the same target, or a fifo, socket or device alike. */
int copy_object(int from, const char *object, int to, const char *name);

/* Directory NAME in FROM copied as COPY in TO with all it holds, and
 * their attributes; the names of a file in it stay one file in the copy
 * (its names outside it do not). A copy cut short is left part made. */
int tree_copy(int from, const char *name, int to, const char *copy);

/* NAME in DFD removed, with all it holds if a directory (0 if there is
 * nothing). */
int tree_remove(int dfd, const char *name);

/* Where virtual PATH is for a step, into P: its shadow's name in the
 * undo's directory while one is open, else its directory (one of RW's
 * cached ones) and leaf. Returns 0 or -errno. */
int place_open(struct undo_plan *rw, const char *path, struct place *p);

#endif
