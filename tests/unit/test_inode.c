/* The inode table (fs/inode.c): bounded fds, re-resolution, staleness;
 * and what outlives an inode, the open run's marks (fs/runmarks.c). */
#include "fs/confine.h"
#include "fs/inode.h"
#include "fs/runmarks.h"
#include "tests/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct fixture {
	struct inode_table *t;
	struct inode *top;
	char dir[PATH_MAX];
};

static void fixture_init(struct fixture *f, size_t budget, int nfiles)
{
	struct stat st;
	char p[PATH_MAX + 32];
	int fd;

	snprintf(f->dir, sizeof(f->dir), "%s", test_dir("inode"));
	for (int i = 0; i < nfiles; i++) {
		snprintf(p, sizeof(p), "%s/f%d", f->dir, i);
		ck_assert_int_eq(write_file(p, "x"), 0);
	}
	f->t = inode_table_new(budget);
	fd = open(f->dir, O_PATH | O_DIRECTORY);
	ck_assert_int_eq(fstat(fd, &st), 0);
	f->top = inode_add_fixed(f->t, NULL, "top", fd, &st, 0, (struct root *)1, NULL);
	ck_assert_ptr_nonnull(f->top);
}

static struct inode *look(struct fixture *f, const char *name)
{
	struct stat st;
	struct timespec born;
	int fd = confine_lookup(f->top->fd, name);

	ck_assert_int_ge(fd, 0);
	int r = inode_statx(fd, "", AT_EMPTY_PATH, &st, &born);
	ck_assert_int_ge(r, 0);
	return inode_lookup_add(f->t, f->top, name, fd, &st, r ? &born : NULL);
}

START_TEST(test_inode_fds_stay_within_budget_and_reresolve)
{
	struct fixture f;
	struct inode *ino[100];
	struct inode_stats s;
	char name[16];

	fixture_init(&f, 10, 100);
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ino[i] = look(&f, name);
	}
	inode_table_stats(f.t, &s);
	ck_assert_uint_le(s.fds, 10);
	ck_assert_uint_ge(s.evictions, 90);
	/* An evicted inode is found again by its parent and name. */
	int fd = inode_fd_get(f.t, ino[0]);
	ck_assert_int_ge(fd, 0);
	struct stat st;
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_uint_eq(st.st_ino, ino[0]->ino);
	inode_unpin(f.t, ino[0]);
	inode_table_free(f.t);
}
END_TEST

START_TEST(test_inode_reports_stale_after_host_replacement)
{
	struct fixture f;
	struct inode *a, *pad;
	char p[PATH_MAX + 8];

	fixture_init(&f, 1, 2);
	a = look(&f, "f0");
	pad = look(&f, "f1"); /* evicts f0's fd */
	ck_assert_int_lt(a->fd, 0);
	snprintf(p, sizeof(p), "%s/f0", f.dir);
	/* Held open so the filesystem cannot reuse its inode number. */
	int keep = open(p, O_RDONLY);
	ck_assert_int_ge(keep, 0);
	ck_assert_int_eq(unlink(p), 0);
	ck_assert_int_eq(write_file(p, "new file, new inode"), 0);
	struct stat st;
	ck_assert_int_eq(inode_stat_evicted(f.t, a, &st), -EAGAIN);
	int fd = inode_fd_get(f.t, a);
	if (a->fh) {
		/* A root daemon finds the object itself by its handle: the
		 * file it was, now without a name. */
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(fstat(fd, &st), 0);
		ck_assert_uint_eq(st.st_ino, a->ino);
		ck_assert_uint_eq(st.st_nlink, 0);
		inode_unpin(f.t, a);
	} else {
		ck_assert_int_eq(fd, -ESTALE);
	}
	close(keep);
	(void)pad;
	inode_table_free(f.t);
}
END_TEST

