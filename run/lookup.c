/* lookup.c - finding what a run is about (lookup.h). */
#include "lookup.h"
#include "common/cleanup.h"
#include "common/home.h"
#include "store/lease.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>

int thread_check(const char *home, const char *user, const char *thread, struct error *e)
{
	_cleanup_(closep) int homefd = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	const char *missing = "home";
	int r = homefd < 0 ? neg_errno() : home_thread_find(homefd, user, thread, &missing);

	if (r == -ENOENT && !strcmp(missing, "home"))
		return error_set(e, r, "unknown home %s (no such directory)", home);
	if (r == -ENOENT && !strcmp(missing, "user"))
		return error_set(e, r, "unknown user %s (no %s/users/%s)", user, home, user);
	if (r == -ENOENT) {
		char dir[PATH_MAX];
		home_thread_path(home, user, thread, NULL, dir, sizeof(dir));
		return error_set(e, r, "unknown thread %s/%s (no %s)", user, thread, dir);
	}
	if (r < 0)
		return error_set(e, r, "cannot look up thread %s/%s under %s: %s", user, thread,
				 home, strerror(-r));
	return r;
}

int thread_roots_open(const char *home, const char *user, const char *thread,
		      struct thread_roots *roots, struct error *e)
{
	_cleanup_(closep) int homefd = -1;

	roots->ws = roots->out = -1;
	int r = thread_check(home, user, thread, e);
	if (r < 0)
		return r;
	homefd = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	char project[PATH_MAX];
	if (homefd >= 0 && home_project_get(homefd, user, thread, project, sizeof(project)) > 0) {
		/* A project's record: its runs are of the project itself. */
		roots->ws = open(project, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (roots->ws < 0)
			roots->ws = neg_errno();
		return roots->ws < 0
			       ? error_set(e, roots->ws, "cannot open the project of %s/%s: %s",
					   user, thread, strerror(-roots->ws))
			       : 0;
	}
	roots->ws = homefd < 0 ? neg_errno()
			       : home_thread_dir_open(homefd, user, thread, THREAD_WORKSPACE);
	if (roots->ws < 0)
		return error_set(e, roots->ws, "thread %s/%s has no workspace under %s: %s", user,
				 thread, home, strerror(-roots->ws));
	roots->out = home_thread_dir_open(homefd, user, thread, THREAD_OUTPUTS);
	return 0;
}

int thread_not_project(const char *home, const char *user, const char *thread, const char *what,
		       struct error *e)
{
	_cleanup_(closep) int homefd = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	char project[PATH_MAX];

	if (homefd < 0 || home_project_get(homefd, user, thread, project, sizeof(project)) <= 0)
		return 0;
	return error_set(e, -EINVAL, "%s/%s is the record of the applies to %s: %s", user, thread,
			 project, what);
}

void thread_roots_close(struct thread_roots *roots)
{
	closep(&roots->ws);
	closep(&roots->out);
}

int thread_fence(const char *home, struct store *s, const char *user, const char *thread,
		 struct error *e)
{
	char err[PATH_MAX + 256];
	int r = store_fence_home(s, home, user, thread, err, sizeof(err));

	if (r < 0)
		return error_set(e, r, "%s%s", err,
				 r == -EBUSY ? ": run this there (sbx hosts)" : "");
	return r;
}

int run_get(const char *home, struct store *s, int64_t id, bool write, struct store_run *run,
	    struct error *e)
{
	int r = store_run_get(s, id, run);

	if (r < 0)
		return error_set(e, r, "%s",
				 r == -ENOENT ? "no such run (see the id sbx run begin printed)"
					      : strerror(-r));
	if (write && (r = thread_fence(home, s, run->user, run->thread, e)) < 0)
		store_run_free(run);
	return r;
}

struct store *run_open(const char *home, int64_t id, bool write, struct store_run *run,
		       struct error *e)
{
	char err[PATH_MAX + 256];
	struct store *s;
	int r;

	if ((r = store_open(home, &s, err, sizeof(err))) < 0) {
		error_set(e, r, "%s", err);
		return NULL;
	}
	if (run_get(home, s, id, write, run, e) < 0) {
		store_close(s);
		return NULL;
	}
	return s;
}
