/* runs.c - sbx runs: a thread's runs, whether each can be undone, and
 * the disk space its pre-images hold. */
#include "args.h"
#include "cli.h"
#include "run/lookup.h"
#include "report.h"
#include "run/undo_plan.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/units.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char runs_usage[] =
	"Usage: sbx runs --user ID --thread ID [--format text|json] [--home DIR]\n"
	"\n"
	"Lists the thread's runs, oldest first: id, when it began and ended, how\n"
	"many files it changed, whether sbx run undo can undo it, and the disk\n"
	"space its pre-images hold.\n"
	"  undoable    sbx run undo RUN brings back what it changed\n"
	"  undone      undone by the run named (sbx run undo of that one redoes it)\n"
	"  kept        its pre-images were dropped (sbx run keep, or the retention\n"
	"              of sbx.conf's [undo]): it can no longer be undone\n"
	"  none        no view recorded pre-images for it\n"
	"A run that undid another says which (\"undo of N\"); a restore is\n"
	"\"restore\", an apply to a project (a thread applied-NAME-HASH, the\n"
	"project's record: sbx try apply) \"apply\".\n";

static const char *const run_kinds[] = { "run", "undo", "restore", "apply" };

struct listing {
	struct store *s;
	int homefd;
	bool json;
	json_t *rows;
};

/* How many files the summary of RUN counts as changed, or -1. */
static long long files_changed(const struct store_run *run)
{
	if (!run->ended)
		return -1;
	if (!run->summary)
		return 0;
	json_auto_t *p = json_loads(run->summary, JSON_ALLOW_NUL, NULL);
	json_t *n = json_object_get(json_object_get(p, "sbx"), "files_total");
	return json_is_integer(n) ? (long long)json_integer_value(n) : -1;
}

static int list_row(void *arg, const struct store_run *run)
{
	struct listing *l = arg;
	struct undo_state st;
	char begun[32], ended[32], size[32], kind[40], undo[40], changed[24];
	long long files = files_changed(run);
	int r = undo_state_get(l->s, l->homefd, run, &st);

	if (r < 0)
		return r;
	if (l->json) {
		json_t *row =
			json_pack("{s:I, s:s, s:I, s:o, s:o, s:o, s:s, s:o, s:I}", "run",
				  (json_int_t)run->id, "kind", run_kinds[run->kind], "begun_ns",
				  (json_int_t)run->begun_ns, "ended_ns",
				  run->ended ? json_integer(run->ended_ns) : json_null(), "undoes",
				  run->undoes ? json_integer(run->undoes) : json_null(),
				  "files_changed", files >= 0 ? json_integer(files) : json_null(),
				  "undo", st.undo, "undone_by",
				  st.undone_by && !strcmp(st.undo, "undone")
					  ? json_integer(st.undone_by)
					  : json_null(),
				  "bytes_held", (json_int_t)st.bytes_held);
		return row && json_array_append_new(l->rows, row) == 0 ? 0 : -ENOMEM;
	}
	report_time(run->begun_ns, begun, sizeof(begun));
	if (run->ended)
		report_time(run->ended_ns, ended, sizeof(ended));
	else
		snprintf(ended, sizeof(ended), "(open)");
	snprintf(changed, sizeof(changed), files >= 0 ? "%lld" : "-", files);
	if (run->kind == RUN_UNDO)
		snprintf(kind, sizeof(kind), "undo of %lld", (long long)run->undoes);
	else
		snprintf(kind, sizeof(kind), "%s", run_kinds[run->kind]);
	if (!strcmp(st.undo, "undone"))
		snprintf(undo, sizeof(undo), "undone by %lld", (long long)st.undone_by);
	else
		snprintf(undo, sizeof(undo), "%s", st.undo);
	printf("%-6lld %-20s %-20s %-7s %-15s %-15s %s\n", (long long)run->id, begun, ended,
	       changed, kind, undo, size_text((uint64_t)st.bytes_held, size, sizeof(size)));
	return 0;
}

int cmd_runs(int argc, char **argv, const char *home)
{
	char err[PATH_MAX + 256];
	struct thread_args a;
	struct listing l = { 0 };
	int r = thread_args_parse("runs", runs_usage, argc, argv, home, THREAD_ARGS_FORMAT, &a);

	if (r >= 0)
		return r;
	struct error e;
	if (thread_check(a.home, a.user, a.thread, &e) < 0)
		return say_error("runs", &e);
	if (store_open(a.home, &l.s, err, sizeof(err)) < 0) {
		fprintf(stderr, "sbx: runs: %s\n", err);
		return 1;
	}
	l.json = a.json;
	l.homefd = open(a.home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	l.rows = a.json ? json_array() : NULL;
	if (!a.json)
		printf("%-6s %-20s %-20s %-7s %-15s %-15s %s\n", "RUN", "BEGUN", "ENDED", "CHANGED",
		       "KIND", "UNDO", "HELD");
	r = l.homefd < 0	? -errno
	    : a.json && !l.rows ? -ENOMEM
				: store_runs_each(l.s, a.user, a.thread, true, list_row, &l);
	if (r == 0 && a.json) {
		json_auto_t *doc = json_pack("{s:s, s:s, s:O}", "user", a.user, "thread", a.thread,
					     "runs", l.rows);
		if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0)
			r = -ENOMEM;
		else
			putchar('\n');
	}
	if (r < 0)
		fprintf(stderr, "sbx: runs: %s\n", strerror(-r));
	json_decref(l.rows);
	closep(&l.homefd);
	store_close(l.s);
	return r < 0 ? 1 : 0;
}
