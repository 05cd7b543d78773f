/* Watching a thread's changes live. The store's part without a view:
 * store_journal_after's rows, ids, runs and high-water mark; follow.h's
 * whitelist, cursor, and its wake on another connection's commit. Then
 * through real views: sbx watch as a child on a pipe (each change as it
 * is made, the journal's own rows never, the text form, resuming from a
 * cursor across a remount, how it ends, its errors), and the broker's
 * watch op on a raw socket (events, a client that stops reading, another
 * request, a shutdown). Nothing here sleeps to synchronise: it waits for
 * output, with a deadline. */
#include "common/clock.h"
#include "store/follow.h"
#include "store/snapshot.h"
#include "store/store.h"
#include "tests/cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long one line may take to come (a bound for a loaded machine,
 * not a latency target: bench/watch-bench measures that). */
#define LINE_MS (EVENTUALLY_S * 1000)
/* The changes are made by the test process itself, under this name. */
#define ACTOR "watch-actor"

/* ---- reading lines with a deadline -------------------------------------- */

struct lines {
	int fd;
	size_t len;
	char buf[1 << 17];
};

/* The next line of L (heap, without its newline), or NULL at EOF or once
 * TIMEOUT_MS have passed. */
static char *next_line(struct lines *l, int timeout_ms)
{
	int64_t until = now_ms() + timeout_ms;

	for (;;) {
		char *nl = memchr(l->buf, '\n', l->len);
		if (nl) {
			size_t n = (size_t)(nl - l->buf);
			char *line = strndup(l->buf, n);
			memmove(l->buf, nl + 1, l->len - n - 1);
			l->len -= n + 1;
			return line;
		}
		int64_t left = until - now_ms();
		struct pollfd p = { l->fd, POLLIN, 0 };
		if (left <= 0 || l->len == sizeof(l->buf))
			return NULL;
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		ssize_t k = read(l->fd, l->buf + l->len, sizeof(l->buf) - l->len);
		if (k <= 0)
			return NULL;
		l->len += (size_t)k;
	}
}

static json_t *parse(const char *line)
{
	json_error_t e;
	json_t *o = line ? json_loads(line, 0, &e) : NULL;

	ck_assert_msg(o, "not a JSON line: %s", line ? line : "(none: EOF or timeout)");
	return o;
}

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	ck_assert_msg(s, "no string '%s' in %s", key, json_dumps(o, JSON_COMPACT));
	return s;
}

static long long num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	ck_assert_msg(json_is_integer(v), "no integer '%s' in %s", key,
		      json_dumps(o, JSON_COMPACT));
	return json_integer_value(v);
}

/* An event's line as "OP PATH[ -> PATH2] (WHO, COMMAND)[ run R]", WHO
 * "self" for this process; its time must say its at_ns, its cursor be
 * above *LAST (which it becomes). */
static char *event_of(const char *line, long long *last)
{
	json_t *o = parse(line);
	json_t *p2 = json_object_get(o, "path2"), *run = json_object_get(o, "run");
	long long at = num(o, "at_ns"), pid = num(o, "pid"), cursor = num(o, "cursor");
	char when[40], day[32];
	time_t sec = (time_t)(at / 1000000000);
	struct tm tm;

	gmtime_r(&sec, &tm);
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when, sizeof(when), "%s.%03lldZ", day, at % 1000000000 / 1000000);
	ck_assert_str_eq(str(o, "time"), when);
	ck_assert_msg(cursor > *last, "cursor %lld after %lld", cursor, *last);
	*last = cursor;
	ck_assert_msg(json_is_null(p2) || json_is_string(p2), "%s", line);
	ck_assert_msg(json_is_null(run) || json_is_integer(run), "%s", line);
	return fmt_cmd("%s %s%s%s (%s, %s)%s", str(o, "op"), str(o, "path"),
		       json_is_null(p2) ? "" : " -> ",
		       json_is_null(p2) ? "" : json_string_value(p2),
		       pid == getpid() ? "self" : fmt_cmd("%lld", pid), str(o, "command"),
		       json_is_null(run) ? "" : fmt_cmd(" run %lld", json_integer_value(run)));
}

/* ---- the store's part, without a view ------------------------------------ */

/* A home of its own: no view, the store only. */
static char fhome[PATH_MAX];

static void follow_setup(void)
{
	snprintf(fhome, sizeof(fhome), "%s", test_dir("follow"));
	test_home_store(fhome);
}

static struct store *open_fhome(void)
{
	char err[512];
	struct store *s;

	ck_assert_msg(store_open(fhome, &s, err, sizeof(err)) == 0, "%s", err);
	return s;
}

