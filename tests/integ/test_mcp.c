/* MCP servers driven by the official MCP TypeScript SDK client
 * (tests/mcp/drive.mjs; tests/mcp/README.md says how to add a scenario):
 * the reference server @modelcontextprotocol/server-filesystem, the
 * baseline issue 38 compares sbx mcp with, and sbx mcp itself once bin/sbx
 * has the command. The tests assert the driver's lines (what the server
 * answered) and what landed on the host, not only its exit status. Then
 * sbx mcp over stdio and sbx serve over Streamable HTTP as the MCP
 * Inspector's CLI mode sees them: the JSON it prints.
 *
 * They need node and tests/mcp's packages (mount-helpers/install-deps
 * --tests installs both): without them each test says it is skipped,
 * except under CI (CI=true), where that is a failure. The sbx mcp tests
 * say they are skipped until `sbx mcp --help` exits 0. */
#include "tests/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MCP_DIR "tests/mcp"
#define FS_SERVER MCP_DIR "/node_modules/.bin/mcp-server-filesystem"
/* The Inspector's CLI (the one @modelcontextprotocol/inspector runs for
 * --cli). */
#define INSPECTOR_DIR MCP_DIR "/node_modules/@modelcontextprotocol/inspector-cli/build"
/* One scenario's bound: a few seconds when all is well. */
#define DRIVE_S 60

/* node, the SDK and the reference server are there. Otherwise the test
 * returns, saying why, or fails under CI, where install-deps --tests
 * must have installed them. */
static bool mcp_ready(const char *test)
{
	const char *why = NULL;

	if (STATUS("command -v node >/dev/null") != 0)
		why = "node is not installed";
	else if (!exists(MCP_DIR "/node_modules/@modelcontextprotocol/sdk/package.json") ||
		 !exists(FS_SERVER) || !exists(INSPECTOR_DIR "/cli.js"))
		why = "the npm packages of " MCP_DIR " are not installed";
	if (!why)
		return true;
	const char *ci = getenv("CI");
	ck_assert_msg(!ci || strcmp(ci, "true"), "%s: %s (mount-helpers/install-deps --tests)",
		      test, why);
	fprintf(stderr,
		"mcp: %s: skipped: %s (mount-helpers/install-deps --tests installs what is missing)\n",
		test, why);
	return false;
}

/* The test's name: Check's START_TEST(name) defines name_fn. */
#define TEST_NAME strndupa(__func__, strlen(__func__) - 3)

#define NEED_NODE()                        \
	do {                               \
		if (!mcp_ready(TEST_NAME)) \
			return;            \
	} while (0)

/* Whether one of OUT's lines is TEXT (WHOLE) or starts with it. */
static bool has_line(const char *out, const char *text, bool whole)
{
	size_t n = strlen(text);

	for (const char *p = out; (p = strstr(p, text)); p++)
		if ((p == out || p[-1] == '\n') && (!whole || p[n] == '\n' || !p[n]))
			return true;
	return false;
}

#define ASSERT_LINE(out, line) \
	ck_assert_msg(has_line((out), (line), true), "no line \"%s\" in:\n%.3000s", (line), (out))
#define ASSERT_LINE_START(out, start)                                                             \
	ck_assert_msg(has_line((out), (start), false), "no line \"%s...\" in:\n%.3000s", (start), \
		      (out))

/* Runs SCENARIO of drive.mjs with the driver's options OPTS against the
 * stdio server SERVER (a shell command line), within DRIVE_S (its
 * process tree killed past that); fails unless it ran and passed, and
 * returns its output. */
static char *drive(const char *scenario, const char *opts, const char *server)
{
	char *cmd = fmt_cmd("node " MCP_DIR "/drive.mjs %s %s -- %s", opts, scenario, server);
	bool late;
	int st;
	char *out = capture_for(cmd, DRIVE_S, &st, &late);

	ck_assert_msg(!late && st == 0, "%s\n%s, output:\n%.3000s", cmd,
		      late ? "timed out" : fmt_cmd("exit %d", st), out);
	ck_assert_msg(strstr(out, fmt_cmd("drive: %s: ok (", scenario)),
		      "%s: no end line:\n%.3000s", cmd, out);
	free(cmd);
	return out;
}

/* The reference server: the allowed directory ROOT as the fs-*
 * scenarios expect it (tests/mcp/scenarios/filesystem.mjs). */

