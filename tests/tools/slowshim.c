/* slowshim.c - an LD_PRELOAD shim for the broker in the limit tests
 * (tests/integ/test_sandbox.c): every poll() waits $SBX_SLOW_POLL_MS
 * first, so that a command's runner looks at its cgroup's counters at
 * every wake-up, the one that sees the command gone included (a loaded
 * machine's timing, made the rule). It takes itself out of LD_PRELOAD:
 * what the broker starts runs at its own pace.
 *
 *   cc -shared -fPIC -o slowshim.so slowshim.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <stdlib.h>
#include <time.h>

static long delay_ms;

__attribute__((constructor)) static void slowshim_init(void)
{
	const char *ms = getenv("SBX_SLOW_POLL_MS");

	delay_ms = ms ? atol(ms) : 0;
	unsetenv("LD_PRELOAD");
	unsetenv("SBX_SLOW_POLL_MS");
}

int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	static int (*real)(struct pollfd *, nfds_t, int);
	struct timespec ts = { delay_ms / 1000, delay_ms % 1000 * 1000000 };

	if (!real)
		real = (int (*)(struct pollfd *, nfds_t, int))dlsym(RTLD_NEXT, "poll");
	if (delay_ms > 0 && timeout != 0)
		nanosleep(&ts, NULL);
	return real(fds, nfds, timeout);
}
