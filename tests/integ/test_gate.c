/* Read-before-write through a mounted view: what is refused (EACCES, file
 * unchanged, an audit row), what a thread's own work never trips over
 * (its own outputs, sed -i, builds, git), the four modes, --rbw-unlink,
 * marks across a restart, and racing handles. Host edits are made
 * directly in the backing directory, as a person would. */
#include "tests/cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static struct tview V;

#define WS "user-data/workspace"

static void mount_with(const char *const *extra)
{
	tool_env();
	ck_assert_int_eq(tview_mount(&V, NULL, "alice", "gate", extra), 0);
}

static void setup(void)
{
	mount_with(NULL);
}

static void setup_strict(void)
{
	const char *extra[] = { "--rbw", "strict", NULL };
	mount_with(extra);
}

static void setup_audit(void)
{
	const char *extra[] = { "--rbw", "audit", NULL };
	mount_with(extra);
}

static void setup_off(void)
{
	const char *extra[] = { "--rbw", "off", NULL };
	mount_with(extra);
}

static void setup_unlink(void)
{
	const char *extra[] = { "--rbw-unlink", NULL };
	mount_with(extra);
}

static void setup_writeback(void)
{
	const char *extra[] = { "--writeback=on", NULL };
	mount_with(extra);
}

static void setup_writeback_strict(void)
{
	const char *extra[] = { "--writeback=on", "--rbw", "strict", NULL };
	mount_with(extra);
}

static void setup_writeback_audit(void)
{
	const char *extra[] = { "--writeback=on", "--rbw", "audit", NULL };
	mount_with(extra);
}

static void setup_writeback_unwatched(void)
{
	const char *extra[] = { "--writeback=on", "--host-watch=off", NULL };
	mount_with(extra);
}

static void teardown(void)
{
	tview_umount(&V);
}

#define ws(...) ws_of(&V, __VA_ARGS__)
#define host(...) hws_of(&V, __VA_ARGS__)

/* Opens PATH with FLAGS and writes TEXT; returns 0 or the errno of the
 * first call that failed. */
static int try_write(const char *path, int flags, const char *text)
{
	int fd = open(path, flags, 0644), err = 0;

	if (fd < 0)
		return errno;
	if (write(fd, text, strlen(text)) < 0)
		err = errno;
	if (close(fd) < 0 && !err)
		err = errno;
	return err;
}

#define OVERWRITE (O_WRONLY | O_TRUNC)

/* Reads PATH through the view until it shows WANT (a host edit reaches
 * the view's caches within milliseconds; this waits out the watch). */
static void read_until(const char *path, const char *want)
{
	char *got = NULL;

	for (int i = 0; i < 200; i++) {
		free(got);
		got = read_file(path);
		if (got && !strcmp(got, want))
			return;
		usleep(10000);
	}
	ck_abort_msg("%s shows '%s', not '%s'", path, got ? got : "(null)", want);
}

/* The thread's audit log as text (the writer commits within ms). */
static char *audit_text(void)
{
	return OUT("'%s' audit --home '%s' --user alice --thread gate", test_bin("sbx"), V.home);
}

static void wait_audit(const char *needle)
{
	for (int i = 0; i < 200; i++) {
		char *text = audit_text();
		bool found = strstr(text, needle) != NULL;

		free(text);
		if (found)
			return;
		usleep(10000);
	}
	ck_abort_msg("no audit row with '%s':\n%s", needle, audit_text());
}

START_TEST(test_gate_overwrite_after_a_host_edit_is_refused_until_reread)
{
	ck_assert_int_eq(write_file(host("notes.txt"), "v1\n"), 0);
	read_until(ws("notes.txt"), "v1\n");
	ck_assert_int_eq(write_file(host("notes.txt"), "person's edit\n"), 0);

	ck_assert_int_eq(try_write(ws("notes.txt"), OVERWRITE, "agent\n"), EACCES);
	ck_assert_str_eq(read_file(host("notes.txt")), "person's edit\n");
	wait_audit("changed since it was read at ");

	read_until(ws("notes.txt"), "person's edit\n");
	ck_assert_int_eq(try_write(ws("notes.txt"), OVERWRITE, "agent\n"), 0);
	ck_assert_str_eq(read_file(host("notes.txt")), "agent\n");
}
END_TEST

START_TEST(test_gate_shell_overwrites_of_unread_files_are_refused)
{
	ck_assert_int_eq(write_file(host("existing"), "keep me\n"), 0);
	ck_assert_int_eq(write_file(host("src"), "source\n"), 0);

	ck_assert_int_ne(STATUS("echo x > '%s' 2>/dev/null", ws("existing")), 0);
	ck_assert_int_ne(STATUS("cp '%s' '%s' 2>/dev/null", ws("src"), ws("existing")), 0);
	ck_assert_int_ne(STATUS("echo x >> '%s' 2>/dev/null", ws("existing")), 0);
	ck_assert_int_ne(STATUS("truncate -s 0 '%s' 2>/dev/null", ws("existing")), 0);
	ck_assert_int_ne(STATUS("mv '%s' '%s' 2>/dev/null", ws("src"), ws("existing")), 0);
	ck_assert_str_eq(read_file(host("existing")), "keep me\n");
	ck_assert(exists(host("src")));

	/* Each refusal is audited with the operation, the virtual path, the
	 * caller and the reason; JSON carries the same fields. The shell's
	 * and cp's O_TRUNC opens are the same refusal: one row, counted. */
	wait_audit("rename onto /mnt/user-data/workspace/existing");
	char *text = audit_text();
	ck_assert_msg(strstr(text,
			     "refused  open with O_TRUNC /mnt/user-data/workspace/existing") &&
			      strstr(text, ", sh): never read  [2 times, last ") &&
			      strstr(text, "write /mnt/user-data/workspace/existing") &&
			      strstr(text, "truncate /mnt/user-data/workspace/existing"),
		      "audit:\n%s", text);
	EQ_OUT("4 refused never read /mnt/user-data/workspace/existing 2 1 False\n",
	       "'%s' audit --home '%s' --user alice --thread gate --format json |"
	       " python3 tests/tools/jsonq.py 'len(d), \"refused\" if not d[0][\"allowed\"] else \"?\","
	       " d[0][\"reason\"], d[0][\"path\"], d[0][\"count\"], d[1][\"count\"],"
	       " d[-1][\"allowed\"]'",
	       test_bin("sbx"), V.home);
}
END_TEST

/* A refusal repeated by a loop (a new process each time) is one audit
 * row that counts them, in text and JSON, not a row each. */
START_TEST(test_gate_repeated_refusals_are_one_audit_row_with_a_count)
{
	ck_assert_int_eq(write_file(host("log.txt"), "the host's\n"), 0);
	ck_assert_int_eq(
		STATUS("for i in $(seq 200); do /bin/echo x >> '%s'; done 2>/dev/null; exit 0",
		       ws("log.txt")),
		0);
	ck_assert_str_eq(read_file(host("log.txt")), "the host's\n");
	wait_audit("[200 times, last ");
	EQ_OUT("1\n", "'%s' audit --home '%s' --user alice --thread gate | wc -l", test_bin("sbx"),
	       V.home);
	EQ_OUT("1 200 write True\n",
	       "'%s' audit --home '%s' --user alice --thread gate --format json |"
	       " python3 tests/tools/jsonq.py 'len(d), d[0][\"count\"], d[0][\"op\"],"
	       " d[0][\"last_time\"] >= d[0][\"time\"]'",
	       test_bin("sbx"), V.home);
}
END_TEST

