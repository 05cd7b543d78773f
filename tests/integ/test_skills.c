/* /mnt/skills as the reference lays it out: four read-only categories,
 * each from its own host directory, and disabled skills that are neither
 * listed nor readable, switched on and off without a remount. */
#include "tests/cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static struct tview V;
static char H[PATH_MAX]; /* the home, filled before the mount */

/* HOME/REL, a heap string the test may leak. */
static char *home_path(const char *rel)
{
	return fmt_cmd("%s/%s", H, rel);
}

/* Writes HOME/REL, making its directories. */
static void home_file(const char *rel, const char *content)
{
	char *p = home_path(rel);

	OK("mkdir -p \"$(dirname '%s')\"", p);
	ck_assert_int_eq(write_file(p, content), 0);
}

/* Replaces HOME/REL as the reference saves it: a new file renamed over. */
static void home_replace(const char *rel, const char *content)
{
	char *tmp = home_path(".state.tmp");

	ck_assert_int_eq(write_file(tmp, content), 0);
	ck_assert_int_eq(rename(tmp, home_path(rel)), 0);
}

#define USER_STATES "users/alice/skills/_skill_states.json"
#define PUBLIC_STATES "extensions_config.json"

/* One skill in each category, and "shared" in custom and legacy too. */
static void setup(void)
{
	snprintf(H, sizeof(H), "%s", test_dir("home"));
	home_file("skills/public/pub/SKILL.md", "public skill\n");
	home_file("skills/public/shared/SKILL.md", "public shared\n");
	home_file("skills/custom/old/SKILL.md", "legacy skill\n");
	home_file("skills/custom/shared/SKILL.md", "legacy shared\n");
	home_file("users/alice/skills/custom/mine/SKILL.md", "custom skill\n");
	home_file("users/alice/skills/custom/mine/ref/notes.md", "notes\n");
	home_file("users/alice/skills/custom/shared/SKILL.md", "custom shared\n");
	home_file("integrations/skills/lark/lark-cli/SKILL.md", "integration skill\n");
	ck_assert_int_eq(tview_mount(&V, H, "alice", "t1", NULL), 0);
}

static void teardown(void)
{
	tview_umount(&V);
}

static char *sk(const char *rel)
{
	return vpath(&V, "skills/%s", rel);
}

/* The error of opening PATH for reading (0 if it opens). */
static int open_errno(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return errno;
}

static bool refused(const char *path)
{
	return open_errno(path) == EACCES;
}

static bool readable(const char *path)
{
	return open_errno(path) == 0;
}

static char *daemon_log(void)
{
	char *text = read_file(fmt_cmd("%s/log/sbxfs-alice-t1.log", H));

	ck_assert_ptr_nonnull(text);
	return text;
}

START_TEST(test_skills_categories_come_from_their_host_dirs)
{
	SAME(OUT("ls '%s'", vpath(&V, "skills")), "custom\nintegrations\nlegacy\npublic\n");
	SAME(read_file(sk("public/pub/SKILL.md")), "public skill\n");
	SAME(read_file(sk("custom/mine/SKILL.md")), "custom skill\n");
	SAME(read_file(sk("legacy/old/SKILL.md")), "legacy skill\n");
	SAME(read_file(sk("integrations/lark/lark-cli/SKILL.md")), "integration skill\n");
	/* The user's own custom skills shadow nothing: the shared legacy
	 * one of the same name is still under legacy. */
	SAME(read_file(sk("custom/shared/SKILL.md")), "custom shared\n");
	SAME(read_file(sk("legacy/shared/SKILL.md")), "legacy shared\n");
	/* Another user's view has its own custom skills, the shared rest. */
	struct tview b;
	ck_assert_int_eq(tview_mount(&b, H, "bob", "t1", NULL), 0);
	char *bob_custom = OUT("ls '%s'", vpath(&b, "skills/custom"));
	char *bob_public = OUT("ls '%s'", vpath(&b, "skills/public"));
	mode_t mode = 0;
	struct stat st;
	if (stat(home_path("users/bob/skills/custom"), &st) == 0)
		mode = st.st_mode & 07777;
	tview_umount(&b);
	SAME(bob_custom, "");
	SAME(bob_public, "pub\nshared\n");
	ck_assert_int_eq(mode, 0755); /* made for him, as the others */
}
END_TEST

