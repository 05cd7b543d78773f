/* exec.c - sbx broker and sbx exec: the exec broker and its client. */
#include "args.h"
#include "cli.h"
#include "common/cleanup.h"
#include "common/ids.h"
#include "exec/broker.h"
#include "exec/env.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char broker_usage[] =
	"Usage: sbx broker [--home DIR] [--config FILE] [-f] [-d] [--exit-idle SEC]\n"
	"       sbx broker --status|--shutdown [--home DIR]\n"
	"\n"
	"The exec broker of a home: mounts thread views on demand and runs\n"
	"commands in them (sbx exec), begins and ends runs as sbx run does,\n"
	"with a store it keeps open, serving JSON lines on HOME/run/broker.sock\n"
	"(docs/protocol.md). Returns once it serves, printing\n"
	"'sbx: broker serving HOME/run/broker.sock (pid N)'; logs to\n"
	"HOME/run/broker.log.\n"
	"  --config FILE   the configuration (default HOME/sbx.conf; see\n"
	"                  docs/configuration.md); a bad line stops start-up\n"
	"  -f              stay in the foreground, log to stderr\n"
	"  -d              debug log\n"
	"  --exit-idle SEC stop once no client has been connected for SEC seconds\n"
	"                  (sbx mcp starts the broker it needs this way)\n"
	"  --status        print the broker's views as JSON\n"
	"  --shutdown      stop it and wait until it has: commands running are\n"
	"                  stopped (exit 143), every view it mounted unmounted\n";

static const char exec_usage[] =
	"Usage: sbx exec --user ID --thread ID [--timeout SEC] [--env K=V]...\n"
	"                [--channel-user-id ID] [--host] [--scope ID] [--home DIR]\n"
	"                -- COMMAND...\n"
	"\n"
	"Runs COMMAND (joined by spaces: a shell command line) in the thread's view\n"
	"through the home's broker (start it with sbx broker), printing its output\n"
	"as it comes, and exits with its status: 124 after a timeout, 137 when the\n"
	"sandbox's process or memory limit killed it, 128+N when killed by signal N,\n"
	"143 when the broker shut down while it ran.\n"
	"  --timeout SEC          wall clock (default: the broker's, 600 s)\n"
	"  --env K=V              an explicit variable, whatever its name; repeatable\n"
	"                         (of the broker's own, a command gets only a fixed\n"
	"                         set and sbx.conf's env_pass)\n"
	"  --channel-user-id ID   who is acting: exported to the command as\n"
	"                         DEERFLOW_CHANNEL_USER_ID\n"
	"  --host                 the host's shell, not a namespace sandbox (only if\n"
	"                         the broker's configuration allows host bash)\n"
	"  --scope ID             run in that scope's persistent shell: cd, exports\n"
	"                         and background jobs carry over to its next commands\n"
	"                         (not with --env: such commands run one-off)\n";

/* Sends REQ (consumed) to the broker of HOME; returns the connected fd
 * or -1 with a message for COMMAND. */
