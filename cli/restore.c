/* restore.c - sbx restore: one file or directory as it was before a run
 * (or at a time), from the pre-images the views kept; sbx log: what the
 * journal knows of a path, its versions among it. */
#include "args.h"
#include "cli.h"
#include "report.h"
#include "run/undo_plan.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/hash.h"
#include "common/home.h"
#include "common/quote.h"
#include "common/units.h"
#include "run/lifecycle.h"
#include "run/lookup.h"
#include "run/own.h"
#include "run/runlog.h"
#include "run/windows.h"
#include "store/snapshot.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char restore_usage[] =
	"Usage: sbx restore --user ID --thread ID PATH (--before RUN | --at TIME)\n"
	"                   [--dry-run] [--format text|json] [--home DIR]\n"
	"\n"
	"Brings PATH (a file, symlink or directory under /mnt/user-data/workspace\n"
	"or /mnt/user-data/outputs, as the thread sees it) back to what it was\n"
	"when run RUN began, or at TIME (UTC, 2026-12-01T19:30:00Z), from the\n"
	"pre-images the views kept: every change the journal records of PATH or\n"
	"below it since then is taken back, whichever run (or none) made it. The\n"
	"runs keep their pre-images (they can still be undone); the restore is\n"
	"itself a run, whose summary is printed and which sbx run undo undoes.\n"
	"A change no pre-image covers makes the restore refuse, naming it, and\n"
	"nothing is done: one made while no run was open, one whose run was kept\n"
	"or undone in part, and for a TIME inside a run, a change the run made\n"
	"after TIME to what it had changed before (a view keeps a file once a\n"
	"run, before the run first changes it), or its removal of a file it had\n"
	"made (a view keeps nothing of a file a run made and removed). A run and\n"
	"the undo that took it back whole are gone past.\n"
	"  --dry-run  print what would be done; change nothing\n";

static const char log_usage[] =
	"Usage: sbx log --user ID --thread ID PATH [--format text|json] [--home DIR]\n"
	"\n"
	"Lists what the journal knows of PATH, oldest first: every change made\n"
	"to it through a view (time, run, what, process), and each version a\n"
	"view kept before changing it (size, SHA-256 of up to 256 KiB; sbx\n"
	"restore --before RUN brings it back while its run keeps it), then\n"
	"what is there now.\n";

/* ---- sbx restore ----------------------------------------------------------- */

struct names {
	char **v;
	size_t n, cap;
};

static bool names_has(const struct names *ns, const char *name)
{
	for (size_t i = 0; i < ns->n; i++)
		if (!strcmp(ns->v[i], name))
			return true;
	return false;
}

static int names_add(struct names *ns, const char *name)
{
	if (names_has(ns, name))
		return 0;
	if (array_grow(ns->v, ns->n, ns->cap) < 0)
		return -ENOMEM;
	return (ns->v[ns->n++] = strdup(name)) ? 0 : -ENOMEM;
}

/* Drops NAME, not what is below it. */
static void names_forget(struct names *ns, const char *name)
{
	for (size_t i = 0; i < ns->n; i++)
		if (!strcmp(ns->v[i], name)) {
			free(ns->v[i]);
			ns->v[i] = ns->v[--ns->n];
			return;
		}
}

/* Drops the names that are (IN) or are not (!IN) ROOT or below it. */
static void names_drop_where(struct names *ns, const char *root, bool in)
{
	for (size_t i = ns->n; i-- > 0;)
		if (runlog_below(ns->v[i], root) == in) {
			free(ns->v[i]);
			ns->v[i] = ns->v[--ns->n];
		}
}

static void names_drop(struct names *ns, const char *name)
{
	names_drop_where(ns, name, true);
}

/* Renames FROM and what is below it to TO (what was at TO goes); with
 * SWAP, exchanges the two. */
static int names_move(struct names *ns, const char *from, const char *to, bool swap)
{
	size_t nf = strlen(from), nt = strlen(to);

	if (!swap)
		names_drop(ns, to);
	for (size_t i = 0; i < ns->n; i++) {
		const char *p = ns->v[i];
		bool at_from = runlog_below(p, from), at_to = swap && runlog_below(p, to);
		if (!at_from && !at_to)
			continue;
		char *moved;
		if (asprintf(&moved, "%s%s", at_from ? to : from, p + (at_from ? nf : nt)) < 0)
			return -ENOMEM;
		free(ns->v[i]);
		ns->v[i] = moved;
	}
	return 0;
}

