/* undo_journal.c - the undo's own journal, made from its log once the
 * steps are done (undo_plan_events()). */
#include "undo_plan_int.h"
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

/* ---- the undo's own journal ----------------------------------------------- */

struct emit {
	int (*fn)(void *arg, const struct store_event *e);
	void *arg;
	pid_t pid;
	const char *comm;
};

static int emit(const struct emit *em, int64_t at, const char *op, const char *path,
		const char *path2, const struct snap_file *pre, const char *object,
		const uint8_t *meta, size_t meta_len)
{
	struct store_event e = {
		.at_ns = at,
		.op = op,
		.path = path,
		.path2 = path2,
		.pid = em->pid,
		.comm = em->comm,
		.pre = pre,
		.object = object,
		.meta = meta,
		.meta_len = meta_len,
	};

	return em->fn(em->arg, &e);
}

/* The journal's op for the file or symlink the undo put at PATH (where
 * it is now): "symlink" or "create". */
static const char *made_op(struct undo_plan *rw, const char *path)
{
	struct stat st;

	return path_stat(rw, path, &st) == 1 && S_ISLNK(st.st_mode) ? "symlink" : "create";
}

/* What the undo kept of PATH: OBJECT in its directory. */
static int emit_kept(const struct emit *em, const struct logged *l, const char *path)
{
	return emit(em, l->at_ns, "keep", path, NULL, NULL, l->object, NULL, 0);
}

/* The attributes the undo kept of PATH, then the change OP it made. */
static int emit_meta(const struct emit *em, const struct logged *l, const char *path,
		     const char *op)
{
	int r = emit(em, l->at_ns, "keep", path, NULL, NULL, NULL, l->meta, l->meta_len);

	return r ? r : emit(em, l->at_ns, op, path, NULL, NULL, NULL, NULL, 0);
}

int undo_plan_events(struct undo_plan *rw, int64_t begun_ns, pid_t pid, const char *comm,
		     int (*fn)(void *arg, const struct store_event *e), void *arg)
{
	struct emit em = { fn, arg, pid, comm };
	int r = emit(&em, begun_ns, "capture", "/mnt/user-data", NULL, NULL, NULL, NULL, 0);

	for (size_t i = 0; i < rw->nsteps && r == 0; i++) {
		const struct logged *l = &rw->steps[i];
		const struct store_event *e = &rw->log->events[l->seq];
		struct stat st;
		if (step_failed(rw, i))
			continue; /* nothing changed */
		switch (l->kind) {
		case STEP_RESTORE:
			if ((r = emit_kept(&em, l, e->path)) == 0)
				r = emit(&em, l->at_ns, "modify", e->path, NULL, NULL, NULL, NULL,
					 0);
			break;
		case STEP_PUT: {
			bool link = l->put ? l->put == PUT_SYMLINK
					   : path_stat(rw, e->path, &st) == 1 &&
						     S_ISLNK(st.st_mode);
			/* Made a name of another file again: a link, which its
			 * undo takes as the run's links. */
			r = emit(&em, l->at_ns,
				 l->link ? "link"
				 : link	 ? "symlink"
					 : "create",
				 e->path, NULL, NULL, NULL, NULL, 0);
			break;
		}
		case STEP_TAKE: {
			/* A name of a file with others keeps one of those
			 * (path2): its redo makes it a name of that file. */
			const char *at = l->path ? l->path : e->path;
			if ((r = emit(&em, l->at_ns, "keep", at, l->link, NULL, l->object, NULL,
				      0)) == 0)
				r = emit(&em, l->at_ns, "delete", at, NULL, NULL, NULL, NULL, 0);
			break;
		}
		case STEP_RMDIR:
			r = emit_meta(&em, l, l->path ? l->path : e->path, "rmdir");
			break;
		case STEP_MOVE:
			r = emit(&em, l->at_ns, "rename", e->path2, e->path, NULL, NULL, NULL, 0);
			break;
		case STEP_SWAP:
			/* The renamed file went back, the kept one came back. */
			r = emit(&em, l->at_ns, "rename", e->path2, e->path, NULL, NULL, NULL, 0);
			if (r == 0)
				r = emit(&em, l->at_ns, "create", e->path2, NULL, NULL, NULL, NULL,
					 0);
			break;
		case STEP_INPLACE:
		case STEP_SWAP_KEEP: {
			/* The kept file came back over the name; what was there
			 * is kept by the undo. */
			const char *at = l->kind == STEP_INPLACE ? e->path : e->path2;
			/* path2 = path: written back in place, as its redo is
			 * (step_keep_object()). */
			if ((r = emit(&em, l->at_ns, "keep", at,
				      l->kind == STEP_INPLACE ? at : NULL, NULL, l->object, NULL,
				      0)) == 0)
				r = emit(&em, l->at_ns, "modify", at, NULL, NULL, NULL, NULL, 0);
			break;
		}
		case STEP_DIR:
			r = emit(&em, l->at_ns, "keep", l->path, NULL, NULL, NULL, l->meta,
				 l->meta_len);
			break;
		case STEP_OVER:
			/* What the run made went (kept), renamed over. */
			if ((r = emit_kept(&em, l, e->path)) == 0)
				r = emit(&em, l->at_ns, "rename", l->path, e->path, NULL, NULL,
					 NULL, 0);
			break;
		case STEP_MOVE_KEPT:
			/* What was at the new name went (kept), its old file came
			 * back, the renamed one came back at the old name: one
			 * change of each name, which the redo takes back in one
			 * step each (not a rename, whose redo would be two). */
			if (l->object[0] && (r = emit_kept(&em, l, e->path)) == 0)
				r = emit(&em, l->at_ns, l->ino ? "modify" : "delete", e->path, NULL,
					 NULL, NULL, NULL, 0);
			else if (!l->object[0] && l->ino)
				r = emit(&em, l->at_ns, made_op(rw, e->path), e->path, NULL, NULL,
					 NULL, NULL, 0);
			if (r == 0)
				r = emit(&em, l->at_ns, made_op(rw, l->path), l->path, NULL, NULL,
					 NULL, NULL, 0);
			break;
		case STEP_EXCHANGE:
			r = emit(&em, l->at_ns, "exchange", e->path2, e->path, NULL, NULL, NULL, 0);
			break;
		case STEP_ATTR:
			r = emit_meta(&em, l, e->path, "chmod");
			break;
		case STEP_MKDIR:
			r = emit(&em, l->at_ns, "mkdir", e->path, NULL, NULL, NULL, NULL, 0);
			break;
		case STEP_FAIL:
		case STEP_SHADOW:
		case STEP_PUBLISH:
		case STEP_KINDS:
			break;
		}
	}
	return r;
}
