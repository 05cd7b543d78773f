/* views.c - telling the mounted views about runs (views.h). */
#include "views.h"
#include "common/cleanup.h"
#include "common/control.h"
#include "common/log.h"
#include "common/viewreg.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

/* How long a view may take to answer: a daemon stopped (SIGSTOP, a
 * debugger) holds every call into its mount, uninterruptibly but for
 * SIGKILL. Telling a run is one request; a sync waits for the view's
 * writer to store what it has queued. */
#define VIEW_TELL_MS 2000
#define VIEW_SYNC_MS 10000

/* Runs CALL(MOUNTPOINT, ARG), a call into a view, in a child process:
 * its result (0 or -errno), or -ETIMEDOUT once MS have passed (the child
 * is killed; the call is abandoned). */
static int view_call(const char *mountpoint, int (*call)(const char *mountpoint, void *arg),
		     void *arg, int ms)
{
	int fds[2], r = 0;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	fflush(NULL); /* nothing buffered is written twice */
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		r = call(mountpoint, arg);
		_exit(write(fds[1], &r, sizeof(r)) == sizeof(r) ? 0 : 1);
	}
	close(fds[1]);
	_cleanup_(closep) int rfd = fds[0];
	if (pid < 0)
		return -errno;
	struct pollfd p = { .fd = rfd, .events = POLLIN };
	int ready;
	while ((ready = poll(&p, 1, ms)) < 0 && errno == EINTR)
		;
	if (ready <= 0 || read(rfd, &r, sizeof(r)) != sizeof(r)) {
		kill(pid, SIGKILL);
		r = ready == 0 ? -ETIMEDOUT : -EIO;
	}
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return r;
}

struct view_fn {
	void (*fn)(const char *mountpoint, void *arg);
	void *arg;
};

static void view_found(const char *mountpoint, void *arg)
{
	struct view_fn *f = arg;

	if (f->fn)
		f->fn(mountpoint, f->arg);
}

int views_each(const char *home, const char *user, const char *thread,
	       void (*fn)(const char *mountpoint, void *arg), void *arg)
{
	_cleanup_(closep) int homefd = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct view_fn f = { fn, arg };

	return homefd < 0 ? 0 : viewreg_each(homefd, user, thread, view_found, &f);
}

static int set_run(const char *mountpoint, void *arg)
{
	char value[32];
	int n = snprintf(value, sizeof(value), "%lld", (long long)*(int64_t *)arg);

	return setxattr(mountpoint, CONTROL_XATTR_RUN, value, (size_t)n, 0) < 0 ? -errno : 0;
}

/* Tells a mounted view which run is open (journal.h). */
static void view_tell_run(const char *mountpoint, void *arg)
{
	int r = view_call(mountpoint, set_run, arg, VIEW_TELL_MS);

	if (r == -ETIMEDOUT)
		log_warn("run: the view at %s did not answer within %d s (its daemon stopped?):"
			 " what is changed through it is not recorded for this run's undo",
			 mountpoint, VIEW_TELL_MS / 1000);
	else if (r < 0)
		log_warn("run: the view at %s records no pre-images for this run: %s", mountpoint,
			 strerror(-r));
}

/* Tells the mounted views of USER's THREAD about the runs open now. */
void views_update(struct store *s, const char *home, const char *user, const char *thread)
{
	int64_t since = 0;

	if (store_run_open_since(s, user, thread, &since) <= 0)
		since = 0;
	views_each(home, user, thread, view_tell_run, &since);
}

static int get_sync(const char *mountpoint, void *arg)
{
	char ok[2];

	(void)arg;
	return getxattr(mountpoint, CONTROL_XATTR_SYNC, ok, sizeof(ok)) < 0 ? -errno : 0;
}

/* Waits until a mounted view's journal is in the store; a view that
 * cannot say so (another user's) gets the few milliseconds its writer
 * takes. */
static void view_sync(const char *mountpoint, void *arg)
{
	int r = view_call(mountpoint, get_sync, arg, VIEW_SYNC_MS);

	if (r < 0 && r != -ETIMEDOUT)
		usleep(25000);
	if (r == -ETIMEDOUT)
		log_warn("run end: the view at %s did not answer within %d s (its daemon stopped?):"
			 " changes it has not stored yet are missing from the summary",
			 mountpoint, VIEW_SYNC_MS / 1000);
}

void views_tell_run(const char *home, const char *user, const char *thread, int64_t since)
{
	views_each(home, user, thread, view_tell_run, &since);
}

void views_sync(const char *home, const char *user, const char *thread)
{
	views_each(home, user, thread, view_sync, NULL);
}

static int get_refresh(const char *mountpoint, void *arg)
{
	char ok[2];

	(void)arg;
	return getxattr(mountpoint, CONTROL_XATTR_REFRESH, ok, sizeof(ok)) < 0 ? -errno : 0;
}

/* Has a mounted view drop what the kernel caches of the thread's files;
 * a view that cannot (another user's, or from before this attribute)
 * shows them within its cache timeout. */
static void view_refresh(const char *mountpoint, void *arg)
{
	int r = view_call(mountpoint, get_refresh, arg, VIEW_SYNC_MS);

	if (r == -ETIMEDOUT)
		log_warn("the view at %s did not answer within %d s (its daemon stopped?): it may"
			 " show files as they were before for up to its cache timeout",
			 mountpoint, VIEW_SYNC_MS / 1000);
}

void views_refresh(const char *home, const char *user, const char *thread)
{
	views_each(home, user, thread, view_refresh, NULL);
}
