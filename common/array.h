/* array.h - growing arrays.
 *
 * array_grow(A, N, CAP) makes room in array A (CAP elements allocated)
 * for element N, doubling CAP (first to 16): 0, or -ENOMEM with A and
 * CAP unchanged. A and CAP are lvalues, evaluated more than once. */
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

#endif
