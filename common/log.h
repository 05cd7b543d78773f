/* log.h - one-line diagnostics for the daemon and the CLI.
 *
 * Every line is "PROG: message" (the CLI) or "TIME PROG[pid] LEVEL: message"
 * (the daemon, whose log usually goes to a file). Messages say what failed
 * and why; they never contain more than one line.
 *
 * A log is bounded whatever the sandbox makes its programs say. Messages
 * of one kind (one format, and the text before the first quoted name:
 * every "refused create of '...'" alike) print at most LOG_BURST lines
 * every LOG_WINDOW seconds; the rest are counted and told as one line,
 * "and N more like this in Ss, the last: ...", when the window is over
 * and another line is logged, or at exit. A log file given to
 * log_set_file() is renamed NAME.1 once it holds more than its limit
 * and begun anew: at most twice the limit on disk. Thread-safe.
 */
#ifndef SBX_LOG_H
#define SBX_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum log_level { LOG_ERR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

#define LOG_BURST 100
#define LOG_WINDOW 60
/* The limit of a daemon's log file (sbxfs, the broker). */
#define LOG_FILE_MAX (4u << 20)

/* Sets the program name, the stream (NULL keeps stderr), the most verbose
 * level that is printed, and whether lines carry a timestamp. */
void log_setup(const char *prog, FILE *stream, enum log_level max, bool stamped);
bool log_enabled(enum log_level level);
/* At most BURST lines of a kind every WINDOW seconds (0: no limit). */
void log_collapse(unsigned burst, unsigned window);
/* The log (the stream, or stderr) writes the file NAME in directory DIR
 * (an fd, taken): past MAX_BYTES it is renamed NAME.1, replacing the
 * previous one, and a new NAME is opened on the same descriptor (and on
 * stderr, where that is the same file). Returns 0 or -EINVAL. */
int log_set_file(int dir, const char *name, uint64_t max_bytes);
/* Logs now how many lines of each kind were held back. */
void log_flush_repeats(void);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A usage error on stderr: "LABEL: message" (FMT with AP; nothing if FMT
 * is NULL, when getopt printed it), then "Try 'NAME --help'.". Returns 2,
 * the exit status of usage errors. sbx and sbxfs word them alike. */
int usage_verror(const char *label, const char *name, const char *fmt, va_list ap);

#define log_error(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)                                   \
	do {                                             \
		if (log_enabled(LOG_DEBUG))              \
			log_msg(LOG_DEBUG, __VA_ARGS__); \
	} while (0)

#endif
