/* The file tools (tool/) against a real mounted view, as the broker will
 * call them: every tool's results and error texts, paths and symlinks
 * that would leave the view, the read-before-write gate with its
 * blocked message, the journal naming the tool, the sandbox's identity,
 * staged overwrites seen whole on the host, grep's limits. The view's
 * mount point is /mnt to the tools; host files are made in the backing
 * directories, as a person would. */
#include "common/control.h"
#include "run/refusal.h"
#include "store/store.h"
#include "tool/tool.h"
#include "tests/cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

static struct tview V;
static char H[PATH_MAX], RO[PATH_MAX];
static struct tool_view VIEW = { .root = -1 };

#define WS "/mnt/user-data/workspace"
#define host(...) hws_of(&V, __VA_ARGS__)

/* Writes H/REL (the home), making its directories. */
static void home_file(const char *rel, const char *content)
{
	char *p = fmt_cmd("%s/%s", H, rel);

	OK("mkdir -p \"$(dirname '%s')\"", p);
	ck_assert_int_eq(write_file(p, content), 0);
}

/* Mounts the view with a read-only mount "ref", a writable one "data",
 * a public skill and a disabled one, and EXTRA. */
static void mount_with(const char *const *extra)
{
	const char *argv[16] = { "--mount", NULL, "--mount", NULL };
	size_t n = 4;

	tool_env();
	snprintf(H, sizeof(H), "%s", test_dir("home"));
	test_home_store(H);
	snprintf(RO, sizeof(RO), "%s", test_dir("ro"));
	ck_assert_int_eq(write_file(fmt_cmd("%s/readme", RO), "reference\n"), 0);
	home_file("skills/public/pub/SKILL.md", "public skill\n");
	home_file("skills/public/off/SKILL.md", "disabled skill\n");
	home_file("extensions_config.json", "{\"skills\": {\"off\": {\"enabled\": false}}}");
	argv[1] = fmt_cmd("/mnt/ref=%s:ro", RO);
	argv[3] = fmt_cmd("/mnt/data=%s", test_dir("data"));
	for (size_t i = 0; extra && extra[i] && n < 15; i++)
		argv[n++] = extra[i];
	ck_assert_int_eq(tview_mount(&V, H, "alice", "ft", argv), 0);
	VIEW = (struct tool_view){ .root = open(V.mnt, O_PATH | O_DIRECTORY | O_CLOEXEC) };
	ck_assert_int_ge(VIEW.root, 0);
}

static void setup(void)
{
	mount_with(NULL);
}

static void teardown(void)
{
	if (VIEW.root >= 0)
		close(VIEW.root);
	VIEW.root = -1;
	tview_umount(&V);
}

/* Calls TOOL with ARGS (taken) as the test process; the result. */
static struct tool_result *call(const char *tool, json_t *args)
{
	struct tool_result *r = calloc(1, sizeof(*r));

	ck_assert_ptr_nonnull(args);
	ck_assert_int_eq(tool_call(&VIEW, tool, args, r), 0);
	ck_assert_ptr_nonnull(r->text);
	json_decref(args);
	return r;
}

#define OK_TEXT(r, want)                                             \
	do {                                                         \
		struct tool_result *r_ = (r);                        \
		ck_assert_msg(!r_->is_error, "error: %s", r_->text); \
		SAME(r_->text, want);                                \
	} while (0)

#define ERR_TEXT(r, want)                                                  \
	do {                                                               \
		struct tool_result *r_ = (r);                              \
		ck_assert_msg(r_->is_error, "not an error: %s", r_->text); \
		SAME(r_->text, want);                                      \
		ck_assert_ptr_null(r_->structured);                        \
	} while (0)

static struct tool_result *read_path(const char *path)
{
	return call("read_file", json_pack("{s:s}", "path", path));
}

static struct tool_result *write_path(const char *path, const char *content)
{
	return call("write_file", json_pack("{s:s,s:s}", "path", path, "content", content));
}

/* Reads PATH with the tool until it shows WANT: a host edit reaches the
 * view's caches within milliseconds (its watch). */
static void read_until(const char *path, const char *want)
{
	struct tool_result *r = NULL;

	for (int i = 0; i < 500; i++) {
		r = read_path(path);
		if (!r->is_error && !strcmp(r->text, want))
			return;
		usleep(10000);
	}
	ck_abort_msg("%s reads '%s', not '%s'", path, r->text, want);
}

static char *blocked(const char *tool, const char *path)
{
	return fmt_cmd("Error: %s blocked — %s already exists and you have not read its current "
		       "version. Any write invalidates earlier reads, so re-read before every "
		       "modification. Call read_file on it (a ranged read of the relevant section "
		       "is enough, e.g. the last ~30 lines before an append), check what is "
		       "already there, then retry.",
		       tool, path);
}

/* The JSON text of R's data, keys sorted. */
static char *data_of(const struct tool_result *r)
{
	ck_assert_ptr_nonnull(r->structured);
	return json_dumps(r->structured, JSON_SORT_KEYS | JSON_COMPACT);
}