START_TEST(test_inode_root_finds_an_evicted_inode_renamed_on_the_host)
{
	struct fixture f;
	struct inode *a, *pad;
	char from[PATH_MAX + 16], to[PATH_MAX + 16];
	struct stat st;

	if (geteuid() != 0)
		return; /* file handles need CAP_DAC_READ_SEARCH */
	fixture_init(&f, 1, 2);
	a = look(&f, "f0");
	pad = look(&f, "f1"); /* evicts f0's fd */
	ck_assert_int_lt(a->fd, 0);
	ck_assert_ptr_nonnull(a->fh);
	/* Moved behind the table's back: its name no longer finds it. */
	snprintf(from, sizeof(from), "%s/f0", f.dir);
	snprintf(to, sizeof(to), "%s/elsewhere", f.dir);
	ck_assert_int_eq(rename(from, to), 0);
	int fd = inode_fd_get(f.t, a);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_uint_eq(st.st_ino, a->ino);
	ck_assert_uint_eq(st.st_nlink, 1);
	inode_unpin(f.t, a);
	(void)pad;
	inode_table_free(f.t);
}
END_TEST

START_TEST(test_inode_stat_of_an_evicted_inode_takes_no_fd)
{
	struct fixture f;
	struct inode *a, *pad;
	struct inode_stats before, after;
	struct stat st;
	char p[PATH_MAX + 8];

	fixture_init(&f, 1, 2);
	a = look(&f, "f0");
	/* Held: there is nothing to take by name. */
	ck_assert_int_eq(inode_stat_evicted(f.t, a, &st), -EAGAIN);
	pad = look(&f, "f1"); /* evicts f0's fd */
	ck_assert_int_lt(a->fd, 0);
	if (!a->born_known)
		return; /* no birth times on this filesystem */
	snprintf(p, sizeof(p), "%s/f0", f.dir);
	ck_assert_int_eq(write_file(p, "longer now"), 0);
	inode_table_stats(f.t, &before);
	ck_assert_int_eq(inode_stat_evicted(f.t, a, &st), 0);
	inode_table_stats(f.t, &after);
	ck_assert_uint_eq(st.st_ino, a->ino);
	ck_assert_uint_eq(st.st_dev, a->dev);
	ck_assert_int_eq(st.st_size, 10);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_lt(a->fd, 0);
	ck_assert_uint_eq(after.fds, before.fds);
	ck_assert_uint_eq(after.evictions, before.evictions);
	(void)pad;
	inode_table_free(f.t);
}
END_TEST

/* A staged write published: the inode designates the new object, whose
 * birth time is its own. */
START_TEST(test_inode_rekeyed_is_known_by_its_new_birth_time)
{
	struct fixture f;
	struct inode *a, *pad;
	struct stat st;
	char from[PATH_MAX + 16], to[PATH_MAX + 16];

	fixture_init(&f, 1, 2);
	a = look(&f, "f0");
	if (!a->born_known)
		return; /* no birth times on this filesystem */
	snprintf(from, sizeof(from), "%s/stage", f.dir);
	snprintf(to, sizeof(to), "%s/f0", f.dir);
	usleep(10000); /* a birth time of its own */
	ck_assert_int_eq(write_file(from, "saved"), 0);
	ck_assert_int_eq(rename(from, to), 0);
	int fd = confine_lookup(f.top->fd, "f0");
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(inode_rekey(f.t, a, fd, &st, NULL), 0);
	pad = look(&f, "f1"); /* evicts f0's fd */
	ck_assert_int_lt(a->fd, 0);
	ck_assert_int_eq(inode_stat_evicted(f.t, a, &st), 0);
	ck_assert_int_eq(st.st_size, 5);
	(void)pad;
	inode_table_free(f.t);
}
END_TEST

START_TEST(test_inode_follows_renames_through_the_view)
{
	struct fixture f;
	struct inode *a, *pad;
	char from[PATH_MAX + 8], to[PATH_MAX + 8];

	fixture_init(&f, 1, 2);
	a = look(&f, "f0");
	snprintf(from, sizeof(from), "%s/f0", f.dir);
	snprintf(to, sizeof(to), "%s/moved", f.dir);
	ck_assert_int_eq(rename(from, to), 0);
	struct stat st;
	ck_assert_int_eq(lstat(to, &st), 0);
	inode_moved(f.t, 0, &st, NULL, NULL, f.top, "moved");
	pad = look(&f, "f1");
	ck_assert_int_lt(a->fd, 0);
	int fd = inode_fd_get(f.t, a);
	ck_assert_int_ge(fd, 0);
	inode_unpin(f.t, a);
	(void)pad;
	inode_table_free(f.t);
}
END_TEST