static void add_row(struct store *s, const char *thread, int64_t at, const char *op,
		    const char *path, const char *path2)
{
	struct store_event e = {
		.at_ns = at,
		.op = op,
		.path = path,
		.path2 = path2,
		.pid = 42,
		.comm = "tool",
	};

	ck_assert_int_eq(store_journal_add(s, "u", thread, &e), 0);
}

static int collect_rows(void *arg, const struct store_event *e, int64_t id, int64_t run)
{
	char *out = arg;

	snprintf(out + strlen(out), 2048 - strlen(out), "%lld %s %s %lld\n", (long long)id, e->op,
		 e->path, (long long)run);
	return 0;
}

/* The thread's rows after an id, in order, each with the run open at
 * its time; at most LIMIT; *scanned past the other threads' rows. */
START_TEST(test_follow_store_rows_after_an_id)
{
	struct store *s = open_fhome();
	struct snapshot snap = { 0 };
	int64_t last, scanned, snap_id, run;
	char got[2048] = "";

	ck_assert_int_eq(store_journal_last_id(s, &last), 0);
	ck_assert_int_eq(last, 0);
	add_row(s, "t", 100, "create", "/a", NULL);		 /* 1 */
	add_row(s, "other", 150, "create", "/x", NULL);		 /* 2 */
	add_row(s, "t", 200, "capture", "/mnt/user-data", NULL); /* 3 */
	add_row(s, "t", 300, "rename", "/a", "/b");		 /* 4 */
	add_row(s, "other", 350, "create", "/y", NULL);		 /* 5 */
	add_row(s, "other", 360, "create", "/z", NULL);		 /* 6 */
	ck_assert_int_eq(store_snapshot_save(s, "u", "t", &snap, 10, 1, &snap_id), 0);
	ck_assert_int_eq(store_run_begin(s, "u", "t", snap_id, 200, &run), 0);
	ck_assert_int_eq(store_journal_last_id(s, &last), 0);
	ck_assert_int_eq(last, 6);

	ck_assert_int_eq(store_journal_after(s, "u", "t", 0, 10, &scanned, collect_rows, got), 3);
	ck_assert_str_eq(got, "1 create /a 0\n3 capture /mnt/user-data 1\n4 rename /a 1\n");
	ck_assert_int_eq(scanned, 6); /* all read, the other thread's too */
	got[0] = '\0';
	ck_assert_int_eq(store_journal_after(s, "u", "t", 0, 2, &scanned, collect_rows, got), 2);
	ck_assert_str_eq(got, "1 create /a 0\n3 capture /mnt/user-data 1\n");
	ck_assert_int_eq(scanned, 3); /* the limit: more may follow */
	got[0] = '\0';
	ck_assert_int_eq(store_journal_after(s, "u", "t", 4, 10, &scanned, collect_rows, got), 0);
	ck_assert_int_eq(scanned, 6);
	/* A run that has ended covers its own time only. */
	ck_assert_int_eq(store_run_end(s, run, snap_id, 300, NULL, "{}"), 0);
	add_row(s, "t", 400, "delete", "/b", NULL); /* 7 */
	got[0] = '\0';
	ck_assert_int_eq(store_journal_after(s, "u", "t", 3, 10, &scanned, collect_rows, got), 2);
	ck_assert_str_eq(got, "4 rename /a 1\n7 delete /b 0\n");
	/* A cursor beyond the end reads nothing and stays. */
	ck_assert_int_eq(store_journal_after(s, "u", "t", 99, 10, &scanned, collect_rows, got), 0);
	ck_assert_int_eq(scanned, 99);
	store_close(s);
}
END_TEST

static int collect_events(void *arg, const struct follow_event *e)
{
	char *out = arg;

	snprintf(out + strlen(out), 2048 - strlen(out), "%lld %s %s %s %d %s\n",
		 (long long)e->cursor, e->op, e->path, e->path2 ? e->path2 : "-", (int)e->pid,
		 e->comm);
	return 0;
}

static int refuse(void *arg, const struct follow_event *e)
{
	(void)arg;
	(void)e;
	return -EPIPE;
}

static struct follow *open_follow(int64_t since)
{
	char err[512];
	struct follow *f;

	ck_assert_msg(follow_open(fhome, "u", "t", since, &f, err, sizeof(err)) == 0, "%s", err);
	return f;
}

/* Only changes are given out, never the journal's own rows (nor any op
 * it may add later); a batch stops at LIMIT; an event FN refuses comes
 * again. */
