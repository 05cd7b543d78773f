/* The gate's state machine on real files: which version a mark holds,
 * what each verdict is, how own changes move or carry marks in each
 * mode, the content-hash fallback, and marks loaded from the store. */
#include "fs/gate.h"
#include "store/store.h"
#include "store/writer.h"
#include "tests/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[PATH_MAX];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "%s", test_dir("gate-unit"));
}

static char *file(const char *name, const char *content)
{
	char *p;

	ck_assert_int_ge(asprintf(&p, "%s/%s", dir, name), 0);
	if (content)
		ck_assert_int_eq(write_file(p, content), 0);
	return p;
}

static struct stat st_of(const char *path)
{
	struct stat st;

	ck_assert_int_eq(lstat(path, &st), 0);
	return st;
}

/* Reads PATH as the view would: version before, read, version after. */
static void read_as_view(struct gate *g, const char *path)
{
	struct stat a = st_of(path);
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	gate_note_read(g, &a, &a, fd, path);
	close(fd);
}

/* The verdict for a content change of PATH right now. */
static enum gate_verdict verdict(struct gate *g, const char *path)
{
	struct stat st = st_of(path);
	struct gate_ticket t;
	enum gate_verdict v;
	int fd = open(path, O_PATH);

	gate_lock(g, &t, &st);
	v = gate_check(&t, &st, fd, path);
	gate_unlock(&t, NULL, true);
	close(fd);
	return v;
}

/* A content change made through the view with the gate's blessing. */
static void own_write(struct gate *g, const char *path, const char *content)
{
	struct stat st = st_of(path);
	struct gate_ticket t;

	gate_lock(g, &t, &st);
	ck_assert_int_eq(write_file(path, content), 0);
	st = st_of(path);
	gate_unlock(&t, &st, true);
}

START_TEST(test_gate_modes_parse_and_name)
{
	enum gate_mode m;
	const char *names[] = { "enforce", "strict", "audit", "off" };

	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(gate_mode_parse(names[i], &m), 0);
		ck_assert_str_eq(gate_mode_name(m), names[i]);
	}
	ck_assert_int_eq(gate_mode_parse("Enforce", &m), -EINVAL);
	ck_assert_int_eq(gate_mode_parse("", &m), -EINVAL);
}
END_TEST

START_TEST(test_gate_unread_then_read_then_changed)
{
	struct gate *g = gate_new(GATE_ENFORCE, false, NULL);
	char *f = file("f", "one\n");

	ck_assert_int_eq(verdict(g, f), GATE_NEVER_READ);
	read_as_view(g, f);
	ck_assert_int_eq(verdict(g, f), GATE_OK);
	ck_assert_int_eq(write_file(f, "other\n"), 0); /* a host edit */
	ck_assert_int_eq(verdict(g, f), GATE_CHANGED);
	read_as_view(g, f);
	ck_assert_int_eq(verdict(g, f), GATE_OK);
	gate_free(g);
}
END_TEST

START_TEST(test_gate_reasons_name_the_refusal)
{
	struct gate *g = gate_new(GATE_ENFORCE, false, NULL);
	char *f = file("f", "one\n"), reason[96];
	struct stat st = st_of(f);
	struct gate_ticket t;

	gate_lock(g, &t, &st);
	ck_assert_int_eq(gate_check(&t, &st, -1, NULL), GATE_NEVER_READ);
	gate_reason(&t, reason, sizeof(reason));
	ck_assert_str_eq(reason, "never read");
	gate_unlock(&t, NULL, true);

	read_as_view(g, f);
	ck_assert_int_eq(write_file(f, "two\n!"), 0);
	st = st_of(f);
	gate_lock(g, &t, &st);
	ck_assert_int_eq(gate_check(&t, &st, -1, NULL), GATE_CHANGED);
	gate_reason(&t, reason, sizeof(reason));
	ck_assert_msg(!strncmp(reason, "changed since it was read at 20", 31) &&
			      reason[strlen(reason) - 1] == 'Z',
		      "%s", reason);
	gate_unlock(&t, NULL, true);
	gate_free(g);
}
END_TEST

