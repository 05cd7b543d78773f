/* audit.c - sbx audit: the writes the read-before-write gate refused (or,
 * in audit mode, would have refused) for one thread, oldest first. */
#include "args.h"
#include "cli.h"
#include "run/lookup.h"
#include "run/refusal.h"
#include "report.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/hash.h"
#include "common/quote.h"
#include "store/store.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char audit_usage[] =
	"Usage: sbx audit --user ID --thread ID [--diff] [--format text|json]\n"
	"                 [--home DIR]\n"
	"\n"
	"Lists the modifications the read-before-write gate refused in the\n"
	"thread's views (EACCES), oldest first: time, operation, virtual path,\n"
	"the calling process, and why. The same refusal repeated (the same\n"
	"operation, path, reason and versions, by any process) is one row:\n"
	"the first one's time and process, then how many and the last time,\n"
	"as '[N times, last TIME]'. Rows marked 'audit' were allowed (the\n"
	"view ran with --rbw audit) and show what enforce would have refused.\n"
	"Saves refused because a person saved the file on the host while it\n"
	"was open are listed too (operation 'save'). Nothing is printed ([] in\n"
	"JSON) when nothing was refused; a home, user or thread that does not\n"
	"exist is an error.\n"
	"\n"
	"What an agent should do about a refusal: read the file again (its\n"
	"current version, which may hold someone else's edits), then retry the\n"
	"write based on what it read. --diff shows what it missed.\n"
	"\n"
	"  --diff          under each refusal of a file changed since it was\n"
	"                  read: the version read and the one found (size,\n"
	"                  mtime, SHA-256) and, for text both of whose\n"
	"                  versions the store kept (up to 256 KiB, not binary,\n"
	"                  not sensitive by name or content), the unified diff\n"
	"                  read -> found\n"
	"  --format text   one line per refusal (default)\n"
	"  --format json   a JSON array of objects: id, time, path, op, pid,\n"
	"                  command, reason, mode, allowed, count, last_time\n"
	"                  (time and pid are the first's), and for a file\n"
	"                  changed since it was read \"changed\": {base,\n"
	"                  current: {size, mtime, mtime_ns, sha256}, diff,\n"
	"                  diff_unavailable_reason}\n";

struct audit_out {
	struct store *store;
	bool diff, color; /* text: --diff, on a terminal */
	json_t *rows;	  /* json */
};

static void print_version(const char *label, const struct store_version *v)
{
	char when[32], sha[SHA256_HEX + 1];

	report_time(v->mtime_ns, when, sizeof(when));
	printf("    %-8s %lld bytes, modified %s, sha256 %.12s\n", label, (long long)v->size, when,
	       v->hashed ? sha256_hex(v->sha256, sha) : "unknown");
}

static int print_text(void *arg, const struct store_audit *a)
{
	struct audit_out *o = arg;
	char when[32], path[QUOTE_MAX], comm[QUOTE_MAX];

	report_time(a->at_ns, when, sizeof(when));
	printf("%s  %-7s  %s %s  (pid %d, %s): ", when, a->allowed ? "audit" : "refused", a->op,
	       quote_name(a->path, path, sizeof(path)), (int)a->pid,
	       quote_name(a->comm, comm, sizeof(comm)));
	fput_visible(stdout, a->reason, strlen(a->reason));
	if (a->times > 1) {
		report_time(a->last_ns, when, sizeof(when));
		printf("  [%lld times, last %s]", (long long)a->times, when);
	}
	putchar('\n');
	if (!o->diff || !a->base.known || !a->current.known)
		return 0;
	print_version("read:", &a->base);
	print_version("found:", &a->current);
	const char *why = NULL;
	_cleanup_(freep) char *d = refusal_diff(o->store, a, &why);
	if (d && *d)
		report_print_diff(stdout, d, strlen(d), a->path, o->color);
	else
		printf("    (no diff: %s)\n", why);
	return 0;
}

static json_t *version_json(const struct store_version *v)
{
	char when[32], sha[SHA256_HEX + 1];

	report_time(v->mtime_ns, when, sizeof(when));
	return json_pack("{s:I, s:s, s:I, s:o}", "size", (json_int_t)v->size, "mtime", when,
			 "mtime_ns", (json_int_t)v->mtime_ns, "sha256",
			 v->hashed ? json_string(sha256_hex(v->sha256, sha)) : json_null());
}

static int add_json(void *arg, const struct store_audit *a)
{
	struct audit_out *o = arg;
	char when[32], last[32];

	report_time(a->at_ns, when, sizeof(when));
	report_time(a->last_ns, last, sizeof(last));
	json_t *row = json_pack("{s:I, s:s, s:s, s:s, s:i, s:s, s:s, s:s, s:b, s:I, s:s}", "id",
				(json_int_t)a->id, "time", when, "path", a->path, "op", a->op,
				"pid", (int)a->pid, "command", a->comm, "reason", a->reason, "mode",
				a->mode, "allowed", a->allowed, "count", (json_int_t)a->times,
				"last_time", last);
	if (row && a->base.known && a->current.known) {
		const char *why = NULL;
		_cleanup_(freep) char *d = refusal_diff(o->store, a, &why);
		json_t *changed = json_pack("{s:o, s:o, s:o, s:o}", "base", version_json(&a->base),
					    "current", version_json(&a->current), "diff",
					    d && *d ? json_string(d) : json_null(),
					    "diff_unavailable_reason",
					    d && *d ? json_null() : json_string(why));
		if (!changed || json_object_set_new(row, "changed", changed) < 0) {
			json_decref(row);
			row = NULL;
		}
	}
	if (!row || json_array_append_new(o->rows, row) < 0)
		return -ENOMEM;
	return 0;
}

int cmd_audit(int argc, char **argv, const char *home)
{
	char err[PATH_MAX + 256];
	struct thread_args a;
	struct store *s;
	int r = thread_args_parse("audit", audit_usage, argc, argv, home,
				  THREAD_ARGS_DIFF | THREAD_ARGS_FORMAT, &a);

	if (r >= 0)
		return r;
	struct error e;
	if (thread_check(a.home, a.user, a.thread, &e) < 0)
		return say_error("audit", &e);
	/* No store yet: nothing was ever refused under this home. */
	if ((r = store_open_existing(a.home, &s, err, sizeof(err))) == -ENOENT) {
		if (a.json)
			puts("[]");
		return 0;
	}
	if (r < 0) {
		fprintf(stderr, "sbx: audit: %s\n", err);
		return 1;
	}
	struct audit_out o = { .store = s, .diff = a.diff, .color = isatty(STDOUT_FILENO) };
	if (a.json) {
		json_auto_t *rows = o.rows = json_array();

		r = rows ? store_audit_each(s, a.user, a.thread, add_json, &o) : -ENOMEM;
		if (r == 0)
			r = json_dumpf(rows, stdout, JSON_INDENT(2)) < 0 ? -EIO : 0;
		if (r == 0)
			putchar('\n');
	} else {
		r = store_audit_each(s, a.user, a.thread, print_text, &o);
	}
	store_close(s);
	if (r < 0) {
		fprintf(stderr, "sbx: audit: cannot read the audit log: %s\n", strerror(-r));
		return 1;
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
