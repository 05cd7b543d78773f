/* hosts.c - sbx hosts: which host owns which thread (store/lease.h), how
 * long each has held it and when its lease ends; the deployment's limit
 * of views. */
#include "args.h"
#include "cli.h"
#include "store/lease.h"
#include "store/store.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char hosts_usage[] =
	"Usage: sbx hosts [--home DIR] [--all] [--format text|json] [--max-views N]\n"
	"\n"
	"Which host owns which thread: a thread's view is mounted on one host\n"
	"at a time, which holds its lease (renewed while the view is mounted)\n"
	"with a fencing token that grows each time the thread changes hands.\n"
	"For each lease: the host, the thread, the token, how long the host has\n"
	"held it, when it was last renewed and when it expires, by the store's\n"
	"clock. Expired and given-back leases are left out unless --all.\n"
	"\n"
	"  --all            also leases that expired or were given back\n"
	"  --format FORMAT  text (default) or json\n"
	"  --max-views N    record N as the deployment's limit of mounted views\n"
	"                   (0: none); each host's max-views in sbx.conf must\n"
	"                   then say the same (docs/configuration.md)\n";

struct listing {
	bool all, json;
	json_t *rows;
	size_t live, shown;
};

static const char *state_of(const struct lease *l)
{
	return lease_live(l) ? "live" : l->expires_ns == l->renewed_ns ? "given back" : "expired";
}

static double secs(int64_t ns)
{
	return (double)ns / 1e9;
}

static json_int_t ms(int64_t ns)
{
	return (json_int_t)(ns / 1000000);
}

static int show(void *arg, const char *user, const char *thread, const struct lease *l)
{
	struct listing *ls = arg;

	ls->live += lease_live(l);
	if (!ls->all && !lease_live(l))
		return 0;
	if (ls->json) {
		json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:i, s:I, s:s, s:I, s:I, s:I}", "host",
				      l->host, "user", user, "thread", thread, "token",
				      (json_int_t)l->token, "pid", (int)l->pid, "views",
				      (json_int_t)l->holders, "state", state_of(l), "held_ms",
				      ms(l->now_ns - l->acquired_ns), "renewed_ms_ago",
				      ms(l->now_ns - l->renewed_ns), "expires_in_ms",
				      ms(l->expires_ns - l->now_ns));
		return o ? json_array_append_new(ls->rows, o) : -ENOMEM;
	}
	if (!ls->shown++)
		printf("%-16s %-32s %7s  %-10s %10s %10s %11s\n", "HOST", "USER/THREAD", "TOKEN",
		       "STATE", "HELD", "RENEWED", "EXPIRES IN");
	char name[300];
	snprintf(name, sizeof(name), "%s/%s", user, thread);
	char expires[32] = "-";
	if (lease_live(l))
		snprintf(expires, sizeof(expires), "%.1fs", secs(l->expires_ns - l->now_ns));
	printf("%-16s %-32s %7lld  %-10s %9.1fs %8.1fs ago %11s\n", l->host, name,
	       (long long)l->token, state_of(l), secs(l->now_ns - l->acquired_ns),
	       secs(l->now_ns - l->renewed_ns), expires);
	return 0;
}

int cmd_hosts(int argc, char **argv, const char *home)
{
	enum { OPT_ALL = 256, OPT_FORMAT, OPT_MAX_VIEWS, OPT_HOME };
	static const struct option longopts[] = {
		{ "all", no_argument, NULL, OPT_ALL },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "max-views", required_argument, NULL, OPT_MAX_VIEWS },
		{ "home", required_argument, NULL, OPT_HOME },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct listing ls = { 0 };
	long long max_views = -1;
	char buf[PATH_MAX], err[PATH_MAX + 256], *end;
	int c;

	getopt_begin(argv, "hosts");
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_ALL:
			ls.all = true;
			break;
		case OPT_FORMAT:
			if (strcmp(optarg, "text") && strcmp(optarg, "json"))
				return usage_error("hosts", "--format takes text or json, not '%s'",
						   optarg);
			ls.json = !strcmp(optarg, "json");
			break;
		case OPT_MAX_VIEWS:
			errno = 0;
			max_views = strtoll(optarg, &end, 10);
			if (errno || end == optarg || *end || max_views < 0 || max_views > 1000000)
				return usage_error("hosts",
						   "--max-views takes 0 to 1000000, not '%s'",
						   optarg);
			break;
		case OPT_HOME:
			home = optarg;
			break;
		case 'h':
			fputs(hosts_usage, stdout);
			return 0;
		default:
			return usage_error("hosts", NULL);
		}
	}
	if (optind < argc)
		return usage_error("hosts", "unexpected argument '%s'", argv[optind]);
	if (resolve_home("hosts", home, buf, sizeof(buf)) < 0)
		return 2;
	struct store *s;
	if (store_open(buf, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "sbx: hosts: %s\n", err);
		return 1;
	}
	int r = 0;
	struct lease_config lc;
	if (max_views >= 0) {
		if ((r = lease_config(buf, &lc, err, sizeof(err))) < 0)
			fprintf(stderr, "sbx: hosts: %s\n", err);
		else if ((r = store_lease_set_limit(s, max_views, lc.host)) < 0)
			fprintf(stderr, "sbx: hosts: cannot record the limit: %s\n", strerror(-r));
	}
	ls.rows = json_array();
	if (r == 0 && (r = ls.rows ? store_leases_each(s, show, &ls) : -ENOMEM) < 0)
		fprintf(stderr, "sbx: hosts: cannot read the leases: %s\n", strerror(-r));
	int64_t views = 0;
	char by[LEASE_HOST_MAX] = "";
	if (r == 0 && (r = store_lease_limit(s, &views, by)) < 0)
		fprintf(stderr, "sbx: hosts: cannot read the limits: %s\n", strerror(-r));
	store_close(s);
	if (r < 0) {
		json_decref(ls.rows);
		return 1;
	}
	if (ls.json) {
		json_t *o = json_pack("{s:o, s:I, s:I}", "leases", ls.rows, "live",
				      (json_int_t)ls.live, "max_views", (json_int_t)views);
		json_dumpf(o, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
		putchar('\n');
		json_decref(o);
		return 0;
	}
	json_decref(ls.rows);
	if (!ls.shown)
		printf("no %slease\n", ls.all ? "" : "live ");
	printf("%zu live lease%s; max-views: ", ls.live, ls.live == 1 ? "" : "s");
	if (views)
		printf("%lld (recorded by host %s)\n", (long long)views, by);
	else
		printf("none\n");
	return 0;
}
