/* sbx and sbxfs as a person meets them first: every command's help names
 * it and agrees with the summary, a bad option is a usage error in the
 * program's short name, sbx umount takes down views and nothing else, a
 * read of a home, user or thread that does not exist says so, and the
 * broker says where it serves. */
#include "store/store.h"
#include "tests/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

static struct tview V;

static void setup(void)
{
	ck_assert_int_eq(tview_mount(&V, NULL, "alice", "cli", NULL), 0);
}

static void teardown(void)
{
	tview_umount(&V);
}

/* Runs CMD (consumed); returns its standard error, its status in *ST. */
static char *errors_of(char *cmd, int *st)
{
	char *err = capture(fmt_cmd("%s 2>&1 >/dev/null", cmd), st);

	free(cmd);
	return err;
}

static bool mounted(const char *dir)
{
	return sh("grep -q ' %s ' /proc/self/mounts", dir) == 0;
}

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* ERR is one line that begins with PREFIX and holds WHAT. */
#define ONE_LINE(err, prefix, what)                                               \
	ck_assert_msg(lines(err) == 1 && !strncmp(err, prefix, strlen(prefix)) && \
			      strstr(err, what),                                  \
		      "want one line '%s...%s...', got:\n%s", prefix, what, err)

START_TEST(test_cli_umount_refuses_what_is_not_a_view)
{
	const char *sbx = strdup(test_bin("sbx")), *plain = test_dir("plain");
	char *fs = strdup(test_dir("tmpfs")), *err;
	int st;

	/* As root, umount2 would take a tmpfs down without a word. */
	if (geteuid() == 0) {
		ck_assert_int_eq(mount("tmpfs", fs, "tmpfs", 0, "size=1m"), 0);
		int w = write_file(fmt_cmd("%s/kept", fs), "data");
		err = errors_of(fmt_cmd("'%s' umount '%s'", sbx, fs), &st);
		bool still = mounted(fs) && exists(fmt_cmd("%s/kept", fs));
		umount2(fs, MNT_DETACH); /* before any assertion can fail */
		ck_assert_int_eq(w, 0);
		ck_assert_int_eq(st, 1);
		ONE_LINE(err, "sbx: umount: ", "is a tmpfs mount, not an sbxfs view: left mounted");
		ck_assert(still);
	}
	err = errors_of(fmt_cmd("'%s' umount /proc", sbx), &st);
	ck_assert_int_eq(st, 1);
	ONE_LINE(err, "sbx: umount: /proc ", "is a proc mount, not an sbxfs view");
	ck_assert(mounted("/proc") && exists("/proc/self/status"));

	err = errors_of(fmt_cmd("'%s' umount '%s'", sbx, plain), &st);
	ck_assert_int_eq(st, 1);
	ONE_LINE(err, "sbx: umount: ", "not a mount point");
	err = errors_of(fmt_cmd("'%s' umount '%s/missing'", sbx, plain), &st);
	ck_assert_int_eq(st, 1);
	ONE_LINE(err, "sbx: umount: ", "No such file or directory");
}
END_TEST

/* The mount tables spell a path one way; a view given another way (from
 * its directory, with a trailing slash) is still found. */
START_TEST(test_cli_umount_unmounts_a_view_given_by_any_path)
{
	char *dir = strdup(V.mnt), *base = strrchr(dir, '/');

	*base++ = '\0';
	OK("cd '%s' && '%s' umount '%s/'", dir, test_bin("sbx"), base);
	ck_assert(!mounted(V.mnt));
	V.mounted = false;
}
END_TEST

