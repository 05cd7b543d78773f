/* windows.c - the runs of a thread as windows of time (windows.h). */
#include "windows.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/home.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct loading {
	struct windows *w;
	int homefd;
};

static int window_row(void *arg, const struct store_run *run)
{
	struct loading *l = arg;
	struct windows *w = l->w;

	if (array_grow(w->v, w->n, w->cap) < 0)
		return -ENOMEM;
	int dir = run->kept
			  ? -1
			  : home_undo_dir(l->homefd, run->user, run->thread, run->begun_ns, false);
	w->v[w->n++] = (struct run_window){ run->id,
					    run->begun_ns,
					    run->ended ? run->ended_ns : 0,
					    dir < 0 ? -1 : dir,
					    run->clean && run->ended ? run->undoes : 0,
					    false };
	return 0;
}

void windows_cancel(struct windows *w, int64_t from_ns)
{
	for (size_t i = 0; i < w->n; i++) {
		struct run_window *u = &w->v[i];
		if (!u->undoes || u->cancelled)
			continue;
		for (size_t j = 0; j < i; j++) {
			struct run_window *t = &w->v[j];
			if (t->id == u->undoes && !t->cancelled && t->begun_ns >= from_ns)
				t->cancelled = u->cancelled = true;
		}
	}
}

void windows_free(struct windows *w)
{
	for (size_t i = 0; i < w->n; i++)
		closep(&w->v[i].dir);
	free(w->v);
}

const struct run_window *window_at(const struct windows *w, int64_t at_ns)
{
	for (size_t i = w->n; i-- > 0;)
		if (w->v[i].begun_ns <= at_ns && (!w->v[i].ended_ns || w->v[i].ended_ns >= at_ns))
			return &w->v[i];
	return NULL;
}

int windows_load(struct store *s, int homefd, const char *user, const char *thread,
		 struct windows *w)
{
	struct loading l = { w, homefd };

	return store_runs_each(s, user, thread, false, window_row, &l);
}

int windows_events_of(const struct windows *w, const struct runlog *all, const char *path,
		      struct runlog *sub)
{
	memset(sub, 0, sizeof(*sub));
	for (size_t i = 0; i < all->n; i++) {
		const struct store_event *e = &all->events[i];
		const struct run_window *in;
		if (!strcmp(e->op, "capture") || !strcmp(e->op, "preimage") ||
		    !(runlog_below(e->path, path) || (e->path2 && runlog_below(e->path2, path))) ||
		    ((in = window_at(w, e->at_ns)) && in->cancelled))
			continue;
		if (array_grow(sub->events, sub->n, sub->cap) < 0)
			return -ENOMEM;
		sub->events[sub->n++] = *e;
	}
	return 0;
}
