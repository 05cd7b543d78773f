/* try.h - the commands of sbx try (docs/try.md): making, mounting and
 * listing overlays (try.c); reviewing, applying and discarding them
 * (try_review.c). Each is a command as cli.h says, ARGV[0] its word
 * ("status", ...). */
#ifndef SBX_CLI_TRY_H
#define SBX_CLI_TRY_H

/* Whose threads overlays are unless --user says. */
#define TRY_USER "try"

int cmd_try_status(int argc, char **argv, const char *home);
int cmd_try_diff(int argc, char **argv, const char *home);
int cmd_try_apply(int argc, char **argv, const char *home);
int cmd_try_discard(int argc, char **argv, const char *home);

#endif