/* An agent looping with no run open grows the store by a bound, not by
 * each iteration: 30,000 create/delete pairs (60,000 changes) leave
 * fewer than 30,000 journal rows (what compaction never touches: the
 * last 10,000, those of the last second, at most 4,096 since it last
 * ran), and 5,000 refused appends one audit row. */
START_TEST(test_gate_loops_with_no_run_open_grow_the_store_by_a_bound)
{
	ck_assert_int_eq(write_file(host("unread.log"), "the host's\n"), 0);
	for (int i = 0; i < 30000; i++) {
		int fd = open(ws("tmp"), O_WRONLY | O_CREAT | O_EXCL, 0644);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(close(fd), 0);
		ck_assert_int_eq(unlink(ws("tmp")), 0);
	}
	for (int i = 0; i < 5000; i++)
		ck_assert_int_eq(try_write(ws("unread.log"), O_WRONLY | O_APPEND, "x"), EACCES);
	ck_assert_str_eq(read_file(host("unread.log")), "the host's\n");
	tview_sync(&V);
	EQ_OUT("1 5000\n",
	       "'%s' audit --home '%s' --user alice --thread gate --format json |"
	       " python3 tests/tools/jsonq.py 'len(d), d[0][\"count\"]'",
	       test_bin("sbx"), V.home);
	char *rows =
		OUT("'%s' watch --home '%s' --user alice --thread gate --since 0 --once | wc -l",
		    test_bin("sbx"), V.home);
	ck_assert_msg(atoi(rows) < 30000, "%d journal rows are left of 60,000", atoi(rows));
}
END_TEST

/* The text a read mark keeps (for a refusal's diff) goes when the mark
 * moves to a newer read, in the same transaction: the host rewriting a
 * file the view reads in a loop leaves one text in the store, not every
 * one of the last second (which, at hundreds a second, grew the home by
 * 189 MiB in 10 minutes: bench/bound-bench). */
static void wait_mark_hashed(const char *name);

START_TEST(test_gate_read_texts_of_a_rewritten_file_are_not_kept)
{
	char text[16384 + 16];

	for (int i = 0; i < 300; i++) {
		size_t n = 0;
		while (n < 16384)
			n += (size_t)snprintf(text + n, sizeof(text) - n, "%d ", i);
		ck_assert_int_eq(write_file(host("notes.txt"), text), 0);
		read_until(ws("notes.txt"), text);
	}
	tview_sync(&V);
	wait_mark_hashed("notes.txt");
	EQ_OUT("1\n", "tests/tools/sbxsql '%s' 'SELECT count(*) FROM blobs'", V.home);
	/* The mark's text is the one kept. */
	EQ_OUT("1\n",
	       "tests/tools/sbxsql '%s' 'SELECT count(*) FROM blobs b JOIN marks m ON"
	       " m.hash = b.sha256'",
	       V.home);
}
END_TEST

/* A refused rename closes each descriptor it opened once: the gate's
 * O_PATH fd of the destination was closed by the refusal and again by
 * the rename's cleanup (in the threaded loop the second close can hit
 * another worker's fd). Every close of ours reports EBADF in the
 * daemon's log (a SANITIZE=1 daemon aborts). */
START_TEST(test_gate_a_refused_rename_closes_each_descriptor_once)
{
	ck_assert_int_eq(write_file(host("existing"), "v1\n"), 0);
	ck_assert_int_eq(write_file(host("src"), "agent\n"), 0);
	read_until(ws("existing"), "v1\n");
	ck_assert_int_eq(write_file(host("existing"), "v2\n"), 0);
	for (int i = 0; i < 20; i++)
		ck_assert_int_eq(rename(ws("src"), ws("existing")) < 0 ? errno : 0, EACCES);
	ck_assert_str_eq(read_file(host("existing")), "v2\n");
	ck_assert_str_eq(read_file(ws("src")), "agent\n");
	char *log = read_file(fmt_cmd("%s/log/sbxfs-alice-gate.log", V.home));
	char *bug = log ? strstr(log, "BUG: close(") : NULL;
	ck_assert_msg(log && !bug, "%.100s", bug ? bug : "no log");
}
END_TEST

/* RENAME_EXCHANGE replaces the content at both of its names: each side
 * is gated like a rename onto it (an exchange, then an unlink, which is
 * not gated by default, used to destroy the person's version). */
START_TEST(test_gate_rename_exchange_is_gated_on_both_names)
{
	ck_assert_int_eq(write_file(host("f"), "v1\n"), 0);
	read_until(ws("f"), "v1\n");
	ck_assert_int_eq(write_file(host("f"), "person's v2\n"), 0);
	ck_assert_int_eq(write_file(ws("new"), "agent\n"), 0);

	ck_assert_int_eq(renameat2(AT_FDCWD, ws("new"), AT_FDCWD, ws("f"), RENAME_EXCHANGE) < 0
				 ? errno
				 : 0,
			 EACCES);
	ck_assert_int_eq(renameat2(AT_FDCWD, ws("f"), AT_FDCWD, ws("new"), RENAME_EXCHANGE) < 0
				 ? errno
				 : 0,
			 EACCES);
	ck_assert_str_eq(read_file(host("f")), "person's v2\n");
	ck_assert_str_eq(read_file(host("new")), "agent\n");
	wait_audit("exchange /mnt/user-data/workspace/f");

	/* Read again: allowed, and both files survive under the other name. */
	read_until(ws("f"), "person's v2\n");
	ck_assert_int_eq(renameat2(AT_FDCWD, ws("new"), AT_FDCWD, ws("f"), RENAME_EXCHANGE), 0);
	ck_assert_str_eq(read_file(host("f")), "agent\n");
	ck_assert_str_eq(read_file(host("new")), "person's v2\n");
}
END_TEST

START_TEST(test_gate_new_files_own_outputs_and_empty_files_need_no_read)
{
	/* A new file, rewritten and appended to by the thread itself. */
	OK("echo one > '%s' && echo two > '%s'", ws("out.txt"), ws("out.txt"));
	for (int i = 0; i < 50; i++)
		ck_assert_int_eq(try_write(ws("log.txt"), O_WRONLY | O_CREAT | O_APPEND, "line\n"),
				 0);
	ck_assert_int_eq(strlen(read_file(host("log.txt"))), 250);
	ck_assert_str_eq(read_file(host("out.txt")), "two\n");
	/* An empty file holds nothing to lose. */
	ck_assert_int_eq(write_file(host("empty"), ""), 0);
	ck_assert_int_eq(try_write(ws("empty"), OVERWRITE, "now\n"), 0);
}
END_TEST

START_TEST(test_gate_sed_i_and_editor_saves_work_on_read_files)
{
	ck_assert_int_eq(write_file(host("conf"), "port=1\nname=x\n"), 0);
	OK("sed -i 's/port=1/port=2/' '%s'", ws("conf"));
	OK("sed -i 's/name=x/name=y/' '%s'", ws("conf"));
	ck_assert_str_eq(read_file(host("conf")), "port=2\nname=y\n");
	/* Read, then write in place through one O_RDWR handle. */
	OK("python3 -c \"f=open('%s','r+'); d=f.read(); f.seek(0); f.write(d.upper())\"",
	   ws("conf"));
	ck_assert_str_eq(read_file(host("conf")), "PORT=2\nNAME=Y\n");
}
END_TEST