START_TEST(test_filetool_write_makes_parents_and_reads_back)
{
	OK_TEXT(write_path(WS "/new/deep/a.txt", "hello\nworld\n"), "OK");
	SAME(read_file(host("new/deep/a.txt")), "hello\nworld\n");
	struct tool_result *r = read_path(WS "/new/deep/a.txt");
	OK_TEXT(r, "hello\nworld\n");
	SAME(data_of(r), "{\"content\":\"hello\\nworld\\n\",\"end_line\":2,\"start_line\":1,"
			 "\"truncated\":false}");
	OK_TEXT(call("read_file",
		     json_pack("{s:s,s:i}", "path", WS "/new/deep/a.txt", "start_line", 2)),
		"world");
	OK_TEXT(call("read_file",
		     json_pack("{s:s,s:i}", "path", WS "/new/deep/a.txt", "end_line", 1)),
		"hello");
	OK_TEXT(call("read_file",
		     json_pack("{s:s,s:i}", "path", WS "/new/deep/a.txt", "start_line", 5)),
		"(start_line exceeds file length)");
	OK_TEXT(write_path(WS "/empty", ""), "OK");
	r = read_path(WS "/empty");
	OK_TEXT(r, "(empty)");
	SAME(data_of(r), "{\"content\":\"\",\"end_line\":0,\"start_line\":0,\"truncated\":false}");
	/* CRLF and CR read as LF, as the reference's text mode reads. */
	ck_assert_int_eq(write_file(host("crlf.txt"), "a\r\nb\rc"), 0);
	OK_TEXT(read_path(WS "/crlf.txt"), "a\nb\nc");
}
END_TEST

START_TEST(test_filetool_read_errors)
{
	static const unsigned char png[] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };

	ERR_TEXT(read_path(WS "/missing"), "Error: File not found: " WS "/missing");
	ERR_TEXT(read_path(WS), "Error: Path is a directory, not a file: " WS);
	int fd = open(host("img.png"), O_WRONLY | O_CREAT, 0644);
	ck_assert_int_eq(write(fd, png, sizeof(png)), (ssize_t)sizeof(png));
	close(fd);
	ERR_TEXT(read_path(WS "/img.png"),
		 "Error: cannot read '" WS "/img.png' as text — it appears to be a binary file "
		 "(e.g. .xlsx, .pdf, or an image). read_file only supports UTF-8 text. Use bash "
		 "with a suitable library instead (pandas/openpyxl for spreadsheets), or "
		 "view_image for images.");
	ERR_TEXT(read_path("/etc/passwd"),
		 "Error: Only paths under /mnt/user-data/, /mnt/skills/, /mnt/acp-workspace/, or "
		 "configured mount paths are allowed");
	ERR_TEXT(read_path(WS "/../../../etc/passwd"),
		 "Error: Access denied: path traversal detected");
	ERR_TEXT(read_path(WS "/missing/x"), "Error: File not found: " WS "/missing/x");
	ERR_TEXT(read_path(WS "/img.png/x"),
		 "Error: Unexpected error reading file: NotADirectoryError: [Errno 20] Not a "
		 "directory: '" WS "/img.png/x'");
}
END_TEST

/* read_file's head cut: the marker, and the data's content without it. */
START_TEST(test_filetool_read_is_cut_at_its_head)
{
	struct tool_limits lim = tool_limits_default;
	char *text = malloc(3001);

	for (int i = 0; i < 3000; i++)
		text[i] = i % 10 == 9 ? '\n' : 'a' + i % 10;
	text[3000] = '\0';
	ck_assert_int_eq(write_file(host("long.txt"), text), 0);
	lim.read_max_chars = 500;
	VIEW.limits = &lim;
	struct tool_result *r = read_path(WS "/long.txt");
	OK_TEXT(r, fmt_cmd("%.396s\n... [truncated: showing first 396 of 3000 chars. Use "
			   "start_line/end_line to read a specific range] ...",
			   text));
	json_t *d = r->structured;
	ck_assert_str_eq(json_string_value(json_object_get(d, "content")), fmt_cmd("%.396s", text));
	ck_assert(json_is_true(json_object_get(d, "truncated")));
	ck_assert_int_eq(json_integer_value(json_object_get(d, "end_line")), 300);
	VIEW.limits = NULL;
}
END_TEST

static int say_what_changed(void *arg, const char *vpath, char **text)
{
	*(char **)arg = strdup(vpath);
	return asprintf(text, "--- what you read\n+++ what is there now\n-v1\n+edited") < 0
		       ? -ENOMEM
		       : 0;
}

/* A file the agent has not read is not changed; a read lets it; a host
 * edit after the read blocks again, with what changed. */
START_TEST(test_filetool_writes_follow_read_before_write)
{
	ck_assert_int_eq(write_file(host("notes.txt"), "v1\n"), 0);
	ERR_TEXT(write_path(WS "/notes.txt", "agent\n"), blocked("write_file", WS "/notes.txt"));
	ERR_TEXT(call("write_file", json_pack("{s:s,s:s,s:b}", "path", WS "/notes.txt", "content",
					      "more\n", "append", 1)),
		 blocked("write_file", WS "/notes.txt"));
	ERR_TEXT(call("str_replace", json_pack("{s:s,s:s,s:s}", "path", WS "/notes.txt", "old_str",
					       "v1", "new_str", "v2")),
		 blocked("str_replace", WS "/notes.txt"));
	SAME(read_file(host("notes.txt")), "v1\n");

	OK_TEXT(call("read_file", json_pack("{s:s,s:i}", "path", WS "/notes.txt", "end_line", 1)),
		"v1");
	OK_TEXT(call("write_file", json_pack("{s:s,s:s,s:b}", "path", WS "/notes.txt", "content",
					     "more\n", "append", 1)),
		"OK");
	SAME(read_file(host("notes.txt")), "v1\nmore\n");

	/* Edited on the host: blocked, and the refusal says what changed
	 * (the broker's callback; it gets the file's virtual path). */
	char *asked = NULL;
	VIEW.refusal = say_what_changed;
	VIEW.refusal_arg = &asked;
	ck_assert_int_eq(write_file(host("notes.txt"), "edited\n"), 0);
	ERR_TEXT(write_path(WS "/./notes.txt", "agent\n"),
		 fmt_cmd("%s\n\n--- what you read\n+++ what is there now\n-v1\n+edited",
			 blocked("write_file", WS "/./notes.txt")));
	SAME(asked, WS "/notes.txt");
	SAME(read_file(host("notes.txt")), "edited\n");
	read_until(WS "/notes.txt", "edited\n");
	OK_TEXT(write_path(WS "/notes.txt", "agent\n"), "OK");
	SAME(read_file(host("notes.txt")), "agent\n");
	/* Creating a file needs no read. */
	OK_TEXT(write_path(WS "/fresh.txt", "new\n"), "OK");
}
END_TEST

