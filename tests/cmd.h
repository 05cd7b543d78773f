/* cmd.h - running shell commands from tests and checking what they print.
 *
 * OK(fmt, ...): the command must exit 0. OUT(fmt, ...): the same, and
 * evaluates to its standard output. EQ_OUT(want, fmt, ...): exits 0 and
 * prints exactly WANT. STATUS(fmt, ...): its exit status. SAME(got, want):
 * two strings are equal, else the test fails showing their diff. Strings
 * returned are heap strings the test may leak (each test is a process).
 */
#ifndef SBX_TEST_CMD_H
#define SBX_TEST_CMD_H

#include "harness.h"

#include <stdlib.h>
#include <string.h>

char *fmt_cmd(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Runs "sh -c CMD"; returns its standard output (stderr passes through)
 * and stores its exit status (-1 if it did not exit) in *STATUS. */
char *capture(const char *cmd, int *status);

/* Runs "sh -c CMD" in a process group of its own, its stdout and stderr
 * joined, for at most SECS seconds (times CK_TIMEOUT_MULTIPLIER); returns
 * what it printed and stores its exit status in *STATUS (-1 if it did
 * not exit). Past SECS the command and every process below it are
 * killed, whatever group or session they moved to, *TIMED_OUT is set
 * and the output has a last line that says so. */
char *capture_for(const char *cmd, int secs, int *status, bool *timed_out);

/* Reproducible tool behaviour for the commands a test runs: C collation,
 * UTC, a fresh $HOME, no user or system git configuration, a fixed git
 * identity, python writing bytecode as it does by default. */
void tool_env(void);

/* Starts an exec broker in a fresh home named after TAG, with sbx.conf
 * CONF if not NULL (the test fails if it does not start); the home. */
const char *broker_start(const char *tag, const char *conf);
/* The same, the broker started with ENV before it on its command line
 * (shell words: "VAR=value ..."). */
const char *broker_start_with(const char *tag, const char *conf, const char *env);
/* Shuts the broker of HOME down, quietly: it may be gone already. */
void broker_stop(const char *home);

/* Starts `sbx serve --home HOME ARGS` in the background, in the test's
 * process group (Check kills what is left of it when the test ends,
 * passed or not), its pid in HOME/serve.pid and its log in
 * HOME/serve.log, and waits until it listens (the test fails with its
 * log if it does not). Returns the TCP port it listens on ("" when only
 * on a Unix socket). */
const char *serve_start_in(const char *home, const char *args);
/* SIGTERM to that server, and until it has exited (gone or a zombie):
 * 0, or -1 after EVENTUALLY_S; 0 if none was started in HOME. */
int serve_stop_in(const char *home);

/* What sbxfs prints when it refuses to mount alice/t1 of HOME with the
 * options OPTS (a shell fragment): its stdout and stderr. The test fails
 * unless sbxfs exits 1. */
char *sbxfs_refusal(const char *home, const char *opts);

/* The shim that kills sbx at its Nth change (tests/tools/killshim.c),
 * built into the test's scratch directory: its path. */
const char *killshim(void);
/* How far apart the kill points of a sweep are: each one in the release
 * build; under the sanitizers, which look for memory errors and make a
 * round several times slower, every third (docs/reliability.md). */
#ifdef __SANITIZE_ADDRESS__
#define KILL_STRIDE 3
#else
#define KILL_STRIDE 1
#endif
/* The shim that slows the broker's every poll() by $SBX_SLOW_POLL_MS
 * (tests/tools/slowshim.c), built the same way: its path. */
const char *slowshim(void);

/* "diff -u" of two texts, at most about 3 KB of it. */
char *text_diff(const char *got, const char *want);

/* The two strings are equal; otherwise fail showing their diff. */
#define SAME(got, want)                                                                \
	do {                                                                           \
		const char *g_ = (got), *w_ = (want);                                  \
		ck_assert_msg(!strcmp(g_, w_), "%s differs from %s:\n%s", #got, #want, \
			      text_diff(g_, w_));                                      \
	} while (0)

#define OK(...)                                                    \
	do {                                                       \
		char *cmd_ = fmt_cmd(__VA_ARGS__);                 \
		int st_ = sh("%s", cmd_);                          \
		ck_assert_msg(st_ == 0, "exit %d: %s", st_, cmd_); \
		free(cmd_);                                        \
	} while (0)

#define OUT(...)                                                                  \
	({                                                                        \
		char *cmd_ = fmt_cmd(__VA_ARGS__);                                \
		int st_;                                                          \
		char *out_ = capture(cmd_, &st_);                                 \
		ck_assert_msg(st_ == 0, "exit %d: %s\n%.2000s", st_, cmd_, out_); \
		free(cmd_);                                                       \
		out_;                                                             \
	})

/* EQ_OUT(want, fmt, ...): the command exits 0 and prints exactly WANT. */
#define EQ_OUT(want, ...)                                                                         \
	do {                                                                                      \
		char *c_ = fmt_cmd(__VA_ARGS__);                                                  \
		int s_;                                                                           \
		char *o_ = capture(c_, &s_);                                                      \
		const char *w_ = (want);                                                          \
		ck_assert_msg(s_ == 0 && !strcmp(o_, w_), "%s\nexit %d, output differs:\n%s", c_, \
			      s_, text_diff(o_, w_));                                             \
		free(c_);                                                                         \
		free(o_);                                                                         \
	} while (0)

/* True once no process's command line matches PATTERN (pgrep -f), within
 * EVENTUALLY_S: a killed process is gone a moment after its SIGKILL (the
 * broker replies once it has sent it: cgroup.kill is asynchronous), on a
 * loaded host some seconds after. */
bool gone(const char *pattern);
/* The processes matching PATTERN, with what tells why one outlived its
 * kill: its state and wait channel, its PID namespace and its parent. */
char *running(const char *pattern);
#define ASSERT_GONE(pattern)                                                        \
	ck_assert_msg(gone(pattern), "still running after %d s:\n%s", EVENTUALLY_S, \
		      running(pattern))

#define STATUS(...)                                \
	({                                         \
		char *cmd_ = fmt_cmd(__VA_ARGS__); \
		int st_ = sh("%s", cmd_);          \
		free(cmd_);                        \
		st_;                               \
	})

#endif