START_TEST(test_gate_identical_bytes_rewritten_on_the_host_still_count_as_read)
{
	ck_assert_int_eq(write_file(host("same"), "unchanged content\n"), 0);
	read_until(ws("same"), "unchanged content\n");
	tview_sync(&V); /* the content hash is taken after the read */
	/* The host rewrites the same bytes: new mtime and ctime. */
	ck_assert_int_eq(write_file(host("same"), "unchanged content\n"), 0);
	ck_assert_int_eq(try_write(ws("same"), OVERWRITE, "agent\n"), 0);
	ck_assert_str_eq(read_file(host("same")), "agent\n");
}
END_TEST

/* The agent's own write is a version it knows: a host touch, or a save of
 * the same bytes, after it is not a change (the content is compared once
 * only the times moved); other bytes of the same size still are. */
START_TEST(test_gate_own_writes_survive_a_touch_and_a_same_bytes_save)
{
	ck_assert_int_eq(write_file(ws("mine"), "the agent's\n"), 0);
	ck_assert_str_eq(read_file(ws("mine")), "the agent's\n");
	ck_assert_int_eq(write_file(host("edited"), "v1\n"), 0);
	read_until(ws("edited"), "v1\n");
	ck_assert_int_eq(try_write(ws("edited"), OVERWRITE, "v2\n"), 0);
	tview_sync(&V);
	wait_mark_hashed("mine");
	wait_mark_hashed("edited");

	OK("touch -d '+1 minute' '%s'", host("mine"));
	ck_assert_int_eq(write_file(host("edited"), "v2\n"), 0);
	ck_assert_int_eq(try_write(ws("mine"), O_WRONLY | O_APPEND, "more\n"), 0);
	ck_assert_int_eq(try_write(ws("edited"), O_WRONLY | O_APPEND, "v3\n"), 0);
	ck_assert_str_eq(read_file(host("mine")), "the agent's\nmore\n");
	ck_assert_str_eq(read_file(host("edited")), "v2\nv3\n");

	/* Other bytes of the same size: refused. */
	tview_sync(&V);
	wait_mark_hashed("mine");
	ck_assert_int_eq(write_file(host("mine"), "THE AGENT'S\nMORE\n"), 0);
	ck_assert_int_eq(try_write(ws("mine"), O_WRONLY | O_APPEND, "x"), EACCES);
	ck_assert_str_eq(read_file(host("mine")), "THE AGENT'S\nMORE\n");
}
END_TEST

/* The stored hash of NAME's mark, in hex, once there is one. */
static char *mark_hash(const char *name)
{
	wait_mark_hashed(name);
	return OUT("tests/tools/sbxsql '%s' \"SELECT %s FROM marks WHERE"
		   " path = '/mnt/user-data/workspace/%s'\"",
		   V.home, pg_mode() ? "encode(hash, 'hex')" : "lower(hex(hash))", name);
}

/* A new file's hash is its content however it was written: streamed from
 * writes that each start where the last ended (up to 16 KiB), read back
 * by the hasher otherwise. Bytes of the same size that the stream would have hashed,
 * had it gone on past a write out of order, are a change. */
START_TEST(test_gate_a_new_file_hash_is_its_content_however_written)
{
	char chunk[1000];
	int fd = open(ws("seq"), O_WRONLY | O_CREAT | O_EXCL, 0644);

	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < 16; i++) { /* within the 16 KiB streamed */
		memset(chunk, 'a' + i, sizeof(chunk));
		ck_assert_int_eq(write(fd, chunk, sizeof(chunk)), (ssize_t)sizeof(chunk));
	}
	ck_assert_int_eq(close(fd), 0);
	fd = open(ws("big"), O_WRONLY | O_CREAT | O_EXCL, 0644);
	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < 40; i++) { /* past them: read back */
		memset(chunk, 'a' + i % 26, sizeof(chunk));
		ck_assert_int_eq(write(fd, chunk, sizeof(chunk)), (ssize_t)sizeof(chunk));
	}
	ck_assert_int_eq(close(fd), 0);
	fd = open(ws("gaps"), O_WRONLY | O_CREAT | O_EXCL, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "tail\n", 5, 4), 5);
	ck_assert_int_eq(pwrite(fd, "head", 4, 0), 4);
	ck_assert_int_eq(close(fd), 0);
	tview_sync(&V);

	ck_assert_str_eq(mark_hash("seq"), OUT("sha256sum < '%s' | cut -c1-64", host("seq")));
	ck_assert_str_eq(mark_hash("big"), OUT("sha256sum < '%s' | cut -c1-64", host("big")));
	ck_assert_str_eq(mark_hash("gaps"), OUT("sha256sum < '%s' | cut -c1-64", host("gaps")));
	OK("touch -d '+1 minute' '%s'", host("seq"));
	ck_assert_int_eq(try_write(ws("seq"), O_WRONLY | O_APPEND, "more\n"), 0);
	ck_assert_int_eq(write_file(host("gaps"), "tail\nhead"), 0);
	ck_assert_int_eq(try_write(ws("gaps"), O_WRONLY | O_APPEND, "x"), EACCES);
}
END_TEST

/* A file unlinked while open leaves no stored mark: the close's RELEASE
 * comes after the unlink dropped its row (close() does not wait for it),
 * and must not put it back under a name that is gone. sbx try status
 * listed such a mark (git's maintenance.lock) as a file the agent read
 * that changed on the project. */
START_TEST(test_gate_a_file_unlinked_while_open_leaves_no_mark)
{
	int fd = open(ws("gone"), O_WRONLY | O_CREAT | O_EXCL, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "soon gone\n", 10), 10);
	ck_assert_int_eq(unlink(ws("gone")), 0);
	ck_assert_int_eq(close(fd), 0);
	ck_assert_int_eq(write_file(ws("kept"), "kept\n"), 0);
	tview_sync(&V);
	wait_mark_hashed("kept"); /* the marks are stored by now */
	EQ_OUT("0\n",
	       "tests/tools/sbxsql '%s' \"SELECT count(*) FROM marks WHERE"
	       " path = '/mnt/user-data/workspace/gone'\"",
	       V.home);
}
END_TEST

START_TEST(test_gate_copy_file_range_source_counts_as_read)
{
	ck_assert_int_eq(write_file(host("cfr"), "copied\n"), 0);
	OK("python3 -c \"import os; s=os.open('%s',os.O_RDONLY);"
	   " d=os.open('%s',os.O_WRONLY|os.O_CREAT,0o644);"
	   " assert os.copy_file_range(s,d,100)==7\"",
	   ws("cfr"), ws("cfr-copy"));
	ck_assert_int_eq(try_write(ws("cfr"), OVERWRITE, "changed\n"), 0);
}
END_TEST