START_TEST(test_cli_reads_of_unknown_threads_say_so)
{
	const char *sbx = strdup(test_bin("sbx"));
	char *err;
	int st;

	err = errors_of(fmt_cmd("'%s' audit --home '%s/none' --user alice --thread cli", sbx,
				V.home),
			&st);
	ck_assert_int_eq(st, 1);
	ONE_LINE(err, "sbx: audit: ", "unknown home");
	err = errors_of(fmt_cmd("'%s' audit --home '%s' --user bob --thread cli", sbx, V.home),
			&st);
	ck_assert_int_eq(st, 1);
	ONE_LINE(err, "sbx: audit: ", "unknown user bob");
	err = errors_of(fmt_cmd("'%s' audit --home '%s' --user alice --thread nope --format json",
				sbx, V.home),
			&st);
	ck_assert_int_eq(st, 1);
	ONE_LINE(err, "sbx: audit: ", "unknown thread alice/nope");
	EQ_OUT("",
	       "'%s' audit --home '%s' --user alice --thread nope --format json 2>/dev/null"
	       " || true",
	       sbx, V.home);

	/* A thread that is there and had nothing refused: as it always was. */
	EQ_OUT("", "'%s' audit --home '%s' --user alice --thread cli 2>&1", sbx, V.home);
	EQ_OUT("[]\n", "'%s' audit --home '%s' --user alice --thread cli --format json 2>&1", sbx,
	       V.home);

	/* The commands that scan a thread say it the same way. */
	err = errors_of(fmt_cmd("'%s' snapshot --home '%s' --user alice --thread nope", sbx,
				V.home),
			&st);
	ck_assert_int_eq(st, 1);
	ONE_LINE(err, "sbx: snapshot: ", "unknown thread alice/nope");
	err = errors_of(fmt_cmd("'%s' run begin --home '%s/none' --user alice --thread cli", sbx,
				V.home),
			&st);
	ck_assert_int_eq(st, 1);
	ONE_LINE(err, "sbx: run begin: ", "unknown home");
	ck_assert(!exists(fmt_cmd("%s/none", V.home)));
}
END_TEST

/* The values of the first "--format A|B" after WHERE in TEXT and before
 * STOP, as a heap string ("" if none). */
static char *formats(const char *text, const char *where, const char *stop)
{
	const char *from = strstr(text, where);
	const char *end = from ? strstr(from, stop) : NULL;
	const char *f = from ? strstr(from, "--format ") : NULL;

	if (!f || (end && f > end))
		return strdup("");
	f += strlen("--format ");
	return strndup(f, strspn(f, "abcdefghijklmnopqrstuvwxyz|"));
}

START_TEST(test_cli_every_command_has_help_and_short_named_errors)
{
	static const char *const commands[] = {
		"mount",   "umount",  "audit",	 "snapshot", "run",   "run begin", "run end",
		"changes", "present", "receipt", "broker",   "exec",  "doctor",	   "id",
		"watch",   "runs",    "restore", "log",	     "store",
	};
	const char *sbx = strdup(test_bin("sbx"));
	char *summary = OUT("'%s' --help", sbx), *err;
	int st;

	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		const char *c = commands[i];
		char *help = OUT("'%s' %s --help", sbx, c);
		char *usage = fmt_cmd("sbx %s ", c);

		/* Usage: sbx run begin ..., then: sbx run end ... */
		const char *named = strstr(help, usage);

		ck_assert_msg(!strncmp(help, "Usage: sbx ", 11) && named &&
				      named < strstr(help, "\n\n"),
			      "sbx %s --help:\n%.600s", c, help);
		EQ_OUT(help, "'%s' help %s", sbx, c);
		/* --home before or after the command, as sbx --help says. */
		EQ_OUT(help, "'%s' %s --home /nonexistent --help", sbx, c);
		err = errors_of(fmt_cmd("'%s' %s --bogus", sbx, c), &st);
		ck_assert_int_eq(st, 2);
		SAME(err, fmt_cmd("sbx: %s: unrecognized option '--bogus'\n"
				  "Try 'sbx %s --help'.\n",
				  c, c));
	}
	EQ_OUT(summary, "'%s' help", sbx);
	err = errors_of(fmt_cmd("'%s' help frobnicate", sbx), &st);
	ck_assert_int_eq(st, 2);
	SAME(err, "sbx: help: unknown command 'frobnicate'\nTry 'sbx help --help'.\n");

	/* The summary lists the --format values each command's usage does. */
	static const char *const with_format[][2] = {
		{ "  audit ", "Usage: sbx audit " },	 { "  snapshot ", "Usage: sbx snapshot " },
		{ "  run end ", "sbx run end " },	 { "  changes ", "Usage: sbx changes " },
		{ "  receipt ", "Usage: sbx receipt " }, { "  doctor ", "Usage: sbx doctor " },
		{ "  watch ", "Usage: sbx watch " },
	};
	for (size_t i = 0; i < sizeof(with_format) / sizeof(with_format[0]); i++) {
		char *cmd = strndup(with_format[i][0] + 2, strlen(with_format[i][0]) - 3);
		char *in_summary = formats(summary, with_format[i][0], "\n");
		char *in_help = formats(OUT("'%s' %s --help", sbx, cmd), with_format[i][1], "\n\n");

		ck_assert_msg(*in_summary && !strcmp(in_summary, in_help),
			      "sbx %s: --format %s in sbx --help, %s in its own", cmd, in_summary,
			      in_help);
	}
	SAME(formats(summary, "  run end ", "\n"), "text|json|html");

	/* sbxfs, alone and as sbx mount. */
	char *help = OUT("'%s' --help", test_bin("sbxfs"));
	ck_assert_msg(!strncmp(help, "Usage: sbxfs ", 13), "%.300s", help);
	err = errors_of(fmt_cmd("'%s' --bogus", test_bin("sbxfs")), &st);
	ck_assert_int_eq(st, 2);
	SAME(err, "sbxfs: unrecognized option '--bogus'\nTry 'sbxfs --help'.\n");
	err = errors_of(fmt_cmd("'%s' mount --user u --thread t", sbx), &st);
	ck_assert_int_eq(st, 2);
	SAME(err, "sbx: mount: MOUNTPOINT is missing\nTry 'sbx mount --help'.\n");
}
END_TEST