static void names_free(struct names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
}

/* True if event E made what is at its path (absent before it). */
static bool made(const struct store_event *e)
{
	return !strcmp(e->op, "create") || !strcmp(e->op, "link") || !strcmp(e->op, "mkdir") ||
	       !strcmp(e->op, "symlink");
}

static void say_gap(const struct store_event *e, const char *why)
{
	char q[QUOTE_MAX], when[32];

	report_time(e->at_ns, when, sizeof(when));
	/* A "keep" comes just before the change it keeps for. */
	fprintf(stderr, "  %s: %s at %s by %s (pid %d): %s\n", quote_name(e->path, q, sizeof(q)),
		strcmp(e->op, "keep") ? e->op : "change", when, e->comm, (int)e->pid, why);
}

/* The changes of SUB that cannot be taken back, each said (with SAY),
 * once a path: a "keep" whose object is gone (every step needs its own),
 * and a change made while no run was open (the views keep nothing then)
 * with no earlier word on its path: a pre-image (a "keep": within a run
 * the views keep a path before they change it, a staged save's once it
 * is published, after its "modify") or its making. Returns how many, or
 * -errno. */
static int gaps(const struct runlog *sub, const struct windows *w, const struct undo_plan *rw,
		bool say)
{
	struct names decided = { 0 }, said = { 0 };
	int r = 0, n = 0;

	for (size_t i = 0; i < sub->n && r == 0; i++) {
		const struct store_event *e = &sub->events[i];
		const struct run_window *in = window_at(w, e->at_ns);
		bool keep = !strcmp(e->op, "keep") && e->object;
		bool changes = !strcmp(e->op, "modify") || !strcmp(e->op, "chmod") ||
			       !strcmp(e->op, "xattr") || !strcmp(e->op, "delete") ||
			       !strcmp(e->op, "rmdir");
		char why[128];
		if (keep && !undo_plan_has_object(rw, e->object))
			snprintf(why, sizeof(why),
				 "its pre-image is gone (run %lld was kept, undone in part, or"
				 " aged out)",
				 in ? (long long)in->id : 0LL);
		else if (names_has(&decided, e->path) || (!keep && !made(e) && !(changes && !in)))
			continue; /* decided, or a rename (the names follow it), or
				   * a change whose pre-image comes with it */
		else if (changes)
			snprintf(why, sizeof(why),
				 "made while no run was open: nothing kept what was there before");
		else
			why[0] = '\0';
		if (why[0] && !names_has(&said, e->path)) {
			if (say)
				say_gap(e, why);
			n++;
			r = names_add(&said, e->path);
		}
		if (r == 0)
			r = names_add(&decided, e->path);
	}
	names_free(&decided);
	names_free(&said);
	return r < 0 ? r : n;
}

/* The changes, after FROM, that run W (open at FROM, begun before it;
 * its events: WLOG) made to what it had made or changed before FROM and
 * was under PATH then, each said (with SAY): a view keeps what a file or
 * directory was before a run first changes it, once per run, so what the
 * run made of it by FROM is kept nowhere; nor a file the run made and
 * removed, at the name it made it under (its removal keeps nothing: a
 * "delete" with no "keep" of its name before it). Names are followed
 * through renames, of directories above them too. Returns how many, or
 * -errno. */
