/* sbx mcp at the protocol's edges, driven raw (tests/tools/mcpraw.py):
 * what the official SDK never sends (malformed lines, batches, calls
 * before initialize, unknown methods and tools), version negotiation,
 * cancellation, and a client killed mid-command: nothing is left
 * running, the view is given back, the broker sbx mcp started stops. The
 * SDK's own view of the server is the mcp suite's (tests/mcp/). */
#include "tests/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *H;

static void setup(void)
{
	tool_env();
	H = test_dir("mhome");
	test_home_store(H);
}

static void teardown(void)
{
	broker_stop(H);
}

/* What mcpraw.py prints for the lines SCRIPT (\n-separated) sent to sbx
 * mcp of alice/t1, after initializing with version INIT (NULL: not),
 * each JSON message reduced to the Python expression EXPR of it (d). */
static char *session_of(const char *options, const char *init, const char *script, const char *expr)
{
	const char *f = fmt_cmd("%s/script", test_dir("script"));

	ck_assert_int_eq(write_file(f, script), 0);
	return OUT("python3 tests/tools/mcpraw.py %s%s -- '%s' mcp --home '%s' --user alice"
		   " --thread t1 %s < '%s' 2>/dev/null | grep '^{' | python3 tests/tools/jsonq.py"
		   " --lines \"%s\"",
		   init ? "--init " : "", init ? init : "", test_bin("sbx"), H, options, f, expr);
}

static char *session(const char *init, const char *script, const char *expr)
{
	return session_of("", init, script, expr);
}

/* Each reply's id, and its error's code or its result's keys. */
#define ID_AND_OUTCOME \
	"d.get('id'), d['error']['code'] if 'error' in d else sorted(d.get('result', {}))"

START_TEST(test_mcp_protocol_errors_are_the_protocol_s)
{
	SAME(session(NULL,
		     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n"
		     "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n"
		     "wait 2\n"
		     "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"initialize\",\"params\":"
		     "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
		     "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n"
		     "wait 3\n"
		     "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
		     "{not json\n"
		     "[{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}]\n"
		     "{\"jsonrpc\":\"1.0\",\"id\":5,\"method\":\"ping\"}\n"
		     "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"resources/list\"}\n"
		     "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":"
		     "{\"name\":\"rm_rf\",\"arguments\":{}}}\n"
		     "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":"
		     "{\"name\":\"bash\",\"arguments\":[1]}}\n"
		     "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"initialize\",\"params\":"
		     "{\"protocolVersion\":\"2025-11-25\"}}\n"
		     "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"logging/setLevel\",\"params\":"
		     "{\"level\":\"loud\"}}\n"
		     "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\"}\n"
		     "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"ping\"}\n"
		     "wait 11\n",
		     ID_AND_OUTCOME),
	     "1 -32600\n"
	     "2 []\n"
	     "3 ['capabilities', 'instructions', 'protocolVersion', 'serverInfo']\n"
	     "None -32700\n"
	     "None -32600\n"
	     "5 -32600\n"
	     "6 -32601\n"
	     "7 -32602\n"
	     "8 -32602\n"
	     "9 -32600\n"
	     "10 -32602\n"
	     "11 []\n");
}
END_TEST

/* The version the client asks for if it is served, else the newest. */
START_TEST(test_mcp_protocol_versions_are_negotiated)
{
	const char *expr = "d['result']['protocolVersion'], d['result']['serverInfo']['name']";

	SAME(session("2025-06-18", "", expr), "2025-06-18 sbx-mcp\n");
	SAME(session("2025-11-25", "", expr), "2025-11-25 sbx-mcp\n");
	SAME(session("2024-11-05", "", expr), "2025-11-25 sbx-mcp\n");
}
END_TEST

/* bash runs in the session's own shell (cd and exports carry over), its
 * output in the reference's format (stderr alone when there is no
 * stdout); a cancelled call is never answered
 * and its command is killed; the session is a run. */
START_TEST(test_mcp_protocol_bash_session_cancel_and_run)
{
	char *out = session(
		"2025-11-25",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"bash\","
		"\"arguments\":{\"command\":\"cd /tmp && export X=42; echo hi >&2\"}}}\n"
		"wait 1\n"
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"bash\","
		"\"arguments\":{\"command\":\"pwd; echo $X; echo made > "
		"/mnt/user-data/workspace/m.txt; false\"}}}\n"
		"wait 2\n"
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"bash\","
		"\"arguments\":{\"command\":\"sleep 100888\"}}}\n"
		"sleep 1\n"
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
		"{\"requestId\":3}}\n"
		"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}\n"
		"wait 4\n",
		"d['id'], json.dumps(d['result'].get('content'))");
	SAME(out, "init null\n"
		  "1 [{\"text\": \"hi\\n\", \"type\": \"text\"}]\n"
		  "2 [{\"text\": \"/tmp\\n42\\n\\nExit Code: 1\", \"type\": \"text\"}]\n"
		  "4 null\n");
	OK("for i in $(seq 50); do pgrep -f 'sleep 10088[8]' >/dev/null || exit 0; sleep 0.1;"
	   " done; exit 1");
	SAME(OUT("'%s' runs --home '%s' --user alice --thread t1 --format json | python3"
		 " tests/tools/jsonq.py \"[(r['kind'], r['files_changed']) for r in d['runs']]\"",
		 test_bin("sbx"), H),
	     "[('run', 1)]\n");
}
END_TEST

