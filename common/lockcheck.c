/* lockcheck.c - see lockcheck.h. */
#include "lockcheck.h"

#ifdef SBX_LOCK_CHECKS
#include <stdio.h>
#include <stdlib.h>

static const char *const names[LOCK_CLASSES] = { "stage lock", "gate lock" };
static const unsigned most[LOCK_CLASSES] = { 0, 1 }; /* 0: no limit */

/* Per thread, so no lock of its own: what this thread holds. */
static __thread unsigned held[LOCK_CLASSES];

static void broken(const char *rule, enum lock_class c)
{
	fprintf(stderr, "sbxfs: lock rule broken: %s (%s)\n", rule, names[c]);
	abort();
}

void lock_check_take(enum lock_class c)
{
	for (int later = c + 1; later < LOCK_CLASSES; later++)
		if (held[later])
			broken("taken while a lock that comes after it is held", c);
	if (most[c] && held[c] >= most[c])
		broken("more held at once than allowed", c);
	held[c]++;
}

void lock_check_drop(enum lock_class c)
{
	if (!held[c])
		broken("dropped but not held", c);
	held[c]--;
}

bool lock_check_held(enum lock_class c)
{
	return held[c] > 0;
}

void lock_check_assert_held(enum lock_class c, const char *func)
{
	if (!held[c]) {
		fprintf(stderr, "sbxfs: %s needs its %s held\n", func, names[c]);
		abort();
	}
}
#else
typedef int lockcheck_unused; /* ISO C: no empty translation unit */
#endif
