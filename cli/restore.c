/* restore.c - sbx restore: one file or directory as it was before a run
 * (or at a time), from the pre-images the views kept; sbx log: what the
 * journal knows of a path, its versions among it. */
#include "args.h"
#include "cli.h"
#include "report.h"
#include "run/undo_plan.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/hash.h"
#include "common/home.h"
#include "common/quote.h"
#include "common/units.h"
#include "run/lookup.h"
#include "run/restore.h"
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

/* Says the changes of RES that cannot be taken back. */
static void say_gaps(const struct restore_result *res, const char *qp)
{
	char q[QUOTE_MAX], when[32];
	size_t n = res->ngaps;

	fprintf(stderr,
		"sbx: restore: cannot bring back %s as it was: %zu change%s of it "
		"cannot be taken back:\n",
		qp, n, n == 1 ? "" : "s");
	for (size_t i = 0; i < n; i++) {
		const struct restore_gap *g = &res->gaps[i];
		report_time(g->at_ns, when, sizeof(when));
		fprintf(stderr, "  %s: %s at %s by %s (pid %d): %s\n",
			quote_name(g->path, q, sizeof(q)), g->op, when, g->comm, (int)g->pid,
			g->why);
	}
	fprintf(stderr, "sbx: restore: nothing was changed\n");
}

/* sbx restore: the restore itself is run/restore.h's; this says how it
 * went. */
int cmd_restore(int argc, char **argv, const char *home)
{
	char err[PATH_MAX + 256], q[QUOTE_MAX];
	struct thread_args a;
	struct restore_result res = { 0 };
	struct store *s = NULL;
	struct error e;
	int r = thread_args_parse("restore", restore_usage, argc, argv, home,
				  THREAD_ARGS_PATH | THREAD_ARGS_WHEN | THREAD_ARGS_FORMAT, &a);

	if (r >= 0)
		return r;
	if ((r = thread_check(a.home, a.user, a.thread, &e)) < 0)
		return say_error("restore", &e);
	if (store_open(a.home, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "sbx: restore: %s\n", err);
		return 1;
	}
	const struct restore_options o = { a.path, a.before, a.at_ns, a.dry_run };
	r = run_restore(s, a.home, a.user, a.thread, &o, &res, &e);
	const char *qp = quote_name(a.path, q, sizeof(q));
	if (r == -ENODATA && res.ngaps)
		say_gaps(&res, qp);
	else if (r < 0)
		say_error("restore", &e);
	else if (res.nothing)
		printf("%s is as it was: the journal has no change of it since then\n", qp);
	else if (a.dry_run)
		undo_plan_print(res.rw, stdout);
	else if (report_run(&res.restore, res.summary, a.json ? FORMAT_JSON : FORMAT_TEXT, NULL) ||
		 res.failed)
		r = -EIO; /* steps that failed are said */
	restore_result_free(&res);
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