/* A tools/call of TOOL with ARGS (JSON), id ID, as a script line. */
static char *call(int id, const char *tool, const char *args)
{
	return fmt_cmd("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":"
		       "{\"name\":\"%s\",\"arguments\":%s}}\nwait %d\n",
		       id, tool, args, id);
}

/* changes tells the session's run so far; undo takes it back (the
 * session goes on in a new run), or one path; a path changed by
 * someone else since is a conflict, and nothing is undone. */
START_TEST(test_mcp_protocol_changes_and_undo)
{
	const char *ws = fmt_cmd("%s/users/alice/threads/t1/user-data/workspace", H);

	OK("mkdir -p '%s' && echo orig > '%s/keep.txt'", ws, ws);
	char *script = fmt_cmd(
		"%s%s%s%s%s%s%s",
		call(1, "bash",
		     "{\"command\":\"cat keep.txt >/dev/null; echo more >> keep.txt; echo new >"
		     " new.txt\"}"),
		call(2, "changes", "{}"), call(3, "undo", "{}"),
		call(4, "bash", "{\"command\":\"ls; cat keep.txt; echo again > new.txt\"}"),
		call(5, "changes", "{\"format\":\"json\"}"),
		call(6, "undo", "{\"path\":\"/mnt/user-data/workspace/new.txt\"}"),
		call(7, "changes", "{\"format\":\"bad\"}"));
	SAME(session("2025-11-25", script,
		     "d['id'], d['result'].get('isError'), (lambda t: [(f['status'], f['path'])"
		     " for f in json.loads(t)['files']] if t and t[0] == '{' else json.dumps(t))"
		     "(d['result'].get('content', [{}])[0].get('text'))"),
	     "init None null\n"
	     "1 False \"(no output)\"\n"
	     "2 False \"modified /mnt/user-data/workspace/keep.txt\\n"
	     "--- a/mnt/user-data/workspace/keep.txt\\n+++ b/mnt/user-data/workspace/keep.txt\\n"
	     "@@ -1 +1,2 @@\\n orig\\n+more\\n"
	     "created /mnt/user-data/workspace/new.txt\\n"
	     "--- a/mnt/user-data/workspace/new.txt\\n+++ b/mnt/user-data/workspace/new.txt\\n"
	     "@@ -0,0 +1 @@\\n+new\\n\"\n"
	     "3 False \"Undone (undo run 2).\\n\"\n"
	     "4 False \"keep.txt\\norig\\n\"\n"
	     "5 False [('created', '/mnt/user-data/workspace/new.txt')]\n"
	     "6 False \"Put back as it was when the run began.\"\n"
	     "7 True \"Error: \\\"format\\\" must be \\\"diff\\\" or \\\"json\\\"\"\n");
	OK("test ! -e '%s/new.txt'", ws);
	/* The runs: the session's first, its undo, the second (with the
	 * restore of new.txt inside it), the restore. */
	SAME(OUT("'%s' runs --home '%s' --user alice --thread t1 --format json | python3"
		 " tests/tools/jsonq.py \"[r['kind'] for r in d['runs']]\"",
		 test_bin("sbx"), H),
	     "['run', 'undo', 'run', 'restore']\n");
}
END_TEST

/* The end of the input is not the client gone: a call made just before
 * it is answered (a client that pipes its requests in). */
START_TEST(test_mcp_protocol_the_last_call_is_answered_after_the_input_ends)
{
	SAME(session("2025-11-25",
		     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
		     "{\"name\":\"bash\",\"arguments\":{\"command\":\"sleep 0.5; echo late\"}}}\n",
		     "d['id'], json.dumps(d['result'].get('content'))"),
	     "init null\n1 [{\"text\": \"late\\n\", \"type\": \"text\"}]\n");
}
END_TEST

/* Client roots narrow what the file tools reach, never widen it: a root
 * inside the view limits them to it; one outside (the client's own
 * directory) is ignored. */
