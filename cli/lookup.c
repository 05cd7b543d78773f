/* lookup.c - finding what an sbx command is about (lookup.h). */
#include "lookup.h"
#include "store/lease.h"
#include "common/cleanup.h"
#include "common/home.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

int thread_check(const char *command, const char *home, const char *user, const char *thread)
{
	_cleanup_(closep) int homefd = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	const char *missing = "home";
	int r = homefd < 0 ? neg_errno() : home_thread_find(homefd, user, thread, &missing);

	if (r == -ENOENT && !strcmp(missing, "home"))
		fprintf(stderr, "sbx: %s: unknown home %s (no such directory)\n", command, home);
	else if (r == -ENOENT && !strcmp(missing, "user"))
		fprintf(stderr, "sbx: %s: unknown user %s (no %s/users/%s)\n", command, user, home,
			user);
	else if (r == -ENOENT)
		fprintf(stderr, "sbx: %s: unknown thread %s/%s (no %s/users/%s/threads/%s)\n",
			command, user, thread, home, user, thread);
	else if (r < 0)
		fprintf(stderr, "sbx: %s: cannot look up thread %s/%s under %s: %s\n", command,
			user, thread, home, strerror(-r));
	return r;
}

int thread_roots_open(const char *command, const char *home, const char *user, const char *thread,
		      struct thread_roots *roots)
{
	_cleanup_(closep) int homefd = -1;

	roots->ws = roots->out = -1;
	int r = thread_check(command, home, user, thread);
	if (r < 0)
		return r;
	homefd = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	roots->ws = homefd < 0 ? neg_errno()
			       : home_thread_dir_open(homefd, user, thread, THREAD_WORKSPACE);
	if (roots->ws < 0) {
		fprintf(stderr, "sbx: %s: thread %s/%s has no workspace under %s: %s\n", command,
			user, thread, home, strerror(-roots->ws));
		return roots->ws;
	}
	roots->out = home_thread_dir_open(homefd, user, thread, THREAD_OUTPUTS);
	return 0;
}

void thread_roots_close(struct thread_roots *roots)
{
	closep(&roots->ws);
	closep(&roots->out);
}

int thread_fence(const char *command, const char *home, struct store *s, const char *user,
		 const char *thread)
{
	char err[PATH_MAX + 256];
	int r = store_fence_home(s, home, user, thread, err, sizeof(err));

	if (r < 0)
		fprintf(stderr, "sbx: %s: %s%s\n", command, err,
			r == -EBUSY ? ": run this there (sbx hosts)" : "");
	return r;
}

int run_get(const char *command, const char *home, struct store *s, int64_t id, bool write,
	    struct store_run *run)
{
	int r = store_run_get(s, id, run);

	if (r < 0) {
		fprintf(stderr, "sbx: %s: %s\n", command,
			r == -ENOENT ? "no such run (see the id sbx run begin printed)"
				     : strerror(-r));
		return r;
	}
	if (write && (r = thread_fence(command, home, s, run->user, run->thread)) < 0)
		store_run_free(run);
	return r;
}

struct store *run_open(const char *command, const char *home, int64_t id, bool write,
		       struct store_run *run)
{
	char err[PATH_MAX + 256];
	struct store *s;

	if (store_open(home, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "sbx: %s: %s\n", command, err);
		return NULL;
	}
	if (run_get(command, home, s, id, write, run) < 0) {
		store_close(s);
		return NULL;
	}
	return s;
}