static int gaps_within(const struct runlog *wlog, const struct run_window *w, int64_t from,
		       const char *path, bool say)
{
	struct names had = { 0 };  /* what W made or changed, by name */
	struct names kept = { 0 }; /* names whose last word is a kept object */
	bool after = false;
	char why[160];
	int r = 0, n = 0;

	for (size_t i = 0; i < wlog->n && r == 0; i++) {
		const struct store_event *e = &wlog->events[i];
		bool changes = !strcmp(e->op, "modify") || !strcmp(e->op, "chmod");
		bool keep = !strcmp(e->op, "keep") && e->object;
		bool unkept = !strcmp(e->op, "delete") && !names_has(&kept, e->path);
		if (keep) {
			r = names_add(&kept, e->path);
		} else {
			names_forget(&kept, e->path);
			if (e->path2)
				names_forget(&kept, e->path2);
		}
		if (!after && e->at_ns >= from) {
			after = true; /* what was elsewhere at FROM is not restored */
			names_drop_where(&had, path, false);
		}
		if (e->path2 && (!strcmp(e->op, "rename") || !strcmp(e->op, "exchange"))) {
			r = names_move(&had, e->path, e->path2, !strcmp(e->op, "exchange"));
		} else if (after && unkept && names_has(&had, e->path)) {
			if (say) {
				snprintf(why, sizeof(why),
					 "run %lld had made it before then, and a view keeps"
					 " nothing of a file a run made and removed",
					 (long long)w->id);
				say_gap(e, why);
			}
			names_forget(&had, e->path);
			n++;
		} else if (!strcmp(e->op, "delete") || !strcmp(e->op, "rmdir")) {
			names_drop(&had, e->path); /* kept whole as it went */
		} else if (!after) {
			if (changes || made(e) || (!strcmp(e->op, "keep") && e->object))
				r = names_add(&had, e->path);
		} else if (changes && names_has(&had, e->path)) {
			if (say) {
				snprintf(why, sizeof(why),
					 "run %lld had changed it before then, and a view keeps"
					 " what a file was before a run first changes it, once",
					 (long long)w->id);
				say_gap(e, why);
			}
			names_forget(&had, e->path); /* one word for it */
			n++;
		}
	}
	names_free(&had);
	names_free(&kept);
	return r < 0 ? r : n;
}

