/* log.c - see log.h. The settings are process-wide by nature (one stderr,
 * one log file), so they live here and nowhere else. */
#include "log.h"
#include "quote.h"

#include <stdarg.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static struct {
	const char *prog;
	FILE *stream;
	enum log_level max;
	bool stamped;
} log_cfg = { "sbx", NULL, LOG_INFO, false };

void log_setup(const char *prog, FILE *stream, enum log_level max, bool stamped)
{
	log_cfg.prog = prog;
	log_cfg.stream = stream;
	log_cfg.max = max;
	log_cfg.stamped = stamped;
}

bool log_enabled(enum log_level level)
{
	return level <= log_cfg.max;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	FILE *out = log_cfg.stream ? log_cfg.stream : stderr;
	char line[4096], msg[2048];
	size_t n = 0;
	va_list ap;

	if (!log_enabled(level))
		return;
	if (log_cfg.stamped) {
		struct timeval tv;
		struct tm tm;

		gettimeofday(&tv, NULL);
		localtime_r(&tv.tv_sec, &tm);
		n = strftime(line, sizeof(line), "%Y-%m-%d %H:%M:%S", &tm);
		n += snprintf(line + n, sizeof(line) - n,
			      ".%03ld %s[%d] %s: ", (long)tv.tv_usec / 1000, log_cfg.prog,
			      (int)getpid(), names[level]);
	} else {
		n = snprintf(line, sizeof(line), "%s: ", log_cfg.prog);
	}
	va_start(ap, fmt);
	int len = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Names in messages come from the sandbox: a newline would forge a
	 * line, an escape sequence drive the reader's terminal. */
	if (len > 0 && n < sizeof(line))
		visible_text(msg, (size_t)len < sizeof(msg) ? (size_t)len : sizeof(msg) - 1,
			     line + n, sizeof(line) - n);
	/* One write per line so concurrent threads never interleave halves. */
	fprintf(out, "%s\n", line);
	fflush(out);
}

int usage_verror(const char *label, const char *name, const char *fmt, va_list ap)
{
	if (fmt) {
		fprintf(stderr, "%s: ", label);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	fprintf(stderr, "Try '%s --help'.\n", name);
	return 2;
}
