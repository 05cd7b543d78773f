/* clock.h - the monotonic clock in milliseconds, for deadlines and
 * timeouts (never the wall clock, which may jump); the wall clock in
 * nanoseconds, for what records say happened when. */
#ifndef SBX_CLOCK_H
#define SBX_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline int64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif
