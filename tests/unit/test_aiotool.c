/* The AIO set's file tools (tool/aio.h) on a plain directory standing
 * for the view's mount point: each tool's data, line ranges, encodings,
 * appends, listings' order, filters and depth, grep's context, offset,
 * truncation and limits, each error_type, the validation errors, and
 * the download's open. The gate is the view's: tests/integ/test_broker.c
 * has it. */
#include "tool/aio.h"
#include "tool/tool.h"
#include "tests/cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char ROOT[PATH_MAX];
static struct tool_view V = { .set = TOOL_SET_AIO, .root = -1 };

#define WS "/mnt/user-data/workspace"

/* ROOT/user-data/workspace/REL (a heap string the test may leak). */
static char *host(const char *rel)
{
	return fmt_cmd("%s/user-data/workspace/%s", ROOT, rel);
}

static void put(const char *rel, const char *content)
{
	OK("mkdir -p \"$(dirname '%s')\"", host(rel));
	ck_assert_int_eq(write_file(host(rel), content), 0);
}

static void setup(void)
{
	snprintf(ROOT, sizeof(ROOT), "%s", test_dir("aio"));
	OK("cd '%s' && mkdir -p user-data/workspace user-data/uploads user-data/outputs "
	   "skills/public/s && echo skill > skills/public/s/SKILL.md",
	   ROOT);
	V.root = open(ROOT, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(V.root, 0);
}

static void teardown(void)
{
	if (V.root >= 0)
		close(V.root);
	V.root = -1;
}

/* TOOL with ARGS (JSON text) as the test process: the result. */
static struct tool_result *call(const char *tool, const char *args)
{
	struct tool_result *r = calloc(1, sizeof(*r));
	json_error_t err;
	json_t *a = json_loads(args, JSON_ALLOW_NUL, &err);

	ck_assert_msg(a, "%s: %s", args, err.text);
	ck_assert_int_eq(tool_call(&V, tool, a, r), 0);
	ck_assert_ptr_nonnull(r->text);
	json_decref(a);
	return r;
}

/* The JSON text of R's structured data, keys sorted. */
static char *data_of(const struct tool_result *r)
{
	ck_assert_ptr_nonnull(r->structured);
	return json_dumps(r->structured, JSON_SORT_KEYS | JSON_COMPACT);
}

/* A success: its data. */
static char *ok(const char *tool, const char *args)
{
	struct tool_result *r = call(tool, args);

	ck_assert_msg(!r->is_error, "%s %s: %s", tool, args, r->text);
	return data_of(r);
}

/* A FileOperationError: "ERROR_TYPE ERRNO_NAME EXCEPTION_TYPE: MESSAGE"
 * (its operation and path checked against OP and PATH). */
static char *failed(const char *tool, const char *args, const char *op, const char *path)
{
	struct tool_result *r = call(tool, args);
	json_t *d = r->structured;

	ck_assert_msg(r->is_error, "not an error: %s", r->text);
	ck_assert_msg(json_object_get(d, "error_type"), "%s", data_of(r));
	SAME(json_string_value(json_object_get(d, "operation")), op);
	SAME(json_string_value(json_object_get(d, "path")), path);
	SAME(json_string_value(json_object_get(d, "message")), r->text);
	ck_assert(json_is_boolean(json_object_get(d, "retryable")));
	return fmt_cmd("%s %s %s: %s", json_string_value(json_object_get(d, "error_type")),
		       json_string_value(json_object_get(d, "errno_name")) ?: "null",
		       json_string_value(json_object_get(d, "exception_type")), r->text);
}

/* A validation error: its one item's JSON. */
static char *invalid(const char *tool, const char *args)
{
	struct tool_result *r = call(tool, args);
	json_t *v = json_object_get(r->structured, "validation");

	ck_assert_msg(r->is_error && json_array_size(v) == 1, "%s", r->text);
	return json_dumps(json_array_get(v, 0), JSON_SORT_KEYS | JSON_COMPACT);
}

/* Arguments refused before anything is done: pydantic's words, which
 * the HTTP layer answers 422. */
static const struct {
	const char *tool, *args, *want;
} invalids[] = {
	{ "file_read", "{}",
	  "{\"loc\":[\"body\",\"file\"],\"msg\":\"Field required\",\"type\":\"missing\"}" },
	{ "file_read", "{\"file\": null}",
	  "{\"loc\":[\"body\",\"file\"],\"msg\":\"Input should be a valid "
	  "string\",\"type\":\"string_type\"}" },
	{ "file_read", "{\"file\": \"a.txt\", \"start_line\": \"1\"}",
	  "{\"loc\":[\"body\",\"start_line\"],\"msg\":\"Input should be a valid "
	  "integer\",\"type\":\"int_type\"}" },
	{ "file_read", "{\"file\": \"a\\u0000b\"}",
	  "{\"loc\":[\"body\",\"file\"],\"msg\":\"String should have no NUL "
	  "character\",\"type\":\"value_error\"}" },
	{ "file_write",
	  "{\"file\": \"x.bin\", \"content\": \"not base64!\", \"encoding\": "
	  "\"base64\"}",
	  "{\"loc\":[\"body\",\"content\"],\"msg\":\"Invalid base64-encoded "
	  "string\",\"type\":\"value_error\"}" },
	{ "file_write", "{\"file\": \"x.bin\", \"content\": \"YQ=a\", \"encoding\": \"base64\"}",
	  "{\"loc\":[\"body\",\"content\"],\"msg\":\"Invalid base64-encoded "
	  "string\",\"type\":\"value_error\"}" },
	{ "file_write", "{\"file\": \"x.bin\", \"content\": \"Y\", \"encoding\": \"base64\"}",
	  "{\"loc\":[\"body\",\"content\"],\"msg\":\"Invalid base64-encoded "
	  "string\",\"type\":\"value_error\"}" },
	{ "file_write", "{\"file\": \"x.bin\", \"content\": \"YQ===\", \"encoding\": \"base64\"}",
	  "{\"loc\":[\"body\",\"content\"],\"msg\":\"Invalid base64-encoded "
	  "string\",\"type\":\"value_error\"}" },
	{ "file_write", "{\"file\": \"x.bin\", \"content\": \"Y Q =\", \"encoding\": \"base64\"}",
	  "{\"loc\":[\"body\",\"content\"],\"msg\":\"Invalid base64-encoded "
	  "string\",\"type\":\"value_error\"}" },
	{ "file_write", "{\"file\": \"x\", \"content\": \"a\", \"encoding\": \"latin-1\"}",
	  "{\"loc\":[\"body\",\"encoding\"],\"msg\":\"Input should be 'utf-8', 'base64' or "
	  "'raw'\",\"type\":\"enum\"}" },
	{ "file_write", "{\"file\": \"x\"}",
	  "{\"loc\":[\"body\",\"content\"],\"msg\":\"Field required\",\"type\":\"missing\"}" },
	{ "file_write", "{\"file\": \"x\", \"content\": \"a\", \"append\": \"yes\"}",
	  "{\"loc\":[\"body\",\"append\"],\"msg\":\"Input should be a valid "
	  "boolean\",\"type\":\"bool_type\"}" },
	{ "file_find", "{\"path\": \"t\", \"glob\": \"\"}",
	  "{\"loc\":[\"body\",\"glob\"],\"msg\":\"Pattern should not be "
	  "empty\",\"type\":\"value_error\"}" },
	{ "file_find", "{\"path\": \"t\"}",
	  "{\"loc\":[\"body\",\"glob\"],\"msg\":\"Field required\",\"type\":\"missing\"}" },
	{ "file_list", "{\"path\": \"l\", \"sort_by\": \"path\"}",
	  "{\"loc\":[\"body\",\"sort_by\"],\"msg\":\"Input should be 'name', 'size', 'modified' "
	  "or 'type'\",\"type\":\"enum\"}" },
	{ "file_list", "{\"path\": \"l\", \"max_depth\": 0}",
	  "{\"loc\":[\"body\",\"max_depth\"],\"msg\":\"Input should be greater than "
	  "0\",\"type\":\"greater_than\"}" },
	{ "file_list", "{\"path\": \"l\", \"file_types\": \".py\"}",
	  "{\"loc\":[\"body\",\"file_types\"],\"msg\":\"Input should be a valid list of "
	  "strings\",\"type\":\"list_type\"}" },
	{ "file_grep", "{\"path\": \"g\", \"pattern\": \"(\"}",
	  "{\"loc\":[\"body\",\"pattern\"],\"msg\":\"Invalid regex pattern: missing closing "
	  "parenthesis at position 1\",\"type\":\"value_error\"}" },
	{ "file_grep", "{\"path\": \"g\", \"pattern\": \"x\", \"context_after\": 21}",
	  "{\"loc\":[\"body\",\"context_after\"],\"msg\":\"Input should be less than or equal to "
	  "20\",\"type\":\"less_than_equal\"}" },
	{ "file_grep", "{\"path\": \"g\", \"pattern\": \"x\", \"context_before\": -1}",
	  "{\"loc\":[\"body\",\"context_before\"],\"msg\":\"Input should be greater than or "
	  "equal to 0\",\"type\":\"greater_than_equal\"}" },
	{ "file_grep", "{\"path\": \"g\", \"pattern\": \"x\", \"max_results\": 0}",
	  "{\"loc\":[\"body\",\"max_results\"],\"msg\":\"Input should be greater than or equal "
	  "to 1\",\"type\":\"greater_than_equal\"}" },
	{ "file_grep", "{\"path\": \"g\", \"pattern\": \"x\", \"offset\": -3}",
	  "{\"loc\":[\"body\",\"offset\"],\"msg\":\"Input should be greater than or equal to "
	  "0\",\"type\":\"greater_than_equal\"}" },
	{ "file_grep", "{\"path\": \"g\", \"pattern\": \"x\", \"max_file_size\": \"1X\"}",
	  "{\"loc\":[\"body\",\"max_file_size\"],\"msg\":\"Input should be a size: bytes, or a "
	  "number and K, M or G\",\"type\":\"value_error\"}" },
	{ "file_grep", "{\"path\": \"g\", \"pattern\": \"x\", \"include\": [1]}",
	  "{\"loc\":[\"body\",\"include\"],\"msg\":\"Input should be a valid list of "
	  "strings\",\"type\":\"list_type\"}" },
	{ "file_grep", "{\"path\": \"g\"}",
	  "{\"loc\":[\"body\",\"pattern\"],\"msg\":\"Field required\",\"type\":\"missing\"}" },
};

START_TEST(test_aio_validation)
{
	SAME(invalid(invalids[_i].tool, invalids[_i].args), invalids[_i].want);
	ck_assert(!exists(host("x")) && !exists(host("x.bin")));
}
END_TEST

/* Filesystem failures, each tool's: the FileOperationError as
 * "ERROR_TYPE ERRNO_NAME EXCEPTION_TYPE: MESSAGE". */
static const struct {
	const char *tool, *args, *op, *path, *want;
} failures[] = {
	{ "file_read", "{\"file\": \"missing\"}", "read", WS "/missing",
	  "not_found ENOENT FileNotFoundError: FileNotFoundError: [Errno 2] No such file or "
	  "directory: '" WS "/missing'" },
	{ "file_read", "{\"file\": \"dir\"}", "read", WS "/dir",
	  "is_a_directory EISDIR IsADirectoryError: IsADirectoryError: [Errno 21] Is a "
	  "directory: '" WS "/dir'" },
	{ "file_read", "{\"file\": \"a.txt/x\"}", "read", WS "/a.txt/x",
	  "not_a_directory ENOTDIR NotADirectoryError: NotADirectoryError: [Errno 20] Not a "
	  "directory: '" WS "/a.txt/x'" },
	{ "file_read", "{\"file\": \"fifo\"}", "read", WS "/fifo",
	  "not_a_regular_file EINVAL OSError: OSError: [Errno 22] Invalid argument: "
	  "'" WS "/fifo'" },
	{ "file_read", "{\"file\": \"img.png\"}", "read", WS "/img.png",
	  "decode_error null UnicodeDecodeError: 'utf-8' codec can't decode byte 0x89 in "
	  "position 3: invalid start byte" },
	{ "file_read", "{\"file\": \"/etc/passwd\"}", "read", "/etc/passwd",
	  "permission_denied EACCES PermissionError: Only paths under /mnt/user-data/, "
	  "/mnt/skills/, /mnt/acp-workspace/, or configured mount paths are allowed" },
	{ "file_read", "{\"file\": \"../../../etc/passwd\"}", "read", WS "/../../../etc/passwd",
	  "permission_denied EACCES PermissionError: Access denied: path traversal detected" },
	{ "file_read", "{\"file\": \"out\"}", "read", WS "/out",
	  "permission_denied EACCES PermissionError: Access denied: path escapes mounted "
	  "directory" },
	{ "file_read", "{\"file\": \"up/etc/passwd\"}", "read", WS "/up/etc/passwd",
	  "permission_denied EACCES PermissionError: Access denied: path escapes mounted "
	  "directory" },
	{ "file_write", "{\"file\": \"" WS "\", \"content\": \"x\"}", "write", WS,
	  "is_a_directory EISDIR IsADirectoryError: IsADirectoryError: [Errno 21] Is a "
	  "directory: '" WS "'" },
	{ "file_write", "{\"file\": \"plain/x\", \"content\": \"x\"}", "write", WS "/plain/x",
	  "not_a_directory ENOTDIR NotADirectoryError: NotADirectoryError: [Errno 20] Not a "
	  "directory: '" WS "/plain/x'" },
	{ "file_write",
	  "{\"file\": \"/mnt/skills/public/s/SKILL.md\", \"content\": "
	  "\"x\"}",
	  "write", "/mnt/skills/public/s/SKILL.md",
	  "permission_denied EACCES PermissionError: Write access to skills path is not allowed: "
	  "/mnt/skills/public/s/SKILL.md" },
	{ "file_find", "{\"path\": \"t/a.py\", \"glob\": \"*\"}", "find", WS "/t/a.py",
	  "not_a_directory ENOTDIR NotADirectoryError: NotADirectoryError: [Errno 20] Not a "
	  "directory: '" WS "/t/a.py'" },
	{ "file_find", "{\"path\": \"nope\", \"glob\": \"*\"}", "find", WS "/nope",
	  "not_found ENOENT FileNotFoundError: FileNotFoundError: [Errno 2] No such file or "
	  "directory: '" WS "/nope'" },
	{ "file_list", "{\"path\": \"l/a.txt\"}", "list", WS "/l/a.txt",
	  "not_a_directory ENOTDIR NotADirectoryError: NotADirectoryError: [Errno 20] Not a "
	  "directory: '" WS "/l/a.txt'" },
	{ "file_grep", "{\"path\": \"none\", \"pattern\": \"x\"}", "grep", WS "/none",
	  "not_found ENOENT FileNotFoundError: FileNotFoundError: [Errno 2] No such file or "
	  "directory: '" WS "/none'" },
};

/* A workspace with one of everything the failures need. */
static void failure_tree(void)
{
	static const unsigned char png[] = { 'o', 'k', '\n', 0x89, 'P', 'N', 'G' };

	put("a.txt", "a\n");
	put("plain", "x");
	put("t/a.py", "");
	put("l/a.txt", "");
	OK("cd '%s' && mkdir dir && mkfifo fifo && ln -s /etc/passwd out && ln -s ../../.. up",
	   host(""));
	int fd = open(host("img.png"), O_WRONLY | O_CREAT, 0644);
	ck_assert_int_eq(write(fd, png, sizeof(png)), (ssize_t)sizeof(png));
	close(fd);
}

START_TEST(test_aio_failures)
{
	failure_tree();
	SAME(failed(failures[_i].tool, failures[_i].args, failures[_i].op, failures[_i].path),
	     failures[_i].want);
}
END_TEST

START_TEST(test_aio_specs)
{
	ck_assert_uint_eq(tool_aio_nspecs, 5);
	for (size_t i = 0; i < tool_aio_nspecs; i++) {
		const struct tool_spec *s = &tool_aio_specs[i];
		ck_assert_msg(strlen("aio:") + strlen(s->name) <= TOOL_COMM_MAX, "%s", s->name);
		ck_assert_ptr_eq(tool_set_find(TOOL_SET_AIO, s->name), s);
		ck_assert_ptr_null(tool_set_find(TOOL_SET_REFERENCE, s->name));
		json_t *in = json_loads(s->input_schema, 0, NULL);
		json_t *out = json_loads(s->output_schema, 0, NULL);
		ck_assert_msg(in && out, "%s's schemas", s->name);
		json_decref(in);
		json_decref(out);
	}
	ck_assert_ptr_null(tool_set_find(TOOL_SET_AIO, "read_file"));
}
END_TEST

static const struct {
	const char *file, *args, *content;
} ranges[] = {
	{ "a\nb\nc\n", "", "a\nb\nc\n" },
	{ "a\nb\nc\n", ", \"start_line\": 1", "b\nc\n" },
	{ "a\nb\nc\n", ", \"end_line\": 2", "a\nb\n" },
	{ "a\nb\nc\n", ", \"start_line\": 1, \"end_line\": 2", "b\n" },
	{ "a\nb\nc\n", ", \"start_line\": 3", "" },
	{ "a\nb\nc\n", ", \"start_line\": 7, \"end_line\": 9", "" },
	{ "a\nb\nc\n", ", \"end_line\": 10", "a\nb\nc\n" },
	{ "a\nb\nc\n", ", \"start_line\": 2, \"end_line\": 1", "" },
	{ "a\nb\nc\n", ", \"start_line\": 0, \"end_line\": 0", "" },
	{ "a\nb\nc\n", ", \"start_line\": -1", "c\n" },
	{ "a\nb\nc\n", ", \"start_line\": -9", "a\nb\nc\n" },
	{ "a\nb\nc\n", ", \"end_line\": -1", "a\nb\n" },
	{ "a\nb\nc\n", ", \"start_line\": -2, \"end_line\": -1", "b\n" },
	{ "a\nb\nc\n", ", \"start_line\": 1, \"end_line\": -5", "" },
	{ "a\nb\nc\n", ", \"start_line\": null, \"end_line\": 1.0", "a\n" },
	{ "a\nb", ", \"start_line\": 1", "b" },
	{ "a\nb", ", \"start_line\": -1", "b" },
	{ "one\r\ntwo\rthree", ", \"start_line\": 1", "two\rthree" }, /* as it is */
	{ "", ", \"start_line\": 0, \"end_line\": 3", "" },
	{ "\n\n\n", ", \"start_line\": 1, \"end_line\": 2", "\n" },
};

/* Python's slice [start_line:end_line] of the lines, each with its end,
 * the bytes as they are. */
START_TEST(test_aio_read_ranges)
{
	put("r.txt", ranges[_i].file);
	char *got = ok("file_read", fmt_cmd("{\"file\": \"" WS "/r.txt\"%s}", ranges[_i].args));
	json_t *want = json_pack("{s:s, s:s}", "content", ranges[_i].content, "file", WS "/r.txt");
	SAME(got, json_dumps(want, JSON_SORT_KEYS | JSON_COMPACT));
}
END_TEST

/* Relative paths are the workspace's; the file's text is the result's
 * text too; sudo is ignored. */
START_TEST(test_aio_read_relative_and_text)
{
	put("sub/r.txt", "x\n");
	struct tool_result *r = call("file_read", "{\"file\": \"sub/r.txt\", \"sudo\": true}");
	ck_assert(!r->is_error);
	SAME(r->text, "x\n");
	SAME(data_of(r), "{\"content\":\"x\\n\",\"file\":\"" WS "/sub/r.txt\"}");
}
END_TEST

/* The text part of a file that is not all text reads; arguments that
 * are no object are the body's validation error. */
START_TEST(test_aio_read_text_part_and_body)
{
	struct tool_result r;

	failure_tree();
	SAME(ok("file_read", "{\"file\": \"img.png\", \"end_line\": 1}"),
	     "{\"content\":\"ok\\n\",\"file\":\"" WS "/img.png\"}");
	ck_assert_int_eq(tool_call(&V, "file_read", NULL, &r), 0);
	SAME(json_dumps(r.structured, JSON_SORT_KEYS | JSON_COMPACT),
	     "{\"validation\":[{\"loc\":[\"body\"],\"msg\":\"Input should be a valid dictionary\","
	     "\"type\":\"dict_type\"}]}");
	tool_result_free(&r);
}
END_TEST

START_TEST(test_aio_write_encodings)
{
	SAME(ok("file_write", "{\"file\": \"new/deep/t.txt\", \"content\": \"text\", "
			      "\"leading_newline\": true, \"trailing_newline\": true}"),
	     "{\"bytes_written\":6,\"file\":\"" WS "/new/deep/t.txt\"}");
	SAME(read_file(host("new/deep/t.txt")), "\ntext\n");
	/* raw: the text as it is, the newlines not added. */
	SAME(ok("file_write", "{\"file\": \"r.txt\", \"content\": \"raw\", \"encoding\": \"raw\", "
			      "\"trailing_newline\": true}"),
	     "{\"bytes_written\":3,\"file\":\"" WS "/r.txt\"}");
	SAME(read_file(host("r.txt")), "raw");
	/* base64: the bytes, NUL and all; white space passed over. */
	SAME(ok("file_write", "{\"file\": \"" WS "/b.bin\", \"content\": \"aGVs\\nbG8A/w==\", "
			      "\"encoding\": \"base64\", \"leading_newline\": true}"),
	     "{\"bytes_written\":7,\"file\":\"" WS "/b.bin\"}");
	SAME(OUT("od -An -c '%s' | tr -s ' '", host("b.bin")), " h e l l o \\0 377\n");
	SAME(ok("file_write", "{\"file\": \"u.bin\", \"content\": \"YQ\", \"encoding\": "
			      "\"base64\"}"),
	     "{\"bytes_written\":1,\"file\":\"" WS "/u.bin\"}");
	SAME(read_file(host("u.bin")), "a");
	/* A NUL in utf-8 text is a byte of the file. */
	SAME(ok("file_write", "{\"file\": \"n.txt\", \"content\": \"a\\u0000b\"}"),
	     "{\"bytes_written\":3,\"file\":\"" WS "/n.txt\"}");
	SAME(OUT("od -An -c '%s' | tr -s ' '", host("n.txt")), " a \\0 b\n");
	SAME(ok("file_write", "{\"file\": \"e.txt\", \"content\": \"\"}"),
	     "{\"bytes_written\":0,\"file\":\"" WS "/e.txt\"}");
	ck_assert(exists(host("e.txt")));
}
END_TEST

/* An append adds; a write replaces; what an old client reads and
 * writes back is the file, byte for byte. */
START_TEST(test_aio_write_append)
{
	put("log.txt", "one\r\n");
	SAME(ok("file_write", "{\"file\": \"log.txt\", \"content\": \"two\", \"append\": true, "
			      "\"trailing_newline\": true}"),
	     "{\"bytes_written\":4,\"file\":\"" WS "/log.txt\"}");
	SAME(read_file(host("log.txt")), "one\r\ntwo\n");
	struct tool_result *r = call("file_read", "{\"file\": \"log.txt\"}");
	char *again = fmt_cmd("{\"file\": \"log.txt\", \"content\": %s}",
			      json_dumps(json_pack("s+", r->text, "three\n"), JSON_ENCODE_ANY));
	ok("file_write", again);
	SAME(read_file(host("log.txt")), "one\r\ntwo\nthree\n");
	ok("file_write", "{\"file\": \"log.txt\", \"content\": \"new\"}");
	SAME(read_file(host("log.txt")), "new");
}
END_TEST

/* As the sandbox's identity, a directory it may not write. */
START_TEST(test_aio_write_as_the_sandbox)
{
	OK("mkdir -p '%s' && chmod 0555 '%s' && chmod 0755 '%s'", host("ro"), host("ro"), ROOT);
	struct tool_identity nobody = { 65534, 65534 };
	struct tool_result r;
	json_t *args = json_pack("{s:s, s:s}", "file", "ro/f", "content", "x");
	ck_assert_int_eq(tool_call_as(&V, &nobody, "aio", "file_write", args, &r), 0);
	ck_assert(r.is_error);
	SAME(json_string_value(json_object_get(r.structured, "error_type")), "permission_denied");
	SAME(r.text, "PermissionError: [Errno 13] Permission denied: '" WS "/ro/f'");
	tool_result_free(&r);
	json_decref(args);
	ck_assert(!exists(host("ro/f")));
}
END_TEST

/* Each errno's error_type, name, exception and whether to retry. */
START_TEST(test_aio_error_types)
{
	static const struct {
		int err;
		const char *want;
	} types[] = {
		{ ENOENT, "not_found ENOENT FileNotFoundError false" },
		{ EACCES, "permission_denied EACCES PermissionError false" },
		{ EPERM, "permission_denied EPERM PermissionError false" },
		{ EISDIR, "is_a_directory EISDIR IsADirectoryError false" },
		{ ENOTDIR, "not_a_directory ENOTDIR NotADirectoryError false" },
		{ EEXIST, "already_exists EEXIST FileExistsError false" },
		{ EINVAL, "not_a_regular_file EINVAL OSError false" },
		{ EROFS, "read_only EROFS OSError false" },
		{ ENOSPC, "no_space ENOSPC OSError false" },
		{ EDQUOT, "no_space EDQUOT OSError false" },
		{ EFBIG, "too_large EFBIG OSError false" },
		{ ELOOP, "too_many_links ELOOP OSError false" },
		{ ENAMETOOLONG, "name_too_long ENAMETOOLONG OSError false" },
		{ EAGAIN, "temporarily_unavailable EAGAIN BlockingIOError true" },
		{ EBUSY, "temporarily_unavailable EBUSY OSError true" },
		{ EINTR, "temporarily_unavailable EINTR InterruptedError true" },
		{ ETIMEDOUT, "temporarily_unavailable ETIMEDOUT TimeoutError true" },
		{ EIO, "io_error EIO OSError false" },
		{ EXDEV, "io_error EXDEV OSError false" },
	};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct tool_result r = { 0 };
		ck_assert_int_eq(tool_aio_fail(&r, "read", "/mnt/x", -types[i].err, NULL), 0);
		json_t *d = r.structured;
		SAME(fmt_cmd("%s %s %s %s", json_string_value(json_object_get(d, "error_type")),
			     json_string_value(json_object_get(d, "errno_name")),
			     json_string_value(json_object_get(d, "exception_type")),
			     json_is_true(json_object_get(d, "retryable")) ? "true" : "false"),
		     types[i].want);
		ck_assert_int_eq(json_integer_value(json_object_get(d, "errno")), types[i].err);
		tool_result_free(&r);
	}
}
END_TEST

/* The files whose path below PATH matches, in the walk's order, every
 * name (hidden, node_modules) included; symlinks to directories are not
 * entered. */
START_TEST(test_aio_find)
{
	put("t/a.py", "");
	put("t/b.txt", "");
	put("t/sub/c.py", "");
	put("t/sub/deep/d.py", "");
	put("t/.hidden/e.py", "");
	put("t/node_modules/f.py", "");
	OK("ln -s sub '%s'", host("t/link"));
	SAME(ok("file_find", "{\"path\": \"t\", \"glob\": \"*.py\"}"),
	     "{\"files\":[\"" WS "/t/a.py\",\"" WS "/t/.hidden/e.py\",\"" WS
	     "/t/node_modules/f.py\",\"" WS "/t/sub/c.py\",\"" WS "/t/sub/deep/d.py\"],"
	     "\"path\":\"" WS "/t\"}");
	SAME(ok("file_find", "{\"path\": \"" WS "/t/\", \"glob\": \"sub/*.py\"}"),
	     "{\"files\":[\"" WS "/t/sub/c.py\"],\"path\":\"" WS "/t/\"}");
	SAME(ok("file_find", "{\"path\": \"t\", \"glob\": \"*.md\"}"),
	     "{\"files\":[],\"path\":\"" WS "/t\"}");
}
END_TEST