/* The broker's callback as it will be: the view's audit row of the
 * refusal, in the store once the view is synced, explained by
 * run/refusal.h. */
static int explain_from_store(void *arg, const char *vpath, char **text)
{
	const struct tview *v = arg;
	struct store *s;
	char ok[8], err[256];

	if (getxattr(v->mnt, CONTROL_XATTR_SYNC, ok, sizeof(ok)) < 0)
		return -errno;
	int r = store_open(v->home, &s, err, sizeof(err));
	if (r < 0)
		return r;
	r = refusal_explain(s, v->user, v->thread, vpath, text);
	store_close(s);
	return r;
}

START_TEST(test_filetool_refusal_says_what_changed)
{
	ck_assert_int_eq(write_file(host("plan.md"), "step one\nstep two\n"), 0);
	OK_TEXT(read_path(WS "/plan.md"), "step one\nstep two\n");
	/* The view keeps the text read behind the read (its hash queue): a
	 * refusal within milliseconds may find it not yet kept ("no diff:
	 * ... not hashed yet"). An agent's next call comes later. */
	tview_sync(&V);
	ck_assert_int_eq(write_file(host("plan.md"), "step one\nstep 2, by a person\n"), 0);
	VIEW.refusal = explain_from_store;
	VIEW.refusal_arg = &V;
	struct tool_result *r = call("str_replace",
				     json_pack("{s:s,s:s,s:s}", "path", WS "/plan.md", "old_str",
					       "one", "new_str", "1"));
	ck_assert(r->is_error);
	const char *said = r->text + strlen(blocked("str_replace", WS "/plan.md"));
	ck_assert_msg(!strncmp(r->text, blocked("str_replace", WS "/plan.md"), said - r->text) &&
			      !strncmp(said, "\n\nThe version you read: ", 24) &&
			      strstr(said, "What changed since:\n") &&
			      strstr(said, "\n-step two\n+step 2, by a person"),
		      "%s", r->text);
	SAME(read_file(host("plan.md")), "step one\nstep 2, by a person\n");
}
END_TEST

START_TEST(test_filetool_str_replace)
{
	const char *f = WS "/s.txt";

	OK_TEXT(write_path(f, "alpha beta alpha\n"), "OK");
	ERR_TEXT(call("str_replace",
		      json_pack("{s:s,s:s,s:s}", "path", f, "old_str", "alpha", "new_str", "g")),
		 "Error: String to replace appears 2 times in file: " WS
		 "/s.txt. Include more surrounding text in old_str so that it matches once, or set "
		 "replace_all to true to replace every occurrence.");
	SAME(read_file(host("s.txt")), "alpha beta alpha\n");
	OK_TEXT(call("str_replace",
		     json_pack("{s:s,s:s,s:s}", "path", f, "old_str", "beta", "new_str", "BETA")),
		"OK");
	SAME(read_file(host("s.txt")), "alpha BETA alpha\n");
	OK_TEXT(call("str_replace", json_pack("{s:s,s:s,s:s,s:b}", "path", f, "old_str", "alpha",
					      "new_str", "gamma", "replace_all", 1)),
		"OK");
	SAME(read_file(host("s.txt")), "gamma BETA gamma\n");
	ERR_TEXT(call("str_replace",
		      json_pack("{s:s,s:s,s:s}", "path", f, "old_str", "zzz", "new_str", "y")),
		 "Error: String to replace not found in file: " WS "/s.txt");
	OK_TEXT(call("str_replace",
		     json_pack("{s:s,s:s,s:s}", "path", f, "old_str", "", "new_str", "y")),
		"OK");
	SAME(read_file(host("s.txt")), "gamma BETA gamma\n");
	ERR_TEXT(call("str_replace", json_pack("{s:s,s:s,s:s}", "path", WS "/nope", "old_str", "a",
					       "new_str", "b")),
		 "Error: File not found: " WS "/nope");
	/* Not text: Python's words for it. */
	OK("printf 'ab\\211z' > '%s'", host("bin"));
	ERR_TEXT(read_path(WS "/bin"),
		 "Error: cannot read '" WS "/bin' as text — it appears to be a binary file (e.g. "
		 ".xlsx, .pdf, or an image). read_file only supports UTF-8 text. Use bash with a "
		 "suitable library instead (pandas/openpyxl for spreadsheets), or view_image for "
		 "images.");
	ERR_TEXT(
		call("str_replace",
		     json_pack("{s:s,s:s,s:s}", "path", WS "/bin", "old_str", "a", "new_str", "b")),
		"Error: Unexpected error replacing string: UnicodeDecodeError: 'utf-8' codec can't "
		"decode byte 0x89 in position 2: invalid start byte");
	/* Line ends come back as LF, as the reference's text mode writes. */
	ck_assert_int_eq(write_file(host("dos.txt"), "one\r\ntwo\r\n"), 0);
	OK_TEXT(read_path(WS "/dos.txt"), "one\ntwo\n");
	OK_TEXT(call("str_replace", json_pack("{s:s,s:s,s:s}", "path", WS "/dos.txt", "old_str",
					      "one\ntwo", "new_str", "1\n2")),
		"OK");
	SAME(read_file(host("dos.txt")), "1\n2\n");
}
END_TEST