/* A file seen under two names: when the newest goes through the view,
 * the table knows it by the other again (its fd is found by it); when
 * that one went too, it stays as it was. */
START_TEST(test_inode_falls_back_to_another_name_of_a_file)
{
	struct fixture f;
	struct inode *a, *pad;
	char p0[PATH_MAX + 8], p1[PATH_MAX + 8], p2[PATH_MAX + 8], path[PATH_MAX];

	fixture_init(&f, 1, 2);
	snprintf(p0, sizeof(p0), "%s/f0", f.dir);
	snprintf(p1, sizeof(p1), "%s/link", f.dir);
	snprintf(p2, sizeof(p2), "%s/link2", f.dir);
	ck_assert_ptr_eq(look(&f, "f0"), (a = look(&f, "f0")));
	ck_assert_int_eq(link(p0, p1), 0);
	ck_assert_ptr_eq(look(&f, "link"), a);
	ck_assert_str_eq(inode_path(f.t, a, NULL, path, sizeof(path)), "top/link");
	ck_assert_int_eq(unlink(p1), 0);
	inode_name_gone(f.t, 0, a->dev, a->ino, f.top, "link");
	ck_assert_str_eq(inode_path(f.t, a, NULL, path, sizeof(path)), "top/f0");
	pad = look(&f, "f1"); /* evicts a's fd: found again by f0 */
	ck_assert_int_lt(a->fd, 0);
	ck_assert_int_ge(inode_fd_get(f.t, a), 0);
	inode_unpin(f.t, a);
	/* The other name gone as well: nothing better is known. */
	ck_assert_int_eq(link(p0, p2), 0);
	ck_assert_ptr_eq(look(&f, "link2"), a);
	ck_assert_int_eq(unlink(p0), 0);
	ck_assert_int_eq(link(p2, p1), 0);
	ck_assert_int_eq(unlink(p2), 0);
	inode_name_gone(f.t, 0, a->dev, a->ino, f.top, "link2");
	ck_assert_str_eq(inode_path(f.t, a, NULL, path, sizeof(path)), "top/link2");
	ck_assert_ptr_null(a->alt[0].name);
	(void)pad;
	inode_forget(f.t, a, 4);
	inode_table_free(f.t);
}
END_TEST

/* A file of F's directory (made anew) with three names: f0, looked up,
 * and g and h, not yet; their paths in P. */
static struct inode *three_names(struct fixture *f, char p[3][PATH_MAX + 8])
{
	const char *names[] = { "f0", "g", "h" };
	struct inode *a;

	fixture_init(f, 4, 2);
	for (int i = 0; i < 3; i++)
		snprintf(p[i], PATH_MAX + 8, "%s/%s", f->dir, names[i]);
	a = look(f, "f0");
	ck_assert_int_eq(link(p[0], p[1]), 0);
	ck_assert_int_eq(link(p[0], p[2]), 0);
	return a;
}

/* Other names, the oldest first, are the fallbacks; seen again under
 * one, it trades places with the name; one removed through the view is
 * forgotten. */
START_TEST(test_inode_keeps_the_first_other_name_of_a_file)
{
	struct fixture f;
	char p[3][PATH_MAX + 8], path[PATH_MAX];
	struct inode *a = three_names(&f, p);

	ck_assert_ptr_eq(look(&f, "g"), a);
	ck_assert_ptr_eq(look(&f, "h"), a);
	ck_assert_str_eq(a->alt[0].name, "f0"); /* the oldest first */
	ck_assert_str_eq(a->alt[1].name, "g");
	ck_assert_ptr_eq(look(&f, "f0"), a); /* another name it has: they trade */
	ck_assert_str_eq(inode_path(f.t, a, NULL, path, sizeof(path)), "top/f0");
	ck_assert_str_eq(a->alt[0].name, "g");
	ck_assert_str_eq(a->alt[1].name, "h");
	ck_assert_int_eq(unlink(p[2]), 0);
	inode_name_gone(f.t, 0, a->dev, a->ino, f.top, "h"); /* another one */
	ck_assert_str_eq(a->alt[0].name, "g");
	ck_assert_ptr_null(a->alt[1].name);
	ck_assert_ptr_eq(look(&f, "g"), a);
	ck_assert_int_eq(unlink(p[1]), 0);
	inode_name_gone(f.t, 0, a->dev, a->ino, f.top, "g");
	ck_assert_str_eq(inode_path(f.t, a, NULL, path, sizeof(path)), "top/f0");
	inode_forget(f.t, a, 5);
	inode_table_free(f.t);
}
END_TEST

