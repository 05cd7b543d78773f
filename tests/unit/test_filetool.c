/* The file tools' rules that need no view (tool/): the access policy of
 * virtual paths, the ignored names, glob patterns, the truncation
 * markers, text as the reference's text mode reads it (line ranges,
 * line ends, UTF-8 errors), the tools' specs and their argument
 * checks. */
#include "tool/fs.h"
#include "tool/ignore.h"
#include "tool/lines.h"
#include "tool/match.h"
#include "tool/path.h"
#include "tool/search.h"
#include "tool/text.h"
#include "tool/tool.h"
#include "tests/harness.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

static bool mount_data(void *arg, const char *name)
{
	(void)arg;
	return !strcmp(name, "data");
}

static const struct {
	const char *vpath;
	bool write;
	enum path_verdict verdict;
	const char *rel;
} policy[] = {
	{ "/mnt/user-data/workspace/a.txt", true, PATH_OK, "user-data/workspace/a.txt" },
	{ "/mnt/user-data/uploads", false, PATH_OK, "user-data/uploads" },
	{ "/mnt/user-data/outputs/", true, PATH_OK, "user-data/outputs/" },
	{ "/mnt/user-data", false, PATH_OUTSIDE, NULL },
	{ "/mnt/user-data/", false, PATH_TRAVERSAL, NULL },
	{ "/mnt/user-data/other/x", false, PATH_TRAVERSAL, NULL },
	{ "/mnt/user-data/workspacex/y", true, PATH_TRAVERSAL, NULL },
	{ "/mnt/user-data/workspace/../../etc", false, PATH_TRAVERSAL, NULL },
	{ "/mnt/user-data/workspace/..", false, PATH_TRAVERSAL, NULL },
	{ "/mnt/user-data/workspace/a\\..\\b", false, PATH_TRAVERSAL, NULL },
	{ "/mnt/user-data/workspace/..x", false, PATH_OK, "user-data/workspace/..x" },
	{ "/mnt/skills/public/s/SKILL.md", false, PATH_OK, "skills/public/s/SKILL.md" },
	{ "/mnt/skills", false, PATH_OK, "skills" },
	{ "/mnt/skills/public/s/SKILL.md", true, PATH_SKILLS_RO, NULL },
	{ "/mnt/skills-extra/x", false, PATH_OUTSIDE, NULL },
	{ "/mnt/acp-workspace/x", false, PATH_OK, "acp-workspace/x" },
	{ "/mnt/acp-workspace/x", true, PATH_ACP_RO, NULL },
	{ "/mnt/data/x", true, PATH_OK, "data/x" },
	{ "/mnt/data", false, PATH_OK, "data" },
	{ "/mnt/datax/x", false, PATH_OUTSIDE, NULL },
	{ "/mnt", false, PATH_OUTSIDE, NULL },
	{ "/mnt/", false, PATH_OUTSIDE, NULL },
	{ "/etc/passwd", false, PATH_OUTSIDE, NULL },
	{ "user-data/workspace/a", false, PATH_OUTSIDE, NULL },
	{ "/mnt//user-data/workspace/a", false, PATH_OUTSIDE, NULL },
	{ "", false, PATH_OUTSIDE, NULL },
};

START_TEST(test_filetool_path_policy)
{
	const char *rel = NULL;
	enum path_family family;
	enum path_verdict v = path_check(policy[_i].vpath, policy[_i].write, mount_data, NULL, &rel,
					 &family);

	ck_assert_msg(v == policy[_i].verdict, "%s: verdict %d, not %d", policy[_i].vpath, v,
		      policy[_i].verdict);
	if (v == PATH_OK)
		ck_assert_str_eq(rel, policy[_i].rel);
}
END_TEST