int cmd_restore(int argc, char **argv, const char *home)
{
	char err[PATH_MAX + 256], q[QUOTE_MAX];
	struct thread_args a;
	struct thread_roots roots = { -1, -1 };
	struct runlog all = { 0 }, sub = { 0 }, within = { 0 };
	struct windows w = { 0 };
	struct store_run run = { 0 }, u = { 0 };
	struct undo_plan *rw = NULL;
	struct run_texts *texts = NULL;
	struct store *s = NULL;
	struct error e;
	json_t *summary = NULL;
	int r = thread_args_parse("restore", restore_usage, argc, argv, home,
				  THREAD_ARGS_PATH | THREAD_ARGS_WHEN | THREAD_ARGS_FORMAT, &a);
	_cleanup_(closep) int homefd = -1;

	if (r >= 0)
		return r;
	if (thread_roots_open(a.home, a.user, a.thread, &roots, &e) < 0)
		return say_error("restore", &e);
	if (store_open(a.home, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "sbx: restore: %s\n", err);
		thread_roots_close(&roots);
		return 1;
	}
	if (thread_fence(a.home, s, a.user, a.thread, &e) < 0) {
		store_close(s);
		thread_roots_close(&roots);
		return say_error("restore", &e);
	}
	int64_t from = a.at_ns;
	if (a.before) {
		r = store_run_get(s, a.before, &run);
		if (r == 0 && (strcmp(run.user, a.user) || strcmp(run.thread, a.thread)))
			r = -ENOENT;
		if (r < 0) {
			fprintf(stderr, "sbx: restore: no run %lld of %s/%s\n", (long long)a.before,
				a.user, a.thread);
			goto done;
		}
		from = run.begun_ns;
	}
	homefd = open(a.home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	r = homefd < 0 ? -errno : windows_load(s, homefd, a.user, a.thread, &w);
	if (r == 0)
		r = runlog_load(s, a.user, a.thread, from, realtime_ns(), &all);
	windows_cancel(&w, from);
	if (r == 0)
		r = windows_events_of(&w, &all, a.path, &sub);
	if (r == 0)
		r = undo_plan_new(&sub, realtime_ns(), roots.ws, roots.out, -1, &rw);
	for (size_t i = 0; r == 0 && i < w.n; i++)
		if (w.v[i].dir >= 0 && (!w.v[i].ended_ns || w.v[i].ended_ns >= from))
			r = undo_plan_add_source(rw, w.v[i].dir);
	if (r < 0) {
		fprintf(stderr, "sbx: restore: cannot read the journal: %s\n", strerror(-r));
		goto done;
	}
	const char *qp = quote_name(a.path, q, sizeof(q));
	if (!sub.n) {
		printf("%s is as it was: the journal has no change of it since then\n", qp);
		goto done;
	}
	undo_plan_copy(rw);
	/* A moment inside a run: what the run had changed by then. */
	const struct run_window *in = window_at(&w, from);
	if (in && in->begun_ns < from &&
	    (r = runlog_load(s, a.user, a.thread, in->begun_ns,
			     in->ended_ns ? in->ended_ns : realtime_ns(), &within)) < 0) {
		fprintf(stderr, "sbx: restore: cannot read the journal: %s\n", strerror(-r));
		goto done;
	}
	int ngaps = gaps(&sub, &w, rw, false), nwithin = 0;
	if (ngaps >= 0 && within.n)
		nwithin = gaps_within(&within, in, from, a.path, false);
	if (ngaps < 0 || nwithin < 0) {
		r = ngaps < 0 ? ngaps : nwithin;
		fprintf(stderr, "sbx: restore: %s\n", strerror(-r));
		goto done;
	}
	if (ngaps + nwithin > 0) {
		fprintf(stderr,
			"sbx: restore: cannot bring back %s as it was: %d change%s of it "
			"cannot be taken back:\n",
			qp, ngaps + nwithin, ngaps + nwithin == 1 ? "" : "s");
		gaps(&sub, &w, rw, true);
		if (nwithin)
			gaps_within(&within, in, from, a.path, true);
		fprintf(stderr, "sbx: restore: nothing was changed\n");
		r = -ENODATA;
		goto done;
	}
	if (a.dry_run) {
		undo_plan_print(rw, stdout);
		goto done;
	}
	r = run_begin_own(s, homefd, a.user, a.thread, RUN_RESTORE, 0, &sub, &roots, NULL, &u,
			  &texts);
	if (r < 0) {
		fprintf(stderr, "sbx: restore: cannot begin: %s\n", strerror(-r));
		goto done;
	}
	r = run_own_steps(s, a.home, homefd, &u, rw, texts, NULL, NULL, "restore", &summary, &e);
	if (r < 0)
		say_error("restore", &e);
	else if (report_run(&u, summary, a.json ? FORMAT_JSON : FORMAT_TEXT))
		r = -EIO;
	else if (r > 0)
		r = -EIO; /* steps failed: said */
done:
	json_decref(summary);
	run_texts_free(texts);
	undo_plan_free(rw);
	free(sub.events);
	runlog_free(&all);
	runlog_free(&within);
	windows_free(&w);
	store_run_free(&u);
	store_run_free(&run);
	thread_roots_close(&roots);
	store_close(s);
	return r < 0 ? 1 : 0;
}

/* ---- sbx log --------------------------------------------------------------- */

/* The version a "keep" event E kept, from its run's directory W: 0 and F,
 * or -ENOENT if it is gone (dropped, or moved back by an undo). */
static int kept_version(const struct run_window *w, const struct store_event *e,
			struct snap_file *f)
{
	if (!w || w->dir < 0 || !e->object)
		return -ENOENT;
	return snapshot_file_at(w->dir, e->object, NULL, e->path, NULL, NULL, f);
}

static json_t *version_json(const struct snap_file *f)
{
	char hex[SHA256_HEX + 1];

	return json_pack("{s:I, s:o, s:o}", "size", (json_int_t)f->size, "sha256",
			 f->hashed ? json_string(sha256_hex(f->sha256, hex)) : json_null(),
			 "symlink_target", f->target ? json_string(f->target) : json_null());
}

static void version_text(const struct snap_file *f, char *buf, size_t size)
{
	char hex[SHA256_HEX + 1], units[32];

	if (f->symlink)
		snprintf(buf, size, "symlink to %s", f->target ? f->target : "?");
	else
		snprintf(buf, size, "%s, sha256 %.16s",
			 size_text((uint64_t)f->size, units, sizeof(units)),
			 f->hashed ? sha256_hex(f->sha256, hex) : "(over 256 KiB: not hashed)");
}

int cmd_log(int argc, char **argv, const char *home)
{
	char err[PATH_MAX + 256], when[32], q[QUOTE_MAX], q2[QUOTE_MAX], what[2 * QUOTE_MAX + 8];
	struct thread_args a;
	struct thread_roots roots = { -1, -1 };
	struct runlog all = { 0 };
	struct windows w = { 0 };
	struct store *s = NULL;
	struct snap_file f;
	int r = thread_args_parse("log", log_usage, argc, argv, home,
				  THREAD_ARGS_PATH | THREAD_ARGS_FORMAT, &a);
	json_auto_t *rows = NULL;
	_cleanup_(closep) int homefd = -1;

	if (r >= 0)
		return r;
	struct error e;
	if (thread_roots_open(a.home, a.user, a.thread, &roots, &e) < 0)
		return say_error("log", &e);
	if (store_open(a.home, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "sbx: log: %s\n", err);
		thread_roots_close(&roots);
		return 1;
	}
	homefd = open(a.home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	r = homefd < 0 ? -errno : windows_load(s, homefd, a.user, a.thread, &w);
	if (r == 0)
		r = runlog_load(s, a.user, a.thread, 0, INT64_MAX, &all);
	if (r == 0 && a.json && !(rows = json_array()))
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < all.n; i++) {
		const struct store_event *e = &all.events[i];
		if (!strcmp(e->op, "capture") || !strcmp(e->op, "preimage") ||
		    (strcmp(e->path, a.path) && (!e->path2 || strcmp(e->path2, a.path))))
			continue;
		if (!strcmp(e->op, "keep") && !e->object)
			continue; /* attributes: no version of the content */
		const struct run_window *rw = window_at(&w, e->at_ns);
		bool version = !strcmp(e->op, "keep");
		int have = version ? kept_version(rw, e, &f) : -ENOENT;
		if (a.json) {
			json_t *row = json_pack("{s:I, s:s, s:s, s:s, s:o, s:o, s:i, s:s}", "at_ns",
						(json_int_t)e->at_ns, "time",
						(report_time(e->at_ns, when, sizeof(when)), when),
						"op", version ? "version" : e->op, "path", e->path,
						"path2",
						e->path2 ? json_string(e->path2) : json_null(),
						"run", rw ? json_integer(rw->id) : json_null(),
						"pid", (int)e->pid, "command", e->comm);
			if (row && version)
				json_object_set_new(row, "version",
						    have == 0 ? version_json(&f) : json_null());
			r = row && json_array_append_new(rows, row) == 0 ? 0 : -ENOMEM;
		} else {
			report_time(e->at_ns, when, sizeof(when));
			if (version && have == 0)
				version_text(&f, what, sizeof(what));
			else if (version)
				snprintf(what, sizeof(what), "(no longer kept)");
			else if (e->path2)
				snprintf(what, sizeof(what), "%s -> %s",
					 quote_name(e->path, q, sizeof(q)),
					 quote_name(e->path2, q2, sizeof(q2)));
			else
				what[0] = '\0';
			char runs[32] = "-";
			if (rw)
				snprintf(runs, sizeof(runs), "run %lld", (long long)rw->id);
			printf("%s  %-9s %-8s %s%s(pid %d, %s)\n", when, runs,
			       version ? "version" : e->op, what, what[0] ? "  " : "", (int)e->pid,
			       e->comm);
		}
		if (have == 0)
			snap_file_free(&f);
	}
	if (r == 0) {
		int now = runlog_describe(roots.ws, roots.out, a.path, NULL, NULL, &f);
		if (a.json) {
			json_auto_t *doc = json_pack("{s:s, s:o, s:o}", "path", a.path, "events",
						     json_incref(rows), "now",
						     now == 0 ? version_json(&f) : json_null());
			if (!doc ||
			    json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0)
				r = -ENOMEM;
			else
				putchar('\n');
		} else if (now == 0) {
			version_text(&f, what, sizeof(what));
			printf("now                   %s\n", what);
		} else {
			printf("now                   %s\n",
			       now == -ENOENT ? "(no file or symlink there)" : strerror(-now));
		}
		if (now == 0)
			snap_file_free(&f);
	}
	if (r < 0)
		fprintf(stderr, "sbx: log: %s\n", strerror(-r));
	runlog_free(&all);
	windows_free(&w);
	thread_roots_close(&roots);
	store_close(s);
	return r < 0 ? 1 : 0;
}
