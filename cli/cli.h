/* cli.h - the sbx commands, one file each (cli/NAME.c) and one row each
 * in sbx.c's commands[], which also gives its lines in sbx --help.
 *
 * Each command is cmd_NAME(argc, argv, home): ARGV[0] is the command's
 * name, HOME the --home given before it (or NULL). It returns the exit
 * status: 0, 1 for failures, 2 for usage errors. Errors go to stderr as
 * "sbx: COMMAND: what failed: why". ARGV of { NAME, "--help" } prints
 * its usage, beginning "Usage: sbx NAME", to stdout and returns 0: that
 * is also what sbx help NAME prints. args.h reads the arguments the
 * commands share; lookup.h finds the thread or run a command is about.
 *
 * A new command is its file, its line here and its row in commands[].
 */
#ifndef SBX_CLI_H
#define SBX_CLI_H

int cmd_mount(int argc, char **argv, const char *home);
int cmd_umount(int argc, char **argv, const char *home);
int cmd_audit(int argc, char **argv, const char *home);
int cmd_snapshot(int argc, char **argv, const char *home);
int cmd_run(int argc, char **argv, const char *home);
int cmd_changes(int argc, char **argv, const char *home);
int cmd_runs(int argc, char **argv, const char *home);
int cmd_store(int argc, char **argv, const char *home);
int cmd_hosts(int argc, char **argv, const char *home);
int cmd_restore(int argc, char **argv, const char *home);
int cmd_log(int argc, char **argv, const char *home);
int cmd_present(int argc, char **argv, const char *home);
int cmd_receipt(int argc, char **argv, const char *home);
int cmd_broker(int argc, char **argv, const char *home);
int cmd_exec(int argc, char **argv, const char *home);
int cmd_doctor(int argc, char **argv, const char *home);
int cmd_id(int argc, char **argv, const char *home);
int cmd_watch(int argc, char **argv, const char *home);
int cmd_mcp(int argc, char **argv, const char *home);
int cmd_serve(int argc, char **argv, const char *home);
int cmd_try(int argc, char **argv, const char *home);

#endif