/* file_list's data for ARGS: its counts, then "PATH=SIZE" (a directory's
 * PATH/, no size) for each entry. */
static char *listing(const char *args)
{
	json_t *d = json_loads(ok("file_list", args), 0, NULL), *f;
	char *s = fmt_cmd("%lld %lld %lld:",
			  (long long)json_integer_value(json_object_get(d, "total_count")),
			  (long long)json_integer_value(json_object_get(d, "directory_count")),
			  (long long)json_integer_value(json_object_get(d, "file_count")));
	size_t i;

	json_array_foreach (json_object_get(d, "files"), i, f) {
		json_t *size = json_object_get(f, "size");
		s = fmt_cmd("%s %s%s", s,
			    json_string_value(json_object_get(f, "path")) + strlen(WS "/"),
			    json_is_true(json_object_get(f, "is_directory")) ? "/" : "");
		if (json_is_integer(size))
			s = fmt_cmd("%s=%lld", s, (long long)json_integer_value(size));
	}
	return s;
}

START_TEST(test_aio_list)
{
	put("l/b.py", "12345");
	put("l/a.txt", "1");
	put("l/.env", "123");
	put("l/sub/c.py", "12");
	put("l/sub/deep/d.txt", "");
	OK("cd '%s' && ln -s sub link && touch -d '2001-01-01 00:00:00.5' b.py && "
	   "touch -d '2003-01-01' a.txt && touch -d '2002-01-01' .env sub && chmod 0640 b.py",
	   host("l"));
	SAME(listing("{\"path\": \"l\"}"), "5 2 3: l/.env=3 l/a.txt=1 l/b.py=5 l/link/ l/sub/");
	SAME(listing("{\"path\": \"l\", \"recursive\": true}"),
	     "8 3 5: l/.env=3 l/a.txt=1 l/b.py=5 l/link/ l/sub/ l/sub/c.py=2 l/sub/deep/ "
	     "l/sub/deep/d.txt=0");
	SAME(listing("{\"path\": \"l\", \"recursive\": true, \"max_depth\": 2}"),
	     "7 3 4: l/.env=3 l/a.txt=1 l/b.py=5 l/link/ l/sub/ l/sub/c.py=2 l/sub/deep/");
	SAME(listing("{\"path\": \"l\", \"max_depth\": 3}"),
	     "5 2 3: l/.env=3 l/a.txt=1 l/b.py=5 l/link/ l/sub/");
	SAME(listing("{\"path\": \"l\", \"show_hidden\": false}"),
	     "4 2 2: l/a.txt=1 l/b.py=5 l/link/ l/sub/");
	SAME(listing("{\"path\": \"l\", \"recursive\": true, \"file_types\": [\".py\", \"TXT\"]}"),
	     "7 3 4: l/a.txt=1 l/b.py=5 l/link/ l/sub/ l/sub/c.py=2 l/sub/deep/ l/sub/deep/d.txt=0");
	SAME(listing("{\"path\": \"l\", \"sort_by\": \"size\", \"sort_desc\": true}"),
	     "5 2 3: l/b.py=5 l/.env=3 l/a.txt=1 l/sub/ l/link/");
	SAME(listing("{\"path\": \"l\", \"sort_by\": \"modified\", \"show_hidden\": false, "
		     "\"file_types\": []}"),
	     "4 2 2: l/b.py=5 l/link/ l/sub/ l/a.txt=1");
	SAME(listing("{\"path\": \"l\", \"sort_by\": \"modified\", \"include_size\": false}"),
	     "5 2 3: l/b.py l/.env l/link/ l/sub/ l/a.txt");
	SAME(listing("{\"path\": \"l\", \"sort_by\": \"type\"}"),
	     "5 2 3: l/link/ l/sub/ l/.env=3 l/b.py=5 l/a.txt=1");
	/* One entry whole: the time in UTC, the mode, the suffix. */
	json_t *d = json_loads(ok("file_list",
				  "{\"path\": \"l\", \"include_permissions\": true, \"sort_by\": "
				  "\"type\", \"sort_desc\": true}"),
			       0, NULL);
	SAME(json_dumps(json_array_get(json_object_get(d, "files"), 1),
			JSON_SORT_KEYS | JSON_COMPACT),
	     "{\"extension\":\".py\",\"is_directory\":false,\"modified_time\":"
	     "\"2001-01-01T00:00:00.500000Z\",\"name\":\"b.py\",\"path\":\"" WS "/l/b.py\","
	     "\"permissions\":\"640\",\"size\":5}");
	SAME(json_dumps(json_array_get(json_object_get(d, "files"), 2),
			JSON_SORT_KEYS | JSON_COMPACT),
	     "{\"extension\":null,\"is_directory\":false,\"modified_time\":"
	     "\"2002-01-01T00:00:00.000000Z\",\"name\":\".env\",\"path\":\"" WS "/l/.env\","
	     "\"permissions\":\"644\",\"size\":3}");
	SAME(json_string_value(json_object_get(d, "path")), WS "/l");
	SAME(listing("{\"path\": \"l/sub/deep\"}"), "1 0 1: l/sub/deep/d.txt=0");
	OK("mkdir '%s'", host("empty"));
	SAME(listing("{\"path\": \"empty\"}"), "0 0 0:");
}
END_TEST