static const char *ROOT;

static void fs_setup(void)
{
	tool_env();
	ROOT = test_dir("fsroot");
	ck_assert_int_eq(write_file(fmt_cmd("%s/hello.txt", ROOT), "alpha beta\n"), 0);
	OK("cd '%s' && mkdir sub && ln -s /etc/passwd escape && ln -s /etc escdir", ROOT);
}

/* drive() of SCENARIO against server-filesystem serving ROOT. */
static char *drive_fs(const char *scenario)
{
	return drive(scenario, fmt_cmd("--root '%s'", ROOT), fmt_cmd(FS_SERVER " '%s'", ROOT));
}

START_TEST(test_mcp_fs_negotiates_both_protocol_versions)
{
	NEED_NODE();
	char *out = drive_fs("initialize");

	ASSERT_LINE(out, "ok initialize 2025-06-18: negotiated 2025-06-18,"
			 " server secure-filesystem-server 0.2.0");
	ASSERT_LINE(out, "ok initialize 2025-11-25: negotiated 2025-11-25,"
			 " server secure-filesystem-server 0.2.0");
}
END_TEST

START_TEST(test_mcp_fs_lists_its_tools)
{
	NEED_NODE();
	ASSERT_LINE(drive_fs("fs-tools"),
		    "ok tools/list: create_directory,directory_tree,edit_file,get_file_info,"
		    "list_allowed_directories,list_directory,list_directory_with_sizes,move_file,"
		    "read_file,read_media_file,read_multiple_files,read_text_file,search_files,"
		    "write_file");
}
END_TEST

START_TEST(test_mcp_fs_reads_writes_and_edits)
{
	NEED_NODE();
	char *out = drive_fs("fs-files");

	ASSERT_LINE(out, "ok read_text_file: \"alpha beta\\n\"");
	ASSERT_LINE(out, fmt_cmd("ok write_file: Successfully wrote to %s/sub/new.txt", ROOT));
	ASSERT_LINE(out, "ok edit_file: diff -y +z");
	ASSERT_LINE(out, "ok read back: \"x\\nz\\n\"");
	SAME(read_file(fmt_cmd("%s/sub/new.txt", ROOT)), "x\nz\n");
}
END_TEST

START_TEST(test_mcp_fs_paths_outside_are_tool_errors)
{
	NEED_NODE();
	char *out = drive_fs("fs-confine");

	ASSERT_LINE(out, "ok read /etc/passwd: isError: Access denied");
	ASSERT_LINE(out, "ok read ROOT/../../etc/passwd: isError: Access denied");
	ASSERT_LINE(out, "ok read ROOT/escape: isError: Access denied");
	ASSERT_LINE(out, "ok read ROOT/escdir/passwd: isError: Access denied");
	ASSERT_LINE(out, "ok write ROOT/escdir/sbx-mcp-test: isError: Access denied");
	ck_assert(!exists("/etc/sbx-mcp-test"));
}
END_TEST

START_TEST(test_mcp_fs_two_clients_at_once)
{
	NEED_NODE();
	ASSERT_LINE(drive_fs("fs-concurrent"),
		    "ok two sessions: 20 files written by one, read by the other");
	SAME(read_file(fmt_cmd("%s/c19.txt", ROOT)), "19\n");
}
END_TEST

/* The driver itself: a failed assertion is reported with what was seen,
 * and a server that never answers is killed with everything below it. */
START_TEST(test_mcp_driver_reports_failures_and_kills_hung_servers)
{
	NEED_NODE();
	int st;
	bool late;

	ck_assert_int_eq(write_file(fmt_cmd("%s/hello.txt", ROOT), "alpha gamma\n"), 0);
	char *out = capture_for(fmt_cmd("node " MCP_DIR
					"/drive.mjs --root '%s' fs-files -- " FS_SERVER " '%s'",
					ROOT, ROOT),
				DRIVE_S, &st, &late);
	ck_assert_msg(!late && st == 1, "exit %d:\n%s", st, out);
	ck_assert_msg(strstr(out, "FAILED read_text_file: AssertionError") &&
			      strstr(out, "+ 'alpha gamma\\n'") && !strstr(out, "ok write_file"),
		      "%s", out);

	/* It waits for initialize's reply up to --timeout (60 s); we kill it
	 * after 2. The server's child is in a session of its own. */
	out = capture_for("node " MCP_DIR "/drive.mjs --timeout 60 initialize --"
			  " sh -c 'setsid sleep 31.2718 & cat >/dev/null'",
			  2, &st, &late);
	ck_assert_msg(late && st == -1, "exit %d:\n%s", st, out);
	ck_assert_msg(strstr(out, "[killed after 2 s"), "%s", out);
	ASSERT_GONE("sleep 31[.]2718");
}
END_TEST

