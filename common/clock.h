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

/* TS in nanoseconds: a file time, or one of the clocks'. */
static inline int64_t timespec_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static inline int64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return timespec_ns(&ts);
}

/* NS from now on CLOCK, as the absolute time a timed wait takes (a
 * condition variable's of that clock, pthread_timedjoin_np()'s realtime). */
static inline struct timespec deadline_in(clockid_t clock, int64_t ns)
{
	struct timespec t;

	clock_gettime(clock, &t);
	ns += t.tv_nsec;
	t.tv_sec += (time_t)(ns / 1000000000);
	t.tv_nsec = (long)(ns % 1000000000);
	return t;
}

/* Waits (a tick at most: a few ms) until the kernel's coarse wall clock,
 * the one file times are taken from, is past NS: a change made after
 * this returns has a ctime after NS, however soon it comes. */
static inline void realtime_coarse_pass(int64_t ns)
{
	struct timespec ts, nap = { 0, 1000000 };

	for (int i = 0; i < 100; i++) {
		clock_gettime(CLOCK_REALTIME_COARSE, &ts);
		if (timespec_ns(&ts) > ns)
			return;
		nanosleep(&nap, NULL);
	}
}

/* A time YYYY-MM-DDTHH:MM:SS[.FRACTION]Z (UTC) as ns since the epoch;
 * -EINVAL if S is not one. */
int time_parse(const char *s, int64_t *ns);

#endif