START_TEST(test_skills_are_read_only_everywhere)
{
	struct stat st;

	ck_assert_int_eq(write_file(sk("x"), "no"), -EROFS);
	ck_assert_int_eq(mkdir(sk("custom/new"), 0755), -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(write_file(sk("custom/mine/SKILL.md"), "changed"), -EROFS);
	ck_assert_int_eq(write_file(sk("integrations/lark/x"), "no"), -EROFS);
	ck_assert_int_eq(unlink(sk("public/pub/SKILL.md")), -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(chmod(sk("legacy"), 0777), -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(rmdir(sk("public")), -1);
	ck_assert_int_eq(errno, EROFS);
	/* One category is never reached from another. */
	ck_assert_int_eq(rename(sk("legacy/old"), sk("custom/old")), -1);
	ck_assert_int_eq(link(sk("public/pub/SKILL.md"), sk("custom/mine/x")), -1);
	ck_assert_int_eq(stat(vpath(&V, "skills"), &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0555);
	SAME(read_file(home_path("users/alice/skills/custom/mine/SKILL.md")), "custom skill\n");
}
END_TEST

START_TEST(test_skills_find_searches_every_category)
{
	EQ_OUT("custom/mine/SKILL.md\ncustom/shared/SKILL.md\nintegrations/lark/lark-cli/SKILL.md\n"
	       "legacy/old/SKILL.md\nlegacy/shared/SKILL.md\npublic/pub/SKILL.md\n"
	       "public/shared/SKILL.md\n",
	       "cd '%s' && find . -name SKILL.md | cut -c3- | sort", vpath(&V, "skills"));
}
END_TEST

START_TEST(test_skills_disabling_and_enabling_need_no_remount)
{
	/* Known to the kernel first: names, attributes, listings. */
	ck_assert(readable(sk("custom/mine/SKILL.md")));
	ck_assert(is_listed(sk("custom/mine")));
	ck_assert(is_listed(sk("custom/mine/ref/notes.md")));

	home_replace(USER_STATES, "{\"mine\": {\"enabled\": false}}");
	ck_assert(eventually(is_unlisted, sk("custom/mine")));
	ck_assert_int_eq(open_errno(sk("custom/mine/SKILL.md")), EACCES);
	ck_assert_int_eq(open_errno(sk("custom/mine/ref/notes.md")), EACCES);
	struct stat st;
	ck_assert_int_eq(stat(sk("custom/mine"), &st), -1);
	ck_assert_int_eq(errno, EACCES);
	SAME(OUT("cd '%s' && find . -name SKILL.md | cut -c3- | sort; echo $?",
		 vpath(&V, "skills/custom")),
	     "shared/SKILL.md\n0\n");
	/* The kernel dropped the names it had: the lookup of the skill is
	 * what is refused. */
	ck_assert_ptr_nonnull(
		strstr(daemon_log(),
		       "refused lookup of 'skills/custom/mine': Skill 'mine'"
		       " is disabled. Access to its files is blocked. Enable the skill in"
		       " settings before using it. (pid "));
	SAME(read_file(sk("custom/shared/SKILL.md")), "custom shared\n");

	home_replace(USER_STATES, "{\"mine\": {\"enabled\": true}}");
	ck_assert(eventually(is_listed, sk("custom/mine")));
	ck_assert(eventually(readable, sk("custom/mine/ref/notes.md")));
	SAME(read_file(sk("custom/mine/SKILL.md")), "custom skill\n");
	/* Removing the file enables everything. */
	home_replace(USER_STATES, "{\"mine\": {\"enabled\": false}}");
	ck_assert(eventually(refused, sk("custom/mine/SKILL.md")));
	ck_assert_int_eq(unlink(home_path(USER_STATES)), 0);
	ck_assert(eventually(readable, sk("custom/mine/SKILL.md")));
}
END_TEST

START_TEST(test_skills_each_file_governs_its_categories)
{
	/* The user's file: custom, legacy and integrations, by name. */
	home_replace(USER_STATES,
		     "{\"shared\": {\"enabled\": false},"
		     " \"lark-cli\": {\"enabled\": false}, \"pub\": {\"enabled\": false}}");
	ck_assert(eventually(refused, sk("custom/shared/SKILL.md")));
	ck_assert(refused(sk("legacy/shared/SKILL.md")));
	ck_assert(refused(sk("integrations/lark/lark-cli/SKILL.md")));
	ck_assert(is_listed(sk("integrations/lark"))); /* a provider, not a skill */
	ck_assert(is_unlisted(sk("integrations/lark/lark-cli")));
	ck_assert(readable(sk("public/shared/SKILL.md")));
	ck_assert(readable(sk("public/pub/SKILL.md")));
	/* The shared file: public skills only. */
	home_replace(PUBLIC_STATES,
		     "{\"mcpServers\": {}, \"skills\": {\"pub\": {\"enabled\": false},"
		     " \"mine\": {\"enabled\": false}}}");
	ck_assert(eventually(refused, sk("public/pub/SKILL.md")));
	ck_assert(is_unlisted(sk("public/pub")));
	ck_assert(readable(sk("custom/mine/SKILL.md")));
	SAME(OUT("cd '%s' && find . -name SKILL.md | cut -c3- | sort", vpath(&V, "skills")),
	     "custom/mine/SKILL.md\nlegacy/old/SKILL.md\npublic/shared/SKILL.md\n");
}
END_TEST

/* Wake-ups of the view's watch thread so far (its voluntary context
 * switches: each wake-up is one or two). */
static long watch_wakeups(void)
{
	return atol(OUT("p=$(pgrep -f -- ' %s$' | head -1); for t in /proc/$p/task/*; do"
			" [ \"$(cat $t/comm)\" = sbxfs-watch ] &&"
			" awk '/^voluntary_ctxt_switches/ { print $2 }' $t/status; done; true",
			V.mnt));
}

/* The shared file is in the home, beside files written all the time (the
 * store's write-ahead log: every view's lease renewals): their writes do
 * not wake the view, an in-place save of the file still counts. */
START_TEST(test_skills_other_writes_in_the_home_do_not_wake_the_view)
{
	ck_assert_int_eq(write_file(home_path(PUBLIC_STATES),
				    "{\"skills\": {\"pub\": {\"enabled\": false}}}"),
			 0);
	ck_assert(eventually(refused, sk("public/pub/SKILL.md")));
	int fd = open(home_path("sbx.db-wal-like"), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert(readable(sk("public/shared/SKILL.md"))); /* the create's event is past */
	long before = watch_wakeups();
	for (int i = 0; i < 40; i++) {
		ck_assert_int_eq(write(fd, "x", 1), 1);
		/* apart: no batch of the watch can take two */
		nanosleep(&(struct timespec){ .tv_nsec = 5 * 1000000 }, NULL);
	}
	long after = watch_wakeups();
	close(fd);
	ck_assert_msg(before > 0 && after - before <= 4, "40 writes woke the view %ld times",
		      after - before);
}
END_TEST

/* Every command that opens the store closes its files in the home (the
 * database, its write-ahead log): those closes do not wake the view
 * either (with a thousand views, each close woke them all), an edit of
 * the file saved in place or by a rename over it still does. */
START_TEST(test_skills_the_store_s_closes_in_the_home_do_not_wake_the_view)
{
	const char *other = home_path("sbx.db-like");

	ck_assert_int_eq(write_file(other, "x"), 0);
	ck_assert(readable(sk("public/pub/SKILL.md"))); /* the create's event is past */
	long before = watch_wakeups();
	for (int i = 0; i < 40; i++) {
		int fd = open(other, O_WRONLY | O_CLOEXEC);
		ck_assert_int_ge(fd, 0);
		close(fd);
		/* apart: no batch of the watch can take two */
		nanosleep(&(struct timespec){ .tv_nsec = 5 * 1000000 }, NULL);
	}
	long after = watch_wakeups();
	ck_assert_msg(before > 0 && after - before <= 4, "40 closes woke the view %ld times",
		      after - before);
	/* Saved in place (opened, truncated, written, closed). */
	ck_assert_int_eq(write_file(home_path(PUBLIC_STATES),
				    "{\"skills\": {\"pub\": {\"enabled\": false}}}"),
			 0);
	ck_assert(eventually(refused, sk("public/pub/SKILL.md")));
	/* Replaced by a rename, then saved in place again: the new file is
	 * the one watched. */
	home_replace(PUBLIC_STATES, "{\"skills\": {}}");
	ck_assert(eventually(readable, sk("public/pub/SKILL.md")));
	ck_assert_int_eq(write_file(home_path(PUBLIC_STATES),
				    "{\"skills\": {\"pub\": {\"enabled\": false}}}"),
			 0);
	ck_assert(eventually(refused, sk("public/pub/SKILL.md")));
	/* Removed, then made again in place. */
	ck_assert_int_eq(unlink(home_path(PUBLIC_STATES)), 0);
	ck_assert(eventually(readable, sk("public/pub/SKILL.md")));
	ck_assert_int_eq(write_file(home_path(PUBLIC_STATES),
				    "{\"skills\": {\"pub\": {\"enabled\": false}}}"),
			 0);
	ck_assert(eventually(refused, sk("public/pub/SKILL.md")));
}
END_TEST

START_TEST(test_skills_unreadable_state_fails_closed)
{
	home_replace(USER_STATES, "{\"mine\": ");
	ck_assert(eventually(refused, sk("custom/mine/SKILL.md")));
	ck_assert(refused(sk("legacy/old/SKILL.md")));
	ck_assert(readable(sk("public/pub/SKILL.md")));
	ck_assert_ptr_nonnull(strstr(daemon_log(), "_skill_states.json (not JSON"));
	home_replace(USER_STATES, "{}");
	ck_assert(eventually(readable, sk("custom/mine/SKILL.md")));
}
END_TEST

/* Where a state file that failed to parse is fixed, the listings come
 * back: a category listed while all its skills were disabled was empty,
 * not even "." and "..", and the kernel keeps an empty cached listing
 * that no invalidation of its pages can drop (ls of skills/public stayed
 * empty until a remount). Fixed in place or by a rename, each file. */
START_TEST(test_skills_listings_come_back_once_the_state_is_fixed)
{
	static const char *const fixes[][3] = {
		{ PUBLIC_STATES, "public/pub", "{\"skills\": {}}" },
		{ USER_STATES, "custom/mine", "{}" },
	};

	for (int replace = 0; replace < 2; replace++)
		for (size_t i = 0; i < sizeof(fixes) / sizeof(*fixes); i++) {
			void (*save)(const char *, const char *) = replace ? home_replace
									   : home_file;
			char *dir = fmt_cmd("%s", sk(fixes[i][1]));
			char *category = fmt_cmd("%.*s", (int)(strrchr(dir, '/') - dir), dir);

			ck_assert(eventually(is_listed, dir));
			save(fixes[i][0], "{\"skills\": ");
			ck_assert(eventually(is_unlisted, dir));
			SAME(OUT("ls -a '%s' | head -2", category), ".\n..\n");
			save(fixes[i][0], fixes[i][2]);
			ck_assert_msg(eventually(is_listed, dir), "%s not listed again (%s, %s)",
				      dir, fixes[i][0], replace ? "renamed over" : "in place");
		}
}
END_TEST

START_TEST(test_skills_symlink_does_not_escape_its_category)
{
	char buf[PATH_MAX];
	ssize_t n;

	home_replace(USER_STATES, "{\"mine\": {\"enabled\": false}}");
	/* Host links in a public skill: to another category's host files,
	 * and back into the view towards a disabled skill. */
	char *secret = home_path("users/alice/skills/custom/mine/SKILL.md");
	ck_assert_int_eq(symlink(secret, home_path("skills/public/pub/abs")), 0);
	ck_assert_int_eq(symlink("../../custom/mine/SKILL.md", home_path("skills/public/pub/rel")),
			 0);
	ck_assert_int_eq(symlink(home_path("skills/custom"), home_path("skills/public/pub/dir")),
			 0);
	ck_assert(eventually(is_listed, sk("public/pub/dir")));
	/* The daemon gives them as text, never follows them. */
	n = readlink(sk("public/pub/abs"), buf, sizeof(buf) - 1);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	ck_assert_str_eq(buf, secret);
	ck_assert_int_eq(open(sk("public/pub/abs"), O_RDONLY | O_NOFOLLOW), -1);
	ck_assert_int_eq(errno, ELOOP);
	/* Followed by the caller inside the view, a link lands where the
	 * view's rules hold: the disabled skill stays refused. */
	ck_assert_int_eq(open_errno(sk("public/pub/rel")), EACCES);
	/* find does not follow the directory link into legacy. */
	EQ_OUT("public/pub/SKILL.md\npublic/shared/SKILL.md\n",
	       "cd '%s' && find public -name SKILL.md | sort", vpath(&V, "skills"));
}
END_TEST

START_TEST(test_skills_option_keeps_one_plain_root)
{
	const char *dir = test_dir("plain-skills");
	char *opt = strdup(dir);
	struct tview p;

	ck_assert_int_eq(write_file(fmt_cmd("%s/SKILL.md", dir), "flat\n"), 0);
	OK("mkdir -p '%s/custom/mine' && echo nested > '%s/custom/mine/SKILL.md'", dir, dir);
	const char *extra[] = { "--skills", opt, NULL };
	ck_assert_int_eq(tview_mount(&p, H, "alice", "t2", extra), 0);
	home_replace(USER_STATES, "{\"mine\": {\"enabled\": false}}");
	char *list = OUT("ls '%s'", vpath(&p, "skills"));
	char *flat = read_file(vpath(&p, "skills/SKILL.md"));
	char *nested = read_file(vpath(&p, "skills/custom/mine/SKILL.md"));
	int w = write_file(vpath(&p, "skills/x"), "no");
	tview_umount(&p);
	SAME(list, "SKILL.md\ncustom\n");
	SAME(flat, "flat\n");
	SAME(nested, "nested\n"); /* no categories, nothing disabled */
	ck_assert_int_eq(w, -EROFS);
}
END_TEST

Suite *suite_view_skills(void)
{
	Suite *s = suite_create("view_skills");
	TCase *tc = tcase_create("skills");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_skills_categories_come_from_their_host_dirs);
	tcase_add_test(tc, test_skills_are_read_only_everywhere);
	tcase_add_test(tc, test_skills_find_searches_every_category);
	tcase_add_test(tc, test_skills_disabling_and_enabling_need_no_remount);
	tcase_add_test(tc, test_skills_each_file_governs_its_categories);
	tcase_add_test(tc, test_skills_unreadable_state_fails_closed);
	tcase_add_test(tc, test_skills_listings_come_back_once_the_state_is_fixed);
	tcase_add_test(tc, test_skills_other_writes_in_the_home_do_not_wake_the_view);
	tcase_add_test(tc, test_skills_the_store_s_closes_in_the_home_do_not_wake_the_view);
	tcase_add_test(tc, test_skills_symlink_does_not_escape_its_category);
	tcase_add_test(tc, test_skills_option_keeps_one_plain_root);
	suite_add_tcase(s, tc);
	return s;
}