/* sbx mcp: a fresh home H, user alice, thread t1. The thread's
 * workspace holds the two symlinks out that sbx-confine tries, and a
 * file no session has read (sbxfs-files). */

static const char *H;

static void sbx_setup(void)
{
	tool_env();
	H = test_dir("mhome");
	test_home_store(H);
	OK("w='%s/users/alice/threads/t1/user-data/workspace' && mkdir -p \"$w\" && cd \"$w\" &&"
	   " ln -s /etc/passwd escape && ln -s /etc escdir && echo host > unread.txt",
	   H);
}

static void sbx_teardown(void)
{
	serve_stop_in(H);
	broker_stop(H);
	sh("grep -o ' %s/[^ ]*' /proc/mounts | sort -r | while read -r m; do"
	   " fusermount3 -u -z \"$m\" 2>/dev/null || umount -l \"$m\"; done",
	   H);
}

/* Whether bin/sbx has the mcp command (issue 38); the test returns,
 * saying so, if not. */
static bool sbx_mcp_ready(const char *test)
{
	if (!mcp_ready(test))
		return false;
	if (STATUS("'%s' mcp --help >/dev/null 2>&1", test_bin("sbx")) == 0)
		return true;
	fprintf(stderr, "mcp: %s: skipped: bin/sbx has no mcp command yet (issue 38)\n", test);
	return false;
}

#define NEED_SBX_MCP()                         \
	do {                                   \
		if (!sbx_mcp_ready(TEST_NAME)) \
			return;                \
	} while (0)

static char *drive_sbx(const char *scenario)
{
	return drive(scenario, "",
		     fmt_cmd("'%s' mcp --home '%s' --user alice --thread t1", test_bin("sbx"), H));
}

/* drive_sbx() with --profile filesystem: server-filesystem's tools. */
static char *drive_sbxfs(const char *scenario)
{
	return drive(scenario, "",
		     fmt_cmd("'%s' mcp --home '%s' --user alice --thread t1 --profile filesystem",
			     test_bin("sbx"), H));
}

static char *hws(const char *rel)
{
	return fmt_cmd("%s/users/alice/threads/t1/user-data/workspace/%s", H, rel);
}

START_TEST(test_mcp_sbx_negotiates_both_protocol_versions)
{
	NEED_SBX_MCP();
	char *out = drive_sbx("initialize");

	ASSERT_LINE_START(out, "ok initialize 2025-06-18: negotiated 2025-06-18, server ");
	ASSERT_LINE_START(out, "ok initialize 2025-11-25: negotiated 2025-11-25, server ");
}
END_TEST

START_TEST(test_mcp_sbx_lists_the_reference_tools)
{
	NEED_SBX_MCP();
	ASSERT_LINE(drive_sbx("sbx-tools"),
		    "ok tools/list: bash,changes,glob,grep,ls,present_files,read_file,str_replace,"
		    "undo,write_file");
}
END_TEST

START_TEST(test_mcp_sbx_write_then_read_in_the_workspace)
{
	NEED_SBX_MCP();
	ASSERT_LINE(drive_sbx("sbx-files"), "ok read_file: \"one\\ntwo\\n\"");
	SAME(read_file(hws("mcp-round.txt")), "one\ntwo\n");
}
END_TEST

START_TEST(test_mcp_sbx_paths_outside_are_tool_errors)
{
	NEED_SBX_MCP();
	char *out = drive_sbx("sbx-confine");

	ASSERT_LINE_START(out, "ok read /etc/passwd: ");
	ASSERT_LINE_START(out, "ok write /tmp/sbx-mcp-outside: ");
	ASSERT_LINE_START(out, "ok read WS/../../../etc/passwd: ");
	ASSERT_LINE_START(out, "ok read WS/escape: ");
	ASSERT_LINE_START(out, "ok read WS/escdir/passwd: ");
	ASSERT_LINE_START(out, "ok write WS/escdir/sbx-mcp-test: ");
	ck_assert(!exists("/tmp/sbx-mcp-outside"));
	ck_assert(!exists("/etc/sbx-mcp-test"));
}
END_TEST