/* A rename of a name the table does not know a file by (its third) is
 * not a move of the name it knows: that one still names it, and the
 * renamed one may go (the file's changes would then be journaled under
 * a removed name). */
START_TEST(test_inode_rename_of_an_unknown_other_name_keeps_the_known_one)
{
	struct fixture f;
	char p[3][PATH_MAX + 8], k[PATH_MAX + 8], path[PATH_MAX];
	struct inode *a = three_names(&f, p);
	struct stat st;

	snprintf(k, sizeof(k), "%s/k", f.dir);
	ck_assert_ptr_eq(look(&f, "g"), a); /* g, and f0 the other */
	ck_assert_int_eq(unlink(p[0]), 0);
	inode_name_gone(f.t, 0, a->dev, a->ino, f.top, "f0");
	ck_assert_ptr_null(a->alt[0].name);
	ck_assert_int_eq(rename(p[2], k), 0); /* h, unknown to the table */
	ck_assert_int_eq(lstat(k, &st), 0);
	inode_moved(f.t, 0, &st, f.top, "h", f.top, "k");
	ck_assert_str_eq(inode_path(f.t, a, NULL, path, sizeof(path)), "top/g");
	ck_assert_int_eq(unlink(k), 0);
	inode_name_gone(f.t, 0, a->dev, a->ino, f.top, "k");
	ck_assert_str_eq(inode_path(f.t, a, NULL, path, sizeof(path)), "top/g");
	inode_forget(f.t, a, 2);
	inode_table_free(f.t);
}
END_TEST

/* Names the host watch saw appear (inode_seen_as): one that came on the
 * host while the name the table knows stays (a link, or a link undo puts
 * back and takes away again) is another name, and the known one stays
 * when it goes (then a removal of the known name through the view finds
 * it gone); a rename of the known name moves it. */
START_TEST(test_inode_a_name_seen_on_the_host_keeps_the_one_that_stays)
{
	struct fixture f;
	char p[3][PATH_MAX + 8], k[PATH_MAX + 8], path[PATH_MAX];
	struct inode *a = three_names(&f, p);
	struct stat st;

	snprintf(k, sizeof(k), "%s/k", f.dir);
	ck_assert_int_eq(lstat(p[1], &st), 0);
	inode_seen_as(f.t, a, &st, f.top, "g");
	ck_assert_str_eq(inode_path(f.t, a, NULL, path, sizeof(path)), "top/f0");
	ck_assert_str_eq(a->alt[0].name, "g");
	inode_seen_as(f.t, a, &st, f.top, "g"); /* again: known */
	ck_assert_ptr_null(a->alt[1].name);
	ck_assert_int_eq(unlink(p[1]), 0);
	ck_assert_str_eq(inode_path(f.t, a, NULL, path, sizeof(path)), "top/f0");
	/* The known name renamed on the host: the new one is its name. */
	ck_assert_int_eq(rename(p[0], k), 0);
	ck_assert_int_eq(lstat(k, &st), 0);
	inode_seen_as(f.t, a, &st, f.top, "k");
	ck_assert_str_eq(inode_path(f.t, a, NULL, path, sizeof(path)), "top/k");
	/* Its one name (h went): the same. */
	ck_assert_int_eq(unlink(p[2]), 0);
	ck_assert_int_eq(rename(k, p[0]), 0);
	ck_assert_int_eq(lstat(p[0], &st), 0);
	inode_seen_as(f.t, a, &st, f.top, "f0");
	ck_assert_str_eq(inode_path(f.t, a, NULL, path, sizeof(path)), "top/f0");
	inode_forget(f.t, a, 1);
	inode_table_free(f.t);
}
END_TEST

