/* cli.h - what the sbx subcommands share.
 *
 * Each command is cmd_NAME(argc, argv, home): ARGV[0] is the command's
 * name, HOME the --home given before it (or NULL). It returns the exit
 * status: 0, 1 for failures, 2 for usage errors. Errors go to stderr as
 * "sbx: COMMAND: what failed: why", getopt's too (getopt_begin); a usage
 * error is followed by "Try 'sbx COMMAND --help'." (usage_error).
 */
#ifndef SBX_CLI_H
#define SBX_CLI_H

#include "hash.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

/* Resolves HOME (NULL: the default home) into BUF. Returns 0 or -1 with
 * a message printed for COMMAND. */
int resolve_home(const char *command, const char *home, char *buf, size_t size);

/* A usage error of COMMAND: "sbx: COMMAND: MESSAGE" (none if FMT is NULL,
 * when getopt said it already), then where its help is. Returns 2, the
 * exit status of usage errors. */
int usage_error(const char *command, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Readies getopt_long(3) for a new parse of COMMAND's ARGV. getopt's own
 * messages begin with ARGV[0] (the bare word COMMAND here; a program's
 * full path); this makes it "sbx: COMMAND", as every other message. */
void getopt_begin(char **argv, const char *command);

/* 0 if USER's THREAD exists under HOME; else -errno, with one line for
 * COMMAND naming what is unknown: the home, the user or the thread. A
 * command reading what a thread did says so rather than print nothing,
 * which would look like "nothing happened". */
int thread_check(const char *command, const char *home, const char *user,
		 const char *thread);

/* The options of a command about one thread: --user ID --thread ID
 * (required, validated), --home DIR, -h/--help (prints USAGE), and
 * --format text|json, --max-files N, --diff where a command takes them. */
struct thread_args {
	const char *user, *thread;
	bool json;
	bool diff;		/* --diff */
	long max_files;		/* -1 if not given */
	char home[PATH_MAX];	/* resolved */
};

/* The options a command takes besides --user, --thread and --home. */
enum {
	THREAD_ARGS_MAX_FILES = 1,	/* --max-files N */
	THREAD_ARGS_DIFF = 2,		/* --diff */
	THREAD_ARGS_FORMAT = 4,		/* --format text|json */
};

/* Parses ARGV into A. Returns -1 to go on, else the exit status to end
 * the command with (0 after --help, 2 for a usage error). */
int thread_args_parse(const char *command, const char *usage, int argc,
		      char **argv, const char *home, unsigned takes,
		      struct thread_args *a);

/* The SHA-256 H as 64 lowercase hex digits. Returns OUT. */
char *sha256_hex(const uint8_t h[SHA256_BYTES], char out[SHA256_HEX + 1]);

/* "scanning: N files" on standard error while a long scan runs, if it is
 * a terminal; at most ten updates a second. */
struct scan_progress {
	bool tty;
	long last_ms;
};

void scan_progress_init(struct scan_progress *p);
void scan_progress_show(struct scan_progress *p, size_t files);
/* Clears the line again. */
void scan_progress_done(struct scan_progress *p);

/* The backing directories a run or a snapshot scans: the thread's
 * workspace (required) and outputs (-1 if missing). */
struct thread_roots {
	int ws, out;
};

/* Opens them for USER's THREAD under HOME; -errno with a message for
 * COMMAND if the thread is unknown (thread_check) or has no workspace. */
int thread_roots_open(const char *command, const char *home, const char *user,
		      const char *thread, struct thread_roots *roots);
void thread_roots_close(struct thread_roots *roots);

/* A run id RUN (a number printed by sbx run begin) of COMMAND: -1 to go
 * on, else 2 after a usage error. */
int run_id_parse(const char *command, const char *arg, int64_t *run);

/* The options of a command about one run: RUN [--format text|json, and
 * html if HTML] [--home DIR] [-h|--help]. */
enum format { FORMAT_TEXT, FORMAT_JSON, FORMAT_HTML };

struct run_args {
	int64_t run;
	enum format format;
	char home[PATH_MAX];	/* resolved */
};

/* Parses ARGV into A. Returns -1 to go on, else the exit status. */
int run_args_parse(const char *command, const char *usage, int argc, char **argv,
		   const char *home, bool html, struct run_args *a);

struct store;
struct store_run;

/* Opens HOME's store and reads run ID into RUN (store_run_free() it);
 * NULL, with the reason printed for COMMAND, if either fails. */
struct store *run_open(const char *command, const char *home, int64_t id,
		       struct store_run *run);

int cmd_audit(int argc, char **argv, const char *home);
int cmd_snapshot(int argc, char **argv, const char *home);
int cmd_run(int argc, char **argv, const char *home);
int cmd_changes(int argc, char **argv, const char *home);
int cmd_present(int argc, char **argv, const char *home);
int cmd_receipt(int argc, char **argv, const char *home);
int cmd_broker(int argc, char **argv, const char *home);
int cmd_exec(int argc, char **argv, const char *home);
int cmd_doctor(int argc, char **argv, const char *home);
int cmd_id(int argc, char **argv, const char *home);

#endif