START_TEST(test_filetool_write_errors)
{
	OK("mkdir -p '%s'", host("adir"));
	ERR_TEXT(write_path(WS "/adir", "x"),
		 "Error: Path is a directory, not a file: " WS "/adir");
	OK_TEXT(write_path(WS "/plain", "x"), "OK");
	ERR_TEXT(write_path(WS "/plain/sub/f", "x"),
		 "Error: Failed to write file '" WS "/plain/sub/f': NotADirectoryError: [Errno 20] "
		 "Not a directory: '" WS "/plain/sub/f'");
	ERR_TEXT(write_path("/mnt/user-data/f", "x"),
		 "Error: Access denied: path traversal detected");
	ERR_TEXT(write_path("/tmp/f", "x"),
		 "Error: Only paths under /mnt/user-data/, /mnt/skills/, /mnt/acp-workspace/, or "
		 "configured mount paths are allowed");
}
END_TEST

/* The reference's families: skills and the ACP workspace are read-only
 * to the tools, so is a mount configured so; another mount is not. */
START_TEST(test_filetool_read_only_families)
{
	ERR_TEXT(write_path("/mnt/skills/public/pub/SKILL.md", "x"),
		 "Error: Write access to skills path is not allowed: "
		 "/mnt/skills/public/pub/SKILL.md");
	ERR_TEXT(call("str_replace", json_pack("{s:s,s:s,s:s}", "path", "/mnt/acp-workspace/a",
					       "old_str", "a", "new_str", "b")),
		 "Error: Write access to ACP workspace is not allowed: /mnt/acp-workspace/a");
	ERR_TEXT(write_path("/mnt/ref/readme", "x"),
		 "Error: Write access to read-only mount is not allowed: /mnt/ref/readme");
	ERR_TEXT(write_path("/mnt/ref/new", "x"),
		 "Error: Write access to read-only mount is not allowed: /mnt/ref/new");
	SAME(read_file(fmt_cmd("%s/readme", RO)), "reference\n");
	OK_TEXT(read_path("/mnt/ref/readme"), "reference\n");
	OK_TEXT(read_path("/mnt/skills/public/pub/SKILL.md"), "public skill\n");
	OK_TEXT(write_path("/mnt/data/d/x", "mine\n"), "OK");
	OK_TEXT(read_path("/mnt/data/d/x"), "mine\n");
	ERR_TEXT(read_path("/mnt/nomount/x"),
		 "Error: Only paths under /mnt/user-data/, /mnt/skills/, /mnt/acp-workspace/, or "
		 "configured mount paths are allowed");
	/* A symlink does not carry a write where the path could not. */
	OK("ln -s /mnt/skills/public/pub/SKILL.md '%s'", host("to-skill"));
	ERR_TEXT(write_path(WS "/to-skill", "x"),
		 "Error: Write access to skills path is not allowed: "
		 "/mnt/skills/public/pub/SKILL.md");
	SAME(read_file(fmt_cmd("%s/skills/public/pub/SKILL.md", H)), "public skill\n");
}
END_TEST

START_TEST(test_filetool_disabled_skill)
{
	ERR_TEXT(read_path("/mnt/skills/public/off/SKILL.md"),
		 "Error: Skill 'off' is disabled. Access to its files is blocked. Enable the skill "
		 "in settings before using it.");
	OK_TEXT(call("ls", json_pack("{s:s}", "path", "/mnt/skills/public")),
		"/mnt/skills/public/pub/\n/mnt/skills/public/pub/SKILL.md");
}
END_TEST

/* Symlinks mean what they mean inside the sandbox, where the view is
 * /mnt: nothing leads out of it. */
START_TEST(test_filetool_symlinks_never_leave_the_view)
{
	const char *escape = "Error: Access denied: path escapes mounted directory";

	ck_assert_int_eq(write_file(fmt_cmd("%s/user-data/uploads/up.txt", hpath(&V, "%s", "")),
				    "uploaded\n"),
			 0);
	OK("ln -s /etc/passwd '%s'", host("passwd"));
	OK("ln -s ../../../../../../../../etc/passwd '%s'", host("climb"));
	OK("ln -s /mnt/user-data/uploads/up.txt '%s'", host("up"));
	OK("ln -s ../uploads '%s'", host("uploads-dir"));
	OK("ln -s /mnt '%s'", host("top"));
	OK("ln -s /mntx/y '%s'", host("mntx"));
	OK("ln -s loop1 '%s' && ln -s loop2 '%s'", host("loop2"), host("loop1"));

	ERR_TEXT(read_path(WS "/passwd"), escape);
	ERR_TEXT(read_path(WS "/climb"), escape);
	ERR_TEXT(read_path(WS "/mntx"), escape);
	ERR_TEXT(write_path(WS "/passwd", "root::0:0::/:/bin/sh\n"), escape);
	ERR_TEXT(write_path(WS "/climb", "x"), escape);
	ERR_TEXT(call("ls", json_pack("{s:s}", "path", WS "/climb")), escape);
	OK_TEXT(read_path(WS "/up"), "uploaded\n");
	OK_TEXT(read_path(WS "/uploads-dir/up.txt"), "uploaded\n");
	OK_TEXT(read_path(WS "/top/user-data/uploads/up.txt"), "uploaded\n");
	ERR_TEXT(read_path(WS "/loop1"),
		 "Error: Unexpected error reading file: OSError: [Errno 40] Too many levels of "
		 "symbolic links: '" WS "/loop1'");
	/* Through the absolute link, a write lands in the view's file. */
	OK_TEXT(read_path(WS "/up"), "uploaded\n");
	OK_TEXT(write_path(WS "/up", "changed\n"), "OK");
	SAME(read_file(fmt_cmd("%s/user-data/uploads/up.txt", hpath(&V, "%s", ""))), "changed\n");
	SAME(OUT("readlink '%s'", host("up")), "/mnt/user-data/uploads/up.txt\n");
	/* Searches pass over what leads out. */
	struct tool_result *r = call("grep", json_pack("{s:s,s:s}", "pattern", "root", "path", WS));
	OK_TEXT(r, "No matches found under " WS);
	r = call("ls", json_pack("{s:s}", "path", WS));
	ck_assert_ptr_null(strstr(r->text, "passwd"));
	ck_assert_ptr_null(strstr(r->text, "climb"));
}
END_TEST