START_TEST(test_gate_c_project_builds_twice)
{
	const char *d = ws("proj");

	OK("mkdir -p '%s' && cd '%s' &&"
	   " printf 'int f(void);\\nint main(void){return f();}\\n' > main.c &&"
	   " printf 'int f(void){return 0;}\\n' > f.c &&"
	   " printf 'app: main.o f.o\\n\\tcc -o app main.o f.o\\n%%.o: %%.c\\n\\tcc -c -o $@ $<\\n' > Makefile",
	   d, d);
	OK("make -s -C '%s'", d);
	OK("cd '%s' && ./app", d);
	/* The sources touched, and the products aged by 2 s instead of
	 * waiting for the clock to pass them (make compares mtimes): the
	 * rebuild overwrites every object through the gate. */
	OK("cd '%s' && touch f.c main.c && touch -r app -d '-2 seconds' f.o main.o app", d);
	ck_assert_int_eq(STATUS("make -s -q -C '%s'", d), 1);
	OK("make -s -C '%s'", d);
	OK("make -s -C '%s' -B", d);
	OK("cd '%s' && ./app", d);
}
END_TEST

START_TEST(test_gate_git_checkout_and_pull_work)
{
	char *up = strdup(test_dir("upstream"));
	const char *r = ws("repo"), *c = ws("clone");

	/* A repository made in the view: switching branches rewrites files. */
	OK("mkdir '%s' && cd '%s' && git init -q -b main && printf 'main\\n' > a.txt &&"
	   " git add a.txt && git commit -q -m main && git checkout -q -b feature &&"
	   " printf 'feature\\n' > a.txt && git commit -q -am feature &&"
	   " git checkout -q main",
	   r, r);
	ck_assert_str_eq(read_file(vpath(&V, WS "/repo/a.txt")), "main\n");
	OK("cd '%s' && git checkout -q feature && git checkout -q main && git merge -q --ff-only feature",
	   r);
	ck_assert_str_eq(read_file(vpath(&V, WS "/repo/a.txt")), "feature\n");

	/* A clone made and pulled on the host (its .git files were never read
	 * through the view), pulled and switched in the view. */
	OK("cd '%s' && git init -q -b main && printf 'v1\\n' > f && git add f &&"
	   " git commit -q -m v1",
	   up);
	OK("git clone -q '%s' '%s' && cd '%s' && git pull -q --ff-only", up, host("clone"),
	   host("clone"));
	OK("cd '%s' && printf 'v2\\n' > f && git commit -q -am v2 &&"
	   " git checkout -q -b other && printf 'other\\n' > f && git commit -q -am o &&"
	   " git checkout -q main",
	   up);
	OK("cd '%s' && git pull -q --ff-only", c);
	ck_assert_str_eq(read_file(vpath(&V, WS "/clone/f")), "v2\n");
	OK("cd '%s' && git checkout -q -b other origin/other", c);
	ck_assert_str_eq(read_file(vpath(&V, WS "/clone/f")), "other\n");
	OK("cd '%s' && git status --porcelain | wc -l | grep -qx 0", c);
}
END_TEST

/* The .git exemption covers the VCS's own files, not a file moved or
 * linked there: `mv f .git/x; echo agent > .git/x; mv .git/x f` used to
 * replace the person's version with no refusal and no audit row. */
START_TEST(test_gate_files_moved_into_git_keep_their_gate)
{
	OK("mkdir -p '%s' '%s'", host(".git/objects"), host("tree"));
	ck_assert_int_eq(write_file(host("f"), "v1\n"), 0);
	ck_assert_int_eq(write_file(host("tree/g"), "person's\n"), 0);
	read_until(ws("f"), "v1\n");
	ck_assert_int_eq(write_file(host("f"), "person's v2\n"), 0);

	ck_assert_int_ne(STATUS("mv '%s' '%s' 2>/dev/null", ws("f"), ws(".git/x")), 0);
	ck_assert_int_eq(rename(ws("f"), ws(".git/objects/x")) < 0 ? errno : 0, EACCES);
	ck_assert_int_eq(link(ws("f"), ws(".git/y")) < 0 ? errno : 0, EACCES);
	ck_assert_int_eq(renameat2(AT_FDCWD, ws("f"), AT_FDCWD, ws(".git/objects"),
				   RENAME_EXCHANGE) < 0
				 ? errno
				 : 0,
			 EACCES);
	/* A directory cannot be looked at whole: EXDEV, and mv copies it. */
	ck_assert_int_eq(rename(ws("tree"), ws(".git/tree")) < 0 ? errno : 0, EXDEV);
	ck_assert_str_eq(read_file(host("f")), "person's v2\n");
	ck_assert(!exists(host(".git/x")) && !exists(host(".git/y")));
	wait_audit("move into a VCS directory /mnt/user-data/workspace/f");
	wait_audit("link into a VCS directory /mnt/user-data/workspace/f");

	/* Read: it may go there, and then it is the VCS's. Moves inside .git
	 * and of a whole .git stay free. */
	read_until(ws("f"), "person's v2\n");
	OK("mv '%s' '%s' && echo agent > '%s' && mv '%s' '%s/x2' && mv '%s' '%s'", ws("f"),
	   ws(".git/x"), ws(".git/x"), ws(".git/x"), ws(".git/objects"), ws(".git"),
	   ws("moved.git"));
	ck_assert_str_eq(read_file(host("moved.git/objects/x2")), "agent\n");
}
END_TEST

/* Waits until the thread's mark of workspace file NAME is stored with its
 * content hash: the hasher has read it (and kept its text). */
static void wait_mark_hashed(const char *name)
{
	for (int i = 0; i < 200; i++) {
		char *n = OUT("tests/tools/sbxsql '%s' \"SELECT count(*) FROM marks WHERE"
			      " path = '/mnt/user-data/workspace/%s' AND hash IS NOT NULL\"",
			      V.home, name);
		bool done = !strcmp(n, "1\n");

		free(n);
		if (done)
			return;
		usleep(10000);
	}
	ck_abort_msg("the mark of %s was never hashed", name);
}

/* The last audit row's "changed" object, one field per line, from the
 * JSON output. */
static char *last_change(void)
{
	return OUT(
		"'%s' audit --home '%s' --user alice --thread gate --format json |"
		" python3 tests/tools/jsonq.py --run 'c = d[-1][\"changed\"];"
		" print(c[\"base\"][\"size\"], c[\"current\"][\"size\"]);"
		" print(c[\"base\"][\"sha256\"] is not None, c[\"current\"][\"sha256\"] is not None);"
		" print(c[\"diff\"]); print(c[\"diff_unavailable_reason\"])'",
		test_bin("sbx"), V.home);
}

/* A refusal tells what the thread missed: the version it read and the
 * one it found, and for text the diff between them (the agent can read
 * the change and retry once). Text, binary and large files. */
