/* audit.c - sbx audit: the writes the read-before-write gate refused (or,
 * in audit mode, would have refused) for one thread, oldest first. */
#include "cleanup.h"
#include "cli.h"
#include "quote.h"
#include "store.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char audit_usage[] =
	"Usage: sbx audit --user ID --thread ID [--format text|json] [--home DIR]\n"
	"\n"
	"Lists the modifications the read-before-write gate refused in the\n"
	"thread's views (EACCES), oldest first: time, operation, virtual path,\n"
	"the calling process, and why. Rows marked 'audit' were allowed (the\n"
	"view ran with --rbw audit) and show what enforce would have refused.\n"
	"\n"
	"What an agent should do about a refusal: read the file again (its\n"
	"current version, which may hold someone else's edits), then retry the\n"
	"write based on what it read.\n"
	"\n"
	"  --format text   one line per refusal (default)\n"
	"  --format json   a JSON array of objects: id, time, path, op, pid,\n"
	"                  command, reason, mode, allowed\n";

static void iso_time(int64_t ns, char *buf, size_t size)
{
	time_t sec = (time_t)(ns / 1000000000);
	struct tm tm;

	gmtime_r(&sec, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int print_text(void *arg, const struct store_audit *a)
{
	char when[32], path[QUOTE_MAX], comm[QUOTE_MAX];

	(void)arg;
	iso_time(a->at_ns, when, sizeof(when));
	printf("%s  %-7s  %s %s  (pid %d, %s): ", when, a->allowed ? "audit" : "refused", a->op,
	       quote_name(a->path, path, sizeof(path)), (int)a->pid,
	       quote_name(a->comm, comm, sizeof(comm)));
	fput_visible(stdout, a->reason, strlen(a->reason));
	putchar('\n');
	return 0;
}

static int add_json(void *arg, const struct store_audit *a)
{
	json_t *rows = arg;
	char when[32];

	iso_time(a->at_ns, when, sizeof(when));
	json_t *row = json_pack("{s:I, s:s, s:s, s:s, s:i, s:s, s:s, s:s, s:b}",
				"id", (json_int_t)a->id, "time", when,
				"path", a->path, "op", a->op, "pid", (int)a->pid,
				"command", a->comm, "reason", a->reason,
				"mode", a->mode, "allowed", a->allowed);
	if (!row || json_array_append_new(rows, row) < 0)
		return -ENOMEM;
	return 0;
}

int cmd_audit(int argc, char **argv, const char *home)
{
	char db[PATH_MAX + 16], err[PATH_MAX + 256];
	struct thread_args a;
	struct store *s;
	int r = thread_args_parse("audit", audit_usage, argc, argv, home, false, &a);

	if (r >= 0)
		return r;
	/* No store yet: nothing was ever refused under this home. */
	snprintf(db, sizeof(db), "%s/%s", a.home, STORE_FILE);
	if (access(db, F_OK) < 0 && errno == ENOENT) {
		if (a.json)
			puts("[]");
		return 0;
	}
	if (store_open(a.home, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "sbx: audit: %s\n", err);
		return 1;
	}
	if (a.json) {
		json_auto_t *rows = json_array();

		r = rows ? store_audit_each(s, a.user, a.thread, add_json, rows) : -ENOMEM;
		if (r == 0)
			r = json_dumpf(rows, stdout, JSON_INDENT(2)) < 0 ? -EIO : 0;
		if (r == 0)
			putchar('\n');
	} else {
		r = store_audit_each(s, a.user, a.thread, print_text, NULL);
	}
	store_close(s);
	if (r < 0) {
		fprintf(stderr, "sbx: audit: cannot read the audit log: %s\n", strerror(-r));
		return 1;
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
