/* receipt.c - sbx present and sbx receipt: which outputs the agent
 * presented during a run, and the delivery receipt run end recorded
 * from them (store/receipt.h, docs/changes.md). */
#include "args.h"
#include "cli.h"
#include "run/documents.h"
#include "run/lookup.h"
#include "report.h"
#include "common/error.h"
#include "common/quote.h"
#include "store/receipt.h"
#include "store/store.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

static const char present_usage[] =
	"Usage: sbx present RUN [--tool NAME] PATH... [--home DIR]\n"
	"\n"
	"Records that the agent presented each PATH to the user during the open\n"
	"run RUN, as the reference's present_files tool does. A PATH is a file or\n"
	"directory under /mnt/user-data/outputs, given as a virtual path or as\n"
	"its path in the thread's outputs directory on the host, without '..';\n"
	"it need not exist (yet). It is recorded as a virtual path, printed one\n"
	"per line, once per tool however often it is presented. Either every\n"
	"PATH is recorded or none.\n"
	"  --tool NAME   the presenting tool (default present_files); only\n"
	"                present_files's paths verify a delivery\n"
	"sbx run end then records the run's delivery receipt (see sbx receipt).\n";

static const char receipt_usage[] =
	"Usage: sbx receipt RUN [--format text|json] [--home DIR]\n"
	"\n"
	"Prints the delivery receipt of an ended run: what it presented (sbx\n"
	"present) and, if it created or modified outputs, whether one of them\n"
	"was presented (stage presented, mismatched or not_started).\n"
	"  --format text   the stage, the produced outputs, the presented paths\n"
	"                  (default)\n"
	"  --format json   the reference's receipt (docs/changes.md)\n"
	"Exit status 0 when an output was presented or none was produced, or the\n"
	"pre-run snapshot was truncated (verification skipped); 1 with 'Artifact\n"
	"delivery incomplete: no produced output artifact was presented' when\n"
	"outputs were produced and none of them was presented (not_started or\n"
	"mismatched), and for a run that is unknown or still open.\n";

static void print_path(void *arg, const char *path)
{
	char name[QUOTE_MAX];

	(void)arg;
	printf("%s\n", quote_name(path, name, sizeof(name)));
}

int cmd_present(int argc, char **argv, const char *home)
{
	static const struct option longopts[] = {
		{ "tool", required_argument, NULL, 'T' },
		{ "home", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *tool = RECEIPT_TOOL_DEFAULT, *why;
	char dir[PATH_MAX], err[PATH_MAX + 256], name[QUOTE_MAX];
	struct store *s;
	int64_t run;
	size_t bad;
	int c, r;

	getopt_begin(argv, "present");
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'T')
			tool = optarg;
		else if (c == 'H')
			home = optarg;
		else if (c == 'h') {
			fputs(present_usage, stdout);
			return 0;
		} else {
			return usage_error("present", NULL);
		}
	}
	if (argc - optind < 2)
		return usage_error("present", "expected a RUN id and at least one PATH");
	if ((r = run_id_parse("present", argv[optind], &run)) >= 0)
		return r;
	if (receipt_tool_check(tool, &why) < 0)
		return usage_error("present", "--tool: %s", why);
	if (resolve_home("present", home, dir, sizeof(dir)) < 0)
		return 2;
	if (store_open(dir, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "sbx: present: %s\n", err);
		return 1;
	}
	r = receipt_present(s, dir, run, tool, (const char *const *)argv + optind + 1,
			    (size_t)(argc - optind - 1), &bad, print_path, NULL);
	store_close(s);
	if (r == -EINVAL) {
		fprintf(stderr, "sbx: present: " RECEIPT_REFUSED_FMT "\n",
			quote_name(argv[optind + 1 + bad], name, sizeof(name)));
	} else if (r == -ENOENT) {
		fprintf(stderr, "sbx: present: no such run (see the id sbx run begin printed)\n");
	} else if (r == -EALREADY) {
		fprintf(stderr,
			"sbx: present: run %lld has ended: its receipt is recorded"
			" (sbx receipt %lld)\n",
			(long long)run, (long long)run);
	} else if (r == -EBUSY) {
		fprintf(stderr,
			"sbx: present: run %lld's thread is mounted on another host:"
			" present it there (sbx hosts)\n",
			(long long)run);
	} else if (r < 0) {
		fprintf(stderr, "sbx: present: cannot record the presentation: %s\n", strerror(-r));
	}
	return r < 0 ? 1 : 0;
}

int cmd_receipt(int argc, char **argv, const char *home)
{
	struct store_run run;
	struct run_args a;
	json_error_t jerr;
	char who[300];
	int r = run_args_parse("receipt", receipt_usage, argc, argv, home, RUN_ARGS_FORMAT, &a);

	if (r >= 0)
		return r;
	struct error e;
	struct store *s = run_open(a.home, a.run, false, &run, &e);
	if (!s)
		return say_error("receipt", &e);
	store_close(s);
	json_auto_t *receipt = run.receipt ? json_loads(run.receipt, 0, &jerr) : NULL;
	r = 1;
	if (!run.ended)
		fprintf(stderr,
			"sbx: receipt: run %lld is still open: sbx run end %lld records"
			" its receipt\n",
			(long long)a.run, (long long)a.run);
	else if (!receipt)
		fprintf(stderr, "sbx: receipt: run %lld has no readable receipt%s%s\n",
			(long long)a.run, run.receipt ? ": " : "", run.receipt ? jerr.text : "");
	else if (a.format == FORMAT_JSON &&
		 json_dumpf(receipt, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0)
		fprintf(stderr, "sbx: receipt: cannot print it: %s\n", strerror(errno));
	else
		r = 0;
	if (r == 0 && a.format == FORMAT_JSON) {
		putchar('\n');
	} else if (r == 0) {
		snprintf(who, sizeof(who), "%s/%s", run.user, run.thread);
		report_receipt_print(stdout, receipt, (long long)a.run, who);
	}
	if (r == 0 && report_receipt_incomplete(receipt)) {
		fprintf(stderr, "sbx: receipt: %s\n", RECEIPT_INCOMPLETE);
		r = 1;
	}
	store_run_free(&run);
	return r;
}
