/* mcp.c - sbx mcp: an MCP server for one thread, on standard input and
 * output (mcp/stdio_transport.h), through the home's broker. */
#include "args.h"
#include "cli.h"
#include "hold.h"
#include "common/ids.h"
#include "exec/client.h"
#include "mcp/stdio_transport.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char mcp_usage[] =
	"Usage: sbx mcp --user ID --thread ID [--home DIR] [--no-run]\n"
	"               [--profile reference|filesystem]\n"
	"\n"
	"An MCP (Model Context Protocol) server for one thread, on standard input\n"
	"and output (JSON-RPC 2.0, one message a line; protocol versions 2025-11-25\n"
	"and 2025-06-18). Its tools - bash, ls, read_file, write_file, str_replace,\n"
	"glob, grep, present_files, changes, undo - work in the thread's view and\n"
	"sandbox: paths are the virtual ones (/mnt/user-data/..., /mnt/skills/...),\n"
	"and the read-before-write gate, atomic saves, the quota and the journal\n"
	"apply to them as to any program. Each session is a run: sbx changes and\n"
	"sbx run undo read and take back what it did. docs/mcp.md has the tools'\n"
	"contracts and the lines that add it to Claude Code, Codex and others.\n"
	"\n"
	"It works through the home's broker: the one that serves the home, else\n"
	"one it starts, which stops once no client has been left for a few\n"
	"seconds. Its log goes to standard error.\n"
	"  --no-run   no run for the session (present_files then refuses)\n"
	"  --profile filesystem\n"
	"             serve @modelcontextprotocol/server-filesystem's tools instead\n"
	"             (read_text_file, write_file, edit_file, list_directory,\n"
	"             directory_tree, move_file, search_files, ...), with its\n"
	"             arguments and texts, over the same view; reference (the\n"
	"             default) serves the tools above\n";

int cmd_mcp(int argc, char **argv, const char *home)
{
	static const struct option longopts[] = {
		{ "user", required_argument, NULL, 'u' },
		{ "thread", required_argument, NULL, 't' },
		{ "home", required_argument, NULL, 'H' },
		{ "no-run", no_argument, NULL, 'n' },
		{ "profile", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct mcp_config cfg = { .profile = MCP_PROFILE_REFERENCE, .run = true };
	char h[PATH_MAX];
	const char *why;
	int c;

	getopt_begin(argv, "mcp");
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'u':
			cfg.user = optarg;
			break;
		case 't':
			cfg.thread = optarg;
			break;
		case 'H':
			home = optarg;
			break;
		case 'n':
			cfg.run = false;
			break;
		case 'p':
			if (!strcmp(optarg, "reference"))
				cfg.profile = MCP_PROFILE_REFERENCE;
			else if (!strcmp(optarg, "filesystem"))
				cfg.profile = MCP_PROFILE_FILESYSTEM;
			else
				return usage_error("mcp",
						   "--profile must be reference or filesystem");
			break;
		case 'h':
			fputs(mcp_usage, stdout);
			return 0;
		default:
			return usage_error("mcp", NULL);
		}
	}
	if (optind != argc)
		return usage_error("mcp", "unexpected argument '%s'", argv[optind]);
	if (!cfg.user || !cfg.thread)
		return usage_error("mcp", "--user and --thread are required");
	if (user_id_check(cfg.user, &why) < 0)
		return usage_error("mcp", "invalid user id: %s", why);
	if (thread_id_check(cfg.thread, &why) < 0)
		return usage_error("mcp", "invalid thread id: %s", why);
	if (resolve_home("mcp", home, h, sizeof(h)) < 0)
		return 2;
	cfg.home = h;
	/* Held for as long as this process lives. */
	struct client_conn *keep;
	if (hold_broker("mcp", h, &keep))
		return 1;
	int status = mcp_stdio_serve(&cfg, STDIN_FILENO, STDOUT_FILENO);
	client_close(keep);
	return status;
}