START_TEST(test_mcp_sbx_bash_runs_in_the_sandbox)
{
	NEED_SBX_MCP();
	ASSERT_LINE_START(drive_sbx("sbx-bash"), "ok bash echo hi: \"hi");
}
END_TEST

START_TEST(test_mcp_sbx_bash_keeps_cwd_and_exports_in_a_session)
{
	NEED_SBX_MCP();
	char *out = drive_sbx("sbx-session");

	ASSERT_LINE_START(out, "ok pwd; echo $X: \"/tmp\\n1");
}
END_TEST

START_TEST(test_mcp_sbx_cancel_kills_the_command)
{
	NEED_SBX_MCP();
	char *out = drive_sbx("sbx-cancel");

	ASSERT_LINE_START(out, "ok cancelled: the sleep gone ");
	ASSERT_LINE(out, "ok session goes on: \"after\\n\"");
	ASSERT_GONE("sleep 31[.]4159");
}
END_TEST

START_TEST(test_mcp_sbx_two_clients_share_the_view_not_the_shell)
{
	NEED_SBX_MCP();
	char *out = drive_sbx("sbx-concurrent");

	ASSERT_LINE(out, "ok a shell each: a sees a, b sees b");
	ASSERT_LINE(out, "ok one view: b reads what a wrote");
	ASSERT_LINE(out, "ok at once: a's command saw b's write while it ran");
	SAME(read_file(hws("mcp-shared.txt")), "from a\n");
}
END_TEST

/* --profile filesystem lists server-filesystem's tools and none of the
 * reference's: bash stays out. */
START_TEST(test_mcp_sbxfs_lists_server_filesystems_tools)
{
	NEED_SBX_MCP();
	ASSERT_LINE(drive_sbxfs("sbxfs-tools"),
		    "ok tools/list: create_directory,directory_tree,edit_file,get_file_info,"
		    "list_allowed_directories,list_directory,list_directory_with_sizes,move_file,"
		    "read_file,read_media_file,read_multiple_files,read_text_file,search_files,"
		    "write_file");
}
END_TEST

/* Its file tools in the view: what they wrote is on the host, the edit's
 * diff is server-filesystem's, an unread file's edit is gated, a move
 * onto an existing file refused and nothing lost. */
START_TEST(test_mcp_sbxfs_round_trip_in_the_view)
{
	NEED_SBX_MCP();
	char *out = drive_sbxfs("sbxfs-files");

	ASSERT_LINE(out, "ok create_directory: Successfully created directory "
			 "/mnt/user-data/workspace/fsp/deep/er");
	ASSERT_LINE(out, "ok read_text_file: \"one\\ntwo\\nthree\\n\"");
	ASSERT_LINE(out, "ok head 2, tail 2: \"one\\ntwo\" \"three\\n\"");
	ASSERT_LINE(out, "ok edit_file dryRun: [\"-two\",\"+TWO\"]");
	ASSERT_LINE_START(out, "ok edit_file unread: Error: edit_file blocked");
	ASSERT_LINE(out, "ok move_file onto an existing file: Destination already exists: "
			 "/mnt/user-data/workspace/fsp/b.txt");
	ASSERT_LINE(out, "ok search_files: WS/fsp/b.txt WS/fsp/c.txt");
	ASSERT_LINE(out, "ok list_directory_with_sizes: Total: 2 files, 1 directories, Combined "
			 "size: 12 B");
	/* read_media_file: an image's bytes as image content, another file's
	 * as an embedded resource; a symlink out refused. */
	ASSERT_LINE_START(out, "ok read_media_file: image/png, resource, ");
	ck_assert(exists(hws("fsp/deep/er")));
	ck_assert(!exists(hws("fsp/a.txt")));
	SAME(read_file(hws("fsp/b.txt")), "one\ntwo\n3\n");
	SAME(read_file(hws("fsp/c.txt")), "c\n");
	SAME(read_file(hws("unread.txt")), "host\n");
	/* The journal names each tool that wrote, cut to a command name. */
	SAME(OUT("'%s' watch --home '%s' --user alice --thread t1 --once --since 0 --format json |"
		 " python3 tests/tools/jsonq.py --lines \"d.get('path'), d.get('command')\" |"
		 " grep /fsp | cut -d' ' -f2 | sort -u",
		 test_bin("sbx"), H),
	     "mcp:create_dire\nmcp:edit_file\nmcp:move_file\nmcp:write_file\n");
}
END_TEST