/* Two levels, directories with "/", ignored names left out, a symlink
 * as its target when that is inside, sorted. */
START_TEST(test_filetool_ls)
{
	OK("cd '%s' && mkdir -p src/pkg/deep node_modules/x .git empty &&"
	   " touch README.md src/main.py src/pkg/mod.py src/pkg/deep/hidden.py debug.log"
	   " node_modules/x/i.js && ln -s src/main.py main-link && ln -s /etc etc-link",
	   host("."));
	struct tool_result *r = call("ls", json_pack("{s:s}", "path", WS "/"));
	OK_TEXT(r, WS "/README.md\n" WS "/empty/\n" WS "/src/\n" WS "/src/main.py\n" WS
		      "/src/main.py\n" WS "/src/pkg/");
	SAME(data_of(r), fmt_cmd("{\"entries\":[\"%s/README.md\",\"%s/empty/\",\"%s/src/\","
				 "\"%s/src/main.py\",\"%s/src/main.py\",\"%s/src/pkg/\"],"
				 "\"truncated\":false}",
				 WS, WS, WS, WS, WS, WS));
	OK_TEXT(call("ls", json_pack("{s:s}", "path", WS "/empty")), "(empty)");
	ERR_TEXT(call("ls", json_pack("{s:s}", "path", WS "/nope")),
		 "Error: Directory not found: " WS "/nope");
	ERR_TEXT(call("ls", json_pack("{s:s}", "path", WS "/README.md")),
		 "Error: Directory not found: " WS "/README.md");
	ERR_TEXT(call("ls", json_pack("{s:s}", "path", "/mnt/user-data")),
		 "Error: Only paths under /mnt/user-data/, /mnt/skills/, /mnt/acp-workspace/, or "
		 "configured mount paths are allowed");
}
END_TEST

START_TEST(test_filetool_ls_is_cut_at_its_head)
{
	struct tool_limits lim = tool_limits_default;

	OK("cd '%s' && for i in $(seq 10 59); do touch f$i; done", host("."));
	lim.ls_max_chars = 200;
	VIEW.limits = &lim;
	struct tool_result *r = call("ls", json_pack("{s:s}", "path", WS));
	/* 200 less the marker (101 with 1449 as both counts): 99
	 * characters, three whole lines of 28 and 12 of the next. */
	OK_TEXT(r, WS "/f10\n" WS "/f11\n" WS "/f12\n/mnt/user-da\n... [truncated: showing "
		      "first 99 of 1449 chars. Use a more specific path to see fewer results] ...");
	SAME(data_of(r),
	     "{\"entries\":[\"" WS "/f10\",\"" WS "/f11\",\"" WS "/f12\"],\"truncated\":true}");
	VIEW.limits = NULL;
}
END_TEST

static void make_tree(void)
{
	OK("cd '%s' && mkdir -p src/a node_modules/m build docs &&"
	   " printf 'def Main():\\n    return 1\\n' > src/main.py &&"
	   " printf 'import os\\nMAIN = 2\\n' > src/a/util.py &&"
	   " printf 'main\\n' > node_modules/m/main.py && printf 'main\\n' > build/main.py &&"
	   " printf '# Main docs\\n' > docs/main.md && printf 'main\\n' > run.log",
	   host("."));
}

START_TEST(test_filetool_glob)
{
	make_tree();
	struct tool_result *r = call("glob",
				     json_pack("{s:s,s:s}", "pattern", "**/*.py", "path", WS));
	OK_TEXT(r, "Found 2 paths under " WS "\n1. " WS "/src/main.py\n2. " WS "/src/a/util.py");
	SAME(data_of(r), "{\"paths\":[\"" WS "/src/main.py\",\"" WS
			 "/src/a/util.py\"],\"root\":\"" WS "\",\"truncated\":false}");
	OK_TEXT(call("glob", json_pack("{s:s,s:s,s:b}", "pattern", "a", "path", WS "/src",
				       "include_dirs", 1)),
		"Found 1 paths under " WS "/src\n1. " WS "/src/a");
	OK_TEXT(call("glob",
		     json_pack("{s:s,s:s,s:i}", "pattern", "*", "path", WS, "max_results", 2)),
		"Found 2 paths under " WS " (showing first 2)\n1. " WS "/docs/main.md\n2. " WS
		"/src/main.py\nResults truncated. Narrow the path or pattern to see fewer matches.");
	OK_TEXT(call("glob", json_pack("{s:s,s:s}", "pattern", "*.rs", "path", WS)),
		"No files matched under " WS);
	ERR_TEXT(call("glob", json_pack("{s:s,s:s}", "pattern", "*", "path", WS "/nope")),
		 "Error: Directory not found: " WS "/nope");
	ERR_TEXT(call("glob", json_pack("{s:s,s:s}", "pattern", "*", "path", WS "/run.log")),
		 "Error: Path is not a directory: " WS "/run.log");
	ERR_TEXT(call("glob", json_pack("{s:s,s:s}", "pattern", "", "path", WS)),
		 "Error: Unexpected error searching paths: ValueError: empty pattern");
}
END_TEST