/* sbx store check|migrate: where the records are, the schema against
 * this sbx's, brought forward; a store that cannot be used is said, its
 * password hidden. */
START_TEST(test_cli_store_check_and_migrate)
{
	const char *home = test_dir("store"), *sbx = strdup(test_bin("sbx"));
	int st;

	SAME(OUT("'%s' store check --home '%s'", sbx, home),
	     fmt_cmd("store: sqlite %s/sbx.db\nschema: version 0; this sbx: %d\n"
		     "empty: made at the first use (or sbx store migrate)\n",
		     home, STORE_SCHEMA_VERSION));
	SAME(OUT("'%s' store migrate --home '%s'", sbx, home),
	     fmt_cmd("store: sqlite %s/sbx.db\nschema: version 0; this sbx: %d\n"
		     "migrated: version 0 to %d\n",
		     home, STORE_SCHEMA_VERSION, STORE_SCHEMA_VERSION));
	ck_assert_msg(strstr(OUT("'%s' --home '%s' store migrate", sbx, home), "nothing to do\n"),
		      "migrated twice");
	OK("sqlite3 '%s/sbx.db' 'PRAGMA user_version = 99'", home);
	char *err = errors_of(fmt_cmd("'%s' store check --home '%s'", sbx, home), &st);
	ck_assert_int_eq(st, 1);
	SAME(err, "sbx: store: a newer sbx wrote it: this one refuses it\n");
	OK("echo 'store = mysql://x' > '%s/sbx.conf'", home);
	err = errors_of(fmt_cmd("'%s' store check --home '%s'", sbx, home), &st);
	ck_assert_int_eq(st, 1);
	SAME(err, fmt_cmd("sbx: store: store in %s/sbx.conf: expected sqlite, a postgresql:// URL"
			  " or a libpq keyword string\n",
			  home));
	err = errors_of(fmt_cmd("'%s' store check --home '%s'"
				" --store 'postgresql://me:s3cret@/sbx?host=/nonexistent'",
				sbx, home),
			&st);
	ck_assert_int_eq(st, 1);
	ck_assert_msg(strstr(err, "sbx: store: postgresql://me:***@/sbx?host=/nonexistent:"
				  " cannot connect to PostgreSQL: ") &&
			      !strstr(err, "s3cret"),
		      "%s", err);
	err = errors_of(fmt_cmd("'%s' --store bogus store check --home '%s'", sbx, home), &st);
	ck_assert_int_eq(st, 2);
	SAME(err, "sbx: --store takes sqlite, a postgresql:// URL or a libpq keyword string\n"
		  "Try 'sbx --help'.\n");
}
END_TEST

