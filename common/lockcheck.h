/* lockcheck.h - the view's locking rules, checked at run time in debug
 * builds.
 *
 * The rules (docs/architecture.md, "Staged writes" and "Read-before-
 * write"): a thread takes a file's stage lock before any gate lock, never
 * the other way round, and holds at most one gate lock at a time (each is
 * one of a fixed set of striped mutexes: a second one may be the same).
 * Built with SBX_LOCK_CHECKS (make SANITIZE=1 defines it) every take and
 * drop is counted per thread, and a broken rule, or a "(locked)" function
 * called without its lock, aborts with a message naming it; otherwise
 * these calls compile to nothing.
 */
#ifndef SBX_LOCKCHECK_H
#define SBX_LOCKCHECK_H

#include <stdbool.h>

/* In the order a thread may take them. */
enum lock_class {
	LOCK_STAGE, /* stage.c: one per file, striped */
	LOCK_GATE,  /* gate.c: one per file, striped; at most one held */
	LOCK_CLASSES
};

#ifdef SBX_LOCK_CHECKS
void lock_check_take(enum lock_class c);
void lock_check_drop(enum lock_class c);
bool lock_check_held(enum lock_class c);
/* Aborts unless the calling thread holds a lock of class C. */
void lock_check_assert_held(enum lock_class c, const char *func);
#else
static inline void lock_check_take(enum lock_class c)
{
	(void)c;
}
static inline void lock_check_drop(enum lock_class c)
{
	(void)c;
}
static inline void lock_check_assert_held(enum lock_class c, const char *func)
{
	(void)c;
	(void)func;
}
#endif

#define assert_held(c) lock_check_assert_held(c, __func__)

#endif
