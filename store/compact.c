/* compact.c - see compact.h. */
#include "compact.h"
#include "common/hash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Directories made and pending removal at once, at most: past this a
 * mkdir is kept (each row is checked against every pending one). */
#define PENDING_DIRS 64

/* What is pending for a path: the row that made it, if removing it
 * would make its rows churn, and its last row (a repeat drops it). */
struct path_state {
	size_t made; /* index + 1 of the create, symlink, link or mkdir; 0 none */
	bool dir;    /* made by mkdir */
	size_t last; /* index + 1 of its last row, 0 if none */
	size_t gap;  /* the stretch between runs of both */
};

/* A path's place in the table of paths: its state's index. */
struct path_slot {
	const char *path; /* NULL: free */
	size_t state;
};

struct churn {
	struct compact_row *rows;
	size_t *group_of; /* per row: the made row (index + 1) whose fate it shares */
	bool *gone;	  /* per made row (index + 1): removed, its group goes */
	/* Open addressing over FNV-1a, at most half full: glibc's hsearch
	 * hashes a key's first 8 bytes, the same "/mnt/use" for every path
	 * here, and a window of 65,536 rows took 4.8 s instead of 7 ms. */
	struct path_slot *slots;
	size_t mask; /* slots - 1, a power of two less one */
	struct path_state *states;
	size_t nstates;
	size_t dirs[PENDING_DIRS]; /* the pending mkdir rows (index + 1) */
	size_t ndirs;
};

static bool is(const char *op, const char *const *set)
{
	for (; *set; set++)
		if (!strcmp(op, *set))
			return true;
	return false;
}

static const char *const made_file[] = { "create", "symlink", "link", NULL };
static const char *const repeatable[] = { "modify", "chmod", "xattr", NULL };

/* PATH's state, made if new (room for each was made up front). */
static struct path_state *state_of(struct churn *c, const char *path)
{
	size_t i = (size_t)fnv1a(FNV1A_START, path, strlen(path)) & c->mask;

	for (; c->slots[i].path; i = (i + 1) & c->mask)
		if (!strcmp(c->slots[i].path, path))
			return &c->states[c->slots[i].state];
	c->slots[i] = (struct path_slot){ path, c->nstates };
	c->states[c->nstates] = (struct path_state){ 0 };
	return &c->states[c->nstates++];
}

static void forget_dir(struct churn *c, size_t made)
{
	for (size_t i = 0; i < c->ndirs; i++)
		if (c->dirs[i] == made) {
			c->dirs[i] = c->dirs[--c->ndirs];
			return;
		}
}

/* PATH was named: a pending directory above it no longer goes. */
static void touch_dirs(struct churn *c, const char *path)
{
	for (size_t i = 0; i < c->ndirs;) {
		char *d = c->rows[c->dirs[i] - 1].path;
		size_t len = strlen(d);
		if (strncmp(path, d, len) || path[len] != '/') {
			i++;
			continue;
		}
		struct path_state *st = state_of(c, d);
		if (st->made == c->dirs[i])
			st->made = 0;
		c->dirs[i] = c->dirs[--c->ndirs];
	}
}

/* Row I names PATH (its first path if FIRST) in stretch GAP (SIZE_MAX: a
 * run's row, which only ends what is pending). */
static void name(struct churn *c, size_t i, const char *path, bool first, size_t gap)
{
	struct compact_row *r = &c->rows[i];
	struct path_state *st = state_of(c, path);

	touch_dirs(c, path);
	if (st->gap != gap) {
		if (st->made && st->dir)
			forget_dir(c, st->made);
		*st = (struct path_state){ .gap = gap };
	}
	bool alone = first && !r->path2 && gap != SIZE_MAX;
	bool repeat = alone && is(r->op, repeatable);
	if (repeat && st->last && !strcmp(c->rows[st->last - 1].op, r->op))
		c->rows[st->last - 1].drop = true; /* the same change again */
	st->last = i + 1;
	if (repeat) {
		c->group_of[i] = st->made;
		return;
	}
	if (alone && st->made && !strcmp(r->op, st->dir ? "rmdir" : "delete")) {
		c->group_of[i] = st->made;
		c->gone[st->made] = true; /* made and removed: churn */
		if (st->dir)
			forget_dir(c, st->made);
		st->made = st->last = 0;
		return;
	}
	if (st->made && st->dir)
		forget_dir(c, st->made);
	st->made = 0; /* named otherwise: what it was stays */
	bool dir = alone && !strcmp(r->op, "mkdir");
	if (alone && (dir || is(r->op, made_file)) && (!dir || c->ndirs < PENDING_DIRS)) {
		st->made = i + 1;
		st->dir = dir;
		c->group_of[i] = i + 1;
		if (dir)
			c->dirs[c->ndirs++] = i + 1;
	}
}

/* Which stretch between runs AT_NS is in (how many runs began by then),
 * and whether a run was open then. */
static size_t stretch(const struct run_span *runs, size_t nruns, int64_t at_ns, bool *in_run)
{
	size_t begun = 0;

	*in_run = false;
	for (size_t i = 0; i < nruns; i++) {
		if (runs[i].begun_ns > at_ns)
			continue;
		begun++;
		if (runs[i].ended_ns >= at_ns)
			*in_run = true;
	}
	return begun;
}

int journal_churn(struct compact_row *rows, size_t n, const struct run_span *runs, size_t nruns)
{
	struct churn c = { .rows = rows };
	size_t paths = 2 * n + 1, nslots = 64; /* a row names one or two */
	int r = 0, dropped = 0;

	while (nslots < 2 * paths)
		nslots *= 2;
	c.mask = nslots - 1;
	c.slots = calloc(nslots, sizeof(*c.slots));
	c.group_of = calloc(n + 1, sizeof(*c.group_of));
	c.gone = calloc(n + 1, sizeof(*c.gone));
	c.states = calloc(paths, sizeof(*c.states));
	if (!c.slots || !c.group_of || !c.gone || !c.states) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		bool in_run;
		size_t gap = stretch(runs, nruns, rows[i].at_ns, &in_run);
		/* A run's row is kept, and what is pending for its paths
		 * with it. */
		if (in_run)
			gap = SIZE_MAX;
		name(&c, i, rows[i].path, true, gap);
		if (rows[i].path2)
			name(&c, i, rows[i].path2, false, gap);
	}
	for (size_t i = 0; i < n; i++) {
		if (c.group_of[i] && c.gone[c.group_of[i]])
			rows[i].drop = true;
		dropped += rows[i].drop;
	}
out:
	free(c.slots);
	free(c.group_of);
	free(c.gone);
	free(c.states);
	return r < 0 ? r : dropped;
}
