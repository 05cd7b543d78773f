/* args.c - how sbx commands read their arguments (args.h). */
#include "args.h"
#include "common/clock.h"
#include "run/restore.h"
#include "store/store.h"
#include "common/error.h"
#include "common/home.h"
#include "common/ids.h"
#include "common/log.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int say_error(const char *command, const struct error *e)
{
	fprintf(stderr, "sbx: %s: %s\n", command, e->text);
	return 1;
}

int resolve_home(const char *command, const char *home, char *buf, size_t size)
{
	if (home && !*home) {
		fprintf(stderr, "sbx: %s: --home is empty\n", command);
		return -1;
	}
	if (home) {
		if ((size_t)snprintf(buf, size, "%s", home) < size)
			return 0;
		fprintf(stderr, "sbx: %s: the --home path is too long\n", command);
		return -1;
	}
	if (home_default(buf, size) == 0)
		return 0;
	fprintf(stderr, "sbx: %s: no home: set --home or $SBX_HOME\n", command);
	return -1;
}

int usage_error(const char *command, const char *fmt, ...)
{
	char label[64], name[64];
	va_list ap;

	snprintf(label, sizeof(label), "sbx: %s", command);
	snprintf(name, sizeof(name), "sbx %s", command);
	va_start(ap, fmt);
	int r = usage_verror(label, name, fmt, ap);
	va_end(ap);
	return r;
}

void getopt_begin(char **argv, const char *command)
{
	/* One command per process: its name can live here. */
	static char name[64];

	snprintf(name, sizeof(name), "sbx: %s", command);
	argv[0] = name;
	optind = 1;
}

int thread_args_parse(const char *command, const char *usage, int argc, char **argv,
		      const char *home, unsigned takes, struct thread_args *a)
{
	enum {
		OPT_USER = 256,
		OPT_THREAD,
		OPT_FORMAT,
		OPT_HOME,
		OPT_MAX,
		OPT_DIFF,
		OPT_BEFORE,
		OPT_AT,
		OPT_DRY,
		OPT_SINCE,
		OPT_ONCE,
	};
	static const struct option longopts[] = {
		{ "user", required_argument, NULL, OPT_USER },
		{ "thread", required_argument, NULL, OPT_THREAD },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "home", required_argument, NULL, OPT_HOME },
		{ "max-files", required_argument, NULL, OPT_MAX },
		{ "diff", no_argument, NULL, OPT_DIFF },
		{ "before", required_argument, NULL, OPT_BEFORE },
		{ "at", required_argument, NULL, OPT_AT },
		{ "dry-run", no_argument, NULL, OPT_DRY },
		{ "since", required_argument, NULL, OPT_SINCE },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/* The options above that each bit of TAKES stands for; one table
	 * serves every command, those it does not take are unknown to it. */
	static const struct {
		int opt;
		unsigned bit;
		const char *name;
	} optional[] = {
		{ OPT_FORMAT, THREAD_ARGS_FORMAT, "--format" },
		{ OPT_MAX, THREAD_ARGS_MAX_FILES, "--max-files" },
		{ OPT_DIFF, THREAD_ARGS_DIFF, "--diff" },
		{ OPT_BEFORE, THREAD_ARGS_WHEN, "--before" },
		{ OPT_AT, THREAD_ARGS_WHEN, "--at" },
		{ OPT_DRY, THREAD_ARGS_WHEN, "--dry-run" },
		{ OPT_SINCE, THREAD_ARGS_SINCE, "--since" },
		{ OPT_ONCE, THREAD_ARGS_ONCE, "--once" },
	};
	const char *why, *format = "text";
	char *end;
	int c;

	memset(a, 0, sizeof(*a));
	a->max_files = -1;
	a->since = -1;
	getopt_begin(argv, command);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		for (size_t i = 0; i < sizeof(optional) / sizeof(optional[0]); i++)
			if (c == optional[i].opt && !(takes & optional[i].bit))
				return usage_error(command, "unrecognized option '%s'",
						   optional[i].name);
		switch (c) {
		case OPT_USER:
			a->user = optarg;
			break;
		case OPT_THREAD:
			a->thread = optarg;
			break;
		case OPT_FORMAT:
			format = optarg;
			break;
		case OPT_HOME:
			home = optarg;
			break;
		case OPT_MAX:
			errno = 0;
			a->max_files = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || a->max_files < 1)
				return usage_error(
					command,
					"--max-files takes a number of files (1 or more), not '%s'",
					optarg);
			break;
		case OPT_DIFF:
			a->diff = true;
			break;
		case OPT_BEFORE:
			if ((c = run_id_parse(command, optarg, &a->before)) >= 0)
				return c;
			break;
		case OPT_AT:
			if (time_parse(optarg, &a->at_ns) < 0)
				return usage_error(command,
						   "--at takes a time such as 2026-12-01T19:30:00Z "
						   "(UTC, fractions of a second allowed), not '%s'",
						   optarg);
			break;
		case OPT_DRY:
			a->dry_run = true;
			break;
		case OPT_SINCE:
			errno = 0;
			a->since = strtoll(optarg, &end, 10);
			if (errno || *end || end == optarg || a->since < 0 ||
			    !(*optarg >= '0' && *optarg <= '9'))
				return usage_error(command,
						   "--since takes a cursor (a number from 0, as"
						   " sbx watch prints them), not '%s'",
						   optarg);
			break;
		case OPT_ONCE:
			a->once = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return usage_error(command, NULL);
		}
	}
	if ((takes & THREAD_ARGS_PATH) && optind < argc)
		a->path = argv[optind++];
	if (optind < argc)
		return usage_error(command, "unexpected argument '%s'", argv[optind]);
	if (!a->user || !a->thread)
		return usage_error(command, "--user and --thread are required");
	if ((takes & THREAD_ARGS_PATH) && !a->path)
		return usage_error(command, "expected a PATH (/mnt/user-data/workspace/...)");
	if (a->path && !restore_path_ok(a->path))
		return usage_error(command,
				   "'%s' is not a path under /mnt/user-data/workspace or "
				   "/mnt/user-data/outputs",
				   a->path);
	if ((takes & THREAD_ARGS_WHEN) && !a->before == !a->at_ns)
		return usage_error(command, "expected one of --before RUN and --at TIME");
	if (user_id_check(a->user, &why) < 0)
		return usage_error(command, "invalid user id '%s': %s", a->user, why);
	if (thread_id_check(a->thread, &why) < 0)
		return usage_error(command, "invalid thread id '%s': %s", a->thread, why);
	if (strcmp(format, "text") && strcmp(format, "json"))
		return usage_error(command, "--format takes text or json, not '%s'", format);
	a->json = !strcmp(format, "json");
	if (resolve_home(command, home, a->home, sizeof(a->home)) < 0)
		return 2;
	return -1;
}