/* Three names looked up in turn, then two removed: the table still
 * knows the third (seed 1318 of undorand: with one other name kept, the
 * lookups pushed out the one that stayed). */
START_TEST(test_inode_keeps_three_names_looked_up_in_turn)
{
	struct fixture f;
	char p[3][PATH_MAX + 8], path[PATH_MAX];
	struct inode *a = three_names(&f, p);

	const char *turns[] = { "g", "h", "f0", "g", "h", "g" };
	for (size_t i = 0; i < sizeof(turns) / sizeof(*turns); i++)
		ck_assert_ptr_eq(look(&f, turns[i]), a);
	ck_assert_int_eq(unlink(p[1]), 0);
	inode_name_gone(f.t, 0, a->dev, a->ino, f.top, "g");
	ck_assert_int_eq(unlink(p[2]), 0);
	inode_name_gone(f.t, 0, a->dev, a->ino, f.top, "h");
	ck_assert_str_eq(inode_path(f.t, a, NULL, path, sizeof(path)), "top/f0");
	inode_forget(f.t, a, 7);
	inode_table_free(f.t);
}
END_TEST

START_TEST(test_inode_forget_frees_and_lookups_count)
{
	struct fixture f;
	struct inode_stats s0, s1;
	struct inode *a, *b;

	fixture_init(&f, 100, 1);
	inode_table_stats(f.t, &s0);
	a = look(&f, "f0");
	b = look(&f, "f0");
	ck_assert_ptr_eq(a, b);
	ck_assert_uint_eq(a->nlookup, 2);
	inode_forget(f.t, a, 1);
	inode_table_stats(f.t, &s1);
	ck_assert_uint_eq(s1.inodes, s0.inodes + 1);
	inode_forget(f.t, a, 1);
	inode_table_stats(f.t, &s1);
	ck_assert_uint_eq(s1.inodes, s0.inodes);
	inode_table_free(f.t);
}
END_TEST

START_TEST(test_inode_open_handles_keep_their_fd_beyond_the_budget)
{
	struct fixture f;
	struct inode *open_ones[5], *other;
	char name[16];

	fixture_init(&f, 2, 20);
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		open_ones[i] = look(&f, name);
		/* As op_open does: pin (finding the fd again), open, unpin. */
		ck_assert_int_ge(inode_fd_get(f.t, open_ones[i]), 0);
		inode_open_ref(f.t, open_ones[i], i % 2);
		inode_unpin(f.t, open_ones[i]);
	}
	for (int i = 5; i < 20; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		other = look(&f, name);
	}
	struct inode_stats st;
	for (int i = 0; i < 5; i++)
		ck_assert_int_ge(open_ones[i]->fd, 0);
	inode_table_stats(f.t, &st);
	ck_assert_uint_le(st.fds, 5 + 2);
	/* Closed again, they are ordinary evictable inodes. */
	for (int i = 0; i < 5; i++)
		inode_open_unref(f.t, open_ones[i], i % 2);
	ck_assert_int_ge(inode_fd_get(f.t, other), 0);
	inode_unpin(f.t, other);
	inode_table_stats(f.t, &st);
	ck_assert_uint_le(st.fds, 2);
	inode_table_free(f.t);
}
END_TEST

/* ---- runmarks: what the open run did to an object, by the object ---- */

static struct runmark_object object(ino_t ino, long born_ns)
{
	return (struct runmark_object){ .dev = 7,
					.ino = ino,
					.born_known = born_ns >= 0,
					.born = { 100, born_ns < 0 ? 0 : born_ns } };
}

