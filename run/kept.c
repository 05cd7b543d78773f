/* kept.c - a run's directory of kept files (its pre-images on disk):
 * what it holds, dropping it, retention, and whether the run can still
 * be undone (undo_plan.h). */
#include "undo_plan_int.h"
#include "common/log.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/fileops.h"
#include "common/home.h"
#include "common/quote.h"
#include "common/units.h"
#include "common/walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- a run's directory of pre-images -------------------------------------- */

static int add_bytes(void *arg, int dirfd, const char *name, const struct stat *st)
{
	(void)dirfd;
	(void)name;
	*(int64_t *)arg += (int64_t)st->st_blocks * 512;
	return 0;
}

int64_t kept_bytes(int homefd, const char *user, const char *thread, int64_t begun_ns)
{
	_cleanup_(closep) int dir = home_undo_dir(homefd, user, thread, begun_ns, false);
	int64_t bytes = 0;
	char path[32];

	if (dir < 0)
		return dir;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", dir);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = dir_each(fd, add_bytes, &bytes);
	return r < 0 ? r : bytes;
}

static int unlink_entry(void *arg, int dirfd, const char *name, const struct stat *st)
{
	(void)arg;
	return unlinkat(dirfd, name, S_ISDIR(st->st_mode) ? AT_REMOVEDIR : 0) < 0 ? -errno : 0;
}

int kept_drop(int homefd, const char *user, const char *thread, int64_t begun_ns)
{
	const char *const chain[] = { "users", user, "threads", thread, UNDO_DIR };
	_cleanup_(closep) int parent = dir_chain_open(homefd, chain, 5, false);
	char stamp[24];

	if (parent < 0)
		return parent == -ENOENT ? 0 : parent;
	snprintf(stamp, sizeof(stamp), "%lld", (long long)begun_ns);
	int fd = openat(parent, stamp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	int r = dir_each(fd, unlink_entry, NULL);
	if (r == 0 && unlinkat(parent, stamp, AT_REMOVEDIR) < 0)
		r = -errno;
	return r;
}

/* What RUN's directory of pre-images holds (-errno as kept_bytes()):
 * an ended run's as recorded, or measured once and recorded (STORE may
 * be NULL: not). Nothing adds to an ended run's directory; what takes
 * from it (an undo) forgets the figure first. */
static int64_t run_held(struct store *s, int homefd, const struct store_run *run)
{
	if (run->ended && !run->kept && run->held_bytes >= 0)
		return run->held_bytes;
	int64_t bytes = kept_bytes(homefd, run->user, run->thread, run->begun_ns);
	if (s && run->ended && bytes >= 0)
		store_run_held(s, run->id, bytes); /* else measured again next time */
	return bytes;
}

int undo_state_get(struct store *s, int homefd, const struct store_run *run, struct undo_state *st)
{
	int r = store_run_undone_by(s, run->id, &st->undone_by);
	struct store_run u = { 0 };

	if (r < 0)
		return r;
	if (r == 1 && (r = store_run_get(s, st->undone_by, &u)) < 0)
		return r;
	bool undone = r == 0 && st->undone_by && u.ended;
	store_run_free(&u);
	st->bytes_held = run_held(NULL, homefd, run);
	if (st->bytes_held < 0 && st->bytes_held != -ENOENT)
		return (int)st->bytes_held;
	bool held = st->bytes_held >= 0;
	if (!held)
		st->bytes_held = 0;
	st->undo = undone ? "undone" : run->kept ? "kept" : held ? "undoable" : "none";
	return 0;
}

/* A run that retention may drop: ended, undoable, and what it holds. */
struct held {
	int64_t id, begun_ns, ended_ns, bytes;
	bool open;
};

struct holds {
	struct held *v;
	size_t n, cap;
	int homefd;
	struct store *store;
};

static int hold_row(void *arg, const struct store_run *run)
{
	struct holds *h = arg;
	int64_t bytes;

	if (run->kept || (bytes = run_held(h->store, h->homefd, run)) < 0)
		return 0;
	if (array_grow(h->v, h->n, h->cap) < 0)
		return -ENOMEM;
	h->v[h->n++] = (struct held){ run->id, run->begun_ns, run->ended_ns, bytes, !run->ended };
	return 0;
}

int kept_retain(struct store *s, int homefd, const char *user, const char *thread,
		int64_t max_age_ns, int64_t budget, int64_t now_ns, const char *command)
{
	struct holds h = { .homefd = homefd, .store = s };
	int64_t total = 0;
	int r = store_runs_each(s, user, thread, false, hold_row, &h), dropped = 0;
	char size[32];

	for (size_t i = 0; i < h.n; i++)
		total += h.v[i].bytes;
	/* Oldest first: the runs are listed by id. */
	for (size_t i = 0; i < h.n && r >= 0; i++) {
		const struct held *x = &h.v[i];
		bool old = max_age_ns && x->ended_ns < now_ns - max_age_ns;
		bool over = budget && total > budget;
		if (x->open || (!old && !over))
			continue;
		/* Its figure goes first: a crash before it is marked kept
		 * leaves it measured again (none), not the size of nothing. */
		if ((r = store_run_held(s, x->id, -1)) < 0 ||
		    (r = kept_drop(homefd, user, thread, x->begun_ns)) < 0 ||
		    (r = store_run_keep(s, x->id)) < 0)
			break;
		total -= x->bytes;
		dropped++;
		log_warn("%s: run %lld can no longer be undone: its pre-images (%s) were dropped,"
			 " %s",
			 command, (long long)x->id,
			 size_text((uint64_t)x->bytes, size, sizeof(size)),
			 old ? "older than [undo] max_age_days"
			     : "over the thread's [undo] budget");
	}
	free(h.v);
	return r < 0 ? r : dropped;
}