START_TEST(test_follow_gives_out_changes_only)
{
	struct store *s = open_fhome();
	char got[2048] = "";

	add_row(s, "t", 1, "create", "/a", NULL);	       /* 1 */
	add_row(s, "t", 2, "capture", "/mnt/user-data", NULL); /* 2 */
	add_row(s, "t", 3, "preimage", "/a", NULL);	       /* 3 */
	add_row(s, "t", 4, "modify", "/a", NULL);	       /* 4 */
	add_row(s, "t", 5, "keep", "/a", NULL);		       /* 5: an op of later */
	add_row(s, "other", 6, "delete", "/x", NULL);	       /* 6 */
	add_row(s, "t", 7, "exchange", "/a", "/b");	       /* 7 */
	add_row(s, "t", 8, "chmod", "/b", NULL);	       /* 8 */
	add_row(s, "t", 9, "symlink", "/l", NULL);	       /* 9 */
	add_row(s, "t", 10, "delete", "/a", NULL);	       /* 10 */
	struct follow *f = open_follow(0);

	ck_assert_int_eq(follow_read(f, 3, refuse, NULL), -EPIPE);
	ck_assert_int_eq(follow_cursor(f), 0);
	ck_assert_int_eq(follow_read(f, 3, collect_events, got), 3);
	ck_assert_str_eq(got, "1 create /a - 42 tool\n4 modify /a - 42 tool\n"
			      "7 exchange /a /b 42 tool\n");
	ck_assert_int_eq(follow_cursor(f), 7);
	got[0] = '\0';
	ck_assert_int_eq(follow_read(f, 10, collect_events, got), 3);
	ck_assert_str_eq(got,
			 "8 chmod /b - 42 tool\n9 symlink /l - 42 tool\n10 delete /a - 42 tool\n");
	ck_assert_int_eq(follow_read(f, 10, collect_events, got), 0);
	follow_close(f);
	/* From the end: nothing of before. */
	f = open_follow(-1);
	ck_assert_int_eq(follow_cursor(f), 10);
	ck_assert_int_eq(follow_read(f, 10, collect_events, got), 0);
	follow_close(f);
	store_close(s);
}
END_TEST

/* A commit of another connection wakes a follower: no read of the
 * tree, no wait for the fallback. Idle, it sleeps its whole timeout. */
START_TEST(test_follow_wakes_on_a_commit)
{
	struct store *s = open_fhome();
	struct follow *f = open_follow(-1);
	char got[2048] = "";

	ck_assert_int_ge(follow_fd(f), 0);
	ck_assert_int_eq(follow_wait(f, 50), 0);
	add_row(s, "t", 1, "create", "/a", NULL);
	/* The first wait sees the write at once (well within 10 s). */
	ck_assert_int_eq(follow_wait(f, 10000), 1);
	ck_assert_int_eq(follow_read(f, 10, collect_events, got), 1);
	ck_assert_str_eq(got, "1 create /a - 42 tool\n");
	if (pg_mode()) {
		/* PostgreSQL notifies after the commit: no second read. */
		ck_assert_int_eq(follow_timeout(f, 10000), 10000);
		ck_assert_int_eq(follow_wait(f, 50), 0);
	} else {
		/* Then the second read after the write is due within
		 * RECHECK_MS (SQLite: the commit shows a moment after). */
		ck_assert_int_le(follow_timeout(f, 10000), 10);
		ck_assert_int_eq(follow_wait(f, 10000), 1);
		ck_assert_int_eq(follow_timeout(f, 10000), 10000);
	}
	follow_close(f);
	store_close(s);
}
END_TEST

/* ---- sbx watch ---------------------------------------------------------- */

static struct tview V;

static void setup(void)
{
	ck_assert_int_eq(tview_mount(&V, NULL, "alice", "watch", NULL), 0);
	prctl(PR_SET_NAME, ACTOR);
}

static void teardown(void)
{
	tview_umount(&V);
}