START_TEST(test_gate_a_read_during_a_change_sets_no_mark)
{
	struct gate *g = gate_new(GATE_ENFORCE, false, NULL);
	char *f = file("f", "one\n");
	struct stat before = st_of(f), after;
	int fd = open(f, O_RDONLY);

	ck_assert_int_eq(write_file(f, "changed while read\n"), 0);
	after = st_of(f);
	ck_assert(gate_read_is_news(g, &before));
	gate_note_read(g, &before, &after, fd, f);
	ck_assert_int_eq(verdict(g, f), GATE_NEVER_READ);
	close(fd);
	gate_free(g);
}
END_TEST

START_TEST(test_gate_empty_files_and_specials_always_pass)
{
	struct gate *g = gate_new(GATE_ENFORCE, false, NULL);
	char *e = file("empty", ""), *l = file("link", NULL), *d = file("d", NULL);

	ck_assert_int_eq(symlink("target", l), 0);
	ck_assert_int_eq(mkdir(d, 0755), 0);
	ck_assert_int_eq(verdict(g, e), GATE_OK);
	ck_assert_int_eq(verdict(g, l), GATE_OK);
	ck_assert_int_eq(verdict(g, d), GATE_OK); /* without --rbw-unlink */
	gate_free(g);

	/* With --rbw-unlink a directory must have been listed. */
	g = gate_new(GATE_ENFORCE, true, NULL);
	ck_assert_int_eq(verdict(g, d), GATE_NEVER_READ);
	struct stat st = st_of(d);
	gate_note_listed(g, &st);
	ck_assert_int_eq(verdict(g, d), GATE_OK);
	gate_free(g);
}
END_TEST

START_TEST(test_gate_own_writes_move_the_mark_except_in_strict)
{
	char *f = file("f", "one\n");
	struct gate *g = gate_new(GATE_ENFORCE, false, NULL);

	read_as_view(g, f);
	own_write(g, f, "two, longer\n");
	ck_assert_int_eq(verdict(g, f), GATE_OK);
	gate_free(g);

	g = gate_new(GATE_STRICT, false, NULL);
	read_as_view(g, f);
	own_write(g, f, "three, longer still\n");
	ck_assert_int_eq(verdict(g, f), GATE_CHANGED);
	gate_free(g);
}
END_TEST

/* chmod through the view: a metadata change, which moves ctime. */
static void own_chmod(struct gate *g, const char *path, mode_t mode)
{
	struct stat st = st_of(path);
	struct gate_ticket t;

	gate_lock(g, &t, &st);
	ck_assert_int_eq(chmod(path, mode), 0);
	st = st_of(path);
	gate_unlock(&t, &st, false);
}

START_TEST(test_gate_metadata_changes_carry_only_a_current_mark)
{
	char *f = file("f", "one\n");
	struct gate *g = gate_new(GATE_STRICT, false, NULL);

	read_as_view(g, f);
	own_chmod(g, f, 0600);
	ck_assert_int_eq(verdict(g, f), GATE_OK);

	/* A stale mark is not refreshed by a metadata change. */
	ck_assert_int_eq(write_file(f, "host edit\n"), 0);
	own_chmod(g, f, 0644);
	ck_assert_int_eq(verdict(g, f), GATE_CHANGED);
	gate_free(g);
}
END_TEST

START_TEST(test_gate_same_bytes_with_new_metadata_pass_by_hash)
{
	struct gate *g = gate_new(GATE_ENFORCE, false, NULL);
	char *f = file("f", "same bytes\n");

	read_as_view(g, f);
	gate_settle(g);
	usleep(20000); /* past the timestamp granularity */
	ck_assert_int_eq(write_file(f, "same bytes\n"), 0);
	ck_assert_int_eq(verdict(g, f), GATE_OK);
	usleep(20000);
	ck_assert_int_eq(write_file(f, "SAME bytes\n"), 0); /* same size */
	ck_assert_int_eq(verdict(g, f), GATE_CHANGED);
	gate_free(g);
}
END_TEST