/* A home whose sbx.db is empty (0 bytes: a store that lost its content)
 * or another program's database: every command refuses it, naming the
 * file and what to do, and leaves it as it was; none makes a new store
 * in its place. */
START_TEST(test_cli_an_empty_or_foreign_store_file_is_refused)
{
	const char *home = test_dir("empty"), *sbx = strdup(test_bin("sbx"));
	char *mnt = strdup(test_dir("emptymnt")), *err;
	int st;

	OK(": > '%s/sbx.db'", home);
	static const char *const commands[] = { "store check", "store migrate", "mount" };
	for (size_t i = 0; i < sizeof(commands) / sizeof(*commands); i++) {
		err = errors_of(fmt_cmd("'%s' %s --home '%s' %s", sbx, commands[i], home,
					strcmp(commands[i], "mount")
						? ""
						: fmt_cmd("--user alice --thread t '%s'", mnt)),
				&st);
		ck_assert_msg(st == 1 &&
				      strstr(err, fmt_cmd("%s/sbx.db is empty (0 bytes)", home)) &&
				      strstr(err, "sbx store backup"),
			      "%s: exit %d: %s", commands[i], st, err);
	}
	ck_assert(!mounted(mnt));
	OK("test -f '%s/sbx.db' && ! test -s '%s/sbx.db'", home, home);

	OK("rm '%s/sbx.db' && sqlite3 '%s/sbx.db' 'CREATE TABLE notes (x)'", home, home);
	err = errors_of(fmt_cmd("'%s' store migrate --home '%s'", sbx, home), &st);
	ck_assert_msg(st == 1 && strstr(err, "is not an sbx store"), "exit %d: %s", st, err);
	EQ_OUT("notes\n", "sqlite3 '%s/sbx.db' .tables", home);
}
END_TEST

/* The same of a PostgreSQL database that holds another program's tables
 * and no sbx schema: refused by every command, naming the database and
 * its tables, which stay as they were (it was taken for an empty store
 * and sbx's tables made beside them). */
START_TEST(test_cli_a_foreign_postgresql_database_is_refused)
{
	const char *home = test_dir("pgforeign"), *sbx = strdup(test_bin("sbx"));
	char *mnt = strdup(test_dir("pgforeignmnt")), *err;
	int st;

	pg_server_up();
	char *db = strdup(pg_database());
	OK("psql -q -X '%s' -c 'CREATE TABLE notes (x int)'", db);
	static const char *const commands[] = { "store check", "store migrate", "mount" };
	for (size_t i = 0; i < sizeof(commands) / sizeof(*commands); i++) {
		err = errors_of(fmt_cmd("'%s' %s --home '%s' --store '%s' %s", sbx, commands[i],
					home, db,
					strcmp(commands[i], "mount")
						? ""
						: fmt_cmd("--user alice --thread t '%s'", mnt)),
				&st);
		ck_assert_msg(st == 1 &&
				      strstr(err, fmt_cmd("the PostgreSQL database \"%s\" is not an"
							  " sbx store",
							  strstr(db, "dbname=") + 7)) &&
				      strstr(err, "1 table or view (notes)"),
			      "%s: exit %d: %s", commands[i], st, err);
	}
	ck_assert(!mounted(mnt));
	EQ_OUT("notes\n",
	       "psql -q -X -A -t '%s' -c \"SELECT tablename FROM pg_tables WHERE schemaname ="
	       " 'public'\"",
	       db);
	pg_server_down();
}
END_TEST

/* A home with real rows, one page of its store damaged (a bad sector
 * under the journal's rows): sbx store check, which said OK, names the
 * damage and how to recover, and exits 1. */
