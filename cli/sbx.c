/* sbx.c - the sbx command: its table of commands, the options taken
 * before any of them, and sbx help. Each command lives in cli/NAME.c
 * (cli.h); the arguments they share are read by args.c.
 *
 * Errors go to stderr as "sbx: <what failed>: <why>"; exit status 2 for
 * usage errors, 1 for failures.
 */
#include "args.h"
#include "cli.h"
#include "common/log.h"

#include <stdio.h>
#include <string.h>

#ifndef SBX_VERSION
#define SBX_VERSION "0.1.0"
#endif

static int cmd_help(int argc, char **argv, const char *home);

/* One row per command, in the order sbx --help lists them. */
static const struct command {
	const char *name;
	int (*run)(int argc, char **argv, const char *home);
	/* Its lines under "Commands:" in sbx --help, as printed: what it
	 * does at column 22, on the usage's line if that leaves room. */
	const char *summary;
} commands[] = {
	{ "mount", cmd_mount,
	  "  mount --user ID --thread ID [sbxfs options] MOUNTPOINT\n"
	  "                     mount a thread's view (runs sbxfs; see sbx mount --help)\n" },
	{ "umount", cmd_umount,
	  "  umount MOUNTPOINT  unmount a view, also one whose daemon died\n" },
	{ "audit", cmd_audit,
	  "  audit --user ID --thread ID [--diff] [--format text|json]\n"
	  "                     list the writes the read-before-write gate refused\n" },
	{ "snapshot", cmd_snapshot,
	  "  snapshot --user ID --thread ID [--max-files N] [--format text|json]\n"
	  "                     record what the thread's workspace and outputs hold\n" },
	{ "run", cmd_run,
	  "  run begin --user ID --thread ID [--max-files N]\n"
	  "                     start a run (a snapshot); prints its id\n"
	  "  run end RUN [--format text|json|html]\n"
	  "                     end it: record and print what it changed\n"
	  "  run undo RUN [--dry-run] [--partial | --force] [--format text|json]\n"
	  "                     bring back what a run changed (itself a run)\n"
	  "  run keep RUN       drop a run's pre-images: it can no longer be undone\n" },
	{ "runs", cmd_runs,
	  "  runs --user ID --thread ID [--format text|json]\n"
	  "                     a thread's runs: undoable or not, space held\n" },
	{ "restore", cmd_restore,
	  "  restore --user ID --thread ID PATH (--before RUN | --at TIME) [--dry-run]\n"
	  "          [--format text|json]\n"
	  "                     bring one file or directory back as it was\n" },
	{ "log", cmd_log,
	  "  log --user ID --thread ID PATH [--format text|json]\n"
	  "                     the changes and kept versions of a path\n" },
	{ "changes", cmd_changes,
	  "  changes RUN [--format text|json|html]\n"
	  "                     print what an ended run changed\n" },
	{ "present", cmd_present,
	  "  present RUN [--tool NAME] PATH...\n"
	  "                     record outputs the agent presented during a run\n" },
	{ "receipt", cmd_receipt,
	  "  receipt RUN [--format text|json]\n"
	  "                     an ended run's delivery receipt; fails if it\n"
	  "                     produced outputs and presented none\n" },
	{ "watch", cmd_watch,
	  "  watch --user ID --thread ID [--since CURSOR] [--format text|json] [--once]\n"
	  "                     print the thread's changes as its views make them\n" },
	{ "broker", cmd_broker,
	  "  broker [--config FILE] [-f] [-d] [--exit-idle SEC]\n"
	  "  broker --status|--shutdown\n"
	  "                     the exec broker: views on demand, commands in them\n" },
	{ "exec", cmd_exec,
	  "  exec --user ID --thread ID [--timeout SEC] [--env K=V]...\n"
	  "       [--channel-user-id ID] [--host] [--scope ID] -- COMMAND\n"
	  "                     run a command in the thread's view, in a sandbox\n" },
	{ "mcp", cmd_mcp,
	  "  mcp --user ID --thread ID [--no-run] [--profile reference|filesystem]\n"
	  "                     an MCP server of the thread's tools on stdin/stdout\n" },
	{ "serve", cmd_serve,
	  "  serve [--listen ADDR:PORT | --socket PATH] [--token-file FILE]\n"
	  "        [--tls-cert FILE --tls-key FILE]\n"
	  "                     MCP over HTTP (Streamable HTTP) for every thread of the\n"
	  "                     home, at /mcp/USER/THREAD\n" },
	{ "try", cmd_try,
	  "  try [--project DIR] [--name NAME] [--user ID]\n"
	  "      [--mount MOUNTPOINT | -- COMMAND]\n"
	  "  try list [--user ID]\n"
	  "  try status NAME [--user ID]\n"
	  "  try diff NAME [--stat | --name-status | --patch] [--all]\n"
	  "           [--format text|html] [--user ID] [PATH...]\n"
	  "  try apply NAME [--only PATH]... [--dry-run] [--all-or-nothing]\n"
	  "            [--3way] [--user ID] [PATH...]\n"
	  "  try discard NAME [--force] [--user ID]\n"
	  "  try hook claude-code [--user ID] [--worktrees DIR]\n"
	  "                     an overlay of a project: the agent's changes in a\n"
	  "                     layer of their own, never in DIR, reviewed and\n"
	  "                     applied, conflicts apart; Claude Code's worktrees\n"
	  "                     as overlays\n" },
	{ "store", cmd_store,
	  "  store check|migrate | store backup [--force] FILE\n"
	  "                     where the home's records are, whether they are sound,\n"
	  "                     their schema brought forward, a copy of them\n" },
	{ "hosts", cmd_hosts,
	  "  hosts [--all] [--format text|json] [--max-views N]\n"
	  "                     which host owns which thread, since when, until when\n" },
	{ "doctor", cmd_doctor,
	  "  doctor [--config FILE] [--format text|json]\n"
	  "                     what this host allows, which sandbox protections hold\n" },
	{ "id", cmd_id,
	  "  id user RAW | id check user|thread ID\n"
	  "                     the reference's id rules: make_safe_user_id, checks\n" },
	{ "help", cmd_help,
	  "  help [COMMAND [SUBCOMMAND]]\n"
	  "                     this help, or a command's, as its --help prints it\n" },
};