/* Outside the allowed directories, ".." out and symlinks out: tool
 * errors, server-filesystem's text for the first. */
START_TEST(test_mcp_sbxfs_paths_outside_are_tool_errors)
{
	NEED_SBX_MCP();
	char *out = drive_sbxfs("sbxfs-confine");

	ASSERT_LINE_START(out, "ok read /etc/passwd: Access denied - path outside allowed "
			       "directories: /etc/passwd not in /mnt/user-data/workspace, ");
	ASSERT_LINE_START(out, "ok read WS/../../../etc/passwd: Access denied - path outside ");
	ASSERT_LINE_START(out, "ok read WS/escape: ");
	ASSERT_LINE_START(out, "ok write WS/escdir/sbx-mcp-test: ");
	ASSERT_LINE_START(out, "ok move WS/escape out: ");
	ck_assert(!exists("/etc/sbx-mcp-test"));
	ck_assert(!exists(hws("stolen")));
	ck_assert(exists("/etc/hostname"));
}
END_TEST

/* The MCP Inspector's CLI mode: one session per run (a new sbx mcp over
 * stdio), one method, its result printed as JSON on stdout. */

/* Runs `cli.js --cli TARGET ARGS` within DRIVE_S (its process tree killed
 * past that), its stdout (the result) in DIR/out.json, its stderr in
 * DIR/err; returns DIR, its exit status in *ST. It runs in its build
 * directory: inspector-cli 1.0.3 imports its package.json from "../"
 * only if the cwd has a ../package.json, else from "../../", which is
 * not there (upstream issue 1334), so TARGET's paths are absolute. */
static const char *inspector_run(const char *target, const char *args, int *st)
{
	const char *dir = test_dir("inspector");
	bool late;
	char *out = capture_for(fmt_cmd("cd " INSPECTOR_DIR " && node cli.js --cli %s %s"
					" >'%s/out.json' 2>'%s/err'",
					target, args, dir, dir),
				DRIVE_S, st, &late);

	ck_assert_msg(!late, "the Inspector timed out: %s\nstderr:\n%.3000s", out,
		      read_file(fmt_cmd("%s/err", dir)));
	return dir;
}

/* The result of `cli.js --cli TARGET ARGS`, which must exit 0: the
 * file holding its JSON. */
static const char *inspect(const char *target, const char *args)
{
	int st;
	const char *dir = inspector_run(target, args, &st);

	ck_assert_msg(st == 0, "the Inspector exited %d on %s:\n%.3000s", st, args,
		      read_file(fmt_cmd("%s/err", dir)));
	return fmt_cmd("%s/out.json", dir);
}

/* What the Python expression CODE (d: the JSON in FILE) prints. */
#define JQ(file, code) OUT("python3 tests/tools/jsonq.py \"%s\" '%s'", (code), (file))

/* The Inspector's target: sbx mcp of alice/t1 over stdio, or sbx serve's
 * endpoint of it with the bearer token. */
static const char *stdio_target(void)
{
	return fmt_cmd("'%s' mcp --home '%s' --user alice --thread t1", test_bin("sbx"), H);
}

static const char *http_target(const char *port)
{
	return fmt_cmd("http://127.0.0.1:%s/mcp/alice/t1 --transport http"
		       " --header \"Authorization: Bearer $(cat '%s/serve.token')\"",
		       port, H);
}

#define SBX_TOOL_NAMES \
	"bash,changes,glob,grep,ls,present_files,read_file,str_replace,undo,write_file\n"

/* tools/list: the reference's tools; read_file's input schema wants a
 * string path, its annotations say it only reads. */
static void inspect_tools_list(const char *target)
{
	const char *r = inspect(target, "--method tools/list");

	SAME(JQ(r, "','.join(sorted(t['name'] for t in d['tools']))"), SBX_TOOL_NAMES);
	SAME(JQ(r,
		"[(t['inputSchema']['type'], t['inputSchema']['required'],"
		" t['inputSchema']['properties']['path']['type'], t['annotations']['readOnlyHint'])"
		" for t in d['tools'] if t['name'] == 'read_file']"),
	     "[('object', ['path'], 'string', True)]\n");
}