START_TEST(test_gate_refusal_tells_what_changed)
{
	ck_assert_int_eq(write_file(host("notes.txt"), "line 1\nline 2\nline 3\n"), 0);
	read_until(ws("notes.txt"), "line 1\nline 2\nline 3\n");
	wait_mark_hashed("notes.txt");
	ck_assert_int_eq(write_file(host("notes.txt"), "line 1\nline two\nline 3\n"), 0);
	ck_assert_int_eq(try_write(ws("notes.txt"), OVERWRITE, "agent\n"), EACCES);
	wait_audit("open with O_TRUNC /mnt/user-data/workspace/notes.txt");
	char *text = OUT("'%s' audit --home '%s' --user alice --thread gate --diff",
			 test_bin("sbx"), V.home);
	ck_assert_msg(strstr(text, "    read:    21 bytes, modified ") &&
			      strstr(text, "    found:   23 bytes, modified ") &&
			      strstr(text,
				     "--- a/mnt/user-data/workspace/notes.txt\n"
				     "+++ b/mnt/user-data/workspace/notes.txt\n"
				     "@@ -1,3 +1,3 @@\n line 1\n-line 2\n+line two\n line 3\n"),
		      "sbx audit --diff:\n%s", text);
	ck_assert_str_eq(last_change(),
			 "21 23\nTrue True\n--- a/mnt/user-data/workspace/notes.txt\n"
			 "+++ b/mnt/user-data/workspace/notes.txt\n@@ -1,3 +1,3 @@\n"
			 " line 1\n-line 2\n+line two\n line 3\nNone\n");

	/* Binary: hashes, no diff. */
	OK("printf 'a\\000b' > '%s'", host("blob.bin"));
	OK("cat '%s' > /dev/null", ws("blob.bin"));
	wait_mark_hashed("blob.bin");
	OK("printf 'a\\000cd' > '%s'", host("blob.bin"));
	ck_assert_int_eq(try_write(ws("blob.bin"), OVERWRITE, "agent\n"), EACCES);
	wait_audit("open with O_TRUNC /mnt/user-data/workspace/blob.bin");
	ck_assert_str_eq(last_change(),
			 "3 4\nTrue True\nNone\nthe text of the version read"
			 " was not kept (binary, sensitive, over 256 KiB, or not hashed yet)\n");

	/* Large: sizes and times only. */
	OK("head -c 300000 /dev/zero | tr '\\0' x > '%s'", host("big.txt"));
	OK("cat '%s' > /dev/null", ws("big.txt"));
	OK("head -c 300001 /dev/zero | tr '\\0' y > '%s'", host("big.txt"));
	ck_assert_int_eq(try_write(ws("big.txt"), OVERWRITE, "agent\n"), EACCES);
	wait_audit("open with O_TRUNC /mnt/user-data/workspace/big.txt");
	ck_assert_str_eq(last_change(),
			 "300000 300001\nFalse False\nNone\nthe text of the"
			 " version read was not kept (binary, sensitive, over 256 KiB, or not"
			 " hashed yet)\n");
	text = OUT("'%s' audit --home '%s' --user alice --thread gate --diff | tail -3",
		   test_bin("sbx"), V.home);
	ck_assert_msg(strstr(text, "    read:    300000 bytes, modified ") &&
			      strstr(text, ", sha256 unknown\n    found:   300001 bytes"),
		      "%s", text);
}
END_TEST

/* A refusal's diff never shows a text holding a credential: the content
 * rules of a change summary apply, also to texts a store kept before
 * them (made here by storing both versions' texts for the row, as an
 * older view did). */
START_TEST(test_gate_refusal_diffs_never_show_a_credential)
{
	/* Made up, and split so that a secret scanner does not flag it. */
	const char *token = "gh"
			    "p_0123456789abcdefghijABCDEFGHIJ012345";
	char read[128], found[128];

	snprintf(read, sizeof(read), "deploy with\n%s\nline 3\n", token);
	snprintf(found, sizeof(found), "deploy with\n%s\nline three\n", token);
	ck_assert_int_eq(write_file(host("notes.txt"), read), 0);
	read_until(ws("notes.txt"), read);
	wait_mark_hashed("notes.txt");
	ck_assert_int_eq(write_file(host("notes.txt"), found), 0);
	ck_assert_int_eq(try_write(ws("notes.txt"), OVERWRITE, "agent\n"), EACCES);
	wait_audit("open with O_TRUNC /mnt/user-data/workspace/notes.txt");
	const char *audit = fmt_cmd("'%s' audit --home '%s' --user alice --thread gate --diff",
				    test_bin("sbx"), V.home);
	char *text = OUT("%s", audit), *json = OUT("%s --format json", audit);
	ck_assert_msg(!strstr(text, "ghp_") && strstr(text, "(no diff: the text of the version read"
							    " was not kept"),
		      "%s", text);
	ck_assert_msg(!strstr(json, "ghp_"), "%s", json);

	/* Rows an older view wrote (with the texts of every refusal) are in
	 * SQLite files only: PostgreSQL stores began with schema 10. */
	if (pg_mode())
		return;
	OK("python3 tests/tools/oldtexts.py '%s/sbx.db' '%s' '%s'", V.home, read, found);
	text = OUT("%s", audit);
	json = OUT("%s --format json", audit);
	ck_assert_msg(!strstr(text, "ghp_") &&
			      strstr(text, "(no diff: sensitive: the name or the"
					   " content looks like it holds a secret)"),
		      "%s", text);
	ck_assert_msg(!strstr(json, "ghp_") && strstr(json, "\"diff\": null"), "%s", json);
}
END_TEST

/* Text output escapes what it prints: a host file named like an audit
 * row cannot forge one, and a command name cannot drive the terminal. */
START_TEST(test_gate_audit_text_escapes_names)
{
	const char *forged = "inj\n2099-01-01T00:00:00Z  refused  write x  (pid 1, x): never read";

	ck_assert_int_eq(write_file(host("%s", forged), "keep\n"), 0);
	/* The overwrite (refused: never read) comes from a shell whose
	 * command name holds an escape sequence. */
	char *sh_esc = fmt_cmd("%s/sh\033[2J", test_dir("comm"));
	OK("cp /bin/sh '%s'", sh_esc);
	ck_assert_int_ne(STATUS("'%s' -c \"echo x > '%s'\" 2>/dev/null", sh_esc, ws("%s", forged)),
			 0);
	wait_audit(
		"refused  open with O_TRUNC \"/mnt/user-data/workspace/inj\\n2099-01-01T00:00:00Z");
	char *text = audit_text();
	ck_assert_msg(!strstr(text, "\n2099") && !strchr(text, '\033') &&
			      strstr(text, "\"sh\\033[2J\"): never read\n"),
		      "%s", text);
	EQ_OUT("1\n", "'%s' audit --home '%s' --user alice --thread gate | wc -l", test_bin("sbx"),
	       V.home);
}
END_TEST

/* Two write handles open on a file whose mark goes stale: neither may
 * write (without the writeback cache: the gate decides at the first
 * write). */
/* Opens "race", read, twice for writing, then the person saves it: the
 * two handles' mark goes stale. */
static void open_two_writers_then_edit_on_the_host(int *a, int *b)
{
	ck_assert_int_eq(write_file(host("race"), "base\n"), 0);
	read_until(ws("race"), "base\n");
	*a = open(ws("race"), O_WRONLY);
	*b = open(ws("race"), O_WRONLY);
	ck_assert_int_ge(*a, 0);
	ck_assert_int_ge(*b, 0);
	ck_assert_int_eq(write_file(host("race"), "host\n"), 0);
}

START_TEST(test_gate_racing_handles_never_win_against_a_stale_mark)
{
	int a, b;

	open_two_writers_then_edit_on_the_host(&a, &b);
	ck_assert_int_eq(write(a, "A", 1), -1);
	ck_assert_int_eq(errno, EACCES);
	ck_assert_int_eq(write(b, "B", 1), -1);
	ck_assert_int_eq(errno, EACCES);
	close(a);
	close(b);
	ck_assert_str_eq(read_file(host("race")), "host\n");
}
END_TEST