/* The journal's last id now. */
static long long journal_end(const char *home)
{
	char err[512];
	struct store *s;
	int64_t id;

	ck_assert_msg(store_open(home, &s, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(store_journal_last_id(s, &id), 0);
	store_close(s);
	return id;
}

struct watcher {
	pid_t pid;
	struct lines out;
};

/* Starts `sbx --home HOME watch --user alice --thread THREAD ARGS` with
 * its stdout on a pipe of W's (ARGS: up to 5, NULL-terminated). */
static void watch_start(struct watcher *w, const char *home, const char *thread,
			const char *const *args)
{
	int p[2];
	const char *argv[16] = { test_bin("sbx"), "--home", home,	"watch",
				 "--user",	  "alice",  "--thread", thread };
	int argc = 8;

	for (int i = 0; args && args[i]; i++)
		argv[argc++] = args[i];
	argv[argc] = NULL;
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	w->out.len = 0;
	w->out.fd = p[0];
	w->pid = fork();
	ck_assert_int_ge(w->pid, 0);
	if (w->pid == 0) {
		dup2(p[1], STDOUT_FILENO);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
}

/* The exit status of PID once it exits (at most 10 s), -1 if it did not
 * exit normally or in time. */
static int exit_status(pid_t pid)
{
	int64_t until = now_ms() + LINE_MS;
	int st;

	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (now_ms() > until) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		usleep(5000);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* W's next event, as event_of() shows it. */
static char *next_event(struct watcher *w, long long *last)
{
	return event_of(next_line(&w->out, LINE_MS), last);
}

static void make_file(const char *path, const char *content)
{
	int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);

	ck_assert_msg(fd >= 0, "create %s: %s", path, strerror(errno));
	ck_assert_int_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	ck_assert_int_eq(close(fd), 0);
}

#define WS "/mnt/user-data/workspace/"

/* Each change comes as it is made, with its path(s), the process that
 * made it and the run open then; the rows a run adds for itself
 * (capture, preimage, keep) never show, though they are in the journal. */
START_TEST(test_watch_streams_each_change_as_it_happens)
{
	struct watcher w;
	long long base = journal_end(V.home), last = base;
	const char *since = fmt_cmd("%lld", base);

	ck_assert_int_eq(write_file(hws_of(&V, "keep.txt"), "kept\n"), 0);
	ck_assert_int_eq(write_file(hws_of(&V, "gone.txt"), "gone\n"), 0);
	watch_start(&w, V.home, "watch",
		    (const char *[]){ "--since", since, "--format", "json", NULL });

	make_file(ws_of(&V, "pre.txt"), "before the run\n");
	SAME(next_event(&w, &last), "create " WS "pre.txt (self, " ACTOR ")");
	char *run = OUT("'%s' --home '%s' run begin --user alice --thread watch", test_bin("sbx"),
			V.home);
	run[strcspn(run, "\n")] = '\0';
	const char *in_run = fmt_cmd(") run %s", run);

	make_file(ws_of(&V, "a.txt"), "a\n");
	SAME(next_event(&w, &last), fmt_cmd("create " WS "a.txt (self, " ACTOR "%s", in_run));
	/* Read first (the gate), then changed: a pre-image, then the change. */
	free(read_file(ws_of(&V, "keep.txt")));
	int fd = open(ws_of(&V, "keep.txt"), O_WRONLY | O_APPEND | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "more\n", 5), 5);
	ck_assert_int_eq(close(fd), 0);
	SAME(next_event(&w, &last), fmt_cmd("modify " WS "keep.txt (self, " ACTOR "%s", in_run));
	ck_assert_int_eq(rename(ws_of(&V, "a.txt"), ws_of(&V, "b.txt")), 0);
	SAME(next_event(&w, &last),
	     fmt_cmd("rename " WS "a.txt -> " WS "b.txt (self, " ACTOR "%s", in_run));
	ck_assert_int_eq(chmod(ws_of(&V, "b.txt"), 0600), 0);
	SAME(next_event(&w, &last), fmt_cmd("chmod " WS "b.txt (self, " ACTOR "%s", in_run));
	ck_assert_int_eq(symlink("b.txt", ws_of(&V, "l")), 0);
	SAME(next_event(&w, &last), fmt_cmd("symlink " WS "l (self, " ACTOR "%s", in_run));
	ck_assert_int_eq(mkdir(ws_of(&V, "d"), 0755), 0);
	SAME(next_event(&w, &last), fmt_cmd("mkdir " WS "d (self, " ACTOR "%s", in_run));
	ck_assert_int_eq(link(ws_of(&V, "b.txt"), ws_of(&V, "d/hard")), 0);
	SAME(next_event(&w, &last), fmt_cmd("link " WS "d/hard (self, " ACTOR "%s", in_run));
	ck_assert_int_eq(renameat2(AT_FDCWD, ws_of(&V, "b.txt"), AT_FDCWD, ws_of(&V, "keep.txt"),
				   RENAME_EXCHANGE),
			 0);
	SAME(next_event(&w, &last),
	     fmt_cmd("exchange " WS "b.txt -> " WS "keep.txt (self, " ACTOR "%s", in_run));
	free(read_file(ws_of(&V, "gone.txt")));
	ck_assert_int_eq(unlink(ws_of(&V, "gone.txt")), 0);
	SAME(next_event(&w, &last), fmt_cmd("delete " WS "gone.txt (self, " ACTOR "%s", in_run));
	make_file(ws_of(&V, "two\nlines"), "x\n");
	SAME(next_event(&w, &last), fmt_cmd("create " WS "two\nlines (self, " ACTOR "%s", in_run));
	/* Outputs are journaled too; uploads are not. */
	make_file(vpath(&V, "user-data/uploads/up.txt"), "u\n");
	make_file(vpath(&V, "user-data/outputs/report.md"), "r\n");
	SAME(next_event(&w, &last),
	     fmt_cmd("create /mnt/user-data/outputs/report.md (self, " ACTOR "%s", in_run));

	/* The run's own rows are there, and were not shown. */
	tview_sync(&V);
	EQ_OUT("1 1 1\n",
	       "tests/tools/sbxsql '%s' \"SELECT (SELECT CASE WHEN count(*) > 0 THEN 1 ELSE 0 END"
	       " FROM journal WHERE op = 'capture' AND id > %lld),"
	       " (SELECT CASE WHEN count(*) >= 2 THEN 1 ELSE 0 END FROM journal"
	       " WHERE op = 'preimage' AND id > %lld),"
	       " (SELECT CASE WHEN count(*) >= 2 THEN 1 ELSE 0 END FROM journal"
	       " WHERE op = 'keep' AND id > %lld)\" | tr '|' ' '",
	       V.home, base, base, base);
	/* The text form of the same, names quoted. */
	char *text = OUT("'%s' --home '%s' watch --user alice --thread watch --since %lld --once",
			 test_bin("sbx"), V.home, base);
	ck_assert_msg(strstr(text, fmt_cmd(" chmod " WS "b.txt (pid %d, " ACTOR ") run %s\n",
					   (int)getpid(), run)) &&
			      strstr(text, fmt_cmd(" rename " WS "a.txt -> " WS
						   "b.txt (pid %d, " ACTOR ") run %s\n",
						   (int)getpid(), run)) &&
			      strstr(text, fmt_cmd(" create \"" WS "two\\nlines\" (pid %d, " ACTOR
						   ") run %s\n",
						   (int)getpid(), run)) &&
			      strstr(text, fmt_cmd(" create " WS "pre.txt (pid %d, " ACTOR ")\n",
						   (int)getpid())),
		      "%s", text);
	int lines = 0;
	for (char *p = text; (p = strchr(p, '\n')); p++)
		lines++;
	ck_assert_int_eq(lines, 12);
	const char *first = fmt_cmd("%lld ", base + 1);
	ck_assert_msg(!strncmp(text, first, strlen(first)), "%s", text);
	/* Nothing more came. */
	ck_assert_ptr_null(next_line(&w.out, 300));
	kill(w.pid, SIGTERM);
	ck_assert_int_eq(exit_status(w.pid), 0);
}
END_TEST

/* The JSON lines of `sbx watch --since SINCE --once --format json` as
 * event_of() shows them, one a line. */
static char *once(const char *since)
{
	char *out = OUT("'%s' --home '%s' watch --user alice --thread watch --since %s --once"
			" --format json",
			test_bin("sbx"), V.home, since);
	char *shown = strdup(""), *line, *save = NULL;
	long long last = -1;

	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		shown = fmt_cmd("%s%s\n", shown, event_of(line, &last));
	return shown;
}

static long long last_cursor(const char *since)
{
	char *out = OUT("'%s' --home '%s' watch --user alice --thread watch --since %s --once"
			" --format json | tail -1",
			test_bin("sbx"), V.home, since);
	return num(parse(out), "cursor");
}

/* --since the last cursor printed resumes: every change after it once,
 * none lost, none twice, though the view was unmounted and mounted
 * again (its daemon restarted) in between. */
START_TEST(test_watch_resumes_after_a_cursor_across_a_remount)
{
	make_file(ws_of(&V, "a"), "1\n");
	make_file(ws_of(&V, "b"), "2\n");
	tview_sync(&V);
	SAME(once("0"), "create " WS "a (self, " ACTOR ")\ncreate " WS "b (self, " ACTOR ")\n");
	long long mark = last_cursor("0");
	const char *since = fmt_cmd("%lld", mark);

	ck_assert_int_eq(rename(ws_of(&V, "a"), ws_of(&V, "c")), 0);
	ck_assert_int_eq(tview_umount_wait(&V), 0);
	char home[PATH_MAX];
	snprintf(home, sizeof(home), "%s", V.home);
	ck_assert_int_eq(tview_mount(&V, home, "alice", "watch", NULL), 0);
	free(read_file(ws_of(&V, "b")));
	ck_assert_int_eq(unlink(ws_of(&V, "b")), 0);
	make_file(ws_of(&V, "d"), "4\n");
	tview_sync(&V);
	SAME(once(since), "rename " WS "a -> " WS "c (self, " ACTOR ")\n"
			  "delete " WS "b (self, " ACTOR ")\n"
			  "create " WS "d (self, " ACTOR ")\n");
	SAME(once("0"), "create " WS "a (self, " ACTOR ")\ncreate " WS "b (self, " ACTOR ")\n"
			"rename " WS "a -> " WS "c (self, " ACTOR ")\n"
			"delete " WS "b (self, " ACTOR ")\n"
			"create " WS "d (self, " ACTOR ")\n");
	/* Without --since, only what comes after it started: probes until
	 * one shows, and the first line is a probe, none of the above. */
	struct watcher w;
	long long last = last_cursor("0");
	char *line = NULL;
	watch_start(&w, V.home, "watch", (const char *[]){ "--format", "json", NULL });
	for (int i = 0; i < 50 && !line; i++) {
		make_file(ws_of(&V, fmt_cmd("probe%d", i)), "p\n");
		line = next_line(&w.out, 200);
	}
	ck_assert_msg(line && strstr(event_of(line, &last), "create " WS "probe"), "%s", line);
	kill(w.pid, SIGTERM);
	ck_assert_int_eq(exit_status(w.pid), 0);
}
END_TEST

/* It ends with 0 on SIGINT and SIGTERM, and once its reader has gone:
 * before anything was written to it (an idle watch notices), and when a
 * write fails (EPIPE, not death by SIGPIPE). */
START_TEST(test_watch_ends_cleanly)
{
	static const int sigs[] = { SIGINT, SIGTERM };
	struct watcher w;

	for (int i = 0; i < 2; i++) {
		const char *since = fmt_cmd("%lld", journal_end(V.home));
		watch_start(&w, V.home, "watch", (const char *[]){ "--since", since, NULL });
		/* Once it has printed, it is waiting with the signals
		 * blocked (before, one would simply kill it). */
		make_file(ws_of(&V, fmt_cmd("s%d", i)), "x\n");
		char *line = next_line(&w.out, LINE_MS);
		ck_assert_msg(line && strstr(line, fmt_cmd(" create " WS "s%d ", i)), "%s", line);
		kill(w.pid, sigs[i]);
		ck_assert_int_eq(exit_status(w.pid), 0);
		close(w.out.fd);
	}
	/* Idle, its reader gone. */
	watch_start(&w, V.home, "watch", NULL);
	close(w.out.fd);
	ck_assert_int_eq(exit_status(w.pid), 0);
	/* Printing (more than a pipe holds), its reader gone. */
	for (int i = 0; i < 600; i++)
		make_file(ws_of(&V, fmt_cmd("f%03d", i)), "x\n");
	tview_sync(&V);
	watch_start(&w, V.home, "watch", (const char *[]){ "--since", "0", NULL });
	char *first = next_line(&w.out, LINE_MS);
	ck_assert_msg(first && strstr(first, " create "), "%s", first);
	close(w.out.fd);
	ck_assert_int_eq(exit_status(w.pid), 0);
	/* As in a shell pipeline. */
	const char *rc = fmt_cmd("%s/rc", test_dir("rc"));
	EQ_OUT("0\n",
	       "('%s' --home '%s' watch --user alice --thread watch --since 0; echo $? > '%s') |"
	       " head -1 > /dev/null; cat '%s'",
	       test_bin("sbx"), V.home, rc, rc);
}
END_TEST

/* What `sbx ARGS` writes on stderr, and its exit status in *STATUS. */
static char *errors(int *status, const char *args)
{
	char *cmd = fmt_cmd("'%s' --home '%s' %s 2>&1 >/dev/null", test_bin("sbx"), V.home, args);
	char *err = capture(cmd, status);

	free(cmd);
	return err;
}

START_TEST(test_watch_errors)
{
	int st;

	SAME(errors(&st, "watch --user alice --thread t9"),
	     fmt_cmd("sbx: watch: unknown thread alice/t9 (no %s/users/alice/threads/t9)\n",
		     V.home));
	ck_assert_int_eq(st, 1);
	SAME(errors(&st, "watch --user bob --thread watch --once"),
	     fmt_cmd("sbx: watch: unknown user bob (no %s/users/bob)\n", V.home));
	ck_assert_int_eq(st, 1);
	static const char *const bad[] = { "x", "-1", "", "1x", " 1", "+1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		SAME(errors(&st, fmt_cmd("watch --user alice --thread watch --since '%s'", bad[i])),
		     fmt_cmd("sbx: watch: --since takes a cursor (a number from 0, as sbx watch"
			     " prints them), not '%s'\nTry 'sbx watch --help'.\n",
			     bad[i]));
		ck_assert_int_eq(st, 2);
	}
	SAME(errors(&st, "watch --user alice --thread watch --format yaml"),
	     "sbx: watch: --format takes text or json, not 'yaml'\nTry 'sbx watch --help'.\n");
	ck_assert_int_eq(st, 2);
	SAME(errors(&st, "watch --thread watch"),
	     "sbx: watch: --user and --thread are required\nTry 'sbx watch --help'.\n");
	ck_assert_int_eq(st, 2);
	SAME(errors(&st, "watch --user alice --thread watch --diff"),
	     "sbx: watch: unrecognized option '--diff'\nTry 'sbx watch --help'.\n");
	ck_assert_int_eq(st, 2);
	/* --since beyond the end is a place to wait at, not an error. */
	EQ_OUT("", "'%s' --home '%s' watch --user alice --thread watch --since 999999 --once",
	       test_bin("sbx"), V.home);
}
END_TEST

/* ---- the broker's watch op ---------------------------------------------- */

static const char *H;
static const char *MNT; /* the view the broker mounted for alice/t1 */

static void broker_setup(void)
{
	tool_env();
	H = broker_start("whome", NULL);
	char *r = OUT("python3 tests/tools/bclient.py '%s' '{\"op\":\"acquire\",\"user\":\"alice\","
		      "\"thread\":\"t1\",\"owner\":\"lead\"}'",
		      H);
	MNT = str(parse(r), "mount");
	prctl(PR_SET_NAME, ACTOR);
}

static void broker_teardown(void)
{
	broker_stop(H);
}

struct conn {
	struct lines in;
};

static void conn_open(struct conn *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/run/broker.sock", H);
	c->in.len = 0;
	c->in.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(c->in.fd, 0);
	ck_assert_msg(connect(c->in.fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect: %s",
		      strerror(errno));
}

static void conn_send(struct conn *c, const char *line)
{
	char *l = fmt_cmd("%s\n", line);

	ck_assert_int_eq(send(c->in.fd, l, strlen(l), MSG_NOSIGNAL), (ssize_t)strlen(l));
	free(l);
}

static json_t *conn_reply(struct conn *c)
{
	return parse(next_line(&c->in, LINE_MS));
}

/* The next event of C's watch (id "w"), as event_of() shows it. */
static char *conn_event(struct conn *c, long long *last)
{
	char *line = next_line(&c->in, LINE_MS);
	json_t *o = parse(line);

	ck_assert_str_eq(str(o, "type"), "event");
	ck_assert_str_eq(str(o, "id"), "w");
	return event_of(line, last);
}

static char *mws(const char *name)
{
	return fmt_cmd("%s/user-data/workspace/%s", MNT, name);
}

/* Long names make the events big. */
#define LONG                                                                        \
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"

#define WATCH_REQ "{\"op\":\"watch\",\"user\":\"alice\",\"thread\":\"t1\",\"id\":\"w\""

/* Events as they are made; another request ends the watch (its final
 * reply has the cursor, then the request is answered); since resumes. */
START_TEST(test_watch_op_streams_events)
{
	struct conn c;
	long long last;

	conn_open(&c);
	conn_send(&c, WATCH_REQ "}");
	json_t *start = conn_reply(&c);
	ck_assert_str_eq(str(start, "type"), "watching");
	ck_assert_str_eq(str(start, "id"), "w");
	long long from = num(start, "cursor");
	last = from;
	make_file(mws("f"), "x\n");
	SAME(conn_event(&c, &last), "create " WS "f (self, " ACTOR ")");
	ck_assert_int_eq(rename(mws("f"), mws("g")), 0);
	SAME(conn_event(&c, &last), "rename " WS "f -> " WS "g (self, " ACTOR ")");

	conn_send(&c, "{\"op\":\"ping\"}");
	json_t *end = conn_reply(&c);
	ck_assert_msg(json_is_true(json_object_get(end, "ok")) && num(end, "cursor") == last &&
			      !json_object_get(end, "stopped") && !strcmp(str(end, "id"), "w"),
		      "%s", json_dumps(end, JSON_COMPACT));
	ck_assert_str_eq(str(conn_reply(&c), "version"), SBX_VERSION);
	/* Again from where the first began: the same two. */
	conn_send(&c, fmt_cmd(WATCH_REQ ",\"since\":%lld}", from));
	ck_assert_int_eq(num(conn_reply(&c), "cursor"), from);
	last = from;
	SAME(conn_event(&c, &last), "create " WS "f (self, " ACTOR ")");
	SAME(conn_event(&c, &last), "rename " WS "f -> " WS "g (self, " ACTOR ")");
	close(c.in.fd);

	/* The errors. */
	SAME(OUT("python3 tests/tools/bclient.py '%s' '{\"op\":\"watch\",\"user\":\"alice\","
		 "\"thread\":\"t9\"}' '{\"op\":\"watch\",\"user\":\"bob\",\"thread\":\"t1\"}'"
		 " '" WATCH_REQ ",\"since\":-1}' '" WATCH_REQ ",\"since\":\"1\"}'"
		 " '{\"op\":\"watch\",\"user\":\"alice\"}'",
		 H),
	     fmt_cmd("{\"error\": {\"code\": \"no_such_thread\", \"message\": \"unknown thread"
		     " alice/t9 (no %s/users/alice/threads/t9)\"}, \"ok\": false}\n"
		     "{\"error\": {\"code\": \"no_such_thread\", \"message\": \"unknown user bob"
		     " (no %s/users/bob)\"}, \"ok\": false}\n"
		     "{\"error\": {\"code\": \"bad_request\", \"message\": \"'since' must be a"
		     " cursor (an integer from 0, as events carry them)\"}, \"id\": \"w\","
		     " \"ok\": false}\n"
		     "{\"error\": {\"code\": \"bad_request\", \"message\": \"'since' must be a"
		     " cursor (an integer from 0, as events carry them)\"}, \"id\": \"w\","
		     " \"ok\": false}\n"
		     "{\"error\": {\"code\": \"bad_request\", \"message\": \"'thread' must be a"
		     " string without NUL (missing)\"}, \"ok\": false}\n",
		     H, H));
}
END_TEST

/* A client that stops reading holds up nothing, and loses nothing: its
 * watch waits (the journal keeps the events) while another connection's
 * command runs; when it reads again, every event is there, once, in
 * order. A half-closed client still gets its events. */
START_TEST(test_watch_op_a_client_that_stops_reading)
{
	enum { N = 5000 };
	struct conn c, h;
	int st;

	conn_open(&c);
	conn_send(&c, WATCH_REQ ",\"since\":0}");
	conn_open(&h);
	conn_send(&h, WATCH_REQ ",\"since\":0}");
	shutdown(h.in.fd, SHUT_WR);
	/* About 450 bytes an event, 2 MiB in all: more than the socket and
	 * the outbox hold (events of exec would be dropped). */
	for (int i = 1; i <= N; i++)
		make_file(mws(fmt_cmd("f%d-" LONG, i)), "");
	char *out = capture(fmt_cmd("'%s' exec --home '%s' --user alice --thread t1 -- 'echo fine'"
				    " 2>&1",
				    test_bin("sbx"), H),
			    &st);
	SAME(out, "fine\n");
	ck_assert_int_eq(st, 0);
	SAME(OUT("python3 tests/tools/bclient.py '%s' '{\"op\":\"ping\"}' | cut -c1-11", H),
	     "{\"ok\": true\n");
	for (struct conn *k = &c; k; k = k == &c ? &h : NULL) {
		long long last = 0;
		ck_assert_str_eq(str(conn_reply(k), "type"), "watching");
		for (int i = 1; i <= N; i++)
			SAME(conn_event(k, &last),
			     fmt_cmd("create " WS "f%d-" LONG " (self, " ACTOR ")", i));
	}
	close(c.in.fd);
	close(h.in.fd);
}
END_TEST

/* A shutdown ends a watch with a final reply: the cursor to resume
 * from, and "stopped". */
START_TEST(test_watch_op_ends_at_shutdown)
{
	struct conn c;
	long long last;

	conn_open(&c);
	conn_send(&c, WATCH_REQ "}");
	last = num(conn_reply(&c), "cursor");
	make_file(mws("s"), "x\n");
	SAME(conn_event(&c, &last), "create " WS "s (self, " ACTOR ")");
	OK("'%s' broker --home '%s' --shutdown", test_bin("sbx"), H);
	json_t *end = conn_reply(&c);
	ck_assert_msg(json_is_true(json_object_get(end, "ok")) && num(end, "cursor") == last &&
			      json_is_true(json_object_get(end, "stopped")),
		      "%s", json_dumps(end, JSON_COMPACT));
	ck_assert_ptr_null(next_line(&c.in, LINE_MS)); /* EOF */
	close(c.in.fd);
}
END_TEST

Suite *suite_view_watch(void)
{
	Suite *s = suite_create("view_watch");
	TCase *tf = tcase_create("follow");
	TCase *tc = tcase_create("watch");
	TCase *tb = tcase_create("broker");

	tcase_add_checked_fixture(tf, follow_setup, NULL);
	tcase_add_test(tf, test_follow_store_rows_after_an_id);
	tcase_add_test(tf, test_follow_gives_out_changes_only);
	tcase_add_test(tf, test_follow_wakes_on_a_commit);
	suite_add_tcase(s, tf);
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_watch_streams_each_change_as_it_happens);
	tcase_add_test(tc, test_watch_resumes_after_a_cursor_across_a_remount);
	tcase_add_test(tc, test_watch_ends_cleanly);
	tcase_add_test(tc, test_watch_errors);
	suite_add_tcase(s, tc);
	tcase_set_timeout(tb, 90);
	tcase_add_checked_fixture(tb, broker_setup, broker_teardown);
	tcase_add_test(tb, test_watch_op_streams_events);
	tcase_add_test(tb, test_watch_op_a_client_that_stops_reading);
	tcase_add_test(tb, test_watch_op_ends_at_shutdown);
	suite_add_tcase(s, tb);
	return s;
}