/* The reference's texts, each with its path. */
START_TEST(test_filetool_path_messages)
{
	struct tool_result r = { 0 };

	ck_assert_int_eq(path_refuse(PATH_OUTSIDE, "/etc", &r), 0);
	ck_assert(r.is_error);
	ck_assert_str_eq(r.text, "Error: Only paths under /mnt/user-data/, /mnt/skills/, "
				 "/mnt/acp-workspace/, or configured mount paths are allowed");
	ck_assert_int_eq(path_refuse(PATH_SKILLS_RO, "/mnt/skills/x", &r), 0);
	ck_assert_str_eq(r.text,
			 "Error: Write access to skills path is not allowed: /mnt/skills/x");
	ck_assert_int_eq(path_refuse(PATH_ACP_RO, "/mnt/acp-workspace/x", &r), 0);
	ck_assert_str_eq(
		r.text,
		"Error: Write access to ACP workspace is not allowed: /mnt/acp-workspace/x");
	ck_assert_int_eq(path_refuse(PATH_MOUNT_RO, "/mnt/data/x", &r), 0);
	ck_assert_str_eq(r.text,
			 "Error: Write access to read-only mount is not allowed: /mnt/data/x");
	ck_assert_int_eq(path_refuse(PATH_TRAVERSAL, "/mnt/user-data/x", &r), 0);
	ck_assert_str_eq(r.text, "Error: Access denied: path traversal detected");
	ck_assert_int_eq(path_refuse(PATH_ESCAPE, "/mnt/user-data/x", &r), 0);
	ck_assert_str_eq(r.text, "Error: Access denied: path escapes mounted directory");
	tool_result_free(&r);
}
END_TEST

/* A symlink's target decides where a write goes. */
START_TEST(test_filetool_resolved_family)
{
	enum path_family f;

	ck_assert_int_eq(path_check_resolved("skills/public/x", true, &f), PATH_SKILLS_RO);
	ck_assert_int_eq(path_check_resolved("skills/public/x", false, &f), PATH_OK);
	ck_assert_int_eq(path_check_resolved("acp-workspace/x", true, &f), PATH_ACP_RO);
	ck_assert_int_eq(path_check_resolved("user-data/outputs/x", true, &f), PATH_OK);
	ck_assert_int_eq(f, FAMILY_USER_DATA);
	ck_assert_int_eq(path_check_resolved("data/x", true, &f), PATH_OK);
	ck_assert_int_eq(f, FAMILY_MOUNT);
}
END_TEST

START_TEST(test_filetool_ignored_names)
{
	const char *ignored[] = { ".git",    "node_modules", "__pycache__", ".venv",
				  "build",   "dist",	     ".DS_Store",   "x.egg-info",
				  "a.swp",   "notes~",	     "debug.log",   ".upload-abc.part",
				  "old.bak", "x.cache",	     ".ruff_cache", "Thumbs.db" };
	const char *kept[] = { "src",	  "Build",	"build.py",  "git",
			       "log.txt", "a.logx",	".upload-x", "upload-x.part",
			       "README",  ".gitignore", "cache",     "x.Log" };

	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		ck_assert_msg(ignore_name(ignored[i]), "%s is not ignored", ignored[i]);
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		ck_assert_msg(!ignore_name(kept[i]), "%s is ignored", kept[i]);
}
END_TEST

static const struct {
	const char *pattern, *rel;
	bool match;
} globs[] = {
	{ "*.py", "a.py", true },
	{ "*.py", "src/deep/a.py", true }, /* right-anchored */
	{ "*.py", "a.pyc", false },
	{ "src/*.py", "src/a.py", true },
	{ "src/*.py", "x/src/a.py", true },
	{ "src/*.py", "src/b/a.py", false },
	{ "**/*.py", "a.py", true }, /* the "**" + "/" fallback */
	{ "**/*.py", "a/b/c.py", true },
	{ "**/b/*.py", "a/b/c.py", true },
	{ "a/**/c.py", "a/x/y/c.py", false }, /* "**" is "*", one component */
	{ "a/**/c.py", "a/x/c.py", true },
	{ "?.txt", "\xc3\xa9.txt", true }, /* a code point, not a byte */
	{ "[ab].txt", "b.txt", true },
	{ "[!ab].txt", "b.txt", false },
	{ "[!ab].txt", "c.txt", true },
	{ "[a-c]x", "bx", true },
	{ "[]]x", "]x", true },
	{ "[x", "[x", true },	   /* no closing bracket: literal */
	{ "*.PY", "a.py", false }, /* case-sensitive */
	{ "./*.py", "a.py", true },
	{ "src//*.py", "src/a.py", true },
	{ "/abs/*.py", "abs/a.py", false },
	{ "*", "a/b", true },
	{ "a*b*c", "aXbYc", true },
	{ "a*b*c", "aXbYcZ", false },
};