START_TEST(test_cli_store_check_finds_a_damaged_page)
{
	const char *sbx = test_bin("sbx");
	int st;

	OK("echo a > '%s' && mkdir '%s' && mv '%s' '%s'", ws_of(&V, "a"), ws_of(&V, "d"),
	   ws_of(&V, "a"), ws_of(&V, "d/b"));
	tview_sync(&V);
	tview_umount(&V);
	char *out = OUT("'%s' store check --home '%s'", sbx, V.home);
	ck_assert_msg(strstr(out,
			     "\nintegrity: ok (SQLite's integrity_check and foreign_key_check"),
		      "%s", out);
	OK("python3 tests/tools/corruptpage.py '%s/sbx.db' journal >/dev/null", V.home);
	char *err = errors_of(fmt_cmd("'%s' store check --home '%s'", sbx, V.home), &st);
	ck_assert_int_eq(st, 1);
	ck_assert_msg(!strncmp(err, "sbx: store: damaged: Page ", 26) &&
			      strstr(err, "problems found (SQLite's integrity_check") &&
			      strstr(err, fmt_cmd("sqlite3 %s/sbx.db .recover", V.home)) &&
			      strstr(err, "sbx store backup"),
		      "%s", err);
}
END_TEST

/* sbx store backup while a view writes: the copy is a sound store with
 * the rows of one moment, which a home opens; an existing file is not
 * replaced without --force. A PostgreSQL store: the pg_dump command,
 * without its password. */
START_TEST(test_cli_store_backup_while_a_view_writes)
{
	const char *sbx = strdup(test_bin("sbx")), *copy = strdup(test_dir("copy")),
		   *other = test_dir("copied");
	int st;

	/* The first 50 files' rows are in the store before the backup (the
	 * view's journal is written behind its requests: a sync point). */
	OK("for i in $(seq 50); do echo $i > '%s/f'$i; done", ws_of(&V, "."));
	tview_sync(&V);
	OK("for i in $(seq 51 300); do echo $i > '%s/f'$i; done & "
	   "while [ ! -e '%s/f100' ]; do :; done; '%s' store backup '%s/sbx.db' --home '%s' && wait",
	   ws_of(&V, "."), ws_of(&V, "."), sbx, copy, V.home);
	tview_sync(&V);
	char *n =
		OUT("sqlite3 '%s/sbx.db' \"PRAGMA integrity_check; SELECT count(*) FROM journal\"",
		    copy);
	int rows = atoi(strchr(n, '\n') + 1);
	ck_assert_msg(!strncmp(n, "ok\n", 3) && rows >= 50,
		      "the copy: %s (%d rows; 50 files were in the store before it)", n, rows);
	OK("cp '%s/sbx.db' '%s/sbx.db'", copy, other);
	ck_assert_msg(strstr(OUT("'%s' store check --home '%s'", sbx, other), "\nintegrity: ok ("),
		      "the copy does not open as a store");
	char *err =
		errors_of(fmt_cmd("'%s' store backup '%s/sbx.db' --home '%s'", sbx, copy, V.home),
			  &st);
	ck_assert_int_eq(st, 1);
	SAME(err,
	     fmt_cmd("sbx: store: %s/sbx.db exists: not replaced (--force replaces it)\n", copy));
	OK("'%s' store backup --force '%s/sbx.db' --home '%s' >/dev/null", sbx, copy, V.home);
	EQ_OUT("300\n", "sqlite3 '%s/sbx.db' \"SELECT count(*) FROM journal WHERE op = 'create'\"",
	       copy);
	EQ_OUT("sbx.db\n", "ls -A '%s'", copy);
	err = errors_of(fmt_cmd("'%s' store backup x.dump --home '%s'"
				" --store 'postgresql://me:s3cret@/sbx?host=/run/pg'",
				sbx, V.home),
			&st);
	ck_assert_int_eq(st, 1);
	SAME(err,
	     "sbx: store: a PostgreSQL store is copied by pg_dump (consistent while views write;"
	     " the password from ~/.pgpass or PGPASSWORD):\n"
	     "pg_dump --format=custom --file='x.dump' 'postgresql://me@/sbx?host=/run/pg'\n");
}
END_TEST