/* A gate whose store connection feeds a writer; rows reach the file. */
START_TEST(test_gate_marks_persist_by_path_and_need_the_same_inode)
{
	char err[256], *db = file("sbx.db", NULL);
	char *keep = file("keep", "k\n"), *swap = file("swap", "s\n");
	struct store *s;

	ck_assert_int_eq(store_open_path(db, &s, err, sizeof(err)), 0);
	struct store_writer *w = store_writer_start(s, "u", "t");
	struct gate *g = gate_new(GATE_ENFORCE, false, w);
	read_as_view(g, keep);
	read_as_view(g, swap);
	gate_settle(g);
	gate_free(g);
	store_writer_stop(w);

	/* The same name, another inode: the stored mark must not apply. */
	char *tmp = file("swap.new", "s\n");
	ck_assert_int_eq(rename(tmp, swap), 0);

	ck_assert_int_eq(store_open_path(db, &s, err, sizeof(err)), 0);
	g = gate_new(GATE_ENFORCE, false, NULL);
	ck_assert_int_eq(gate_load(g, s, "u", "t"), 2);
	ck_assert(gate_wants_path(g));
	ck_assert_int_eq(verdict(g, keep), GATE_OK);
	ck_assert_int_eq(verdict(g, swap), GATE_NEVER_READ);
	gate_free(g);
	/* Another thread's marks are not this thread's. */
	g = gate_new(GATE_ENFORCE, false, NULL);
	ck_assert_int_eq(gate_load(g, s, "u", "other"), 0);
	ck_assert(!gate_wants_path(g));
	gate_free(g);
	store_close(s);
}
END_TEST

/* A write of DATA at OFF through the view, as op_write_buf() makes it:
 * locked, written, its bytes fed to the written hash, unlocked. */
static void own_write_at(struct gate *g, const char *path, off_t off, const char *data)
{
	struct stat st = st_of(path);
	struct gate_ticket t;
	size_t n = strlen(data);
	int fd = open(path, O_WRONLY);

	ck_assert_int_ge(fd, 0);
	gate_lock(g, &t, &st);
	ck_assert_int_eq(pwrite(fd, data, n, off), (ssize_t)n);
	gate_note_written(&t, off, data, n);
	close(fd);
	st = st_of(path);
	gate_unlock(&t, &st, true);
}

/* An empty file NAME, made through the view. */
static char *own_new_file(struct gate *g, const char *name)
{
	char *p = file(name, "");
	struct stat st = st_of(p);

	gate_note_created(g, &st);
	return p;
}

/* The writer's close, which stores the mark. No fd: the hasher cannot
 * read the file, so a hash it gets came from the writes. */
static void own_close(struct gate *g, const char *path)
{
	struct stat st = st_of(path);

	ck_assert(gate_dirty(g, &st));
	gate_persist(g, &st, -1, path);
}

/* The host saves CONTENT over PATH; the verdict for a change after it. */
static enum gate_verdict verdict_after_host_save(struct gate *g, const char *path,
						 const char *content)
{
	usleep(20000); /* past the timestamp granularity */
	ck_assert_int_eq(write_file(path, content), 0);
	return verdict(g, path);
}

/* A gate in MODE whose marks the writer *W stores in DB (thread u/t). */
static struct gate *gate_storing(enum gate_mode mode, const char *db, struct store_writer **w)
{
	char err[256];
	struct store *s;

	ck_assert_int_eq(store_open_path(db, &s, err, sizeof(err)), 0);
	*w = store_writer_start(s, "u", "t");
	return gate_new(mode, false, *w);
}

/* Stops G and its writer W; returns the gate of a daemon started later,
 * with the MARKS marks DB holds loaded from its store *S. */
static struct gate *gate_restarted(struct gate *g, struct store_writer *w, const char *db,
				   struct store **s, int marks)
{
	char err[256];

	gate_free(g);
	store_writer_stop(w);
	ck_assert_int_eq(store_open_path(db, s, err, sizeof(err)), 0);
	g = gate_new(GATE_ENFORCE, false, NULL);
	ck_assert_int_eq(gate_load(g, *s, "u", "t"), marks);
	return g;
}

START_TEST(test_gate_a_new_file_is_hashed_from_its_own_writes)
{
	char *db = file("sbx.db", NULL);
	struct store_writer *w;
	struct store *s;
	struct gate *g = gate_storing(GATE_ENFORCE, db, &w);

	char *f = own_new_file(g, "new");
	own_write_at(g, f, 0, "hello, ");
	own_write_at(g, f, 7, "world\n");
	own_close(g, f);

	/* The stored mark has it: a daemon started later lets the host's
	 * save of the same bytes pass, and not another's. */
	g = gate_restarted(g, w, db, &s, 1);
	ck_assert_int_eq(verdict_after_host_save(g, f, "hello, world\n"), GATE_OK);
	ck_assert_int_eq(verdict_after_host_save(g, f, "HELLO, world\n"), GATE_CHANGED);
	gate_free(g);
	store_close(s);
}
END_TEST

