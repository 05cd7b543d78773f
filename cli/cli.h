/* cli.h - what the sbx subcommands share.
 *
 * Each command is cmd_NAME(argc, argv, home): ARGV[0] is the command's
 * name, HOME the --home given before it (or NULL). It returns the exit
 * status: 0, 1 for failures, 2 for usage errors. Errors go to stderr as
 * "sbx: COMMAND: what failed: why".
 */
#ifndef SBX_CLI_H
#define SBX_CLI_H

/* Matches "--home DIR" (consuming two arguments) or "--home=DIR" at
 * ARGV[*I]; stores DIR in *HOME. Returns 1 if matched, 0 if not, -1 if
 * the value is missing. */
int take_home(int argc, char **argv, int *i, const char **home);

/* Resolves HOME (NULL: the default home) into BUF. Returns 0 or -1 with
 * a message printed for COMMAND. */
int resolve_home(const char *command, const char *home, char *buf, size_t size);

int cmd_audit(int argc, char **argv, const char *home);

#endif