int run_id_parse(const char *command, const char *arg, int64_t *run)
{
	char *end;

	*run = strtoll(arg, &end, 10);
	if (*end || end == arg || *run < 1)
		return usage_error(command,
				   "'%s' is not a run id (a number printed by sbx run begin)", arg);
	return -1;
}

int run_args_parse(const char *command, const char *usage, int argc, char **argv, const char *home,
		   unsigned takes, struct run_args *a)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'F' },
		{ "home", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "partial", no_argument, NULL, 'p' },
		{ "force", no_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	const bool html = (takes & RUN_ARGS_HTML) == RUN_ARGS_HTML, undo = takes & RUN_ARGS_UNDO;
	const char *format = "text";
	int c, r;

	memset(a, 0, sizeof(*a));
	getopt_begin(argv, command);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'F' && (takes & RUN_ARGS_FORMAT))
			format = optarg;
		else if (c == 'F')
			return usage_error(command, "unrecognized option '--format'");
		else if (c == 'H')
			home = optarg;
		else if (undo && (c == 'n' || c == 'p' || c == 'f'))
			*(c == 'n' ? &a->dry_run : c == 'p' ? &a->partial : &a->force) = true;
		else if (c == 'n' || c == 'p' || c == 'f')
			return usage_error(command, "unrecognized option '%s'", argv[optind - 1]);
		else if (c == 'h') {
			fputs(usage, stdout);
			return 0;
		} else {
			return usage_error(command, NULL);
		}
	}
	if (optind != argc - 1)
		return usage_error(command, "expected one RUN id");
	if (a->partial && a->force)
		return usage_error(command, "--partial and --force exclude each other");
	if ((r = run_id_parse(command, argv[optind], &a->run)) >= 0)
		return r;
	if (!strcmp(format, "text"))
		a->format = FORMAT_TEXT;
	else if (!strcmp(format, "json"))
		a->format = FORMAT_JSON;
	else if (html && !strcmp(format, "html"))
		a->format = FORMAT_HTML;
	else
		return usage_error(command, "--format takes %s, not '%s'",
				   html ? "text, json or html" : "text or json", format);
	return resolve_home(command, home, a->home, sizeof(a->home)) < 0 ? 2 : -1;
}

/* Matches "--home DIR" (consuming two arguments) or "--home=DIR" at
 * ARGV[*I]; stores DIR in *HOME. Returns 1 if matched, 0 if not, -1 if
 * the value is missing. */
int take_home(int argc, char **argv, int *i, const char **home)
{
	if (!strncmp(argv[*i], "--home=", 7)) {
		*home = argv[*i] + 7;
		return 1;
	}
	if (strcmp(argv[*i], "--home"))
		return 0;
	if (*i + 1 >= argc)
		return -1;
	*home = argv[++*i];
	return 1;
}

static int store_usage(const char *why)
{
	fprintf(stderr, "sbx: %s\nTry 'sbx --help'.\n", why);
	return 2;
}

int take_store(int *argc, char **argv)
{
	int out = 1;

	for (int i = 1; i < *argc; i++) {
		const char *v = NULL;
		if (!strcmp(argv[i], "--")) {
			while (i < *argc)
				argv[out++] = argv[i++];
			break;
		}
		if (!strncmp(argv[i], "--store=", 8))
			v = argv[i] + 8;
		else if (!strcmp(argv[i], "--store") && i + 1 < *argc)
			v = argv[++i];
		else if (!strcmp(argv[i], "--store"))
			return store_usage("--store needs a store (sqlite or a postgresql:// URL)");
		if (!v) {
			argv[out++] = argv[i];
			continue;
		}
		if (!store_target_ok(v) || strlen(v) >= STORE_TARGET_MAX)
			return store_usage("--store takes sqlite, a postgresql:// URL or a libpq "
					   "keyword string");
		if (setenv(STORE_ENV, v, 1) < 0)
			return store_usage(strerror(errno));
	}
	argv[out] = NULL;
	*argc = out;
	return -1;
}

int take_leading_home(const char *command, int *argc, char ***argv, const char **home)
{
	int i = 1, r;

	while (i < *argc && (r = take_home(*argc, *argv, &i, home)) != 0) {
		if (r < 0)
			return usage_error(command, "--home needs a directory");
		i++;
	}
	(*argv)[i - 1] = (*argv)[0];
	*argv += i - 1;
	*argc -= i - 1;
	return -1;
}