/* An authorized handle keeps its right until closed: its writes go on
 * after a host edit. Its save does not replace the person's version,
 * though: close() fails, audited, whatever the mark says. */
START_TEST(test_gate_a_handle_is_authorized_once)
{
	struct timespec old[2] = { { .tv_sec = 1000000000 }, { .tv_sec = 1000000000 } };

	ck_assert_int_eq(write_file(host("held"), "base\n"), 0);
	ck_assert_int_eq(utimensat(AT_FDCWD, host("held"), old, 0), 0);
	read_until(ws("held"), "base\n");
	int fd = open(ws("held"), O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "B", 1, 0), 1);
	ck_assert_int_eq(write_file(host("held"), "host\n"), 0);
	ck_assert_int_eq(pwrite(fd, "C", 1, 1), 1);
	ck_assert_int_eq(close(fd), -1);
	ck_assert_int_eq(errno, EACCES);
	ck_assert_str_eq(read_file(host("held")), "host\n");
	wait_audit("save /mnt/user-data/workspace/held");
	wait_audit(
		"changed on the host while open; the agent's version is kept as /mnt/user-data/workspace/held.sbx-conflict-");
}
END_TEST

START_TEST(test_gate_marks_survive_a_restart_but_never_authorize_a_changed_file)
{
	ck_assert_int_eq(write_file(host("kept"), "kept\n"), 0);
	ck_assert_int_eq(write_file(host("moved"), "moved\n"), 0);
	read_until(ws("kept"), "kept\n");
	read_until(ws("moved"), "moved\n");
	ck_assert_int_eq(tview_umount_wait(&V), 0);
	ck_assert_int_eq(write_file(host("moved"), "edited while unmounted\n"), 0);

	ck_assert_int_eq(tview_mount(&V, V.home, "alice", "gate", NULL), 0);
	ck_assert_int_eq(try_write(ws("kept"), OVERWRITE, "agent\n"), 0);
	ck_assert_int_eq(try_write(ws("moved"), OVERWRITE, "agent\n"), EACCES);
	ck_assert_str_eq(read_file(host("moved")), "edited while unmounted\n");
}
END_TEST

/* ---- the writeback cache (tcase "writeback": --writeback=on) ----------
 *
 * Its writes reach the daemon after write(2) returned, and a partial write
 * first has the kernel read the page around it: were the gate to decide
 * there, a refusal would lose written data, and that read would count as
 * the thread's. So the gate decides at open: a writer it would refuse
 * writes through, each write decided as it comes. */

/* Writes TEXT at OFF through a handle opened with FLAGS, after reading
 * the file through it if READ_FIRST; returns 0 or the first errno. */
static int pwrite_through(const char *path, int flags, bool read_first, const char *text, off_t off)
{
	char buf[256];
	int fd = open(path, flags), err = 0;

	if (fd < 0)
		return errno;
	if (read_first && pread(fd, buf, sizeof(buf), 0) < 0)
		err = errno;
	if (!err && pwrite(fd, text, strlen(text), off) < 0)
		err = errno;
	if (close(fd) < 0 && !err)
		err = errno;
	return err;
}

START_TEST(test_gate_writeback_partial_writes_of_unread_files_are_refused)
{
	ck_assert_int_eq(write_file(host("db"), "0123456789\n"), 0);

	/* The kernel would read the page around these bytes first. */
	ck_assert_int_eq(pwrite_through(ws("db"), O_RDWR, false, "X", 3), EACCES);
	ck_assert_int_eq(pwrite_through(ws("db"), O_WRONLY, false, "Y", 5), EACCES);
	ck_assert_int_eq(pwrite_through(ws("db"), O_WRONLY | O_APPEND, false, "Z", 0), EACCES);
	ck_assert_int_eq(try_write(ws("db"), OVERWRITE, "gone\n"), EACCES);
	ck_assert_str_eq(read_file(host("db")), "0123456789\n");
	wait_audit("never read");
}
END_TEST

/* A database opens its file read-write, reads it, then writes: through
 * that one handle, as without the cache; the handles opened after the
 * read write through the cache. */
START_TEST(test_gate_writeback_a_read_write_handle_may_read_then_write)
{
	ck_assert_int_eq(write_file(host("db"), "0123456789\n"), 0);

	ck_assert_int_eq(pwrite_through(ws("db"), O_RDWR, true, "X", 3), 0);
	ck_assert_str_eq(read_file(host("db")), "012X456789\n");
	ck_assert_int_eq(pwrite_through(ws("db"), O_RDWR, false, "Q", 4), 0);
	ck_assert_int_eq(pwrite_through(ws("db"), O_WRONLY | O_APPEND, false, "end\n", 0), 0);
	ck_assert_str_eq(read_file(host("db")), "012XQ56789\nend\n");
	ck_assert_str_eq(read_file(ws("db")), "012XQ56789\nend\n");
}
END_TEST

START_TEST(test_gate_writeback_stale_writes_are_refused_at_open_or_write)
{
	ck_assert_int_eq(write_file(host("notes.txt"), "v1\n"), 0);
	read_until(ws("notes.txt"), "v1\n");
	ck_assert_int_eq(write_file(host("notes.txt"), "person's v2\n"), 0);

	ck_assert_int_eq(try_write(ws("notes.txt"), OVERWRITE, "agent\n"), EACCES);
	ck_assert_int_eq(pwrite_through(ws("notes.txt"), O_RDWR, false, "A", 0), EACCES);
	ck_assert_int_eq(truncate(ws("notes.txt"), 1) < 0 ? errno : 0, EACCES);
	ck_assert_str_eq(read_file(host("notes.txt")), "person's v2\n");
}
END_TEST

/* The same race under the writeback cache: both handles were let through
 * at open, their writes go to the cache, and the save they make is
 * refused at the last close. */
START_TEST(test_gate_writeback_racing_handles_never_win_against_a_stale_mark)
{
	int a, b;

	open_two_writers_then_edit_on_the_host(&a, &b);
	ck_assert_int_eq(write(a, "A", 1), 1);
	ck_assert_int_eq(write(b, "B", 1), 1);
	ck_assert_int_eq(close(a), 0); /* not the last: nothing saved yet */
	ck_assert_int_eq(close(b) < 0 ? errno : 0, EACCES);
	ck_assert_str_eq(read_file(host("race")), "host\n");
	read_until(ws("race"), "host\n");
}
END_TEST

/* Let through at open, then the person saves: the agent's write went to
 * the cache, and its save is refused at close, the person's version
 * kept, and the view shows it whole (the kernel held the agent's size). */
START_TEST(test_gate_writeback_a_host_edit_while_open_is_refused_at_close)
{
	ck_assert_int_eq(write_file(host("notes.txt"), "v1\n"), 0);
	read_until(ws("notes.txt"), "v1\n");
	int fd = open(ws("notes.txt"), O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write_file(host("notes.txt"), "the person's v2\n"), 0);
	ck_assert_int_eq(pwrite(fd, "the agent's version\n", 20, 0), 20);
	ck_assert_int_eq(close(fd) < 0 ? errno : 0, EACCES);

	ck_assert_str_eq(read_file(host("notes.txt")), "the person's v2\n");
	read_until(ws("notes.txt"), "the person's v2\n");
	wait_audit("changed on the host while open");
}
END_TEST

