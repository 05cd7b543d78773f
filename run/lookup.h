/* lookup.h - finding what a run is about: a thread of a home (its
 * workspace and outputs), a run in the home's store.
 *
 * Each says in its struct error what it could not find ("unknown thread
 * alice/t9 (no HOME/users/alice/threads/t9)"): a command reading what a
 * thread or a run did says so rather than print nothing, which would
 * look like "nothing happened".
 */
#ifndef SBX_RUN_LOOKUP_H
#define SBX_RUN_LOOKUP_H

#include "common/error.h"

#include <stdbool.h>
#include <stdint.h>

/* 0 if USER's THREAD exists under HOME; else -errno, E naming what is
 * unknown: the home, the user or the thread. */
int thread_check(const char *home, const char *user, const char *thread, struct error *e);

/* The backing directories a run or a snapshot scans: the thread's
 * workspace (required) and outputs (-1 if missing); of a project's record
 * (run/project_run.h), the project itself, and no outputs. */
struct thread_roots {
	int ws, out;
};

/* Opens them for USER's THREAD under HOME; -errno (E) if the thread is
 * unknown (thread_check) or has no workspace. */
int thread_roots_open(const char *home, const char *user, const char *thread,
		      struct thread_roots *roots, struct error *e);
void thread_roots_close(struct thread_roots *roots);

/* 0, or -EINVAL (E: "U/T is the record of the applies to PROJECT: " and
 * WHAT) if USER's THREAD is a project's record (run/project_run.h),
 * whose runs only sbx try apply and sbx run undo make. */
int thread_not_project(const char *home, const char *user, const char *thread, const char *what,
		       struct error *e);

struct store;
struct store_run;

/* Opens HOME's store and reads run ID into RUN (store_run_free() it);
 * NULL (E says why) if either fails. To WRITE, the store is fenced
 * (store/lease.h): NULL if another host holds the run's thread. */
struct store *run_open(const char *home, int64_t id, bool write, struct store_run *run,
		       struct error *e);
/* The same in store S, open already. Returns 0, or -errno (E). */
int run_get(const char *home, struct store *s, int64_t id, bool write, struct store_run *run,
	    struct error *e);
/* Fences S for writes of USER's THREAD from this host (store/lease.h,
 * store_fence_home()): 0, or -errno (E: -EBUSY if another host holds
 * the thread). */
int thread_fence(const char *home, struct store *s, const char *user, const char *thread,
		 struct error *e);

#endif