START_TEST(test_filetool_glob_patterns)
{
	ck_assert_msg(match_path(globs[_i].pattern, globs[_i].rel) == globs[_i].match,
		      "%s vs %s: %d", globs[_i].pattern, globs[_i].rel, !globs[_i].match);
}
END_TEST

START_TEST(test_filetool_empty_patterns)
{
	ck_assert(!match_pattern_valid(""));
	ck_assert(!match_pattern_valid("."));
	ck_assert(!match_pattern_valid("./"));
	ck_assert(match_pattern_valid("*"));
	ck_assert(match_pattern_valid("/"));
}
END_TEST

/* The reference's formulas: the marker sized for its longest, the
 * result never past the limit. */
START_TEST(test_filetool_head_truncation)
{
	char s[1001];
	size_t kept;

	memset(s, 'x', 1000);
	s[1000] = '\0';
	ck_assert_str_eq(text_head("abc", 3, 3, READ_HINT, &kept), "abc");
	ck_assert_uint_eq(kept, 3);
	ck_assert_str_eq(text_head("abc", 3, 0, READ_HINT, NULL), "abc");
	char *t = text_head(s, 1000, 200, READ_HINT, &kept);
	/* The marker is 104 characters with both counts at 1000. */
	ck_assert_uint_eq(kept, 200 - 104);
	char want[400];
	snprintf(want, sizeof(want),
		 "%.*s\n... [truncated: showing first 96 of 1000 chars. Use start_line/end_line "
		 "to read a specific range] ...",
		 96, s);
	ck_assert_str_eq(t, want);
	t = text_head(s, 1000, 150, LS_HINT, &kept);
	ck_assert_uint_eq(kept, 150 - 101);
	ck_assert_str_eq(t + kept, "\n... [truncated: showing first 49 of 1000 chars. Use a more "
				   "specific path to see fewer results] ...");
	/* No room for the marker: the head alone. */
	ck_assert_str_eq(text_head(s, 1000, 5, READ_HINT, &kept), "xxxxx");
	/* Characters, not bytes. */
	ck_assert_str_eq(text_head("\xc3\xa9\xc3\xa9\xc3\xa9", 3, 2, READ_HINT, NULL),
			 "\xc3\xa9\xc3\xa9");
}
END_TEST

START_TEST(test_filetool_middle_truncation)
{
	char s[3001];

	memset(s, 'a', 1500);
	memset(s + 1500, 'b', 1500);
	s[3000] = '\0';
	char *t = text_middle(s, 2000, "write_file error");
	/* The marker at its longest (3000 skipped) is 58 characters: 1942
	 * of S are kept, half on each side. */
	ck_assert_ptr_nonnull(strstr(t, "a\n... [write_file error truncated: 1058 chars skipped] "
					"...\nb"));
	ck_assert_uint_eq(strspn(t, "a"), 971);
	ck_assert_uint_eq(strlen(t), 1942 + strlen("\n... [write_file error truncated: 1058 chars "
						   "skipped] ...\n"));
	ck_assert_str_eq(text_middle("short", 2000, "x"), "short");
}
END_TEST

START_TEST(test_filetool_line_summary)
{
	char line[400];

	ck_assert_str_eq(text_line_summary("hit\r\n", 5), "hit");
	memset(line, 'y', 300);
	char *t = text_line_summary(line, 300);
	ck_assert_uint_eq(strlen(t), 200);
	ck_assert_str_eq(t + 197, "...");
	memset(line, 'z', 200);
	ck_assert_uint_eq(strlen(text_line_summary(line, 200)), 200);
}
END_TEST