START_TEST(test_mcp_protocol_roots_only_narrow)
{
	const char *init = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
			   "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"roots\":{}},"
			   "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\nwait 0\n"
			   "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
			   "wait \"sbx-roots-1\"\n";
	const char *roots = "{\"jsonrpc\":\"2.0\",\"id\":\"sbx-roots-1\",\"result\":{\"roots\":"
			    "[{\"uri\":\"file:///mnt/user-data/workspace/app\"},"
			    "{\"uri\":\"file:///home/someone/project\"}]}}\n";
	const char *ws = fmt_cmd("%s/users/alice/threads/t1/user-data/workspace", H);

	OK("mkdir -p '%s/app' && echo in > '%s/app/a.txt' && echo out > '%s/b.txt'", ws, ws, ws);
	SAME(session(NULL,
		     fmt_cmd("%s%s%s%s%s", init, roots,
			     call(1, "read_file",
				  "{\"path\":\"/mnt/user-data/workspace/app/a.txt\"}"),
			     call(2, "read_file", "{\"path\":\"/mnt/user-data/workspace/b.txt\"}"),
			     call(3, "read_file", "{\"path\":\"/home/someone/project/x\"}")),
		     "d.get('id'), d.get('method'), d['result']['isError'] if 'content' in"
		     " d.get('result', {}) else None, d['result']['content'][0]['text'][:60] if"
		     " 'content' in d.get('result', {}) else None"),
	     "0 None None None\n"
	     "sbx-roots-1 roots/list None None\n"
	     "None notifications/message None None\n"
	     "1 None False in\n\n"
	     "2 None True Error: Access denied: /mnt/user-data/workspace/b.txt is outs\n"
	     "3 None True Error: Access denied: /home/someone/project/x is outside the\n");
}
END_TEST

/* A client killed mid-command (SIGKILL: no goodbye) leaves nothing: its
 * command is killed, its lease given back, and the broker sbx mcp
 * started stops and unmounts the view. */
START_TEST(test_mcp_protocol_a_killed_client_leaves_nothing)
{
	const char *f = fmt_cmd("%s/script", test_dir("script"));

	ck_assert_int_eq(write_file(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
				       "\"params\":{\"name\":\"bash\",\"arguments\":"
				       "{\"command\":\"sleep 100999\"}}}\n"),
			 0);
	OK("python3 tests/tools/mcpraw.py --init 2025-11-25 --kill-after 1.5 -- '%s' mcp"
	   " --home '%s' --user alice --thread t1 < '%s' 2>/dev/null | grep -q killed",
	   test_bin("sbx"), H, f);
	OK("for i in $(seq 100); do pgrep -f 'sleep 10099[9]' >/dev/null || exit 0; sleep 0.1;"
	   " done; exit 1");
	OK("for i in $(seq 150); do test -S '%s/run/broker.sock' || exit 0; sleep 0.1; done;"
	   " exit 1",
	   H);
	OK("for i in $(seq 100); do grep -q ' %s/run/views/alice/t1 ' /proc/mounts || exit 0;"
	   " sleep 0.1; done; exit 1",
	   H);
}
END_TEST

/* Calls sent at once each get their own answer: the session's calls
 * share its connections to the broker, but one connection carries one
 * call at a time, whatever the order the calls end in (a slow bash
 * among quick reads), and later calls reuse them. */
START_TEST(test_mcp_protocol_calls_at_once_each_get_their_own_answer)
{
	const char *ws = fmt_cmd("%s/users/alice/threads/t1/user-data/workspace", H);
	char *script = fmt_cmd("{\"jsonrpc\":\"2.0\",\"id\":100,\"method\":\"tools/call\","
			       "\"params\":{\"name\":\"bash\",\"arguments\":{\"command\":"
			       "\"sleep 0.5; echo slow\"}}}\n");
	char *expect = strdup("init null\n");

	OK("mkdir -p '%s' && for i in $(seq 1 12); do echo \"file $i\" > '%s'/f$i.txt; done", ws,
	   ws);
	for (int i = 1; i <= 12; i++)
		script = fmt_cmd("%s{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
				 "\"params\":{\"name\":\"read_file\",\"arguments\":{\"path\":"
				 "\"/mnt/user-data/workspace/f%d.txt\"}}}\n",
				 script, i, i);
	script = fmt_cmd("%swaitall 100", script);
	for (int i = 1; i <= 12; i++)
		script = fmt_cmd("%s %d", script, i);
	script = fmt_cmd("%s\n%s%s", script,
			 call(13, "read_file", "{\"path\":\"/mnt/user-data/workspace/f3.txt\"}"),
			 call(14, "bash", "{\"command\":\"cat f4.txt\"}"));
	/* Sorted by id: the order they came in is the calls' own. */
	char *out = OUT("printf '%%s' '%s' | sort -n -k1,1",
			session("2025-11-25", script,
				"d['id'], json.dumps(d['result'].get('content'))"));
	for (int i = 1; i <= 12; i++)
		expect = fmt_cmd("%s%d [{\"text\": \"file %d\\n\", \"type\": \"text\"}]\n", expect,
				 i, i);
	expect = fmt_cmd("%s13 [{\"text\": \"file 3\\n\", \"type\": \"text\"}]\n"
			 "14 [{\"text\": \"file 4\\n\", \"type\": \"text\"}]\n"
			 "100 [{\"text\": \"slow\\n\", \"type\": \"text\"}]\n",
			 expect);
	SAME(out, expect);
}
END_TEST