/* grep's data as "FILE:LINE:CONTENT [BEFORE|AFTER]" lines, then the
 * counts. */
static char *grepped(const char *args)
{
	json_t *d = json_loads(ok("file_grep", args), 0, NULL), *m, *c;
	char *s = "";
	size_t i, k;

	json_array_foreach (json_object_get(d, "matches"), i, m) {
		s = fmt_cmd("%s%s:%lld:%s [", s,
			    json_string_value(json_object_get(m, "file")) + strlen(WS "/"),
			    (long long)json_integer_value(json_object_get(m, "line_number")),
			    json_string_value(json_object_get(m, "line_content")));
		json_array_foreach (json_object_get(m, "context_before"), k, c)
			s = fmt_cmd("%s%s%s", s, k ? "," : "", json_string_value(c));
		s = fmt_cmd("%s|", s);
		json_array_foreach (json_object_get(m, "context_after"), k, c)
			s = fmt_cmd("%s%s%s", s, k ? "," : "", json_string_value(c));
		s = fmt_cmd("%s]\n", s);
	}
	ck_assert_int_eq(json_integer_value(json_object_get(d, "match_count")),
			 json_array_size(json_object_get(d, "matches")));
	return fmt_cmd("%ssearched %lld matched %lld%s", s,
		       (long long)json_integer_value(json_object_get(d, "files_searched")),
		       (long long)json_integer_value(json_object_get(d, "files_matched")),
		       json_is_true(json_object_get(d, "truncated")) ? " truncated" : "");
}

