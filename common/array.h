/* array.h - growing arrays, and searching sorted ones.
 *
 * array_grow(A, N, CAP) makes room in array A (CAP elements allocated)
 * for element N, doubling CAP (first to 16). It is 0, or -ENOMEM with A
 * and CAP unchanged. A and CAP are lvalues, evaluated more than once.
 *
 * lower_bound(N, I, BEFORE) is the first index I in [0, N) for which the
 * expression BEFORE (of the index variable I it declares) is false, or N:
 * BEFORE must hold for a prefix of the indexes and for nothing after it,
 * as "element I sorts before the key" does in a sorted array. */
#ifndef SBX_ARRAY_H
#define SBX_ARRAY_H

#include <errno.h>
#include <stdlib.h>

#define array_grow(a, n, cap)                                               \
	({                                                                  \
		int r_ = 0;                                                 \
		if ((size_t)(n) >= (size_t)(cap)) {                         \
			size_t c_ = (cap) ? (size_t)(cap)*2 : 16;           \
			__typeof__(a) p_ = realloc((a), c_ * sizeof(*(a))); \
			if (p_) {                                           \
				(a) = p_;                                   \
				(cap) = c_;                                 \
			} else {                                            \
				r_ = -ENOMEM;                               \
			}                                                   \
		}                                                           \
		r_;                                                         \
	})

#define lower_bound(n, i, before)                         \
	({                                                \
		size_t lo_ = 0, hi_ = (n);                \
		while (lo_ < hi_) {                       \
			size_t i = lo_ + (hi_ - lo_) / 2; \
			if (before)                       \
				lo_ = i + 1;              \
			else                              \
				hi_ = i;                  \
		}                                         \
		lo_;                                      \
	})

#endif