/* The commands and subcommands sbx --help lists (its lines that begin
 * with two spaces and a command, "|" between alternatives): each as
 * "COMMAND" or "COMMAND SUBCOMMAND" in OUT, at most MAX. */
static size_t listed_commands(const char *summary, char out[][64], size_t max)
{
	const char *p = strstr(summary, "Commands:\n"), *end = p ? strstr(p, "\n\n") : NULL;
	size_t n = 0;

	ck_assert_msg(p && end, "%s", summary);
	for (p = strchr(p, '\n') + 1; p < end; p = strchr(p, '\n') + 1) {
		if (strncmp(p, "  ", 2) || p[2] < 'a' || p[2] > 'z')
			continue;
		/* The usage, before the description (two spaces). */
		char *usage = strndup(p + 2, strcspn(p + 2, "\n")), *cut = strstr(usage, "  ");
		if (cut)
			*cut = '\0';
		for (char *part = usage, *next; part; part = next) {
			next = strstr(part, " | ");
			while (next && (next[3] < 'a' || next[3] > 'z'))
				next = strstr(next + 3, " | ");
			if (next) {
				*next = '\0';
				next += 3;
			}
			char cmd[32] = "", sub[64] = "";
			sscanf(part, "%31s %63s", cmd, sub);
			if (!*sub || strspn(sub, "abcdefghijklmnopqrstuvwxyz|") != strlen(sub)) {
				ck_assert(n < max);
				snprintf(out[n++], 64, "%s", cmd);
				continue;
			}
			for (char *w = strtok(sub, "|"); w; w = strtok(NULL, "|")) {
				ck_assert(n < max);
				snprintf(out[n++], 64, "%s %s", cmd, w);
			}
		}
		free(usage);
	}
	return n;
}

/* sbx help COMMAND [SUBCOMMAND] prints what sbx COMMAND [SUBCOMMAND]
 * --help does, for everything sbx --help lists. */
START_TEST(test_cli_help_of_every_listed_command_and_subcommand)
{
	const char *sbx = strdup(test_bin("sbx"));
	char listed[64][64], *err;
	size_t n = listed_commands(OUT("'%s' --help", sbx), listed, 64), subs = 0;
	int st;

	for (size_t i = 0; i < n; i++) {
		char *help = OUT("'%s' %s --help", sbx, listed[i]);
		ck_assert_msg(!strncmp(help, "Usage: sbx ", 11), "sbx %s --help:\n%.300s",
			      listed[i], help);
		EQ_OUT(help, "'%s' help %s", sbx, listed[i]);
		subs += strchr(listed[i], ' ') != NULL;
	}
	/* run begin|end|undo|keep, store check|migrate|backup, id user|check,
	 * try list|status|diff|apply|discard|hook. */
	ck_assert_msg(subs == 15, "%zu subcommands found in sbx --help", subs);
	/* A subcommand is its command's to judge, as without help. */
	err = errors_of(fmt_cmd("'%s' help run frob", sbx), &st);
	ck_assert_int_eq(st, 2);
	SAME(err, "sbx: run: expected begin, end, undo or keep\nTry 'sbx run --help'.\n");
	/* sbx id user --help is help, not the id made of "--help". */
	ck_assert(strstr(OUT("'%s' id user --help", sbx), "Usage: sbx id user"));
	EQ_OUT("--help\n", "'%s' id user -- --help", sbx);
}
END_TEST

/* The id rules the helps state are those common/ids.c applies: a user
 * 1 to 255 of [A-Za-z0-9_-], a thread 1 to 64 of them. */
