/* args.h - how sbx commands read their arguments.
 *
 * Every message goes to stderr as "sbx: COMMAND: what is wrong", getopt's
 * own too (getopt_begin). A usage error ends the command with exit
 * status 2 and is followed by "Try 'sbx COMMAND --help'." (usage_error);
 * a --help prints the command's USAGE to stdout and ends it with 0. The
 * parsers return -1 to go on, else the exit status to end the command
 * with. In them a --home after the command overrides HOME, the one
 * given before it; the home is resolved last, after every other check.
 */
#ifndef SBX_ARGS_H
#define SBX_ARGS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct error;

/* Says what the engine's E says failed, for COMMAND: "sbx: COMMAND:
 * TEXT" on stderr. Returns 1, the exit status of a command that failed. */
int say_error(const char *command, const struct error *e);

/* Resolves HOME (NULL: the default home) into BUF. Returns 0 or -1 with
 * a message printed for COMMAND. */
int resolve_home(const char *command, const char *home, char *buf, size_t size);

/* A usage error of COMMAND: "sbx: COMMAND: MESSAGE" (none if FMT is NULL,
 * when getopt said it already), then where its help is. Returns 2, the
 * exit status of usage errors. */
int usage_error(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Takes every --store STORE (or --store=STORE) out of ARGV, before a
 * "--": the last one names the store of this program and of those it
 * starts ($SBX_STORE, store.h). Returns -1 to go on, else the exit
 * status of a usage error (said). */
int take_store(int *argc, char **argv);

/* Matches "--home DIR" (consuming two arguments) or "--home=DIR" at
 * ARGV[*I]; stores DIR in *HOME. Returns 1 if matched, 0 if not, -1 if
 * the value is missing. */
int take_home(int argc, char **argv, int *i, const char **home);

/* For a command whose first argument is a word (run begin, id user):
 * takes the --home options right after the command's name into *HOME
 * and drops them from *ARGC and *ARGV (the name stays first). Returns -1 to
 * go on, else 2 after a usage error. */
int take_leading_home(const char *command, int *argc, char ***argv, const char **home);

/* Readies getopt_long(3) for a new parse of COMMAND's ARGV. getopt's own
 * messages begin with ARGV[0] (the bare word COMMAND here; a program's
 * full path); this makes it "sbx: COMMAND", as every other message. */
void getopt_begin(char **argv, const char *command);

/* The options of a command about one thread: --user ID --thread ID
 * (required, validated), --home DIR, -h/--help (prints USAGE), and
 * --format text|json, --max-files N, --diff, --since CURSOR, --once where
 * a command takes them. */
struct thread_args {
	const char *user, *thread;
	bool json;
	bool diff;	     /* --diff */
	long max_files;	     /* -1 if not given */
	const char *path;    /* THREAD_ARGS_PATH: a virtual path */
	int64_t before;	     /* --before RUN, or 0 */
	int64_t at_ns;	     /* --at TIME, or 0 */
	bool dry_run;	     /* --dry-run */
	int64_t since;	     /* --since: a cursor (0 or more); -1 if not given */
	bool once;	     /* --once */
	char home[PATH_MAX]; /* resolved */
};

/* The options a command takes besides --user, --thread and --home. */
enum {
	THREAD_ARGS_MAX_FILES = 1, /* --max-files N */
	THREAD_ARGS_DIFF = 2,	   /* --diff */
	THREAD_ARGS_FORMAT = 4,	   /* --format text|json */
	THREAD_ARGS_PATH = 8,	   /* one PATH under /mnt/user-data/{workspace,outputs} */
	THREAD_ARGS_WHEN = 16,	   /* --before RUN or --at TIME (one of them), --dry-run */
	THREAD_ARGS_SINCE = 32,	   /* --since CURSOR */
	THREAD_ARGS_ONCE = 64,	   /* --once */
};

/* Parses ARGV into A. Returns -1 to go on, else the exit status to end
 * the command with (0 after --help, 2 for a usage error). */
int thread_args_parse(const char *command, const char *usage, int argc, char **argv,
		      const char *home, unsigned takes, struct thread_args *a);

/* A run id RUN (a number printed by sbx run begin) of COMMAND: -1 to go
 * on, else 2 after a usage error. */
int run_id_parse(const char *command, const char *arg, int64_t *run);

/* The options of a command about one run: RUN [--format text|json if it
 * TAKES RUN_ARGS_FORMAT, and html too if RUN_ARGS_HTML] [--dry-run
 * --partial --force if it takes RUN_ARGS_UNDO] [--home DIR] [-h|--help];
 * those it does not take are unknown to it. */
enum format { FORMAT_TEXT, FORMAT_JSON, FORMAT_HTML };

#define RUN_ARGS_FORMAT 1u
#define RUN_ARGS_HTML (2u | RUN_ARGS_FORMAT)
#define RUN_ARGS_UNDO 4u

struct run_args {
	int64_t run;
	enum format format;
	bool dry_run, partial, force;
	char home[PATH_MAX]; /* resolved */
};

/* Parses ARGV into A. Returns -1 to go on, else the exit status. */
int run_args_parse(const char *command, const char *usage, int argc, char **argv, const char *home,
		   unsigned takes, struct run_args *a);

#endif
