/* log.h - one-line diagnostics for the daemon and the CLI.
 *
 * Every line is "PROG: message" (the CLI) or "TIME PROG[pid] LEVEL: message"
 * (the daemon, whose log usually goes to a file). Messages say what failed
 * and why; they never contain more than one line.
 */
#ifndef SBX_LOG_H
#define SBX_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

enum log_level { LOG_ERR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* Sets the program name, the stream (NULL keeps stderr), the most verbose
 * level that is printed, and whether lines carry a timestamp. */
void log_setup(const char *prog, FILE *stream, enum log_level max, bool stamped);
bool log_enabled(enum log_level level);
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