/* A file read, then rewritten through the view: emptied in place (an
 * O_TRUNC the view could not stage) or replaced by a save's new, empty
 * stage, then written from its start (and the stage published: renamed,
 * a change of metadata only). Its writes make all of it, so the
 * stored mark has its hash without the file being read back (the close
 * gives the hasher no fd). */
START_TEST(test_gate_a_rewrite_from_empty_is_hashed_from_its_own_writes)
{
	char *db = file("sbx.db", NULL);
	struct store_writer *w;
	struct store *s;
	struct gate_ticket t;
	struct gate *g = gate_storing(GATE_ENFORCE, db, &w);

	char *inplace = file("inplace", "old text\n");
	read_as_view(g, inplace);
	struct stat st = st_of(inplace);
	gate_lock(g, &t, &st);
	ck_assert_int_eq(truncate(inplace, 0), 0);
	st = st_of(inplace);
	gate_unlock(&t, &st, true);
	own_write_at(g, inplace, 0, "new text\n");
	own_close(g, inplace);

	char *saved = file("saved", "old text\n"), *stage = file("stage", "");
	read_as_view(g, saved);
	st = st_of(saved);
	gate_lock(g, &t, &st);
	struct stat staged = st_of(stage);
	gate_unlock(&t, &staged, true);
	own_write_at(g, stage, 0, "saved ");
	own_write_at(g, stage, 6, "text\n");
	st = st_of(stage); /* its publication, a change of metadata only */
	gate_lock(g, &t, &st);
	ck_assert(t.was_current);
	ck_assert_int_eq(rename(stage, saved), 0);
	st = st_of(saved);
	gate_unlock(&t, &st, false);
	own_close(g, saved);

	g = gate_restarted(g, w, db, &s, 2);
	ck_assert_int_eq(verdict_after_host_save(g, inplace, "new text\n"), GATE_OK);
	ck_assert_int_eq(verdict_after_host_save(g, saved, "saved text\n"), GATE_OK);
	ck_assert_int_eq(verdict_after_host_save(g, saved, "SAVED text\n"), GATE_CHANGED);
	gate_free(g);
	store_close(s);
}
END_TEST

/* The hasher runs behind the requests: by the time it has hashed what the
 * view read at a path, the path may name another file, whose mark the
 * view stored since. The late hash must not put the old file's mark back
 * over it. A hundred 256 KiB reads queued ahead keep the hasher busy
 * while the path moves on. */