static void grep_tree(void)
{
	put("g/a.txt", "one\ntwo\nthree\nfour\nfive\n");
	put("g/b.py", "def two():\n    return 2\n");
	put("g/sub/c.txt", "Two\r\nTWO\n");
	put("g/node_modules/x.txt", "two\n");
	put("g/.git/y.txt", "two\n");
	OK("cd '%s' && printf 'two\\0bin' > bin.dat && (head -c 3000 /dev/zero | tr '\\0' x; "
	   "echo; echo two) > big.txt && ln -s a.txt link.txt",
	   host("g"));
}

START_TEST(test_aio_grep)
{
	char xs[3001];

	memset(xs, 'x', 3000);
	xs[3000] = '\0';
	grep_tree();
	/* Each directory's files by name, then its subdirectories; the
	 * reference's ignored names, symlinks and binary files passed over. */
	SAME(grepped("{\"path\": \"g\", \"pattern\": \"two\"}"),
	     "g/a.txt:2:two [|]\ng/b.py:1:def two(): [|]\ng/big.txt:2:two [|]\n"
	     "searched 4 matched 3");
	SAME(grepped("{\"path\": \"g\", \"pattern\": \"two\", \"case_insensitive\": true, "
		     "\"context_before\": 1, \"context_after\": 2, \"include\": [\"*.txt\"]}"),
	     fmt_cmd("g/a.txt:2:two [one|three,four]\ng/big.txt:2:two [%s|]\n"
		     "g/sub/c.txt:1:Two [|TWO]\ng/sub/c.txt:2:TWO [Two|]\nsearched 3 matched 3",
		     xs));
}
END_TEST

