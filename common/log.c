/* log.c - see log.h. The settings are process-wide by nature (one stderr,
 * one log file), so they live here and nowhere else. */
#include "log.h"
#include "cleanup.h"
#include "hash.h"
#include "quote.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define SHAPES 64 /* kinds of message counted at once */

/* One kind of message (log_msg()'s format and the text before its first
 * quoted name) in its current window. */
struct shape {
	uint64_t key; /* 0: free */
	enum log_level level;
	time_t start;	    /* of the window, CLOCK_MONOTONIC seconds */
	unsigned printed;   /* lines printed in it */
	unsigned long held; /* lines not printed */
	char last[256];	    /* the last held one */
};

static struct {
	pthread_mutex_t lock;
	const char *prog;
	FILE *stream;
	enum log_level max;
	bool stamped;
	unsigned burst, window;
	struct shape shapes[SHAPES];
	/* The log file, to rotate (log_set_file()); dir -1: none. */
	int dir;
	char name[NAME_MAX + 1];
	uint64_t max_bytes, bytes;
} log_cfg = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.prog = "sbx",
	.max = LOG_INFO,
	.burst = LOG_BURST,
	.window = LOG_WINDOW,
	.dir = -1,
};

/* What was held back is told at exit too. */
static void flush_at_exit(void)
{
	atexit(log_flush_repeats);
}

void log_setup(const char *prog, FILE *stream, enum log_level max, bool stamped)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, flush_at_exit);
	log_cfg.prog = prog;
	log_cfg.stream = stream;
	log_cfg.max = max;
	log_cfg.stamped = stamped;
}

void log_collapse(unsigned burst, unsigned window)
{
	pthread_mutex_lock(&log_cfg.lock);
	log_cfg.burst = burst;
	log_cfg.window = window;
	pthread_mutex_unlock(&log_cfg.lock);
}

bool log_enabled(enum log_level level)
{
	return level <= log_cfg.max;
}

static FILE *out(void)
{
	return log_cfg.stream ? log_cfg.stream : stderr;
}

static time_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

/* A message's kind: its format and level, and the text before the first
 * quoted name ("refused create of '...'": every refused create alike,
 * and "%s" formats told apart by what they say). Never 0. */
static uint64_t shape_key(enum log_level level, const char *fmt, const char *msg)
{
	uint64_t h = fnv1a(FNV1A_START, &fmt, sizeof(fmt));

	h = fnv1a(h, &level, sizeof(level));
	h = fnv1a(h, msg, strcspn(msg, "'"));
	return h ? h : 1;
}

/* Renames the log, once past MAX_BYTES, to NAME.1 and goes on in a new
 * one: the stream's descriptor, and stderr where it is the same file (the
 * broker's children write there), now write the new file. */
static void rotate(void)
{
	FILE *f = out();
	char old[NAME_MAX + 8];
	struct stat a, b;

	snprintf(old, sizeof(old), "%s.1", log_cfg.name);
	fflush(f);
	bool both = fileno(f) != STDERR_FILENO && fstat(fileno(f), &a) == 0 &&
		    fstat(STDERR_FILENO, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
	if (renameat(log_cfg.dir, log_cfg.name, log_cfg.dir, old) < 0)
		return; /* logged to the full one, tried again at the next line */
	_cleanup_(closep) int fd = openat(log_cfg.dir, log_cfg.name,
					  O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
					  0600);
	if (fd < 0)
		return;
	dup2(fd, fileno(f));
	if (both)
		dup2(fd, STDERR_FILENO);
	log_cfg.bytes = 0;
}

/* Writes LINE (locked). One write per line so that other processes
 * appending to the same file never interleave halves. */
static void emit(const char *line)
{
	FILE *f = out();

	fprintf(f, "%s\n", line);
	fflush(f);
	log_cfg.bytes += strlen(line) + 1;
	if (log_cfg.dir >= 0 && log_cfg.bytes > log_cfg.max_bytes) {
		struct stat st; /* others may write it too: the file decides */
		if (fstat(fileno(f), &st) == 0 && (uint64_t)st.st_size > log_cfg.max_bytes)
			rotate();
		else if (fstat(fileno(f), &st) == 0)
			log_cfg.bytes = (uint64_t)st.st_size;
	}
}

/* Writes "TIME PROG[pid] LEVEL: " or "PROG: " into LINE; returns its length. */
static size_t prefix(enum log_level level, char *line, size_t size)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	struct timeval tv;
	struct tm tm;
	size_t n;

	if (!log_cfg.stamped)
		return (size_t)snprintf(line, size, "%s: ", log_cfg.prog);
	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	n = strftime(line, size, "%Y-%m-%d %H:%M:%S", &tm);
	n += (size_t)snprintf(line + n, size - n, ".%03ld %s[%d] %s: ", (long)tv.tv_usec / 1000,
			      log_cfg.prog, (int)getpid(), names[level]);
	return n;
}