static int request(const char *command, const char *home, json_t *req)
{
	int fd = broker_connect(home);

	if (fd < 0) {
		fprintf(stderr,
			"sbx: %s: no broker serves %s (%s); start one with: sbx broker --home %s\n",
			command, home, strerror(-fd), home);
		json_decref(req);
		return -1;
	}
	char *text = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	size_t len = text ? strlen(text) : 0;
	bool ok = text && send(fd, text, len, MSG_NOSIGNAL) == (ssize_t)len &&
		  send(fd, "\n", 1, MSG_NOSIGNAL) == 1;
	free(text);
	if (!ok) {
		fprintf(stderr, "sbx: %s: cannot send the request: %s\n", command, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Reads one reply line from FD into a JSON object; NULL at the end. */
static json_t *reply(FILE *f)
{
	_cleanup_(freep) char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, f);

	return n > 0 ? json_loadb(line, (size_t)n, 0, NULL) : NULL;
}

/* A shutdown waits for the broker's connections (at most 30 s), then
 * ends its sessions and unmounts its views. */
#define SHUTDOWN_WAIT_S 60

static int broker_request(const char *home, const char *op)
{
	int fd = request("broker", home, json_pack("{s:s}", "op", op));

	if (fd < 0)
		return 1;
	FILE *f = fdopen(fd, "r");
	json_auto_t *r = f ? reply(f) : NULL;
	if (f)
		fclose(f); /* before a shutdown waits: the broker waits for it */
	else
		close(fd);
	if (!json_is_true(json_object_get(r, "ok"))) {
		fprintf(stderr, "sbx: broker: %s failed\n", op);
		return 1;
	}
	if (!strcmp(op, "shutdown") && broker_wait_stopped(home, SHUTDOWN_WAIT_S) < 0) {
		fprintf(stderr,
			"sbx: broker: still running %d s after the shutdown request"
			" (%s/run/broker.log says why)\n",
			SHUTDOWN_WAIT_S, home);
		return 1;
	}
	if (!strcmp(op, "status")) {
		json_dumpf(r, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
		putchar('\n');
	}
	return 0;
}

int cmd_broker(int argc, char **argv, const char *home)
{
	static const struct option longopts[] = {
		{ "home", required_argument, NULL, 'H' },
		{ "config", required_argument, NULL, 'c' },
		{ "status", no_argument, NULL, 's' },
		{ "shutdown", no_argument, NULL, 'x' },
		{ "exit-idle", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct broker_options o = { 0 };
	char *end;
	/* A request to a running broker (--status, --shutdown) and the
	 * options of starting one are different commands: given together,
	 * which one was meant is not ours to guess. */
	const char *op = NULL, *start_opt = NULL;
	char h[PATH_MAX];
	int c;

	getopt_begin(argv, "broker");
	while ((c = getopt_long(argc, argv, "fdh", longopts, NULL)) != -1) {
		switch (c) {
		case 'H':
			home = optarg;
			break;
		case 'c':
			o.config = optarg;
			start_opt = start_opt ? start_opt : "--config";
			break;
		case 'f':
			o.foreground = true;
			start_opt = start_opt ? start_opt : "-f";
			break;
		case 'd':
			o.debug = true;
			start_opt = start_opt ? start_opt : "-d";
			break;
		case 'i': {
			unsigned long s = strtoul(optarg, &end, 10);
			if (*optarg < '1' || *optarg > '9' || *end || s > 86400)
				return usage_error("broker",
						   "--exit-idle: '%s' is not a number of seconds"
						   " from 1 to 86400",
						   optarg);
			o.exit_idle_s = (unsigned)s;
			start_opt = start_opt ? start_opt : "--exit-idle";
			break;
		}
		case 's':
		case 'x': {
			const char *given = c == 's' ? "--status" : "--shutdown";
			if (op && strcmp(op, given + 2))
				return usage_error("broker", "--%s and %s exclude each other", op,
						   given);
			op = given + 2;
			break;
		}
		case 'h':
			fputs(broker_usage, stdout);
			return 0;
		default:
			return usage_error("broker", NULL);
		}
	}
	if (optind != argc)
		return usage_error("broker", "unexpected argument '%s'", argv[optind]);
	if (op && start_opt)
		return usage_error("broker",
				   "--%s and %s exclude each other (%s is for starting a broker)",
				   op, start_opt, start_opt);
	if (resolve_home("broker", home, h, sizeof(h)) < 0)
		return 2;
	if (op)
		return broker_request(h, op);
	o.home = h;
	return broker_main(&o);
}

int cmd_exec(int argc, char **argv, const char *home)
{
	static const struct option longopts[] = {
		{ "user", required_argument, NULL, 'u' },
		{ "thread", required_argument, NULL, 't' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "env", required_argument, NULL, 'e' },
		{ "channel-user-id", required_argument, NULL, 'C' },
		{ "host", no_argument, NULL, 'X' },
		{ "scope", required_argument, NULL, 's' },
		{ "home", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *user = NULL, *thread = NULL, *who = NULL, *scope = NULL, *why;
	json_auto_t *env = json_object();
	long timeout = 0;
	bool host = false;
	char h[PATH_MAX], *end;
	int c;

	getopt_begin(argv, "exec");
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'u':
			user = optarg;
			break;
		case 't':
			thread = optarg;
			break;
		case 'C':
			who = optarg;
			break;
		case 's':
			scope = optarg;
			break;
		case 'X':
			host = true;
			break;
		case 'H':
			home = optarg;
			break;
		case 'T':
			timeout = strtol(optarg, &end, 10);
			if (*end || end == optarg || timeout < 1 || timeout > 86400)
				return usage_error(
					"exec",
					"--timeout takes whole seconds from 1 to 86400, not '%s'",
					optarg);
			break;
		case 'e': {
			char *eq = strchr(optarg, '=');
			if (eq)
				*eq = '\0';
			if (!eq || !env_valid_name(optarg))
				return usage_error(
					"exec",
					"--env takes NAME=VALUE with a shell variable name, not '%s'",
					optarg);
			json_object_set_new(env, optarg, json_string(eq + 1));
			break;
		}
		case 'h':
			fputs(exec_usage, stdout);
			return 0;
		default:
			return usage_error("exec", NULL);
		}
	}
	if (!user || !thread || optind >= argc)
		return usage_error("exec", "--user, --thread and a COMMAND are required");
	if (user_id_check(user, &why) < 0)
		return usage_error("exec", "invalid user id '%s': %s", user, why);
	if (thread_id_check(thread, &why) < 0)
		return usage_error("exec", "invalid thread id '%s': %s", thread, why);
	if (resolve_home("exec", home, h, sizeof(h)) < 0)
		return 2;
	/* The words after -- are one shell command line, as ssh joins them. */
	_cleanup_(freep) char *command = NULL;
	size_t len = 0;
	FILE *cf = open_memstream(&command, &len);
	for (int i = optind; cf && i < argc; i++)
		fprintf(cf, "%s%s", i > optind ? " " : "", argv[i]);
	if (!cf || fclose(cf) != 0)
		return 1;
	json_t *req = json_pack("{s:s, s:s, s:s, s:s, s:O, s:b}", "op", "exec", "user", user,
				"thread", thread, "command", command, "env", env, "host", host);
	if (req && timeout)
		json_object_set_new(req, "timeout", json_integer(timeout));
	if (req && who)
		json_object_set_new(req, "channel_user_id", json_string(who));
	if (req && scope)
		json_object_set_new(req, "scope", json_string(scope));
	if (!req || (who && !json_object_get(req, "channel_user_id"))) {
		fputs("sbx: exec: --channel-user-id must be valid UTF-8\n", stderr);
		json_decref(req);
		return 2;
	}
	int fd = request("exec", h, req);
	if (fd < 0)
		return 1;
	_cleanup_(fclosep) FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return 1;
	}
	for (;;) {
		json_auto_t *r = reply(f);
		if (!r) {
			fputs("sbx: exec: the broker closed the connection\n", stderr);
			return 1;
		}
		const char *type = json_string_value(json_object_get(r, "type"));
		if (type && !strcmp(type, "output")) {
			FILE *to = !strcmp(json_string_value(json_object_get(r, "stream")),
					   "stderr")
					   ? stderr
					   : stdout;
			fputs(json_string_value(json_object_get(r, "data")), to);
			fflush(to);
			continue;
		}
		if (!json_is_true(json_object_get(r, "ok"))) {
			json_t *e = json_object_get(r, "error");
			fprintf(stderr, "sbx: exec: %s\n",
				json_string_value(json_object_get(e, "message")));
			return 1;
		}
		long long code = json_integer_value(json_object_get(r, "code"));
		if (json_is_true(json_object_get(r, "timed_out")))
			fprintf(stderr, "sbx: exec: timed out; the command was killed\n");
		json_t *killed = json_object_get(json_object_get(r, "killed"), "notice");
		if (json_is_string(killed))
			fprintf(stderr, "sbx: exec: %s\n", json_string_value(killed));
		if (json_is_true(json_object_get(r, "stopped")))
			fputs("sbx: exec: the broker shut down while the command ran, and stopped it\n",
			      stderr);
		return code < 0 ? 128 + (int)-code : (int)code;
	}
}