/* write_file of NAME in the workspace, then read_file of it, each in a
 * session of its own: the text comes back, and is on the host. */
static void inspect_write_then_read(const char *target, const char *name)
{
	const char *w = inspect(target, fmt_cmd("--method tools/call --tool-name write_file"
						" --tool-arg path=/mnt/user-data/workspace/%s"
						" 'content=from the inspector\n'",
						name));
	SAME(JQ(w, "d['isError'], d['content'][0]['text']"), "False OK\n");
	const char *r = inspect(target, fmt_cmd("--method tools/call --tool-name read_file"
						" --tool-arg path=/mnt/user-data/workspace/%s",
						name));
	SAME(JQ(r, "d['isError'], json.dumps(d['content'][0]['text']),"
		   " json.dumps(d['structuredContent']['content'])"),
	     "False \"from the inspector\\n\" \"from the inspector\\n\"\n");
	SAME(read_file(hws(name)), "from the inspector\n");
}

START_TEST(test_mcp_inspector_lists_the_tools)
{
	NEED_SBX_MCP();
	inspect_tools_list(stdio_target());
}
END_TEST

START_TEST(test_mcp_inspector_writes_then_reads)
{
	NEED_SBX_MCP();
	inspect_write_then_read(stdio_target(), "insp-stdio.txt");
}
END_TEST

/* A path outside the virtual roots and a symlink out of the workspace:
 * results with isError and the reference's texts (the Inspector exits
 * 0: tool errors, not protocol errors), nothing written. */
START_TEST(test_mcp_inspector_paths_outside_are_tool_errors)
{
	NEED_SBX_MCP();
	const char *r = inspect(stdio_target(), "--method tools/call --tool-name read_file"
						" --tool-arg path=/etc/passwd");
	SAME(JQ(r, "d['isError'], d['content'][0]['text']"),
	     "True Error: Only paths under /mnt/user-data/, /mnt/skills/, /mnt/acp-workspace/, or"
	     " configured mount paths are allowed\n");
	r = inspect(stdio_target(), "--method tools/call --tool-name write_file"
				    " --tool-arg path=/mnt/user-data/workspace/escdir/sbx-insp-test"
				    " content=x");
	SAME(JQ(r, "d['isError'], d['content'][0]['text']"),
	     "True Error: Access denied: path escapes mounted directory\n");
	ck_assert(!exists("/etc/sbx-insp-test"));
}
END_TEST

/* The same through sbx serve, the token in the Inspector's --header;
 * without it the Inspector fails with the server's 401 text. */
START_TEST(test_mcp_inspector_over_streamable_http)
{
	NEED_SBX_MCP();
	const char *port = serve_start_in(H, "--listen 127.0.0.1:0");

	inspect_tools_list(http_target(port));
	inspect_write_then_read(http_target(port), "insp-http.txt");

	int st;
	const char *dir =
		inspector_run(fmt_cmd("http://127.0.0.1:%s/mcp/alice/t1 --transport http", port),
			      "--method tools/list", &st);
	char *err = read_file(fmt_cmd("%s/err", dir));
	ck_assert_msg(st == 1 && strstr(err, "Unauthorized: an Authorization: Bearer token is"
					     " needed"),
		      "exit %d:\n%s", st, err);
	SAME(read_file(fmt_cmd("%s/out.json", dir)), "");
}
END_TEST

/* ?profile=filesystem on sbx serve's endpoint: server-filesystem's
 * tools, working in the view; a profile of no such name is refused at
 * initialize (the Inspector fails with the server's text). */