/* The kernel keeps a cached file's size as its own writes left it: a
 * file the host grows or shrinks gets a new inode in the view. */
START_TEST(test_gate_writeback_host_edits_show_their_new_size)
{
	ck_assert_int_eq(write_file(host("log"), "one\n"), 0);
	read_until(ws("log"), "one\n");
	ck_assert_int_eq(write_file(host("log"), "one\ntwo, longer\n"), 0);
	read_until(ws("log"), "one\ntwo, longer\n");
	ck_assert_int_eq(write_file(host("log"), "3\n"), 0);
	read_until(ws("log"), "3\n");

	/* The thread's own append (written directly) shows once closed. */
	struct stat after;
	ck_assert_int_eq(pwrite_through(ws("log"), O_WRONLY | O_APPEND, false, "4\n", 0), 0);
	ck_assert_int_eq(stat(ws("log"), &after), 0);
	ck_assert_int_eq(after.st_size, 4);
	ck_assert_str_eq(read_file(ws("log")), "3\n4\n");
	ck_assert_str_eq(read_file(host("log")), "3\n4\n");
}
END_TEST

/* ARG is a path: true once the view shows it with the mtime of
 * 1000000000 s the host gave it (with a later one). */
static bool shows_the_old_mtime(const char *arg)
{
	struct stat st;

	return stat(arg, &st) == 0 && st.st_mtim.tv_sec == 1000000000;
}

static bool shows_a_later_mtime(const char *arg)
{
	struct stat st;

	return stat(arg, &st) == 0 && st.st_mtim.tv_sec > 1000000000;
}

/* An O_APPEND handle writes directly, at the file's end: a host append
 * made while it is open is kept, and the view shows both. */
START_TEST(test_gate_writeback_appends_keep_a_host_append_made_while_open)
{
	ck_assert_int_eq(write_file(host("log"), "a\n"), 0);
	read_until(ws("log"), "a\n");
	int fd = open(ws("log"), O_WRONLY | O_APPEND);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "b\n", 2), 2);
	OK("printf 'h\\n' >> '%s'", host("log"));
	ck_assert_int_eq(write(fd, "c\n", 2), 2);
	ck_assert_int_eq(close(fd), 0);
	ck_assert_str_eq(read_file(host("log")), "a\nb\nh\nc\n");
	read_until(ws("log"), "a\nb\nh\nc\n");

	/* The kernel moves no time for a direct write: the view shows the
	 * file's once the handle is closed. */
	struct timespec old[2] = { { .tv_sec = 1000000000 }, { .tv_sec = 1000000000 } };
	ck_assert_int_eq(utimensat(AT_FDCWD, host("log"), old, 0), 0);
	/* A host change seen while the view still has the file open (the
	 * read above: the kernel sends its RELEASE after close() returned)
	 * shows once the last handle is released. */
	ck_assert(eventually(shows_the_old_mtime, ws("log")));
	read_until(ws("log"), "a\nb\nh\nc\n");
	ck_assert_int_eq(pwrite_through(ws("log"), O_WRONLY | O_APPEND, false, "d\n", 0), 0);
	/* Once the last handle is released: a reader's RELEASE may still
	 * be on its way (the kernel sends it after close() returned). */
	ck_assert(eventually(shows_a_later_mtime, ws("log")));
}
END_TEST

/* The kernel moves a cached file's times at a truncate only if the size
 * changes, and ignores the times a reply gives: the backing file keeps
 * the mtime the view shows, or the kernel's next flush of its times
 * would set it back unseen by the journal. */
START_TEST(test_gate_writeback_a_truncate_that_keeps_the_size_keeps_the_mtime)
{
	struct timespec old[2] = { { .tv_sec = 1000000000 }, { .tv_sec = 1000000000 } };
	struct stat st;

	ck_assert_int_eq(write_file(host("same"), "abc\n"), 0);
	ck_assert_int_eq(utimensat(AT_FDCWD, host("same"), old, 0), 0);
	ck_assert(eventually(shows_the_old_mtime, ws("same")));
	read_until(ws("same"), "abc\n");
	ck_assert_int_eq(truncate(ws("same"), 4), 0);
	ck_assert_int_eq(stat(host("same"), &st), 0);
	ck_assert_int_eq(st.st_mtim.tv_sec, 1000000000);
	ck_assert_int_eq(stat(ws("same"), &st), 0);
	ck_assert_int_eq(st.st_mtim.tv_sec, 1000000000);
	/* One that changes the size moves it, in the view and on the host. */
	ck_assert_int_eq(truncate(ws("same"), 2), 0);
	ck_assert(eventually(shows_a_later_mtime, ws("same")));
	ck_assert_int_eq(stat(host("same"), &st), 0);
	ck_assert_int_gt(st.st_mtim.tv_sec, 1000000000);
}
END_TEST

/* A writer the gate did not let through at open writes directly; it can
 * still map the file shared (FUSE_DIRECT_IO_ALLOW_MMAP). */
START_TEST(test_gate_writeback_an_unread_file_can_be_mapped_shared)
{
	ck_assert_int_eq(write_file(host("map"), "abcdef\n"), 0);
	int fd = open(ws("map"), O_RDWR);
	ck_assert_int_ge(fd, 0);
	char *m = mmap(NULL, 7, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_msg(m != MAP_FAILED, "mmap: %s", strerror(errno));
	ck_assert_int_eq(memcmp(m, "abcdef\n", 7), 0);
	m[0] = 'A';
	ck_assert_int_eq(msync(m, 7, MS_SYNC), 0);
	ck_assert_int_eq(munmap(m, 7), 0);
	ck_assert_int_eq(close(fd), 0);
	ck_assert_str_eq(read_file(host("map")), "Abcdef\n");
}
END_TEST

/* strict: the thread's own writes do not count as a read. */
START_TEST(test_gate_strict_wants_a_read_after_own_writes)
{
	ck_assert_int_eq(try_write(ws("s.txt"), O_WRONLY | O_CREAT | O_EXCL, "one\n"), 0);
	ck_assert_int_eq(try_write(ws("s.txt"), OVERWRITE, "two\n"), EACCES);
	read_until(ws("s.txt"), "one\n");
	ck_assert_int_eq(try_write(ws("s.txt"), OVERWRITE, "two\n"), 0);
	ck_assert_int_eq(try_write(ws("s.txt"), OVERWRITE, "three\n"), EACCES);
	ck_assert_str_eq(read_file(host("s.txt")), "two\n");
}
END_TEST

START_TEST(test_gate_audit_mode_allows_and_records)
{
	ck_assert_int_eq(write_file(host("a.txt"), "host\n"), 0);
	ck_assert_int_eq(try_write(ws("a.txt"), OVERWRITE, "agent\n"), 0);
	ck_assert_str_eq(read_file(host("a.txt")), "agent\n");
	wait_audit("audit    open with O_TRUNC /mnt/user-data/workspace/a.txt");
}
END_TEST

START_TEST(test_gate_off_allows_and_records_nothing)
{
	ck_assert_int_eq(write_file(host("a.txt"), "host\n"), 0);
	ck_assert_int_eq(try_write(ws("a.txt"), OVERWRITE, "agent\n"), 0);
	tview_sync(&V); /* a row, had one been queued, is stored */
	ck_assert_str_eq(audit_text(), "");
}
END_TEST

START_TEST(test_gate_rbw_unlink_gates_unlink_and_rmdir)
{
	ck_assert_int_eq(write_file(host("victim"), "data\n"), 0);
	ck_assert_int_eq(mkdir(host("hostdir"), 0755), 0);

	ck_assert_int_eq(unlink(ws("victim")), -1);
	ck_assert_int_eq(errno, EACCES);
	ck_assert_int_eq(rmdir(ws("hostdir")), -1);
	ck_assert_int_eq(errno, EACCES);
	ck_assert(exists(host("victim")) && exists(host("hostdir")));

	read_until(ws("victim"), "data\n");
	ck_assert_int_eq(unlink(ws("victim")), 0);
	OK("ls '%s' >/dev/null", ws("hostdir"));
	ck_assert_int_eq(rmdir(ws("hostdir")), 0);

	/* A tree the thread made itself goes without reading it first. */
	OK("mkdir -p '%s/a/b' && echo x > '%s/a/b/f' && rm -rf '%s'", ws("t"), ws("t"), ws("t"));
	ck_assert(!exists(host("t")));
	wait_audit("unlink /mnt/user-data/workspace/victim");
	wait_audit("rmdir /mnt/user-data/workspace/hostdir");
}
END_TEST

/* Without --rbw-unlink, deleting is not gated. */
START_TEST(test_gate_unlink_is_free_by_default)
{
	ck_assert_int_eq(write_file(host("victim"), "data\n"), 0);
	ck_assert_int_eq(unlink(ws("victim")), 0);
}
END_TEST

/* A case of TEST alone, mounted by SETUP. */
static void add_one(Suite *s, const char *name, void (*setup)(void), const TTest *test)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test);
	suite_add_tcase(s, tc);
}