START_TEST(test_runmarks_are_kept_per_object_and_run)
{
	struct runmarks *m = runmarks_new();
	struct runmark_object a = object(10, 1), b = object(11, 1);

	ck_assert_ptr_nonnull(m);
	ck_assert(!runmarks_test(m, 5, &a, RUNMARK_IMAGED, false)); /* a test sets nothing */
	ck_assert(!runmarks_test(m, 5, &a, RUNMARK_IMAGED, true));
	ck_assert(runmarks_test(m, 5, &a, RUNMARK_IMAGED, true));
	ck_assert(!runmarks_test(m, 5, &a, RUNMARK_KEPT, false)); /* marks are apart */
	ck_assert(!runmarks_test(m, 5, &a, RUNMARK_IMAGED | RUNMARK_KEPT, false));
	ck_assert(!runmarks_test(m, 5, &b, RUNMARK_IMAGED, false));
	/* The number's new object (another birth time) has none; unknown
	 * birth times match. */
	struct runmark_object reborn = object(10, 2), unknown = object(10, -1);
	ck_assert(runmarks_test(m, 5, &unknown, RUNMARK_IMAGED, false));
	ck_assert(!runmarks_test(m, 5, &reborn, RUNMARK_IMAGED, true));
	ck_assert(!runmarks_test(m, 5, &a, RUNMARK_IMAGED, false));
	ck_assert(runmarks_test(m, 5, &reborn, RUNMARK_IMAGED, false));
	/* A later run begins anew; a late call of the earlier one marks
	 * nothing and clears nothing. */
	ck_assert(!runmarks_test(m, 6, &reborn, RUNMARK_IMAGED, true));
	ck_assert(!runmarks_test(m, 5, &b, RUNMARK_KEPT, true));
	ck_assert(!runmarks_test(m, 6, &b, RUNMARK_KEPT, false));
	ck_assert(runmarks_test(m, 6, &reborn, RUNMARK_IMAGED, false));
	runmarks_free(m);
}
END_TEST

/* Enough objects to grow the table several times, their numbers close
 * together (as a filesystem gives them): every one is found again. */
START_TEST(test_runmarks_hold_many_objects)
{
	struct runmarks *m = runmarks_new();

	for (ino_t i = 0; i < 20000; i++) {
		struct runmark_object o = object(1000 + i, (long)i);
		ck_assert(!runmarks_test(m, 1, &o, RUNMARK_KEPT, true));
	}
	for (ino_t i = 0; i < 20000; i++) {
		struct runmark_object o = object(1000 + i, (long)i), other = o;
		other.dev = 8;
		ck_assert(runmarks_test(m, 1, &o, RUNMARK_KEPT, false));
		ck_assert(!runmarks_test(m, 1, &other, RUNMARK_KEPT, false));
	}
	runmarks_free(m);
}
END_TEST

/* Renewal (the writeback cache): a changed regular file no handle of the
 * view writes gets a new inode at its next lookup, GETATTR or OPEN; one
 * being written, or being opened, keeps its inode. */