/* TEXT fed to L a byte at a time (every chunk boundary), or whole. */
static struct lines read_lines(const char *text, size_t n, long long start, long long end,
			       bool bytewise)
{
	struct lines l = { .start = start, .end = end };

	for (size_t i = 0; i < n && !l.done && !l.invalid; i += bytewise ? 1 : n)
		ck_assert_int_eq(lines_feed(&l, text + i, bytewise ? 1 : n), 0);
	lines_end(&l);
	return l;
}

static const struct {
	const char *text;
	long long start, end;
	const char *want;
	long long first, last;
} ranges[] = {
	{ "a\nb\nc\n", 0, 0, "a\nb\nc\n", 1, 3 },
	{ "a\r\nb\rc", 0, 0, "a\nb\nc", 1, 3 },
	{ "a\nb\nc\n", 2, 0, "b\nc", 2, 3 },
	{ "a\nb\nc\n", 1, 2, "a\nb", 1, 2 },
	{ "a\n\nc", 1, 3, "a\n\nc", 1, 3 },
	{ "a\n\n", 1, 5, "a\n", 1, 2 },
	{ "a\nb", 3, 0, "", 0, 0 },
	{ "one\r\n\r\nthree\r\n", 2, 3, "\nthree", 2, 3 },
	{ "x\xc3\xa9\ny", 1, 1, "x\xc3\xa9", 1, 1 },
};

START_TEST(test_filetool_line_ranges)
{
	for (int bytewise = 0; bytewise < 2; bytewise++) {
		struct lines l = read_lines(ranges[_i].text, strlen(ranges[_i].text),
					    ranges[_i].start, ranges[_i].end, bytewise);
		ck_assert_ptr_null(l.invalid);
		ck_assert_str_eq(l.text ? l.text : "", ranges[_i].want);
		ck_assert_int_eq(l.first, ranges[_i].first);
		ck_assert_int_eq(l.last, ranges[_i].last);
		lines_free(&l);
	}
}
END_TEST