START_TEST(test_aio_grep_options)
{
	grep_tree();
	SAME(grepped("{\"path\": \"g\", \"pattern\": \"t.o\", \"exclude\": [\"sub\", \"big.txt\"]}"),
	     "g/a.txt:2:two [|]\ng/b.py:1:def two(): [|]\nsearched 2 matched 2");
	SAME(grepped("{\"path\": \"g\", \"pattern\": \"t.o\", \"fixed_strings\": true}"),
	     "searched 4 matched 0");
	SAME(grepped("{\"path\": \"g\", \"pattern\": \"o\", \"recursive\": false, "
		     "\"max_results\": 3}"),
	     "g/a.txt:1:one [|]\ng/a.txt:2:two [|]\ng/a.txt:4:four [|]\n"
	     "searched 2 matched 1 truncated");
	SAME(grepped("{\"path\": \"g\", \"pattern\": \"o\", \"recursive\": false, "
		     "\"max_results\": 3, \"offset\": 2}"),
	     "g/a.txt:4:four [|]\ng/b.py:1:def two(): [|]\ng/big.txt:2:two [|]\n"
	     "searched 3 matched 3");
	SAME(grepped("{\"path\": \"g\", \"pattern\": \"o\", \"recursive\": false, "
		     "\"max_results\": 2, \"offset\": 2}"),
	     "g/a.txt:4:four [|]\ng/b.py:1:def two(): [|]\nsearched 3 matched 2 truncated");
	SAME(grepped("{\"path\": \"g\", \"pattern\": \"o\", \"recursive\": false, "
		     "\"offset\": 5}"),
	     "searched 3 matched 3");
	/* max_file_size: big.txt (3005 bytes) passed over above it. */
	SAME(grepped("{\"path\": \"g\", \"pattern\": \"two\", \"max_file_size\": \"2K\"}"),
	     "g/a.txt:2:two [|]\ng/b.py:1:def two(): [|]\nsearched 3 matched 2");
	SAME(grepped("{\"path\": \"g\", \"pattern\": \"two\", \"max_file_size\": \"3005\", "
		     "\"include\": [\"big.txt\"]}"),
	     "g/big.txt:2:two [|]\nsearched 1 matched 1");
	SAME(grepped("{\"path\": \"g\", \"pattern\": \"two\", \"max_file_size\": \"3004\", "
		     "\"include\": [\"big.txt\"]}"),
	     "searched 0 matched 0");
	/* A file as the path; a pattern over lines. */
	SAME(grepped("{\"path\": \"g/a.txt\", \"pattern\": \"^t.*\\\\n^f\", \"multiline\": true, "
		     "\"context_after\": 1}"),
	     "g/a.txt:3:three\nfour [|five]\nsearched 1 matched 1");
	SAME(grepped("{\"path\": \"g/a.txt\", \"pattern\": \"e$\", \"multiline\": true}"),
	     "g/a.txt:1:one [|]\ng/a.txt:3:three [|]\ng/a.txt:5:five [|]\nsearched 1 matched 1");
	SAME(grepped("{\"path\": \"g/bin.dat\", \"pattern\": \"two\"}"), "searched 0 matched 0");
	struct tool_result *r = call("file_grep", "{\"path\": \"g\", \"pattern\": \"nothing\"}");
	SAME(r->text, "No matches found under " WS "/g");
	SAME(data_of(r), "{\"files_matched\":0,\"files_searched\":4,\"match_count\":0,"
			 "\"matches\":[],\"path\":\"" WS "/g\",\"pattern\":\"nothing\","
			 "\"truncated\":false}");
}
END_TEST