/* Logs the tally of SH's held lines (locked) and starts a fresh window. */
static void tally(struct shape *sh, time_t now)
{
	char line[512];

	if (sh->held) {
		size_t n = prefix(sh->level, line, sizeof(line));
		snprintf(line + n, sizeof(line) - n, "and %lu more like this in %lds, the last: %s",
			 sh->held, (long)(now - sh->start), sh->last);
		emit(line);
	}
	sh->start = now;
	sh->printed = 0;
	sh->held = 0;
}

/* The shape of KEY (locked), its window renewed if over; NULL if all are
 * taken by kinds still in their windows. */
static struct shape *shape_of(uint64_t key, enum log_level level, time_t now)
{
	struct shape *free = NULL;

	for (size_t i = 0; i < SHAPES; i++) {
		struct shape *sh = &log_cfg.shapes[(key + i) % SHAPES];
		bool over = sh->key && now - sh->start >= (time_t)log_cfg.window;
		if (sh->key == key) {
			if (over)
				tally(sh, now);
			return sh;
		}
		if (over && !sh->held)
			sh->key = 0; /* a kind gone quiet */
		if (!sh->key && !free)
			free = sh;
	}
	if (free)
		*free = (struct shape){ .key = key, .level = level, .start = now };
	return free;
}

void log_flush_repeats(void)
{
	time_t now = now_s();

	pthread_mutex_lock(&log_cfg.lock);
	for (size_t i = 0; i < SHAPES; i++)
		if (log_cfg.shapes[i].key)
			tally(&log_cfg.shapes[i], now);
	pthread_mutex_unlock(&log_cfg.lock);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	char line[4096], msg[2048];
	va_list ap;

	if (!log_enabled(level))
		return;
	va_start(ap, fmt);
	int len = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	time_t now = now_s();
	pthread_mutex_lock(&log_cfg.lock);
	/* Kinds whose window is over say what they held back first. */
	for (size_t i = 0; i < SHAPES; i++) {
		struct shape *sh = &log_cfg.shapes[i];
		if (sh->held && now - sh->start >= (time_t)log_cfg.window)
			tally(sh, now);
	}
	struct shape *sh = log_cfg.burst ? shape_of(shape_key(level, fmt, msg), level, now) : NULL;
	size_t n = prefix(level, line, sizeof(line));
	/* Names in messages come from the sandbox: a newline would forge a
	 * line, an escape sequence drive the reader's terminal. */
	if (n < sizeof(line))
		visible_text(msg, (size_t)len < sizeof(msg) ? (size_t)len : sizeof(msg) - 1,
			     line + n, sizeof(line) - n);
	if (sh && sh->printed >= log_cfg.burst) {
		sh->held++;
		snprintf(sh->last, sizeof(sh->last), "%s", line + n);
	} else {
		if (sh)
			sh->printed++;
		emit(line);
	}
	pthread_mutex_unlock(&log_cfg.lock);
}

int log_set_file(int dir, const char *name, uint64_t max_bytes)
{
	struct stat st;

	if (strlen(name) > NAME_MAX - 2 || fstat(fileno(out()), &st) < 0) {
		close(dir);
		return -EINVAL;
	}
	pthread_mutex_lock(&log_cfg.lock);
	if (log_cfg.dir >= 0)
		close(log_cfg.dir);
	log_cfg.dir = dir;
	snprintf(log_cfg.name, sizeof(log_cfg.name), "%s", name);
	log_cfg.max_bytes = max_bytes;
	log_cfg.bytes = (uint64_t)st.st_size;
	pthread_mutex_unlock(&log_cfg.lock);
	return 0;
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