Suite *suite_view_gate(void)
{
	Suite *s = suite_create("view_gate");
	TCase *tc = tcase_create("enforce");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_gate_overwrite_after_a_host_edit_is_refused_until_reread);
	tcase_add_test(tc, test_gate_shell_overwrites_of_unread_files_are_refused);
	tcase_add_test(tc, test_gate_repeated_refusals_are_one_audit_row_with_a_count);
	tcase_add_test(tc, test_gate_a_refused_rename_closes_each_descriptor_once);
	tcase_add_test(tc, test_gate_rename_exchange_is_gated_on_both_names);
	tcase_add_test(tc, test_gate_new_files_own_outputs_and_empty_files_need_no_read);
	tcase_add_test(tc, test_gate_sed_i_and_editor_saves_work_on_read_files);
	tcase_add_test(tc, test_gate_identical_bytes_rewritten_on_the_host_still_count_as_read);
	tcase_add_test(tc, test_gate_own_writes_survive_a_touch_and_a_same_bytes_save);
	tcase_add_test(tc, test_gate_a_new_file_hash_is_its_content_however_written);
	tcase_add_test(tc, test_gate_a_file_unlinked_while_open_leaves_no_mark);
	tcase_add_test(tc, test_gate_copy_file_range_source_counts_as_read);
	tcase_add_test(tc, test_gate_c_project_builds_twice);
	tcase_add_test(tc, test_gate_git_checkout_and_pull_work);
	tcase_add_test(tc, test_gate_files_moved_into_git_keep_their_gate);
	tcase_add_test(tc, test_gate_refusal_tells_what_changed);
	tcase_add_test(tc, test_gate_refusal_diffs_never_show_a_credential);
	tcase_add_test(tc, test_gate_audit_text_escapes_names);
	tcase_add_test(tc, test_gate_racing_handles_never_win_against_a_stale_mark);
	tcase_add_test(tc, test_gate_a_handle_is_authorized_once);
	tcase_add_test(tc, test_gate_marks_survive_a_restart_but_never_authorize_a_changed_file);
	tcase_add_test(tc, test_gate_unlink_is_free_by_default);
	suite_add_tcase(s, tc);

	tc = tcase_create("bound");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_gate_read_texts_of_a_rewritten_file_are_not_kept);
	suite_add_tcase(s, tc);

	/* The view's side of compaction, on one engine: the SQL of both is
	 * unit_store's (test_store_journal_churn_with_no_run_open_is_
	 * compacted). On PostgreSQL the 60,000 rows took a minute to write. */
	tc = tcase_create("bound_loops");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 180);
	tcase_set_tags(tc, "engine-neutral");
	tcase_add_test(tc, test_gate_loops_with_no_run_open_grow_the_store_by_a_bound);
	suite_add_tcase(s, tc);

	tc = tcase_create("writeback");
	tcase_add_checked_fixture(tc, setup_writeback, teardown);
	tcase_add_test(tc, test_gate_writeback_partial_writes_of_unread_files_are_refused);
	tcase_add_test(tc, test_gate_writeback_a_read_write_handle_may_read_then_write);
	tcase_add_test(tc, test_gate_writeback_stale_writes_are_refused_at_open_or_write);
	tcase_add_test(tc, test_gate_writeback_a_host_edit_while_open_is_refused_at_close);
	tcase_add_test(tc, test_gate_writeback_racing_handles_never_win_against_a_stale_mark);
	tcase_add_test(tc, test_gate_writeback_host_edits_show_their_new_size);
	tcase_add_test(tc, test_gate_writeback_a_truncate_that_keeps_the_size_keeps_the_mtime);
	tcase_add_test(tc, test_gate_writeback_an_unread_file_can_be_mapped_shared);
	tcase_add_test(tc, test_gate_writeback_appends_keep_a_host_append_made_while_open);
	suite_add_tcase(s, tc);

	/* The same attacks through the cache. */
	tcase_add_test(tc, test_gate_overwrite_after_a_host_edit_is_refused_until_reread);
	tcase_add_test(tc, test_gate_shell_overwrites_of_unread_files_are_refused);
	tcase_add_test(tc, test_gate_sed_i_and_editor_saves_work_on_read_files);
	tcase_add_test(tc, test_gate_copy_file_range_source_counts_as_read);
	tcase_add_test(tc, test_gate_marks_survive_a_restart_but_never_authorize_a_changed_file);
	suite_add_tcase(s, tc);

	/* The same sizes with no watch: the lookups find the change. */
	tc = tcase_create("writeback_unwatched");
	tcase_add_checked_fixture(tc, setup_writeback_unwatched, teardown);
	tcase_add_test(tc, test_gate_writeback_host_edits_show_their_new_size);
	tcase_add_test(tc, test_gate_writeback_stale_writes_are_refused_at_open_or_write);
	suite_add_tcase(s, tc);

	/* The other modes through the cache. */
	add_one(s, "writeback_strict", setup_writeback_strict,
		test_gate_strict_wants_a_read_after_own_writes);
	add_one(s, "writeback_audit", setup_writeback_audit,
		test_gate_audit_mode_allows_and_records);
	add_one(s, "strict", setup_strict, test_gate_strict_wants_a_read_after_own_writes);
	add_one(s, "audit", setup_audit, test_gate_audit_mode_allows_and_records);
	add_one(s, "off", setup_off, test_gate_off_allows_and_records_nothing);
	add_one(s, "unlink", setup_unlink, test_gate_rbw_unlink_gates_unlink_and_rmdir);
	return s;
}
