/* store_int.h - what the store's modules share of a struct store
 * (internal to store/). */
#ifndef SBX_STORE_INT_H
#define SBX_STORE_INT_H

#include "db.h"
#include "store.h"

/* The connection under S. */
struct db *store_db(struct store *s);

/* A fence (lease.c): what every write of a fenced store checks first. */
struct lease_fence;
/* S's fence, NULL if it has none; store_set_fence() gives S one (S frees
 * it, with lease_fence_free(), when it closes or gets another). */
struct lease_fence *store_get_fence(struct store *s);
void store_set_fence(struct store *s, struct lease_fence *f);
/* 0 if F's lease still has its token, -ESTALE if not, or -errno if the
 * store could not say: called inside a writer's turn. */
int lease_fence_check(struct store *s, struct lease_fence *f);
void lease_fence_free(struct lease_fence *f);

#endif