START_TEST(test_filetool_grep)
{
	make_tree();
	struct tool_result *r = call("grep", json_pack("{s:s,s:s}", "pattern", "main", "path", WS));
	OK_TEXT(r, "Found 3 matches under " WS "\n" WS "/docs/main.md:1: # Main docs\n" WS
		   "/src/main.py:1: def Main():\n" WS "/src/a/util.py:2: MAIN = 2");
	SAME(data_of(r),
	     "{\"matches\":[{\"line\":1,\"path\":\"" WS "/docs/main.md\",\"text\":\"# "
	     "Main docs\"},{\"line\":1,\"path\":\"" WS "/src/main.py\",\"text\":\"def "
	     "Main():\"},{\"line\":2,\"path\":\"" WS "/src/a/util.py\",\"text\":\"MAIN = "
	     "2\"}],\"root\":\"" WS "\",\"truncated\":false}");
	OK_TEXT(call("grep", json_pack("{s:s,s:s,s:b}", "pattern", "Main", "path", WS,
				       "case_sensitive", 1)),
		"Found 2 matches under " WS "\n" WS "/docs/main.md:1: # Main docs\n" WS
		"/src/main.py:1: def Main():");
	OK_TEXT(call("grep",
		     json_pack("{s:s,s:s,s:s}", "pattern", "main", "path", WS, "glob", "**/*.py")),
		"Found 2 matches under " WS "\n" WS "/src/main.py:1: def Main():\n" WS
		"/src/a/util.py:2: MAIN = 2");
	OK_TEXT(call("grep", json_pack("{s:s,s:s,s:b}", "pattern", "Main()", "path", WS "/src",
				       "literal", 1)),
		"Found 1 matches under " WS "/src\n" WS "/src/main.py:1: def Main():");
	OK_TEXT(call("grep", json_pack("{s:s,s:s}", "pattern", "^\\s+return \\d$", "path",
				       WS "/src/main.py")),
		"Found 1 matches under " WS "/src/main.py\n" WS "/src/main.py:2:     return 1");
	OK_TEXT(call("grep",
		     json_pack("{s:s,s:s,s:i}", "pattern", "main", "path", WS, "max_results", 1)),
		"Found 1 matches under " WS " (showing first 1)\n" WS
		"/docs/main.md:1: # Main docs\nResults truncated. Narrow the path or add a glob "
		"filter.");
	OK_TEXT(call("grep", json_pack("{s:s,s:s}", "pattern", "nothing", "path", WS)),
		"No matches found under " WS);
	ERR_TEXT(call("grep", json_pack("{s:s,s:s}", "pattern", "(unclosed", "path", WS)),
		 "Error: Invalid regex pattern: missing closing parenthesis at position 9");
	ERR_TEXT(call("grep", json_pack("{s:s,s:s}", "pattern", "x", "path", WS "/nope")),
		 "Error: Directory not found: " WS "/nope");
}
END_TEST

/* What grep passes over: binary files, files over 1,000,000 bytes, lines
 * over 2,000 characters, symlinks; and each line shows 200. */
START_TEST(test_filetool_grep_limits)
{
	char *line = malloc(2002);

	OK("printf 'needle\\000\\n' > '%s'", host("bin.dat"));
	OK("head -c 1000001 /dev/zero | tr '\\0' 'a' > '%s' && printf '\\nneedle\\n' >> '%s'",
	   host("big.txt"), host("big.txt"));
	OK("head -c 999990 /dev/zero | tr '\\0' 'a' > '%s' && printf '\\nneedle\\n' >> '%s'",
	   host("fits.txt"), host("fits.txt"));
	memset(line, 'b', 2001);
	memcpy(line + 1994, "needle", 6); /* 2,000 characters and the LF: passed over */
	line[2000] = '\n';
	line[2001] = '\0';
	ck_assert_int_eq(write_file(host("long.txt"), line), 0);
	memcpy(line + 1993, "needle\n", 8); /* 1,999 and the LF: searched, shown cut */
	ck_assert_int_eq(write_file(host("edge.txt"), line), 0);
	OK("ln -s fits.txt '%s'", host("link.txt"));
	struct tool_result *r = call("grep",
				     json_pack("{s:s,s:s}", "pattern", "needle", "path", WS));
	OK_TEXT(r, fmt_cmd("Found 2 matches under " WS "\n" WS "/edge.txt:1: %.197s...\n" WS
			   "/fits.txt:2: needle",
			   line));
	/* A file named as the root is searched even as a symlink. */
	OK_TEXT(call("grep", json_pack("{s:s,s:s}", "pattern", "needle", "path", WS "/link.txt")),
		"Found 1 matches under " WS "/link.txt\n" WS "/fits.txt:2: needle");
}
END_TEST

/* Lines as Python's text mode reads them with errors="replace": CR,
 * CRLF and LF end lines, "$" matches before the end, bad bytes show as
 * U+FFFD. */