/* Python's words and positions for what is not UTF-8. */
START_TEST(test_filetool_invalid_utf8)
{
	static const struct {
		const char *text;
		size_t n, at;
		const char *why;
	} bad[] = {
		{ "ab\x89z", 4, 2, "invalid start byte" },
		{ "ab\xc3(", 4, 2, "invalid continuation byte" },
		{ "abc\xe2\x82", 5, 3, "unexpected end of data" },
		{ "\xed\xa0\x80", 3, 0, "invalid continuation byte" }, /* a surrogate */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		for (int bytewise = 0; bytewise < 2; bytewise++) {
			struct lines l = read_lines(bad[i].text, bad[i].n, 0, 0, bytewise);
			ck_assert_str_eq(l.invalid ? l.invalid : "(valid)", bad[i].why);
			ck_assert_uint_eq(l.bad_at, bad[i].at);
			lines_free(&l);
		}
}
END_TEST

/* The first KEEP characters are kept, all are counted. */
START_TEST(test_filetool_lines_keep_a_head)
{
	struct lines l = { .keep_chars = 3 };

	ck_assert_int_eq(lines_feed(&l, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\n", 9), 0);
	lines_end(&l);
	ck_assert_str_eq(l.text, "\xc3\xa9\xc3\xa9\xc3\xa9");
	ck_assert_uint_eq(l.chars, 5);
	lines_free(&l);
}
END_TEST

START_TEST(test_filetool_next_line)
{
	size_t len;

	ck_assert_uint_eq(lines_next("ab\r\ncd", 6, &len), 4);
	ck_assert_uint_eq(len, 2);
	ck_assert_uint_eq(lines_next("ab\rcd", 5, &len), 3);
	ck_assert_uint_eq(lines_next("cd", 2, &len), 2);
	ck_assert_uint_eq(len, 2);
	ck_assert_uint_eq(lines_next("", 0, &len), 0);
}
END_TEST

START_TEST(test_filetool_max_results)
{
	ck_assert_int_eq(search_max(200, 0, 200, 1000), 200);
	/* The configured value (its default when unset) caps a request. */
	ck_assert_int_eq(search_max(5000, 0, 200, 1000), 200);
	ck_assert_int_eq(search_max(5000, 800, 200, 1000), 800);
	ck_assert_int_eq(search_max(5000, 5000, 200, 1000), 1000);
	ck_assert_int_eq(search_max(0, 0, 200, 1000), 200);
	ck_assert_int_eq(search_max(-3, 0, 100, 500), 100);
	ck_assert_int_eq(search_max(300, 50, 100, 500), 50);
	ck_assert_int_eq(search_max(30, 5000, 100, 500), 30);
}
END_TEST

/* Each spec is whole JSON, and the names fit a command name. */
START_TEST(test_filetool_specs)
{
	ck_assert_uint_eq(tool_nspecs, 6);
	for (size_t i = 0; i < tool_nspecs; i++) {
		const struct tool_spec *s = &tool_specs[i];
		json_error_t e;
		json_t *in = json_loads(s->input_schema, 0, &e);
		char comm[64];

		ck_assert_msg(in, "%s: %s", s->name, e.text);
		ck_assert_str_eq(json_string_value(json_object_get(in, "type")), "object");
		ck_assert_ptr_nonnull(json_object_get(json_object_get(in, "properties"), "path"));
		json_decref(in);
		if (s->output_schema) {
			json_t *o = json_loads(s->output_schema, 0, &e);
			ck_assert_msg(o, "%s: %s", s->name, e.text);
			json_decref(o);
		}
		ck_assert(!(s->read_only && s->destructive));
		ck_assert_ptr_eq(tool_spec_find(s->name), s);
		snprintf(comm, sizeof(comm), "mcp:%s", s->name);
		ck_assert_uint_le(strlen(comm), TOOL_COMM_MAX);
		snprintf(comm, sizeof(comm), "aio:%s", s->name);
		ck_assert_uint_le(strlen(comm), TOOL_COMM_MAX);
	}
	ck_assert_ptr_null(tool_spec_find("bash"));
	ck_assert_ptr_nonnull(strstr(tool_spec_find("str_replace")->description, "exactly once"));
}
END_TEST

/* server-filesystem's tools: whole JSON, each with its outputSchema,
 * found in their own set only; the program names of those that write
 * stay apart once cut to a command name. */
START_TEST(test_filetool_fs_specs)
{
	char comms[16][TOOL_COMM_MAX + 1];
	size_t ncomms = 0;

	ck_assert_uint_eq(tool_fs_nspecs, 13);
	for (size_t i = 0; i < tool_fs_nspecs; i++) {
		const struct tool_spec *s = &tool_fs_specs[i];
		json_error_t e;
		json_t *in = json_loads(s->input_schema, 0, &e), *o;

		ck_assert_msg(in, "%s: %s", s->name, e.text);
		ck_assert_str_eq(json_string_value(json_object_get(in, "type")), "object");
		json_decref(in);
		ck_assert_msg((o = json_loads(s->output_schema, 0, &e)), "%s: %s", s->name, e.text);
		json_decref(o);
		ck_assert_ptr_nonnull(s->title);
		ck_assert(!(s->read_only && s->destructive));
		ck_assert_ptr_eq(tool_set_find(TOOL_SET_FILESYSTEM, s->name), s);
		if (s->read_only)
			continue;
		snprintf(comms[ncomms], sizeof(comms[0]), "mcp:%s", s->name);
		for (size_t k = 0; k < ncomms; k++)
			ck_assert_str_ne(comms[k], comms[ncomms]);
		ncomms++;
	}
	ck_assert_ptr_null(tool_set_find(TOOL_SET_FILESYSTEM, "str_replace"));
	ck_assert_ptr_null(tool_set_find(TOOL_SET_FILESYSTEM, "bash"));
	ck_assert_ptr_null(tool_set_find(TOOL_SET_REFERENCE, "edit_file"));
	ck_assert_ptr_eq(tool_set_find(TOOL_SET_REFERENCE, "write_file"),
			 tool_spec_find("write_file"));
}
END_TEST

/* Paths as path.resolve() makes them, and minimatch's globs. */
START_TEST(test_filetool_fs_paths_and_globs)
{
	static const struct {
		const char *in, *out;
	} paths[] = {
		{ "a.txt", "/mnt/user-data/workspace/a.txt" },
		{ "sub/../b", "/mnt/user-data/workspace/b" },
		{ "/mnt/user-data/workspace/../../../etc/passwd", "/etc/passwd" },
		{ "/mnt//user-data/./outputs/", "/mnt/user-data/outputs" },
		{ "../../../../..", "/" },
	};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		char *abs = fs_absolute(paths[i].in);
		ck_assert_str_eq(abs, paths[i].out);
		free(abs);
	}
	ck_assert(fs_glob("**/*.txt", "b.txt"));
	ck_assert(fs_glob("**/*.txt", "deep/er/x.txt"));
	ck_assert(fs_glob("*.txt", "b.txt"));
	ck_assert(!fs_glob("*.txt", "deep/x.txt"));
	ck_assert(fs_glob("deep/**", "deep/er"));
	ck_assert(fs_glob("**/deep/**", "deep/er/x"));
	ck_assert(fs_glob("*", ".hidden")); /* dot: true */
	ck_assert(!fs_glob("c.txt", "sub/c.txt"));
	ck_assert(fs_glob("**/c.txt", "sub/c.txt"));
	ck_assert(!fs_glob("deep", "deep/er"));
}
END_TEST

/* Bad arguments are tool errors naming the argument; nothing is
 * touched (the view's fd is not even valid). */
START_TEST(test_filetool_argument_errors)
{
	static const struct {
		const char *tool, *args, *error;
	} bad[] = {
		{ "read_file", "{}", "Error: missing required argument 'path'" },
		{ "read_file", "{\"path\": 3}", "Error: argument 'path' must be a string" },
		{ "read_file", "{\"path\": \"/mnt/user-data/workspace/a\", \"start_line\": \"2\"}",
		  "Error: argument 'start_line' must be an integer" },
		{ "read_file", "{\"path\": \"/mnt/user-data/workspace/a\", \"start_line\": 1.5}",
		  "Error: argument 'start_line' must be an integer" },
		{ "read_file", "{\"path\": \"/mnt/user-data/workspace/a\", \"start_line\": 0}",
		  "(start_line must be >= 1)" },
		{ "read_file", "{\"path\": \"/mnt/user-data/workspace/a\", \"end_line\": 0}",
		  "(end_line must be >= 1)" },
		{ "read_file",
		  "{\"path\": \"/mnt/user-data/workspace/a\", \"start_line\": 5, \"end_line\": 2}",
		  "(start_line > end_line — no lines in range)" },
		{ "read_file", "{\"path\": \"/mnt/user-data/workspace/a\\u0000b\"}",
		  "Error: argument 'path' must be a string without NUL characters" },
		{ "write_file", "{\"path\": \"/mnt/user-data/workspace/a\"}",
		  "Error: missing required argument 'content'" },
		{ "write_file", "{\"path\": \"/x\", \"content\": \"\", \"append\": \"yes\"}",
		  "Error: argument 'append' must be a boolean" },
		{ "str_replace", "{\"path\": \"/x\", \"old_str\": \"a\"}",
		  "Error: missing required argument 'new_str'" },
		{ "glob", "{\"path\": \"/x\"}", "Error: missing required argument 'pattern'" },
		{ "grep", "{\"pattern\": \"x\", \"path\": \"/x\", \"max_results\": []}",
		  "Error: argument 'max_results' must be an integer" },
		{ "ls", "[]", "Error: the arguments of ls must be a JSON object" },
		{ "ls", "{\"path\": \"/etc\"}",
		  "Error: Only paths under /mnt/user-data/, /mnt/skills/, /mnt/acp-workspace/, or "
		  "configured mount paths are allowed" },
	};
	struct tool_view v = { .root = -1 };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *args = json_loads(bad[i].args, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		struct tool_result r;

		ck_assert_ptr_nonnull(args);
		ck_assert_int_eq(tool_call(&v, bad[i].tool, args, &r), 0);
		ck_assert_msg(r.is_error, "%s %s", bad[i].tool, bad[i].args);
		ck_assert_str_eq(r.text, bad[i].error);
		ck_assert_ptr_null(r.structured);
		tool_result_free(&r);
		json_decref(args);
	}
	struct tool_result r;
	ck_assert_int_eq(tool_call(&v, "rm", json_object(), &r), -ENOENT);
	ck_assert_int_eq(tool_call(&v, "ls", NULL, &r), 0);
	ck_assert(r.is_error);
	tool_result_free(&r);
}
END_TEST

/* The 80 KiB limit comes before the path is looked at; appends have
 * none. */
START_TEST(test_filetool_write_size_limit)
{
	struct tool_view v = { .root = -1 };
	struct tool_result r;
	json_t *args = json_pack("{s:s,s:s%}", "path", "/mnt/user-data/workspace/big", "content",
				 calloc(1, 81 * 1024), (size_t)81 * 1024);
	char want[512];

	ck_assert_int_eq(tool_call(&v, "write_file", args, &r), 0);
	snprintf(want, sizeof(want),
		 "Error: write_file content (%d bytes) exceeds the %d-byte single-call limit. "
		 "Split the content into smaller pieces: either (a) write the first section now, "
		 "then use `str_replace` for further edits, or (b) call write_file again with "
		 "append=True carrying the next section. See SIZE POLICY in the tool docstring or "
		 "issue #3189 for the rationale.",
		 81 * 1024, 80 * 1024);
	ck_assert_str_eq(r.text, want);
	tool_result_free(&r);
	/* A limit configured off lets it through to the path (here: no
	 * view, so an error of another kind). */
	struct tool_limits off = tool_limits_default;
	off.write_max_bytes = 0;
	v.limits = &off;
	ck_assert_int_eq(tool_call(&v, "write_file", args, &r), 0);
	ck_assert_ptr_null(strstr(r.text, "single-call limit"));
	tool_result_free(&r);
	json_decref(args);
}
END_TEST

/* A caller that may not take the identity is told so (setfsuid() itself
 * reports no error); its own ids need no privilege. */
START_TEST(test_filetool_identity_refused_without_privilege)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct tool_view v = { .root = -1 };
		struct tool_identity other = { 12345, 12345 }, self = { 65534, 65534 };
		struct tool_result r;
		json_t *args = json_pack("{s:s}", "path", "/mnt/user-data/workspace");
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
			_exit(2);
		if (tool_call_as(&v, &other, "mcp", "ls", args, &r) != -EPERM)
			_exit(3);
		if (tool_call_as(&v, &self, "mcp", "ls", args, &r) != 0 || !r.is_error)
			_exit(4);
		_exit(0);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %d", status);
}
END_TEST

Suite *suite_unit_filetool(void)
{
	Suite *s = suite_create("unit_filetool");
	TCase *tc = tcase_create("filetool");

	tcase_add_loop_test(tc, test_filetool_path_policy, 0, sizeof(policy) / sizeof(policy[0]));
	tcase_add_test(tc, test_filetool_path_messages);
	tcase_add_test(tc, test_filetool_resolved_family);
	tcase_add_test(tc, test_filetool_ignored_names);
	tcase_add_loop_test(tc, test_filetool_glob_patterns, 0, sizeof(globs) / sizeof(globs[0]));
	tcase_add_test(tc, test_filetool_empty_patterns);
	tcase_add_test(tc, test_filetool_head_truncation);
	tcase_add_test(tc, test_filetool_middle_truncation);
	tcase_add_test(tc, test_filetool_line_summary);
	tcase_add_loop_test(tc, test_filetool_line_ranges, 0, sizeof(ranges) / sizeof(ranges[0]));
	tcase_add_test(tc, test_filetool_invalid_utf8);
	tcase_add_test(tc, test_filetool_lines_keep_a_head);
	tcase_add_test(tc, test_filetool_next_line);
	tcase_add_test(tc, test_filetool_max_results);
	tcase_add_test(tc, test_filetool_specs);
	tcase_add_test(tc, test_filetool_fs_specs);
	tcase_add_test(tc, test_filetool_fs_paths_and_globs);
	tcase_add_test(tc, test_filetool_argument_errors);
	tcase_add_test(tc, test_filetool_write_size_limit);
	tcase_add_test(tc, test_filetool_identity_refused_without_privilege);
	suite_add_tcase(s, tc);
	return s;
}
