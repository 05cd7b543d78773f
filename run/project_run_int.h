/* project_run_int.h - what a project run (project_run.c) and its undo
 * (project_undo.c) share: the log of a run's changes, read back. */
#ifndef SBX_RUN_PROJECT_RUN_INT_H
#define SBX_RUN_PROJECT_RUN_INT_H

#include "project_run.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

/* The virtual path of a project path: its record's workspace is the
 * project. */
#define PROJECT_ROOT "/mnt/user-data/workspace/"

/* The log in a run's directory of pre-images. */
#define LOG_NAME "changes"

#define PROJECT_OPS (PROJECT_CHMOD + 1)
extern const char *const project_op_names[PROJECT_OPS];

/* Whether OP keeps a pre-image first: an object (a file or symlink), or
 * a directory's attributes. */
bool keeps_object(enum project_op op);
bool keeps_meta(enum project_op op);

enum step_state { STEP_PENDING, STEP_DONE, STEP_FAILED };

/* One change of the log. */
struct pstep {
	enum project_op op;
	char *object; /* the kept pre-image's name in the run's directory, or "" */
	long src;     /* the step of the undone run it takes back, or -1 */
	int64_t at_ns;
	char *path;	  /* below the project */
	uint64_t was_ino; /* the inode at PATH before (0: none) */
	enum step_state state;
	struct stat left; /* STEP_DONE: what it left (st_ino 0: nothing) */
};

struct plog {
	struct pstep *v;
	size_t n, cap;
	char *overlay; /* whose origins follow, or NULL */
	long *skipped; /* steps of the undone run left alone (--partial) */
	size_t nskipped, capskipped;
};

/* Reads the log in directory DIR into L (an empty L if there is none).
 * A record cut short (the run killed while writing it) ends it. */
int plog_read(int dir, struct plog *l);
void plog_free(struct plog *l);

struct project_run {
	struct store *s;
	char *home, *user, *thread;
	int homefd;
	int project_fd; /* the project: O_PATH */
	int dir;	/* the run's directory of pre-images: O_PATH */
	int log_fd;	/* its log, appended to */
	struct store_run run;
	struct run_texts *texts; /* its first snapshot's, for its end */
	struct plog log;	 /* its changes so far */
};

/* A new PR of run RUN (taken) of a project's record in HOME (store S),
 * its directory and log opened (made if missing), what the log holds
 * read. Returns 0 or -errno. */
int pr_open(struct store *s, const char *home, struct store_run *run, struct project_run **out);

/* The attributes kept as OBJECT in a run's directory DIR, as
 * meta_encode() made them: *BLOB (malloc'd, *LEN bytes). 0 or -errno. */
int kept_attributes(int dir, const char *object, uint8_t **blob, size_t *len);

/* Logs that PR, an undo, leaves step SRC of the run it undoes alone. */
void project_run_skip(struct project_run *pr, long src);

/* The change a killed run was making when it stopped: made or not, as
 * its path now shows (the applies of a project take turns, so nothing
 * else of sbx's changed it since), logged so. */
void judge_pending(struct project_run *pr);

#endif
