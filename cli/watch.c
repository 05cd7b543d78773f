/* watch.c - sbx watch: a thread's changes as its views make them, one
 * line each, until interrupted (store/follow.h does the waiting). */
#include "args.h"
#include "cli.h"
#include "run/lookup.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/quote.h"
#include "exec/watch.h"
#include "store/follow.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

static const char watch_usage[] =
	"Usage: sbx watch --user ID --thread ID [--since CURSOR] [--format text|json]\n"
	"                 [--once] [--home DIR]\n"
	"\n"
	"Prints the changes the thread's mounted views make under workspace and\n"
	"outputs as they happen (within milliseconds of the close() or rename()\n"
	"that made them), oldest first: create, modify, delete, rename, exchange,\n"
	"chmod, symlink, link (a hard link), mkdir, rmdir, with the calling\n"
	"process and the run open then. Each has a cursor, a number that only\n"
	"grows: --since the last one printed goes on where that left off, no\n"
	"change lost or shown twice, across restarts of the views too. Runs\n"
	"until interrupted (SIGINT, SIGTERM) or its output is closed, then\n"
	"exits 0.\n"
	"\n"
	"  --since CURSOR  start after CURSOR (0: from the first change); by\n"
	"                  default only changes from now on, as tail -f\n"
	"  --once          print what there is after the cursor and exit\n"
	"  --format text   one line per change (default):\n"
	"                  CURSOR TIME OP PATH [-> PATH2] (pid N, COMMAND) [run R]\n"
	"  --format json   one JSON object per line: cursor, op, path, path2,\n"
	"                  at_ns, time, pid, command, run (path2 and run null\n"
	"                  when there is none)\n";

/* Events per read; output is flushed after each. */
#define BATCH 256
/* The fallback: a read every second even if no write was seen. */
#define FALLBACK_MS 1000

static int print_text(void *arg, const struct follow_event *e)
{
	char when[WATCH_TIME_MAX], path[QUOTE_MAX], path2[QUOTE_MAX], comm[QUOTE_MAX];

	(void)arg;
	printf("%lld %s %s %s", (long long)e->cursor, watch_time(e->at_ns, when), e->op,
	       quote_name(e->path, path, sizeof(path)));
	if (e->path2)
		printf(" -> %s", quote_name(e->path2, path2, sizeof(path2)));
	printf(" (pid %d, %s)", (int)e->pid, quote_name(e->comm, comm, sizeof(comm)));
	if (e->run)
		printf(" run %lld", (long long)e->run);
	putchar('\n');
	return 0;
}

static int print_json(void *arg, const struct follow_event *e)
{
	json_t *o = watch_event_json(e);

	(void)arg;
	if (!o)
		return -ENOMEM;
	int r = json_dumpf(o, stdout, JSON_COMPACT) < 0 ? -EIO : 0;
	json_decref(o);
	putchar('\n');
	return r;
}

/* Prints every event there is after the cursor, a batch at a time.
 * Returns 0, 1 when the output is gone (EPIPE: done), or -errno. */
static int print_all(struct follow *f, bool json)
{
	int n;

	do {
		n = follow_read(f, BATCH, json ? print_json : print_text, NULL);
		if (fflush(stdout) == EOF || ferror(stdout))
			return errno == EPIPE ? 1 : -(errno ? errno : EIO);
	} while (n == BATCH);
	return n < 0 ? n : 0;
}

int cmd_watch(int argc, char **argv, const char *home)
{
	char err[PATH_MAX + 256];
	struct thread_args a;
	struct follow *f;
	sigset_t stop;
	int r = thread_args_parse("watch", watch_usage, argc, argv, home,
				  THREAD_ARGS_FORMAT | THREAD_ARGS_SINCE | THREAD_ARGS_ONCE, &a);

	if (r >= 0)
		return r;
	struct error e;
	if (thread_check(a.home, a.user, a.thread, &e) < 0)
		return say_error("watch", &e);
	/* A reader that goes away is the normal end (sbx watch | head):
	 * EPIPE, not death by SIGPIPE. SIGINT and SIGTERM are read from a
	 * signalfd, so that one arriving between two polls is not lost. */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop, NULL);
	_cleanup_(closep) int sfd = signalfd(-1, &stop, SFD_CLOEXEC);
	if (sfd < 0) {
		fprintf(stderr, "sbx: watch: signalfd: %s\n", strerror(errno));
		return 1;
	}
	if (follow_open(a.home, a.user, a.thread, a.since, &f, err, sizeof(err)) < 0) {
		fprintf(stderr, "sbx: watch: %s\n", err);
		return 1;
	}
	r = print_all(f, a.json);
	while (r == 0 && !a.once) {
		/* stdout with no events asked for: POLLERR/POLLHUP once a
		 * pipe's or socket's reader has gone, before anything is
		 * written to it. */
		struct pollfd p[3] = { { follow_fd(f), POLLIN, 0 },
				       { sfd, POLLIN, 0 },
				       { STDOUT_FILENO, 0, 0 } };
		int n = poll(p, 3, follow_timeout(f, FALLBACK_MS));
		if (n < 0 && errno != EINTR) {
			r = -errno;
			break;
		}
		if (p[1].revents || (p[2].revents & (POLLERR | POLLHUP)))
			break;
		/* After a write, or the fallback timeout: read either way. */
		if ((r = follow_wait(f, 0)) < 0 && r != -EINTR)
			break;
		r = print_all(f, a.json);
	}
	follow_close(f);
	if (r < 0) {
		fprintf(stderr, "sbx: watch: %s\n", strerror(-r));
		return 1;
	}
	return 0;
}