/* sbx --help: the commands' summaries between these two. */
static const char usage_head[] = "Usage: sbx COMMAND [options]\n"
				 "\n"
				 "Commands:\n";

static const char usage_tail[] =
	"\n"
	"Options for every command (before or after it):\n"
	"  --home DIR         $SBX_HOME (default: $SBX_HOME, else /var/lib/sbxfs for\n"
	"                     root, else $XDG_DATA_HOME/sbxfs or ~/.local/share/sbxfs)\n"
	"  --store STORE      where the home's records are: sqlite (HOME/sbx.db) or a\n"
	"                     PostgreSQL server (postgresql://..., or host=... dbname=...);\n"
	"                     default: $SBX_STORE, else store in HOME/sbx.conf, else sqlite\n"
	"  -h, --help         show this help (sbx COMMAND --help: a command's)\n"
	"\n"
	"Options of sbx alone (before any command):\n"
	"  -V, --version      show the version\n";

static void usage_print(FILE *out)
{
	fputs(usage_head, out);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fputs(commands[i].summary, out);
	fputs(usage_tail, out);
}

static const struct command *command_find(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static const char help_usage[] =
	"Usage: sbx help [COMMAND [SUBCOMMAND]] [--home DIR]\n"
	"\n"
	"Prints the summary of the commands, as sbx --help does, or the help of\n"
	"COMMAND or of its SUBCOMMAND, as sbx COMMAND [SUBCOMMAND] --help does.\n";

/* sbx help [COMMAND [SUBCOMMAND]]: sbx --help, or what sbx COMMAND
 * [SUBCOMMAND] --help prints (a SUBCOMMAND is COMMAND's to judge). */
static int cmd_help(int argc, char **argv, const char *home)
{
	char *word[2];
	int n = 0, h;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(help_usage, stdout);
			return 0;
		}
		if ((h = take_home(argc, argv, &i, &home)) < 0)
			return usage_error("help", "--home needs a directory");
		if (h)
			continue;
		if (argv[i][0] == '-')
			return usage_error("help", "unrecognized option '%s'", argv[i]);
		if (n == 2)
			return usage_error("help", "expected at most a COMMAND and a SUBCOMMAND");
		word[n++] = argv[i];
	}
	if (!n) {
		usage_print(stdout);
		return 0;
	}
	const struct command *c = command_find(word[0]);
	if (!c)
		return usage_error("help", "unknown command '%s'", word[0]);
	char *args[] = { word[0], n == 2 ? word[1] : "--help", n == 2 ? "--help" : NULL, NULL };
	return c->run(n + 1, args, home);
}

int main(int argc, char **argv)
{
	const struct command *cmd;
	const char *home = NULL;
	int i = 1;

	log_setup("sbx", NULL, LOG_INFO, false);
	int st = take_store(&argc, argv);
	if (st >= 0)
		return st;
	while (i < argc && argv[i][0] == '-') {
		int h;

		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage_print(stdout);
			return 0;
		}
		if (!strcmp(argv[i], "--version") || !strcmp(argv[i], "-V")) {
			printf("sbx %s\n", SBX_VERSION);
			return 0;
		}
		h = take_home(argc, argv, &i, &home);
		if (h < 0) {
			fputs("sbx: --home needs a directory\nTry 'sbx --help'.\n", stderr);
			return 2;
		}
		if (h) {
			i++;
			continue;
		}
		fprintf(stderr, "sbx: unrecognized option '%s'\nTry 'sbx --help'.\n", argv[i]);
		return 2;
	}
	if (i >= argc) {
		usage_print(stderr);
		return 2;
	}
	cmd = command_find(argv[i]);
	if (cmd)
		return cmd->run(argc - i, argv + i, home);
	fprintf(stderr, "sbx: unknown command '%s'\nTry 'sbx --help'.\n", argv[i]);
	return 2;
}