START_TEST(test_mcp_serve_takes_the_filesystem_profile)
{
	NEED_SBX_MCP();
	const char *port = serve_start_in(H, "--listen 127.0.0.1:0");
	const char *fs = fmt_cmd("'http://127.0.0.1:%s/mcp/alice/t1?profile=filesystem'"
				 " --transport http"
				 " --header \"Authorization: Bearer $(cat '%s/serve.token')\"",
				 port, H);

	const char *r = inspect(fs, "--method tools/list");
	SAME(JQ(r, "','.join(sorted(t['name'] for t in d['tools']))"),
	     "create_directory,directory_tree,edit_file,get_file_info,list_allowed_directories,"
	     "list_directory,list_directory_with_sizes,move_file,read_file,read_media_file,"
	     "read_multiple_files,read_text_file,search_files,write_file\n");
	r = inspect(fs, "--method tools/call --tool-name write_file"
			" --tool-arg path=/mnt/user-data/workspace/fs-http.txt content=viafs");
	SAME(JQ(r, "d.get('isError', False)"), "False\n");
	SAME(read_file(hws("fs-http.txt")), "viafs");

	int st;
	const char *dir = inspector_run(
		fmt_cmd("'http://127.0.0.1:%s/mcp/alice/t1?profile=desktop' --transport http"
			" --header \"Authorization: Bearer $(cat '%s/serve.token')\"",
			port, H),
		"--method tools/list", &st);
	char *err = read_file(fmt_cmd("%s/err", dir));
	ck_assert_msg(st == 1 && strstr(err, "profile must be reference or filesystem"),
		      "exit %d:\n%s", st, err);
}
END_TEST

Suite *suite_mcp(void)
{
	Suite *s = suite_create("mcp");
	TCase *fs = tcase_create("filesystem");
	TCase *sbx = tcase_create("sbx");
	TCase *inspector = tcase_create("inspector");

	/* Each scenario is bounded by DRIVE_S; the timeout only catches a
	 * test that hangs outside one. */
	tcase_set_timeout(fs, DRIVE_S * 2 + 30);
	tcase_set_tags(fs, "node");
	tcase_add_checked_fixture(fs, fs_setup, NULL);
	tcase_add_test(fs, test_mcp_fs_negotiates_both_protocol_versions);
	tcase_add_test(fs, test_mcp_fs_lists_its_tools);
	tcase_add_test(fs, test_mcp_fs_reads_writes_and_edits);
	tcase_add_test(fs, test_mcp_fs_paths_outside_are_tool_errors);
	tcase_add_test(fs, test_mcp_fs_two_clients_at_once);
	tcase_add_test(fs, test_mcp_driver_reports_failures_and_kills_hung_servers);
	suite_add_tcase(s, fs);

	tcase_set_timeout(sbx, DRIVE_S + 30);
	tcase_set_tags(sbx, "node");
	tcase_add_checked_fixture(sbx, sbx_setup, sbx_teardown);
	tcase_add_test(sbx, test_mcp_sbx_negotiates_both_protocol_versions);
	tcase_add_test(sbx, test_mcp_sbx_lists_the_reference_tools);
	tcase_add_test(sbx, test_mcp_sbx_write_then_read_in_the_workspace);
	tcase_add_test(sbx, test_mcp_sbx_paths_outside_are_tool_errors);
	tcase_add_test(sbx, test_mcp_sbx_bash_runs_in_the_sandbox);
	tcase_add_test(sbx, test_mcp_sbx_bash_keeps_cwd_and_exports_in_a_session);
	tcase_add_test(sbx, test_mcp_sbx_cancel_kills_the_command);
	tcase_add_test(sbx, test_mcp_sbx_two_clients_share_the_view_not_the_shell);
	tcase_add_test(sbx, test_mcp_sbxfs_lists_server_filesystems_tools);
	tcase_add_test(sbx, test_mcp_sbxfs_round_trip_in_the_view);
	tcase_add_test(sbx, test_mcp_sbxfs_paths_outside_are_tool_errors);
	suite_add_tcase(s, sbx);

	/* Each Inspector run is bounded by DRIVE_S, the HTTP test has five. */
	tcase_set_timeout(inspector, DRIVE_S * 5 + 30);
	tcase_set_tags(inspector, "node");
	tcase_add_checked_fixture(inspector, sbx_setup, sbx_teardown);
	tcase_add_test(inspector, test_mcp_inspector_lists_the_tools);
	tcase_add_test(inspector, test_mcp_inspector_writes_then_reads);
	tcase_add_test(inspector, test_mcp_inspector_paths_outside_are_tool_errors);
	tcase_add_test(inspector, test_mcp_inspector_over_streamable_http);
	tcase_add_test(inspector, test_mcp_serve_takes_the_filesystem_profile);
	suite_add_tcase(s, inspector);
	return s;
}