START_TEST(test_filetool_grep_reads_lines_as_python)
{
	OK("printf 'one\\r\\nneedle two\\rneedle three\\n\\377needle four' > '%s'",
	   host("mixed.txt"));
	OK_TEXT(call("grep",
		     json_pack("{s:s,s:s}", "pattern", "needle \\w+$", "path", WS "/mixed.txt")),
		"Found 3 matches under " WS "/mixed.txt\n" WS "/mixed.txt:2: needle two\n" WS
		"/mixed.txt:3: needle three\n" WS "/mixed.txt:4: \xef\xbf\xbdneedle four");
}
END_TEST

/* What a tool changes, the journal names as "mcp:TOOL" (the command
 * name of the thread tool_call_as() runs it on). */
START_TEST(test_filetool_journal_names_the_tool)
{
	struct tool_identity me = { getuid(), getgid() };
	struct tool_result r;
	json_t *args = json_pack("{s:s,s:s}", "path", WS "/journaled.txt", "content", "a b\n");

	ck_assert_int_eq(tool_call_as(&VIEW, &me, "mcp", "write_file", args, &r), 0);
	ck_assert_msg(!r.is_error, "%s", r.text);
	tool_result_free(&r);
	json_decref(args);
	args = json_pack("{s:s,s:s,s:s}", "path", WS "/journaled.txt", "old_str", "a", "new_str",
			 "c");
	ck_assert_int_eq(tool_call_as(&VIEW, &me, "mcp", "str_replace", args, &r), 0);
	ck_assert_msg(!r.is_error, "%s", r.text);
	tool_result_free(&r);
	json_decref(args);
	SAME(read_file(host("journaled.txt")), "c b\n");
	tview_sync(&V);
	SAME(OUT("tests/tools/sbxsql '%s' \"SELECT DISTINCT comm FROM journal WHERE path LIKE"
		 " '%%/journaled.txt' ORDER BY comm\"",
		 V.home),
	     "mcp:str_replace\nmcp:write_file\n");
	ck_assert_int_eq(tool_call_as(&VIEW, &me, "mcp", "bash", NULL, &r), -ENOENT);
}
END_TEST

/* An overwrite is staged: a reader of the host file meanwhile sees the
 * old content or the new, whole, never a mix or a part. */
struct host_reader {
	const char *path;
	size_t old_size, new_size;
	char old_byte, new_byte;
	volatile bool stop;
	volatile int bad, seen_new;
};

static void *read_host_loop(void *arg)
{
	struct host_reader *h = arg;
	char *buf = malloc(h->new_size + h->old_size + 1);

	while (!h->stop) {
		ssize_t n = 0, k;
		int fd = open(h->path, O_RDONLY);
		if (fd < 0)
			continue;
		while ((k = read(fd, buf + n, h->new_size + h->old_size + 1 - (size_t)n)) > 0)
			n += k;
		close(fd);
		char c = n ? buf[0] : 0;
		bool whole = (c == h->old_byte && (size_t)n == h->old_size) ||
			     (c == h->new_byte && (size_t)n == h->new_size);
		for (ssize_t i = 0; whole && i < n; i++)
			whole = buf[i] == c;
		h->bad += !whole;
		h->seen_new += c == h->new_byte;
	}
	free(buf);
	return NULL;
}

START_TEST(test_filetool_overwrite_is_seen_whole_on_the_host)
{
	struct tool_limits lim = tool_limits_default;
	size_t old_size = 4 << 20, new_size = 3 << 20;
	char *old_text = malloc(old_size + 1), *new_text = malloc(new_size + 1);

	memset(old_text, 'o', old_size);
	old_text[old_size] = '\0';
	memset(new_text, 'n', new_size);
	new_text[new_size] = '\0';
	ck_assert_int_eq(write_file(host("big.txt"), old_text), 0);
	struct tool_result *r = call("read_file",
				     json_pack("{s:s,s:i}", "path", WS "/big.txt", "end_line", 1));
	ck_assert_msg(!r->is_error, "%s", r->text);
	lim.write_max_bytes = 0; /* no single-call limit for this one */
	VIEW.limits = &lim;
	struct host_reader h = { .path = host("big.txt"),
				 .old_size = old_size,
				 .new_size = new_size,
				 .old_byte = 'o',
				 .new_byte = 'n' };
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, read_host_loop, &h), 0);
	OK_TEXT(write_path(WS "/big.txt", new_text), "OK");
	while (!h.seen_new)
		sched_yield();
	h.stop = true;
	pthread_join(t, NULL);
	ck_assert_int_eq(h.bad, 0);
	VIEW.limits = NULL;
}
END_TEST

/* Errors of the disk reach the agent as the reference says an OSError. */
START_TEST(test_filetool_quota_error)
{
	const char *extra[] = { "--quota-bytes", "65536", NULL };
	char *content = calloc(1, 70001);

	teardown();
	mount_with(extra);
	memset(content, 'q', 70000);
	ERR_TEXT(write_path(WS "/q.txt", content),
		 "Error: Failed to write file '" WS "/q.txt': OSError: [Errno 122] Disk quota "
		 "exceeded: '" WS "/q.txt'");
}
END_TEST

/* tool_call_as() takes the sandbox's identity: with the view mapping
 * the daemon's user to it, the sandbox works its files, but not a file
 * the view shows as someone else's, though the caller (root) could. */