/* The broker stopped under a live session: the next call is a tool
 * error that says so at once (the connections the session kept are
 * dead, and none hangs it), and once a broker serves the home again the
 * session's calls work again. */
START_TEST(test_mcp_protocol_a_broker_gone_is_a_tool_error_not_a_hang)
{
	const char *ws = fmt_cmd("%s/users/alice/threads/t1/user-data/workspace", H);
	const char *sbx = test_bin("sbx");
	const char *read = "{\"path\":\"/mnt/user-data/workspace/here.txt\"}";

	OK("mkdir -p '%s' && echo here > '%s/here.txt'", ws, ws);
	SAME(session("2025-11-25",
		     fmt_cmd("%s%srun '%s' broker --home '%s' --shutdown\n%s%s"
			     "run '%s' broker --home '%s'\n%s",
			     call(1, "read_file", read), call(2, "bash", "{\"command\":\"true\"}"),
			     sbx, H, call(3, "read_file", read),
			     call(4, "bash", "{\"command\":\"true\"}"), sbx, H,
			     call(5, "read_file", read)),
		     "d['id'], d['result'].get('isError'), d['result'].get('content', [{}])[0]"
		     ".get('text', '').split(' (')[0]"),
	     fmt_cmd("init None \n"
		     "1 False here\n\n"
		     "2 False (no output)\n"
		     "3 True Error: no broker serves %s\n"
		     "4 True Error: no broker serves %s\n"
		     "5 False here\n\n",
		     H, H));
}
END_TEST

/* write_file of more than a broker protocol line's 1 MiB (the
 * filesystem profile's; the reference's refuses past 80 KiB, as the
 * reference does): its arguments reach the broker in a memfd, as sbx
 * serve's large writes do (Fixed: "too_large: a request line is longer
 * than 1048576 bytes"). */
START_TEST(test_mcp_protocol_write_file_past_a_protocol_line)
{
	size_t n = 3u << 20;
	char *content = malloc(n + 1);

	ck_assert_ptr_nonnull(content);
	memset(content, 'x', n);
	content[n] = '\0';
	SAME(session_of(
		     "--profile filesystem", "2025-11-25",
		     fmt_cmd("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
			     "{\"name\":\"write_file\",\"arguments\":{"
			     "\"path\":\"/mnt/user-data/workspace/big.txt\",\"content\":\"%s\"}}}\n"
			     "wait 1\n",
			     content),
		     "d.get('id'), d.get('result', {}).get('isError'),"
		     " d.get('result', {}).get('content', [{}])[0].get('text')"),
	     "init None None\n1 False Successfully wrote to /mnt/user-data/workspace/big.txt\n");
	struct stat st;
	ck_assert_int_eq(stat(fmt_cmd("%s/users/alice/threads/t1/user-data/workspace/big.txt", H),
			      &st),
			 0);
	ck_assert_int_eq(st.st_size, (off_t)n);
}
END_TEST

Suite *suite_mcp_protocol(void)
{
	Suite *s = suite_create("mcp_protocol");
	TCase *tc = tcase_create("mcp_protocol");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_mcp_protocol_errors_are_the_protocol_s);
	tcase_add_test(tc, test_mcp_protocol_versions_are_negotiated);
	tcase_add_test(tc, test_mcp_protocol_bash_session_cancel_and_run);
	tcase_add_test(tc, test_mcp_protocol_a_killed_client_leaves_nothing);
	tcase_add_test(tc, test_mcp_protocol_changes_and_undo);
	tcase_add_test(tc, test_mcp_protocol_the_last_call_is_answered_after_the_input_ends);
	tcase_add_test(tc, test_mcp_protocol_roots_only_narrow);
	tcase_add_test(tc, test_mcp_protocol_calls_at_once_each_get_their_own_answer);
	tcase_add_test(tc, test_mcp_protocol_a_broker_gone_is_a_tool_error_not_a_hang);
	tcase_add_test(tc, test_mcp_protocol_write_file_past_a_protocol_line);
	suite_add_tcase(s, tc);
	return s;
}