START_TEST(test_inode_a_changed_file_is_renewed_unless_written)
{
	struct fixture f;
	struct stat st;
	char path[PATH_MAX + 8];
	bool relookup = false;

	fixture_init(&f, 100, 2);
	inode_table_renew(f.t, true);
	snprintf(path, sizeof(path), "%s/f0", f.dir);
	struct inode *a = look(&f, "f0");
	ck_assert_int_eq(stat(path, &st), 0);
	inode_note_attr(f.t, a, &st);
	ck_assert_ptr_eq(look(&f, "f0"), a); /* unchanged: the same */

	/* Changed with no writer: the lookup makes a new inode, and an
	 * open of the old one is stale. */
	ck_assert_int_eq(write_file(path, "longer now"), 0);
	struct inode *b = look(&f, "f0");
	ck_assert_ptr_ne(b, a);
	ck_assert_int_eq(inode_open_begin(f.t, a), -ESTALE);

	/* Changed while written: kept, and the watch is told nothing. */
	ck_assert_int_eq(stat(path, &st), 0);
	inode_note_attr(f.t, b, &st);
	inode_open_ref(f.t, b, true);
	ck_assert_int_eq(write_file(path, "by the host"), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_ptr_eq(look(&f, "f0"), b);
	ck_assert_ptr_null(inode_find_changed(f.t, 0, &st, &relookup));
	inode_open_unref(f.t, b, true);

	/* Changed while an OPEN is in progress, or while a reader has it
	 * open: renewed at the last close. */
	ck_assert_int_eq(inode_open_begin(f.t, b), 0);
	struct inode *found = inode_find_changed(f.t, 0, &st, &relookup);
	ck_assert_ptr_eq(found, b);
	ck_assert(relookup);
	inode_unpin(f.t, found);
	inode_open_ref(f.t, b, false);
	inode_open_end(f.t, b);
	ck_assert(!inode_renew_due(f.t, b));
	ck_assert_ptr_eq(look(&f, "f0"), b);
	ck_assert(!inode_renew_due(f.t, b));
	inode_open_unref(f.t, b, false);
	ck_assert(inode_renew_due(f.t, b));
	struct inode *dir;
	char name[NAME_MAX + 1];
	ck_assert(inode_renew(f.t, b, 0, &dir, name, sizeof(name)));
	ck_assert_str_eq(name, "f0");
	ck_assert(!inode_renew_due(f.t, b));
	ck_assert_ptr_ne(look(&f, "f0"), b);

	/* A GETATTR that sees a change asks for a renewal without noting
	 * it; while a reader has the file open, the renewal waits. */
	struct inode *c = look(&f, "f1");
	snprintf(path, sizeof(path), "%s/f1", f.dir);
	ck_assert_int_eq(stat(path, &st), 0);
	inode_note_attr(f.t, c, &st);
	ck_assert_int_eq(write_file(path, "changed"), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	inode_open_ref(f.t, c, false);
	ck_assert(inode_note_seen(f.t, c, &st));
	ck_assert(!inode_renew(f.t, c, 0, &dir, name, sizeof(name)));
	ck_assert_ptr_eq(look(&f, "f1"), c);
	inode_open_unref(f.t, c, false);
	ck_assert(inode_renew_due(f.t, c));
	ck_assert(inode_renew(f.t, c, 0, &dir, name, sizeof(name)));
	ck_assert_str_eq(name, "f1");
	ck_assert_ptr_ne(look(&f, "f1"), c);
	inode_table_free(f.t);
}
END_TEST

/* Renewal off (no writeback cache): a changed file keeps its inode. */
START_TEST(test_inode_without_renewal_a_changed_file_keeps_its_inode)
{
	struct fixture f;
	struct stat st;
	char path[PATH_MAX + 8];

	fixture_init(&f, 100, 1);
	snprintf(path, sizeof(path), "%s/f0", f.dir);
	struct inode *a = look(&f, "f0");
	ck_assert_int_eq(stat(path, &st), 0);
	inode_note_attr(f.t, a, &st);
	ck_assert_int_eq(write_file(path, "longer now"), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_ptr_eq(look(&f, "f0"), a);
	ck_assert_int_eq(inode_open_begin(f.t, a), 0);
	inode_open_end(f.t, a);
	inode_table_free(f.t);
}
END_TEST

Suite *suite_unit_inode(void)
{
	Suite *s = suite_create("unit_inode");
	TCase *tc = tcase_create("inode");

	tcase_add_test(tc, test_inode_fds_stay_within_budget_and_reresolve);
	tcase_add_test(tc, test_inode_reports_stale_after_host_replacement);
	tcase_add_test(tc, test_inode_root_finds_an_evicted_inode_renamed_on_the_host);
	tcase_add_test(tc, test_inode_stat_of_an_evicted_inode_takes_no_fd);
	tcase_add_test(tc, test_inode_rekeyed_is_known_by_its_new_birth_time);
	tcase_add_test(tc, test_inode_follows_renames_through_the_view);
	tcase_add_test(tc, test_inode_falls_back_to_another_name_of_a_file);
	tcase_add_test(tc, test_inode_keeps_the_first_other_name_of_a_file);
	tcase_add_test(tc, test_inode_rename_of_an_unknown_other_name_keeps_the_known_one);
	tcase_add_test(tc, test_inode_keeps_three_names_looked_up_in_turn);
	tcase_add_test(tc, test_inode_a_name_seen_on_the_host_keeps_the_one_that_stays);
	tcase_add_test(tc, test_inode_forget_frees_and_lookups_count);
	tcase_add_test(tc, test_inode_open_handles_keep_their_fd_beyond_the_budget);
	tcase_add_test(tc, test_inode_a_changed_file_is_renewed_unless_written);
	tcase_add_test(tc, test_inode_without_renewal_a_changed_file_keeps_its_inode);
	tcase_add_test(tc, test_runmarks_are_kept_per_object_and_run);
	tcase_add_test(tc, test_runmarks_hold_many_objects);
	suite_add_tcase(s, tc);
	return s;
}