START_TEST(test_filetool_calls_as_the_sandbox_identity)
{
	const char *extra[] = { "-o", "allow_other", "--map-owner", "12345:12345", NULL };
	struct tool_identity sandbox = { 12345, 12345 };
	struct tool_result r;

	teardown();
	mount_with(extra);
	ck_assert_int_eq(write_file(host("private"), "theirs\n"), 0);
	OK("chown 4242:4242 '%s' && chmod 600 '%s'", host("private"), host("private"));
	json_t *args = json_pack("{s:s}", "path", WS "/private");
	ck_assert_int_eq(tool_call_as(&VIEW, &sandbox, "mcp", "read_file", args, &r), 0);
	ERR_TEXT(&r, "Error: Permission denied reading file: " WS "/private");
	tool_result_free(&r);
	OK_TEXT(read_path(WS "/private"), "theirs\n");
	json_decref(args);
	args = json_pack("{s:s,s:s}", "path", WS "/own.txt", "content", "mine\n");
	ck_assert_int_eq(tool_call_as(&VIEW, &sandbox, "mcp", "write_file", args, &r), 0);
	OK_TEXT(&r, "OK");
	tool_result_free(&r);
	json_decref(args);
	struct stat st;
	ck_assert_int_eq(stat(host("own.txt"), &st), 0);
	ck_assert_int_eq(st.st_uid, getuid()); /* the daemon's user, on the host */
	/* Not the sandbox's to write: a permission error, not the gate's
	 * (whose message would send the agent to read it first). */
	OK("chmod 644 '%s'", host("private"));
	args = json_pack("{s:s}", "path", WS "/private");
	ck_assert_int_eq(tool_call_as(&VIEW, &sandbox, "mcp", "read_file", args, &r), 0);
	OK_TEXT(&r, "theirs\n");
	tool_result_free(&r);
	json_decref(args);
	args = json_pack("{s:s,s:s}", "path", WS "/private", "content", "mine\n");
	ck_assert_int_eq(tool_call_as(&VIEW, &sandbox, "mcp", "write_file", args, &r), 0);
	ERR_TEXT(&r, "Error: Permission denied writing to file: " WS "/private");
	tool_result_free(&r);
	json_decref(args);
	SAME(read_file(host("private")), "theirs\n");
}
END_TEST

/* A read-only tool runs on the caller's own thread (no thread to start:
 * most of a small read_file's time), as the sandbox: the caller's groups
 * do not reach it. The thread is given back as it was - its
 * filesystem ids, groups and command name - since a broker goes on
 * with it as root. */
START_TEST(test_filetool_read_only_call_gives_the_thread_back)
{
	const char *extra[] = { "-o", "allow_other", "--map-owner", "12345:12345", NULL };
	struct tool_identity sandbox = { 12345, 12345 };
	gid_t groups[] = { 4242, 4343 }, now[4];
	char comm[16] = "";
	struct tool_result r;

	teardown();
	mount_with(extra);
	ck_assert_int_eq(write_file(host("grouped"), "the group's\n"), 0);
	OK("chown 4242:4242 '%s' && chmod 640 '%s'", host("grouped"), host("grouped"));
	ck_assert_int_eq(syscall(SYS_setgroups, 2, groups), 0);
	ck_assert_int_eq(prctl(PR_SET_NAME, "caller", 0, 0, 0), 0);
	json_t *args = json_pack("{s:s}", "path", WS "/grouped");
	ck_assert_int_eq(tool_call_as(&VIEW, &sandbox, "mcp", "read_file", args, &r), 0);
	ERR_TEXT(&r, "Error: Permission denied reading file: " WS "/grouped");
	tool_result_free(&r);
	json_decref(args);
	ck_assert_int_eq(syscall(SYS_setfsuid, -1), 0);
	ck_assert_int_eq(syscall(SYS_setfsgid, -1), 0);
	ck_assert_int_eq(getgroups(4, now), 2);
	ck_assert(now[0] == 4242 && now[1] == 4343);
	ck_assert_int_eq(prctl(PR_GET_NAME, comm, 0, 0, 0), 0);
	ck_assert_str_eq(comm, "caller");
	/* And it is root again: what the sandbox could not read, it can. */
	args = json_pack("{s:s}", "path", WS "/grouped");
	struct tool_identity root = { 0, 0 };
	ck_assert_int_eq(tool_call_as(&VIEW, &root, "mcp", "read_file", args, &r), 0);
	OK_TEXT(&r, "the group's\n");
	tool_result_free(&r);
	json_decref(args);
}
END_TEST

Suite *suite_view_filetool(void)
{
	Suite *s = suite_create("view_filetool");
	TCase *tc = tcase_create("filetool");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_filetool_write_makes_parents_and_reads_back);
	tcase_add_test(tc, test_filetool_read_errors);
	tcase_add_test(tc, test_filetool_read_is_cut_at_its_head);
	tcase_add_test(tc, test_filetool_writes_follow_read_before_write);
	tcase_add_test(tc, test_filetool_refusal_says_what_changed);
	tcase_add_test(tc, test_filetool_str_replace);
	tcase_add_test(tc, test_filetool_write_errors);
	tcase_add_test(tc, test_filetool_read_only_families);
	tcase_add_test(tc, test_filetool_disabled_skill);
	tcase_add_test(tc, test_filetool_symlinks_never_leave_the_view);
	tcase_add_test(tc, test_filetool_ls);
	tcase_add_test(tc, test_filetool_ls_is_cut_at_its_head);
	tcase_add_test(tc, test_filetool_glob);
	tcase_add_test(tc, test_filetool_grep);
	tcase_add_test(tc, test_filetool_grep_limits);
	tcase_add_test(tc, test_filetool_grep_reads_lines_as_python);
	tcase_add_test(tc, test_filetool_journal_names_the_tool);
	tcase_add_test(tc, test_filetool_overwrite_is_seen_whole_on_the_host);
	tcase_add_test(tc, test_filetool_quota_error);
	tcase_add_test(tc, test_filetool_calls_as_the_sandbox_identity);
	tcase_add_test(tc, test_filetool_read_only_call_gives_the_thread_back);
	suite_add_tcase(s, tc);
	return s;
}