START_TEST(test_cli_helps_state_the_id_rules_that_apply)
{
	const char *sbx = strdup(test_bin("sbx")), *sbxfs = strdup(test_bin("sbxfs")),
		   *home = strdup(test_dir("idhome"));
	char u[257], t[66];

	memset(u, 'u', 256);
	u[256] = '\0';
	memset(t, 't', 65);
	t[65] = '\0';
	/* sbxfs refuses 256 and 65 characters and '.' (usage errors, 2), and
	 * takes 255 and 64 (then fails on the missing mount point, 1). */
	ck_assert_int_eq(STATUS("'%s' --home '%s' --user %s --thread t /nonexistent 2>/dev/null",
				sbxfs, home, u),
			 2);
	ck_assert_int_eq(STATUS("'%s' --home '%s' --user u --thread %s /nonexistent 2>/dev/null",
				sbxfs, home, t),
			 2);
	ck_assert_int_eq(STATUS("'%s' --home '%s' --user u.v --thread t /nonexistent 2>/dev/null",
				sbxfs, home),
			 2);
	u[255] = t[64] = '\0';
	ck_assert_int_eq(STATUS("'%s' --home '%s' --user %s --thread %s /nonexistent 2>/dev/null",
				sbxfs, home, u, t),
			 1);
	char *helps[] = { fmt_cmd("'%s' --help", sbxfs), fmt_cmd("'%s' mount --help", sbx) };
	for (size_t i = 0; i < 2; i++) {
		char *help = OUT("%s", helps[i]);
		ck_assert_msg(strstr(help,
				     "--user ID                 user id (required): 1 to 255 of"
				     " [A-Za-z0-9_-]\n") &&
				      strstr(help,
					     "--thread ID               thread id (required): 1 to"
					     " 64 of [A-Za-z0-9_-]\n"),
			      "%.1600s", help);
	}
	char *id = OUT("'%s' id --help", sbx);
	ck_assert_msg(strstr(id, "user id (1 to 255 of [A-Za-z0-9_-])") &&
			      strstr(id, "thread id (1 to 64 of [A-Za-z0-9_-])"),
		      "%s", id);
}
END_TEST

/* --status and --shutdown are requests to a running broker, the other
 * options start one: given together they are a usage error naming both,
 * and the broker is not asked anything. */
START_TEST(test_cli_broker_refuses_options_that_exclude_each_other)
{
	const char *sbx = strdup(test_bin("sbx")), *home = strdup(broker_start("bconflict", NULL));
	static const char *const given[][2] = {
		{ "--status --shutdown", "--status and --shutdown exclude each other" },
		{ "--shutdown --status", "--shutdown and --status exclude each other" },
		{ "--shutdown -f", "--shutdown and -f exclude each other (-f is for starting a"
				   " broker)" },
		{ "-d --status",
		  "--status and -d exclude each other (-d is for starting a broker)" },
		{ "--config /dev/null --shutdown", "--shutdown and --config exclude each other"
						   " (--config is for starting a broker)" },
	};
	int st;

	for (size_t i = 0; i < sizeof(given) / sizeof(*given); i++) {
		char *err = errors_of(fmt_cmd("'%s' broker --home '%s' %s", sbx, home, given[i][0]),
				      &st);
		int serves = STATUS("'%s' broker --home '%s' --status >/dev/null", sbx, home);
		ck_assert_msg(st == 2 && serves == 0,
			      "sbx broker %s: exit %d, then --status %d: %s", given[i][0], st,
			      serves, err);
		SAME(err, fmt_cmd("sbx: broker: %s\nTry 'sbx broker --help'.\n", given[i][1]));
	}
	broker_stop(home);
}
END_TEST

/* A mount point that something else is mounted on: the message says
 * what, and the advice works (sbx umount takes views down, nothing else). */
START_TEST(test_cli_mount_on_a_mount_point_says_what_unmounts_it)
{
	const char *sbx = strdup(test_bin("sbx")), *home = strdup(test_dir("mphome"));
	char *fs = strdup(test_dir("mptmpfs")), *err;
	int st;

	if (geteuid() == 0) {
		ck_assert_int_eq(mount("tmpfs", fs, "tmpfs", 0, "size=1m"), 0);
		err = errors_of(fmt_cmd("'%s' mount --home '%s' --user alice --thread t '%s'", sbx,
					home, fs),
				&st);
		umount2(fs, MNT_DETACH); /* before any assertion can fail */
		ck_assert_int_eq(st, 1);
		ONE_LINE(
			err, "sbx: mount: ",
			"is already a mount point, a tmpfs mount, not an sbxfs view: unmount it with"
			" umount(8), or choose another mount point");
		ck_assert_msg(!strstr(err, "sbx umount"), "%s", err);
	}
	/* A view there: sbx umount is what takes it down. */
	err = errors_of(fmt_cmd("'%s' mount --home '%s' --user alice --thread other '%s'", sbx,
				V.home, V.mnt),
			&st);
	ck_assert_int_eq(st, 1);
	ONE_LINE(err, "sbx: mount: ",
		 fmt_cmd("is already a mount point, a view: unmount it first (sbx umount %s)",
			 V.mnt));
}
END_TEST