START_TEST(test_gate_a_late_hash_never_replaces_a_newer_mark)
{
	enum { AHEAD = 100 };
	char *db = file("sbx.db", NULL), *ahead[AHEAD];
	struct store_writer *w;
	struct store *s;
	struct gate *g = gate_storing(GATE_ENFORCE, db, &w);
	static char big[256 * 1024];

	memset(big, 'x', sizeof(big) - 1);
	for (int i = 0; i < AHEAD; i++) {
		char name[32];
		snprintf(name, sizeof(name), "ahead%d", i);
		ahead[i] = file(name, big);
	}
	for (int i = 0; i < AHEAD; i++)
		read_as_view(g, ahead[i]);
	/* "p" named OLD when the view read it (and OLD did not change since:
	 * how a rename away looks within the timestamps' granularity). */
	char *old = file("old", "old text\n"), *p = file("p", NULL);
	struct stat st = st_of(old);
	int fd = open(old, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	gate_note_read(g, &st, &st, fd, p);
	close(fd);
	own_new_file(g, "p");
	own_write_at(g, p, 0, "new text\n");
	own_close(g, p);
	gate_settle(g);

	g = gate_restarted(g, w, db, &s, AHEAD + 1);
	ck_assert_int_eq(verdict(g, p), GATE_OK);
	gate_free(g);
	store_close(s);
}
END_TEST

/* The written hash never stands for bytes the writes did not make: out of
 * order, after a change it was not fed (a rewrite), after a change made
 * elsewhere (which audit mode lets the next write follow). Each time the
 * host then saves the bytes a stream that went on would have hashed,
 * which the thread never saw there. */
START_TEST(test_gate_a_written_hash_ends_at_what_it_did_not_see)
{
	struct store_writer *w;
	struct gate *g = gate_storing(GATE_AUDIT, file("sbx.db", NULL), &w);

	char *gap = own_new_file(g, "gap");
	own_write_at(g, gap, 4, "tail\n");
	own_write_at(g, gap, 0, "head");
	own_close(g, gap);
	ck_assert_int_eq(verdict_after_host_save(g, gap, "tail\nhead"), GATE_CHANGED);

	char *cut = own_new_file(g, "cut");
	own_write_at(g, cut, 0, "first\n");
	own_write(g, cut, "FIRST\n");
	own_close(g, cut);
	ck_assert_int_eq(verdict_after_host_save(g, cut, "first\n"), GATE_CHANGED);

	char *host = own_new_file(g, "host");
	own_write_at(g, host, 0, "mine\n");
	usleep(20000);
	ck_assert_int_eq(write_file(host, "MINE\n"), 0);
	own_write_at(g, host, 5, "more\n");
	own_close(g, host);
	ck_assert_int_eq(verdict_after_host_save(g, host, "mine\nmore\n"), GATE_CHANGED);

	char *fine = own_new_file(g, "fine");
	own_write_at(g, fine, 0, "all mine\n");
	own_close(g, fine);
	ck_assert_int_eq(verdict_after_host_save(g, fine, "all mine\n"), GATE_OK);
	gate_free(g);
	store_writer_stop(w);
}
END_TEST

/* The kernel sends a close's RELEASE after close() returned, so the worker
 * storing the mark may have looked at the file before another worker's
 * unlink of it, and queue its row after the unlink's drop. No row may
 * stay for a name that is gone. */
START_TEST(test_gate_a_close_racing_an_unlink_leaves_no_mark)
{
	char *db = file("sbx.db", NULL);
	struct store_writer *w;
	struct store *s;
	struct gate *g = gate_storing(GATE_ENFORCE, db, &w);

	char *lock = own_new_file(g, "maintenance.lock");
	own_write_at(g, lock, 0, "pid 1\n");
	struct stat seen = st_of(lock);
	int fd = open(lock, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(unlink(lock), 0);
	gate_forget_path(g, lock);
	ck_assert(gate_dirty(g, &seen));
	gate_persist(g, &seen, fd, lock); /* the close that looked first */

	close(fd);
	g = gate_restarted(g, w, db, &s, 0);
	gate_free(g);
	store_close(s);
}
END_TEST

START_TEST(test_gate_null_gate_is_off)
{
	char *f = file("f", "x\n");
	struct stat st = st_of(f);
	struct gate_ticket t;

	ck_assert_int_eq(gate_mode(NULL), GATE_OFF);
	ck_assert(!gate_read_is_news(NULL, &st));
	gate_lock(NULL, &t, &st);
	ck_assert_int_eq(gate_check(&t, &st, -1, NULL), GATE_OK);
	gate_unlock(&t, &st, true);
}
END_TEST

Suite *suite_unit_gate(void)
{
	Suite *s = suite_create("unit_gate");
	TCase *tc = tcase_create("gate");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_gate_modes_parse_and_name);
	tcase_add_test(tc, test_gate_unread_then_read_then_changed);
	tcase_add_test(tc, test_gate_reasons_name_the_refusal);
	tcase_add_test(tc, test_gate_a_read_during_a_change_sets_no_mark);
	tcase_add_test(tc, test_gate_empty_files_and_specials_always_pass);
	tcase_add_test(tc, test_gate_own_writes_move_the_mark_except_in_strict);
	tcase_add_test(tc, test_gate_a_new_file_is_hashed_from_its_own_writes);
	tcase_add_test(tc, test_gate_a_rewrite_from_empty_is_hashed_from_its_own_writes);
	tcase_add_test(tc, test_gate_a_late_hash_never_replaces_a_newer_mark);
	tcase_add_test(tc, test_gate_a_written_hash_ends_at_what_it_did_not_see);
	tcase_add_test(tc, test_gate_metadata_changes_carry_only_a_current_mark);
	tcase_add_test(tc, test_gate_same_bytes_with_new_metadata_pass_by_hash);
	tcase_add_test(tc, test_gate_marks_persist_by_path_and_need_the_same_inode);
	tcase_add_test(tc, test_gate_a_close_racing_an_unlink_leaves_no_mark);
	tcase_add_test(tc, test_gate_null_gate_is_off);
	suite_add_tcase(s, tc);
	return s;
}
