/* lookup.h - finding what an sbx command is about: a thread of a home
 * (its workspace and outputs), a run in the home's store.
 *
 * Each says, on stderr as "sbx: COMMAND: ...", what it could not find: a
 * command reading what a thread or a run did says so rather than print
 * nothing, which would look like "nothing happened".
 */
#ifndef SBX_LOOKUP_H
#define SBX_LOOKUP_H

#include <stdbool.h>
#include <stdint.h>

/* 0 if USER's THREAD exists under HOME; else -errno, with one line for
 * COMMAND naming what is unknown: the home, the user or the thread. */
int thread_check(const char *command, const char *home, const char *user, const char *thread);

/* The backing directories a run or a snapshot scans: the thread's
 * workspace (required) and outputs (-1 if missing). */
struct thread_roots {
	int ws, out;
};

/* Opens them for USER's THREAD under HOME; -errno with a message for
 * COMMAND if the thread is unknown (thread_check) or has no workspace. */
int thread_roots_open(const char *command, const char *home, const char *user, const char *thread,
		      struct thread_roots *roots);
void thread_roots_close(struct thread_roots *roots);

struct store;
struct store_run;

/* Opens HOME's store and reads run ID into RUN (store_run_free() it);
 * NULL, with the reason printed for COMMAND, if either fails. To WRITE,
 * the store is fenced (store/lease.h): NULL if another host holds the
 * run's thread. */
struct store *run_open(const char *command, const char *home, int64_t id, bool write,
		       struct store_run *run);
/* The same in store S, open already: 0, or -errno (said). */
int run_get(const char *command, const char *home, struct store *s, int64_t id, bool write,
	    struct store_run *run);
/* Fences S for writes of USER's THREAD from this host (store/lease.h,
 * store_fence_home()): 0, or -errno with the reason printed for
 * COMMAND (another host holds the thread). */
int thread_fence(const char *command, const char *home, struct store *s, const char *user,
		 const char *thread);

#endif