/* Runs tests/tools/helptruth.py CHECK on the programs under test: it
 * must find no difference (those it found are the failure's message). */
static void helptruth(const char *check)
{
	const char *sbx = test_bin("sbx");
	char *dir = strndup(sbx, (size_t)(strrchr(sbx, '/') - sbx));
	int st;
	char *out = capture(fmt_cmd("python3 tests/tools/helptruth.py %s '%s' 2>&1", check, dir),
			    &st);

	ck_assert_msg(st == 0, "helptruth.py %s: exit %d\n%.3000s", check, st, out);
}

/* Each option a parser takes is in the command's --help, its man page and
 * configuration.md's table, and nothing else is (tests/tools/helptruth.py). */
START_TEST(test_cli_help_and_docs_name_the_options_the_parsers_take)
{
	helptruth("options");
}
END_TEST

/* The states sbx doctor prints are those sbx.1 and its --help list. */
START_TEST(test_cli_doctor_states_are_the_documented_ones)
{
	helptruth("doctor");
}
END_TEST

/* The ops sbx watch can print are those the docs list. */
START_TEST(test_cli_watch_ops_are_the_documented_ones)
{
	helptruth("watch");
}
END_TEST

START_TEST(test_cli_broker_says_where_it_serves)
{
	const char *home = test_dir("bhome");
	char *out = OUT("'%s' broker --home '%s'", test_bin("sbx"), home);
	char *pid = OUT("head -1 '%s/run/broker.lock'", home);

	broker_stop(home);
	SAME(out,
	     fmt_cmd("sbx: broker serving %s/run/broker.sock (pid %s)\n", home, strtok(pid, "\n")));
}
END_TEST

Suite *suite_cli(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("cli");

	tcase_add_checked_fixture(tc, setup, teardown);
	/* The help check runs a command for every option of every command:
	 * 38 s at load 7 on 2 CPUs (61 timed out on a loaded fresh machine). */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_cli_umount_refuses_what_is_not_a_view);
	tcase_add_test(tc, test_cli_umount_unmounts_a_view_given_by_any_path);
	tcase_add_test(tc, test_cli_reads_of_unknown_threads_say_so);
	tcase_add_test(tc, test_cli_every_command_has_help_and_short_named_errors);
	tcase_add_test(tc, test_cli_broker_says_where_it_serves);
	tcase_add_test(tc, test_cli_help_of_every_listed_command_and_subcommand);
	tcase_add_test(tc, test_cli_helps_state_the_id_rules_that_apply);
	tcase_add_test(tc, test_cli_broker_refuses_options_that_exclude_each_other);
	tcase_add_test(tc, test_cli_mount_on_a_mount_point_says_what_unmounts_it);
	tcase_add_test(tc, test_cli_help_and_docs_name_the_options_the_parsers_take);
	tcase_add_test(tc, test_cli_doctor_states_are_the_documented_ones);
	tcase_add_test(tc, test_cli_watch_ops_are_the_documented_ones);
	tcase_add_test(tc, test_cli_store_check_and_migrate);
	tcase_add_test(tc, test_cli_an_empty_or_foreign_store_file_is_refused);
	tcase_add_test(tc, test_cli_a_foreign_postgresql_database_is_refused);
	tcase_add_test(tc, test_cli_store_check_finds_a_damaged_page);
	tcase_add_test(tc, test_cli_store_backup_while_a_view_writes);
	suite_add_tcase(s, tc);
	return s;
}