/* The download's open: the file's own bytes through a blocking,
 * close-on-exec fd; anything but a regular file in the view refused. */
START_TEST(test_aio_open)
{
	struct tool_identity self = { geteuid(), getegid() };
	struct tool_result r;
	char buf[16] = "";
	int fd;

	put("d/f.txt", "content\n");
	OK("cd '%s' && mkfifo fifo && ln -s /etc/passwd out && ln -s f.txt in", host("d"));
	ck_assert_int_eq(tool_open_as(&V, &self, "aio", "d/in", &fd, &r), 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_ptr_null(r.structured);
	ck_assert_int_eq(read(fd, buf, sizeof(buf) - 1), 8);
	SAME(buf, "content\n");
	ck_assert(!(fcntl(fd, F_GETFL) & O_NONBLOCK));
	ck_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	static const struct {
		const char *path, *want;
	} refused[] = {
		{ "d", "is_a_directory" },
		{ "d/fifo", "not_a_regular_file" },
		{ "d/out", "permission_denied" },
		{ "d/none", "not_found" },
		{ "/etc/passwd", "permission_denied" },
		{ WS "/../../etc/passwd", "permission_denied" },
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		ck_assert_int_eq(tool_open_as(&V, &self, "aio", refused[i].path, &fd, &r), 0);
		ck_assert_int_eq(fd, -1);
		SAME(json_string_value(json_object_get(r.structured, "error_type")),
		     refused[i].want);
		SAME(json_string_value(json_object_get(r.structured, "operation")), "open");
		tool_result_free(&r);
	}
}
END_TEST

Suite *suite_unit_aiotool(void)
{
	Suite *s = suite_create("unit_aiotool");
	TCase *tc = tcase_create("aiotool");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_aio_specs);
	tcase_add_loop_test(tc, test_aio_failures, 0, sizeof(failures) / sizeof(failures[0]));
	tcase_add_loop_test(tc, test_aio_validation, 0, sizeof(invalids) / sizeof(invalids[0]));
	tcase_add_loop_test(tc, test_aio_read_ranges, 0, sizeof(ranges) / sizeof(ranges[0]));
	tcase_add_test(tc, test_aio_read_relative_and_text);
	tcase_add_test(tc, test_aio_read_text_part_and_body);
	tcase_add_test(tc, test_aio_write_encodings);
	tcase_add_test(tc, test_aio_write_append);
	tcase_add_test(tc, test_aio_write_as_the_sandbox);
	tcase_add_test(tc, test_aio_error_types);
	tcase_add_test(tc, test_aio_find);
	tcase_add_test(tc, test_aio_list);
	tcase_add_test(tc, test_aio_grep);
	tcase_add_test(tc, test_aio_grep_options);
	tcase_add_test(tc, test_aio_open);
	suite_add_tcase(s, tc);
	return s;
}
