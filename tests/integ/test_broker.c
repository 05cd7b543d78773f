/* The exec broker with real views: sbx exec in a namespace sandbox
 * (output, status, virtual paths, timeouts that kill the whole tree,
 * background jobs, the environment built, identity values), host mode
 * (refused, then allowed), the protocol's errors, peer credentials,
 * leases, parking and idle unmounts, a client that goes away, shutdown,
 * a broker killed and the next one, one broker per home, configuration
 * errors. */
#include "tests/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *H;

static void start(const char *conf)
{
	H = broker_start("bhome", conf);
}

static void setup(void)
{
	tool_env();
	start(NULL);
}

static void teardown(void)
{
	broker_stop(H);
}

/* `sbx exec` of ARGS (after --home H) as text, any exit status (which
 * goes to *STATUS). */
static char *sbx_exec(int *status, const char *args)
{
	char *cmd = fmt_cmd("'%s' exec --home '%s' --user alice --thread t1 %s 2>&1",
			    test_bin("sbx"), H, args);
	char *out = capture(cmd, status);

	free(cmd);
	return out;
}

/* The broker's final reply to the raw request lines REQS (JSON, sorted
 * keys), one per line. */
static char *raw(const char *reqs)
{
	return OUT("python3 tests/tools/bclient.py '%s' %s", H, reqs);
}

/* EXPR of the JSON reply REPLY, with the reply as d, as
 * tests/tools/jsonq.py prints it; with LINES, of each reply of REPLY
 * (one a line), a line each. */
static char *json_of(const char *reply, const char *expr, bool lines)
{
	char *f = fmt_cmd("%s/reply.json", test_dir("reply")); /* replies hold quotes */

	ck_assert_int_eq(write_file(f, reply), 0);
	return OUT("python3 tests/tools/jsonq.py %s'%s' '%s'", lines ? "--lines " : "", expr, f);
}

static char *field(const char *reply, const char *expr)
{
	return json_of(reply, expr, false);
}

static char *fields(const char *replies, const char *expr)
{
	return json_of(replies, expr, true);
}

START_TEST(test_broker_exec_in_the_namespace_sandbox)
{
	int st;

	SAME(sbx_exec(&st, "-- 'pwd; echo out; echo err >&2; exit 3'"),
	     "/mnt/user-data/workspace\nout\nerr\n");
	ck_assert_int_eq(st, 3);
	/* Virtual paths are real inside; the bytes land in the thread. */
	SAME(sbx_exec(&st, "-- \"python3 -c 'import pathlib, sys; p = pathlib.Path(sys.argv[1]);"
			   " p.write_text(sys.argv[2]); print(p.read_text())'"
			   " /mnt/user-data/workspace/x hi\""),
	     "hi\n");
	ck_assert_int_eq(st, 0);
	SAME(read_file(fmt_cmd("%s/users/alice/threads/t1/user-data/workspace/x", H)), "hi");
	/* The host is not there: no home, its own PIDs, no network,
	 * skills read-only. */
	/* (PID 1: bubblewrap's, or the one-off launcher, exec/launcher.h.) */
	SAME(sbx_exec(&st, "-- 'test -e /root || echo no-root;"
			   " grep -qxE \"bwrap|sbx-launcher\" /proc/1/comm && echo own-pids;"
			   " tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d \\  ;"
			   " touch /mnt/skills/x 2>/dev/null || echo ro'"),
	     "no-root\nown-pids\nlo\nro\n");
	/* Our own exit is the command's: 128+N for a signal. */
	sbx_exec(&st, "-- 'kill -9 $$'");
	ck_assert_int_eq(st, 128 + 9);
}
END_TEST

START_TEST(test_broker_timeout_kills_the_whole_tree)
{
	int st;
	char *out = sbx_exec(&st, "--timeout 1 -- 'sleep 300.7 & sleep 301.7; echo never'");

	ck_assert_int_eq(st, 124);
	ck_assert_msg(strstr(out, "timed out"), "%s", out);
	ck_assert_msg(!strstr(out, "never"), "%s", out);
	ASSERT_GONE("sleep 30[01][.]7");
	/* The text a tool gets says so, and the code. */
	char *r = raw("'{\"op\":\"exec\",\"user\":\"alice\",\"thread\":\"t1\",\"timeout\":1,"
		      "\"command\":\"echo started; sleep 300.7\"}'");
	SAME(field(r, "d[\"code\"], d[\"timed_out\"], d[\"output\"].startswith(\"started\\n\"),"
		      " d[\"output\"].endswith(\"Exit Code: 124\")"),
	     "124 True True True\n");
}
END_TEST

START_TEST(test_broker_background_jobs_do_not_hold_a_command)
{
	int st;

	/* If the job held the command open, it would time out (124). */
	SAME(sbx_exec(&st, "--timeout 5 -- 'sleep 60 > /dev/null 2>&1 & echo started'"),
	     "started\n");
	ck_assert_int_eq(st, 0);
	SAME(sbx_exec(&st, "--timeout 5 -- '(sleep 60 &); echo again'"), "again\n");
	ck_assert_int_eq(st, 0);
}
END_TEST

/* The broker's environment is not its commands': they get the fixed set
 * (exec/env.h), what sbx.conf's env_pass names and the request's
 * variables, in the sandbox and on the host alike. */
START_TEST(test_broker_environment_is_built)
{
	const char *show = "'echo ${OPENAI_API_KEY:-none} ${DATABASE_URL:-none} ${SBX_STORE:-none}"
			   " ${SBX_HOME:-none} ${SAFE_VALUE:-none} $PASSED $GITHUB_TOKEN'";
	int st;

	/* Restart it with secrets and more in its environment. */
	teardown();
	H = test_dir("bhome");
	ck_assert_int_eq(append_file(fmt_cmd("%s/sbx.conf", H),
				     "[broker]\nallow_host_bash = true\nenv_pass = PASSED\n"),
			 0);
	OK("OPENAI_API_KEY=k1 DATABASE_URL=d1 SAFE_VALUE=s1 PASSED=p1 SBX_STORE=sqlite"
	   " SBX_HOME='%s' '%s' broker --home '%s' >/dev/null",
	   H, test_bin("sbx"), H);
	SAME(sbx_exec(&st, fmt_cmd("--env GITHUB_TOKEN=explicit -- %s", show)),
	     "none none none none none p1 explicit\n");
	SAME(sbx_exec(&st, fmt_cmd("--host --env GITHUB_TOKEN=explicit -- %s", show)),
	     "none none none none none p1 explicit\n");
	/* On the host the command runs as the broker's user, in its home. */
	SAME(sbx_exec(&st, "--host -- 'echo $HOME ${USER-unset}'"),
	     fmt_cmd("%s %s\n", getenv("HOME"), getenv("USER") ? getenv("USER") : "unset"));
	int bad;
	sbx_exec(&bad, "--env 1X=y -- true");
	ck_assert_int_eq(bad, 2);
}
END_TEST

START_TEST(test_broker_identity_values)
{
	static const char *const ok[] = { "alice", "o'neil", "$(touch /tmp/sbx-pwn)",
					  "`touch /tmp/sbx-pwn`", "a b;c|d&e" };
	int st;

	for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++) {
		char *f = fmt_cmd("%s/id", test_dir("id"));
		ck_assert_int_eq(write_file(f, ok[i]), 0);
		char *out = sbx_exec(&st, fmt_cmd("--channel-user-id \"$(cat '%s')\""
						  " -- 'printf %%s \"$DEERFLOW_CHANNEL_USER_ID\"'",
						  f));
		SAME(out, ok[i]);
	}
	ck_assert(!exists("/tmp/sbx-pwn"));
	/* Absent: nothing added (a value the broker inherited stays);
	 * empty, newline, NUL, over 256 characters: unset. */
	teardown();
	H = test_dir("bhome");
	OK("DEERFLOW_CHANNEL_USER_ID=inherited '%s' broker --home '%s' >/dev/null", test_bin("sbx"),
	   H);
	SAME(sbx_exec(&st, "-- 'echo ${DEERFLOW_CHANNEL_USER_ID-unset}'"), "inherited\n");
	static const char one[] = "'{\"op\":\"exec\",\"user\":\"alice\",\"thread\":\"t1\","
				  "\"channel_user_id\":\"%s\","
				  "\"command\":\"echo ${DEERFLOW_CHANNEL_USER_ID-unset}\"}'";
	char big[10241];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	char *r = raw(fmt_cmd("%s %s %s %s", fmt_cmd(one, ""), fmt_cmd(one, "a\\nb"),
			      fmt_cmd(one, "a\\u0000b"), fmt_cmd(one, big)));
	SAME(fields(r, "d[\"output\"]"), "unset\n\nunset\n\nunset\n\nunset\n\n");
	(void)st;
}
END_TEST

START_TEST(test_broker_host_mode_refused_unless_allowed)
{
	int st;
	char *out = sbx_exec(&st, "--host -- pwd");

	ck_assert_int_eq(st, 1);
	ck_assert_msg(strstr(out, "not a secure boundary") && strstr(out, "allow_host_bash = true"),
		      "%s", out);
	teardown();
	start("[broker]\nallow_host_bash = true\n");
	/* Virtual paths rewritten in, host paths masked out. */
	SAME(sbx_exec(&st, "--host -- 'pwd; echo hi > /mnt/user-data/outputs/h.txt;"
			   " cat /mnt/user-data/outputs/h.txt; readlink -f .'"),
	     "/mnt/user-data/workspace\nhi\n/mnt/user-data/workspace\n");
	ck_assert_int_eq(st, 0);
	SAME(read_file(fmt_cmd("%s/users/alice/threads/t1/user-data/outputs/h.txt", H)), "hi\n");
	/* A host session too; output streamed whole lines, masked. */
	sbx_exec(&st, "--host --scope s -- 'cd /mnt/user-data/outputs'");
	SAME(sbx_exec(&st, "--host --scope s -- 'pwd; printf \"$PWD/h.txt\"'"),
	     "/mnt/user-data/outputs\n/mnt/user-data/outputs/h.txt");
	/* The reference's path guard: host paths and traversal refused,
	 * nothing run; the skills host directory masked in output too. */
	SAME(sbx_exec(&st, "--host -- 'cat /etc/passwd > /mnt/user-data/outputs/p'"),
	     "sbx: exec: Unsafe absolute paths in command: /etc/passwd. Use paths under"
	     " /mnt/user-data\n");
	ck_assert_int_eq(st, 1);
	ck_assert(!exists(fmt_cmd("%s/users/alice/threads/t1/user-data/outputs/p", H)));
	SAME(sbx_exec(&st, "--host -- 'cat ../../x'"), "sbx: exec: Access denied: path traversal"
						       " detected\n");
	OK("ln -s '%s/skills/public/s' '%s/users/alice/threads/t1/user-data/workspace/sk'", H, H);
	OK("ln -s '%s/skills/custom/s' '%s/users/alice/threads/t1/user-data/workspace/sl'", H, H);
	OK("ln -s '%s/users/alice/skills/custom/s' '%s/users/alice/threads/t1/user-data/workspace/sc'",
	   H, H);
	OK("ln -s '%s/integrations/skills/p/s' '%s/users/alice/threads/t1/user-data/workspace/si'",
	   H, H);
	SAME(sbx_exec(&st, "--host -- 'readlink sk sl sc si; echo $((10/2)) https://x/y'"),
	     "/mnt/skills/public/s\n/mnt/skills/legacy/s\n/mnt/skills/custom/s\n"
	     "/mnt/skills/integrations/p/s\n5 https://x/y\n");
}
END_TEST

START_TEST(test_broker_protocol_errors)
{
	char *r = raw(
		"'not json' '[1,2]' '{\"op\":7}' '{\"op\":\"fly\",\"id\":9}'"
		" '{\"op\":\"exec\",\"user\":\"../x\",\"thread\":\"t\",\"command\":\"true\"}'"
		" '{\"op\":\"exec\",\"user\":\"a\",\"thread\":\"t\"}'"
		" '{\"op\":\"exec\",\"user\":\"a\",\"thread\":\"t\",\"command\":\"true\",\"timeout\":0}'"
		" '{\"op\":\"exec\",\"user\":\"a\",\"thread\":\"t\",\"command\":\"true\",\"env\":{\"A\":1}}'"
		" '{\"op\":\"acquire\",\"user\":\"a\",\"thread\":\"t\"}'"
		" '{\"op\":\"release\",\"user\":\"a\",\"thread\":\"t\",\"owner\":\"nobody\"}'"
		" '{\"op\":\"ping\",\"id\":\"p\"}'"
		" '{\"op\":\"acquire\",\"user\":\"a\",\"thread\":\"a.b\",\"owner\":\"o\"}'");
	SAME(fields(r, "d.get(\"id\"), d[\"ok\"], (d.get(\"error\") or {}).get(\"code\")"),
	     "None False bad_request\nNone False bad_request\nNone False bad_request\n"
	     "9 False unknown_op\nNone False bad_request\nNone False bad_request\n"
	     "None False bad_request\nNone False bad_request\nNone False bad_request\n"
	     "None False no_lease\np True None\nNone False bad_request\n");
	/* An oversized line: an error, and the connection still serves. */
	static const char head[] = "{\"op\":\"ping\",\"pad\":\"";
	size_t n = strlen(head), pad = 2000000;
	char *big = malloc(n + pad + 32), *f = fmt_cmd("%s/big", test_dir("big"));
	ck_assert_ptr_nonnull(big);
	memcpy(big, head, n);
	memset(big + n, 'x', pad);
	strcpy(big + n + pad, "\"}\n{\"op\":\"ping\"}\n");
	ck_assert_int_eq(write_file(f, big), 0);
	r = OUT("python3 tests/tools/bclient.py '%s' --stdin < '%s'", H, f);
	ck_assert_msg(strstr(r, "too_large") && strstr(r, "\"version\""), "%s", r);
}
END_TEST

/* The agent's framework presents outputs through the broker as with sbx
 * present: paths checked against the run's thread (virtual or host
 * paths of its outputs), errors by code, and run end's receipt has them. */
START_TEST(test_broker_present_for_the_receipt)
{
	const char *b = test_bin("sbx");
	char real[PATH_MAX];
	int st;

	sbx_exec(&st, "-- true"); /* the thread and its view */
	ck_assert_int_eq(st, 0);
	char *run = OUT("'%s' run begin --home '%s' --user alice --thread t1", b, H);
	run[strcspn(run, "\n")] = '\0';
	sbx_exec(&st,
		 "-- 'mkdir /mnt/user-data/outputs/d && echo r > /mnt/user-data/outputs/d/r.md'");
	ck_assert_int_eq(st, 0);
	ck_assert_ptr_nonnull(realpath(H, real));
	char *r = raw(fmt_cmd(
		"'{\"op\":\"present\",\"id\":1,\"run\":%s,\"paths\":[\"/mnt/user-data/outputs/d/\"]}'"
		" '{\"op\":\"present\",\"id\":2,\"run\":%s,\"tool\":\"attach\","
		"\"paths\":[\"%s/users/alice/threads/t1/user-data/outputs/d/r.md\"]}'"
		" '{\"op\":\"present\",\"id\":3,\"run\":%s,\"paths\":[\"/mnt/user-data/outputs/x\","
		"\"/mnt/user-data/workspace/a\"]}'"
		" '{\"op\":\"present\",\"id\":4,\"run\":%s,\"tool\":\"a b\","
		"\"paths\":[\"/mnt/user-data/outputs/x\"]}'"
		" '{\"op\":\"present\",\"id\":5,\"run\":99,\"paths\":[\"/mnt/user-data/outputs/x\"]}'"
		" '{\"op\":\"present\",\"id\":6,\"run\":%s,\"paths\":[]}'",
		run, run, real, run, run, run));
	SAME(fields(r, "d[\"id\"], d[\"ok\"], d.get(\"tool\"), d.get(\"paths\"),"
		       " (d.get(\"error\") or {}).get(\"code\"),"
		       " (d.get(\"error\") or {}).get(\"message\")"),
	     "1 True present_files ['/mnt/user-data/outputs/d'] None None\n"
	     "2 True attach ['/mnt/user-data/outputs/d/r.md'] None None\n"
	     "3 False None None path_refused Only files in /mnt/user-data/outputs can be presented:"
	     " /mnt/user-data/workspace/a\n"
	     "4 False None None bad_request 'tool': a tool name is made of letters, digits and _ . : -\n"
	     "5 False None None no_such_run no run 99\n"
	     "6 False None None bad_request 'paths' must be an array of 1 to 1000 strings\n");
	OK("'%s' run end --home '%s' %s > /dev/null", b, H, run);
	EQ_OUT("{\"presented\": 2, \"paths\": [\"/mnt/user-data/outputs/d\", \"/mnt/user-data/outputs/d/r.md\"],"
	       " \"by_tool\": {\"present_files\": [\"/mnt/user-data/outputs/d\"], \"attach\":"
	       " [\"/mnt/user-data/outputs/d/r.md\"]}, \"matched_paths\": [\"/mnt/user-data/outputs/d/r.md\"],"
	       " \"stage\": \"presented\"}\n",
	       "'%s' receipt --home '%s' %s --format json | python3 tests/tools/jsonq.py"
	       " 'json.dumps({k: d[k] for k in (\"presented\", \"paths\", \"by_tool\","
	       " \"matched_paths\", \"stage\")})'",
	       b, H, run);
	r = raw(fmt_cmd(
		"'{\"op\":\"present\",\"run\":%s,\"paths\":[\"/mnt/user-data/outputs/x\"]}'", run));
	ck_assert_msg(strstr(r, "\"run_ended\"") && strstr(r, "has ended"), "%s", r);
}
END_TEST

/* The agent's framework begins and ends runs through the broker as with
 * sbx run begin and end (the same summary), with the store the broker
 * keeps open; errors by code; several ended at once, each with its own
 * store. */
START_TEST(test_broker_runs_begun_and_ended)
{
	const char *b = test_bin("sbx");
	int st;

	sbx_exec(&st, "-- 'echo old > /mnt/user-data/workspace/a.txt'");
	ck_assert_int_eq(st, 0);
	char *r = raw("'{\"op\":\"run_begin\",\"id\":1,\"user\":\"alice\",\"thread\":\"t1\"}'"
		      " '{\"op\":\"run_begin\",\"id\":2,\"user\":\"alice\",\"thread\":\"nope\"}'"
		      " '{\"op\":\"run_begin\",\"id\":3,\"user\":\"alice\",\"thread\":\"t1\","
		      "\"max_files\":0}'"
		      " '{\"op\":\"run_end\",\"id\":4,\"run\":99}'"
		      " '{\"op\":\"run_end\",\"id\":5}'");
	SAME(fields(r,
		    "d[\"id\"], d[\"ok\"], d.get(\"run\"), (d.get(\"error\") or {}).get(\"code\"),"
		    " (d.get(\"error\") or {}).get(\"message\")"),
	     fmt_cmd("1 True 1 None None\n"
		     "2 False None no_such_thread no thread alice/nope in %s\n"
		     "3 False None bad_request 'max_files' must be a number of files from 1 to"
		     " 1000000\n"
		     "4 False None no_such_run no run 99\n"
		     "5 False None bad_request 'run' must be a run id (a number from sbx run begin)\n",
		     H));
	sbx_exec(&st, "-- 'echo new > /mnt/user-data/workspace/a.txt;"
		      " echo made > /mnt/user-data/outputs/b.md'");
	ck_assert_int_eq(st, 0);
	/* run_changes: what the open run's end would say, nothing recorded
	 * (no snapshot is kept: the count of snapshots stays). */
	char *snaps = OUT("tests/tools/sbxsql '%s' 'SELECT count(*) FROM snapshots'", H);
	char *peek = raw("'{\"op\":\"run_changes\",\"run\":1}'");
	SAME(OUT("tests/tools/sbxsql '%s' 'SELECT count(*) FROM snapshots'", H), snaps);
	SAME(field(raw("'{\"op\":\"run_changes\",\"run\":99}'"), "d[\"error\"][\"code\"]"),
	     "no_such_run\n");
	r = raw("'{\"op\":\"run_end\",\"id\":6,\"run\":1}'"
		" '{\"op\":\"run_end\",\"id\":7,\"run\":1}'");
	SAME(fields(r,
		    "d[\"id\"], d[\"ok\"], d.get(\"run\"), (d.get(\"error\") or {}).get(\"code\"),"
		    " d[\"changes\"][\"available\"] if d[\"ok\"] else None,"
		    " [(f[\"path\"], f[\"status\"]) for f in d[\"changes\"][\"files\"]]"
		    " if d[\"ok\"] else None"),
	     "6 True 1 None True [('/mnt/user-data/outputs/b.md', 'created'),"
	     " ('/mnt/user-data/workspace/a.txt', 'modified')]\n"
	     "7 False None run_ended None None\n");
	/* The peek said what the end then recorded. */
	SAME(fmt_cmd("%s-\n", field(peek, "json.dumps(d[\"changes\"][\"files\"], sort_keys=True)")),
	     fields(r, "json.dumps(d[\"changes\"][\"files\"], sort_keys=True) if d[\"ok\"] else"
		       " \"-\""));
	SAME(field(raw("'{\"op\":\"run_changes\",\"run\":1}'"), "d[\"error\"][\"code\"]"),
	     "run_ended\n");
	/* The same changes as sbx changes reads them back. */
	SAME(fields(r,
		    "json.dumps(d[\"changes\"][\"files\"], sort_keys=True) if d[\"ok\"] else \"-\""),
	     fmt_cmd("%s-\n", OUT("'%s' changes --home '%s' 1 --format json |"
				  " python3 tests/tools/jsonq.py"
				  " 'json.dumps(d[\"files\"], sort_keys=True)'",
				  b, H)));
	/* A run with no change, ended through the broker: the document sbx
	 * run end prints for it. */
	r = raw("'{\"op\":\"run_begin\",\"user\":\"alice\",\"thread\":\"t1\"}'");
	SAME(field(r, "d[\"run\"]"), "2\n");
	r = raw("'{\"op\":\"run_end\",\"run\":2}'");
	SAME(field(r, "d[\"changes\"][\"available\"], d[\"changes\"][\"summary\"][\"modified\"],"
		      " d[\"changes\"][\"files\"], d[\"changes\"][\"sbx\"][\"run\"]"),
	     "False 0 [] 2\n");
	/* The store stays open in the broker between requests (SQLite: its
	 * file among the broker's descriptors). */
	if (exists(fmt_cmd("%s/sbx.db", H))) {
		char *pid = field(raw("'{\"op\":\"status\"}'"), "d[\"pid\"]");
		pid[strcspn(pid, "\n")] = '\0';
		ck_assert_int_eq(STATUS("ls -l /proc/%s/fd | grep -q '%s/sbx.db$'", pid, H), 0);
	}
	/* Four runs ended at once, from four clients: one gets the kept
	 * store, the others open their own. */
	for (int i = 3; i <= 6; i++)
		SAME(field(raw("'{\"op\":\"run_begin\",\"user\":\"alice\",\"thread\":\"t1\"}'"),
			   "d[\"run\"]"),
		     fmt_cmd("%d\n", i));
	sbx_exec(&st, "-- 'echo newer > /mnt/user-data/workspace/a.txt'");
	ck_assert_int_eq(st, 0);
	SAME(OUT("for i in 3 4 5 6; do python3 tests/tools/bclient.py '%s'"
		 " \"{\\\"op\\\":\\\"run_end\\\",\\\"run\\\":$i}\" > '%s'/end.$i & done; wait;"
		 " cat '%s'/end.3 '%s'/end.4 '%s'/end.5 '%s'/end.6 | python3 tests/tools/jsonq.py"
		 " --lines 'd[\"ok\"], d[\"run\"], len(d[\"changes\"][\"files\"])' /dev/stdin",
		 H, H, H, H, H, H),
	     "True 3 1\nTrue 4 1\nTrue 5 1\nTrue 6 1\n");
}
END_TEST

/* Undo over the protocol (run_undo), as sbx run undo: the run taken
 * back, its undo a run whose changes come back with it, the undo again
 * refused, conflicts refused unless forced, a dry run listing them. */
START_TEST(test_broker_runs_undone)
{
	const char *ws = fmt_cmd("%s/users/alice/threads/t1/user-data/workspace", H);
	int st;

	sbx_exec(&st, "-- 'echo old > /mnt/user-data/workspace/u.txt'");
	ck_assert_int_eq(st, 0);
	SAME(field(raw("'{\"op\":\"run_begin\",\"user\":\"alice\",\"thread\":\"t1\"}'"),
		   "d[\"run\"]"),
	     "1\n");
	sbx_exec(&st, "-- 'echo new > /mnt/user-data/workspace/u.txt;"
		      " echo made > /mnt/user-data/workspace/v.txt'");
	ck_assert_int_eq(st, 0);
	SAME(field(raw("'{\"op\":\"run_end\",\"run\":1}'"), "d[\"ok\"]"), "True\n");
	char *r = raw("'{\"op\":\"run_undo\",\"id\":1,\"run\":1}'"
		      " '{\"op\":\"run_undo\",\"id\":2,\"run\":1}'"
		      " '{\"op\":\"run_undo\",\"id\":3,\"run\":99}'"
		      " '{\"op\":\"run_undo\",\"id\":4,\"run\":1,\"partial\":true,\"force\":true}'"
		      " '{\"op\":\"run_undo\",\"id\":5,\"run\":1,\"dry_run\":\"yes\"}'");
	SAME(fields(r,
		    "d[\"id\"], d[\"ok\"], d.get(\"undo\"), (d.get(\"error\") or {}).get(\"code\"),"
		    " (d.get(\"error\") or {}).get(\"message\"),"
		    " sorted((f[\"path\"], f[\"status\"]) for f in d[\"changes\"][\"files\"])"
		    " if d[\"ok\"] else None"),
	     "1 True 2 None None [('/mnt/user-data/workspace/u.txt', 'modified'),"
	     " ('/mnt/user-data/workspace/v.txt', 'deleted')]\n"
	     "2 False None run_undone run 1 was undone by run 2 (sbx run undo 2 redoes it) None\n"
	     "3 False None no_such_run no run 99 None\n"
	     "4 False None bad_request 'partial' and 'force' exclude each other None\n"
	     "5 False None bad_request 'dry_run' must be true or false None\n");
	SAME(read_file(fmt_cmd("%s/u.txt", ws)), "old\n");
	ck_assert(!exists(fmt_cmd("%s/v.txt", ws)));
	/* The undo is run 2, which sbx changes reads back the same. */
	EQ_OUT("[('/mnt/user-data/workspace/u.txt', 'modified'),"
	       " ('/mnt/user-data/workspace/v.txt', 'deleted')]\n",
	       "'%s' changes --home '%s' 2 --format json | python3 tests/tools/jsonq.py"
	       " 'sorted((f[\"path\"], f[\"status\"]) for f in d[\"files\"])'",
	       test_bin("sbx"), H);

	/* A file changed on the host after the run: a conflict. */
	SAME(field(raw("'{\"op\":\"run_begin\",\"user\":\"alice\",\"thread\":\"t1\"}'"),
		   "d[\"run\"]"),
	     "3\n");
	sbx_exec(&st, "-- 'echo run > /mnt/user-data/workspace/w.txt'");
	ck_assert_int_eq(st, 0);
	SAME(field(raw("'{\"op\":\"run_end\",\"run\":3}'"), "d[\"ok\"]"), "True\n");
	ck_assert_int_eq(write_file(fmt_cmd("%s/w.txt", ws), "person\n"), 0);
	r = raw("'{\"op\":\"run_undo\",\"id\":6,\"run\":3}'"
		" '{\"op\":\"run_undo\",\"id\":7,\"run\":3,\"dry_run\":true}'");
	SAME(fields(r,
		    "d[\"id\"], d[\"ok\"], (d.get(\"error\") or {}).get(\"code\"),"
		    " (d.get(\"error\") or {}).get(\"message\"), d.get(\"undo\"), d.get(\"conflicts\")"),
	     "6 False conflicts 1 path changed after run 3: nothing was undone ('dry_run' lists"
	     " them; 'partial' undoes the rest, 'force' everything) None None\n"
	     "7 True None None 0 [{'path': '/mnt/user-data/workspace/w.txt', 'what': 'changed after the run'}]\n");
	SAME(read_file(fmt_cmd("%s/w.txt", ws)), "person\n");
	SAME(field(raw("'{\"op\":\"run_undo\",\"run\":3,\"force\":true}'"),
		   "d[\"ok\"], d[\"undo\"], d[\"conflicts\"][0][\"path\"]"),
	     "True 4 /mnt/user-data/workspace/w.txt\n");
	ck_assert(!exists(fmt_cmd("%s/w.txt", ws)));
}
END_TEST

/* A path restored over the protocol (restore), as sbx restore: back as
 * it was before a run, a change made while no run was open refused with
 * nothing changed, bad requests refused. */
START_TEST(test_broker_restores_a_path)
{
	const char *ws = fmt_cmd("%s/users/alice/threads/t1/user-data/workspace", H);
	int st;

	sbx_exec(&st, "-- 'echo old > /mnt/user-data/workspace/r.txt;"
		      " echo old > /mnt/user-data/workspace/g.txt'");
	ck_assert_int_eq(st, 0);
	SAME(field(raw("'{\"op\":\"run_begin\",\"user\":\"alice\",\"thread\":\"t1\"}'"),
		   "d[\"run\"]"),
	     "1\n");
	sbx_exec(&st, "-- 'echo new > /mnt/user-data/workspace/r.txt'");
	ck_assert_int_eq(st, 0);
	SAME(field(raw("'{\"op\":\"run_end\",\"run\":1}'"), "d[\"ok\"]"), "True\n");
	sbx_exec(&st, "-- 'echo unkept > /mnt/user-data/workspace/g.txt'"); /* no run open */
	ck_assert_int_eq(st, 0);
	char *r = raw("'{\"op\":\"restore\",\"id\":1,\"user\":\"alice\",\"thread\":\"t1\","
		      "\"path\":\"/mnt/user-data/workspace/r.txt\",\"before\":1,\"dry_run\":true}'"
		      " '{\"op\":\"restore\",\"id\":2,\"user\":\"alice\",\"thread\":\"t1\","
		      "\"path\":\"/mnt/user-data/workspace/r.txt\",\"before\":1}'"
		      " '{\"op\":\"restore\",\"id\":3,\"user\":\"alice\",\"thread\":\"t1\","
		      "\"path\":\"/mnt/user-data/workspace/g.txt\",\"before\":1}'"
		      " '{\"op\":\"restore\",\"id\":4,\"user\":\"alice\",\"thread\":\"t1\","
		      "\"path\":\"/etc/passwd\",\"before\":1}'"
		      " '{\"op\":\"restore\",\"id\":5,\"user\":\"alice\",\"thread\":\"t1\","
		      "\"path\":\"/mnt/user-data/workspace/../../x\",\"before\":1}'"
		      " '{\"op\":\"restore\",\"id\":6,\"user\":\"alice\",\"thread\":\"t1\","
		      "\"path\":\"/mnt/user-data/workspace/r.txt\"}'"
		      " '{\"op\":\"restore\",\"id\":7,\"user\":\"alice\",\"thread\":\"t1\","
		      "\"path\":\"/mnt/user-data/workspace/r.txt\",\"before\":99}'"
		      " '{\"op\":\"restore\",\"id\":8,\"user\":\"alice\",\"thread\":\"t1\","
		      "\"path\":\"/mnt/user-data/workspace/r.txt\",\"at\":\"yesterday\"}'");
	SAME(fields(r,
		    "d[\"id\"], d[\"ok\"], d.get(\"restore\"), (d.get(\"error\") or {}).get(\"code\"),"
		    " sorted((f[\"path\"], f[\"status\"]) for f in d[\"changes\"][\"files\"])"
		    " if d.get(\"changes\") else None"),
	     "1 True 0 None None\n"
	     "2 True 2 None [('/mnt/user-data/workspace/r.txt', 'modified')]\n"
	     "3 False None not_restorable None\n"
	     "4 False None bad_request None\n"
	     "5 False None bad_request None\n"
	     "6 False None bad_request None\n"
	     "7 False None no_such_run None\n"
	     "8 False None bad_request None\n");
	SAME(read_file(fmt_cmd("%s/r.txt", ws)), "old\n");
	SAME(read_file(fmt_cmd("%s/g.txt", ws)), "unkept\n");
	SAME(fields(r, "(d.get(\"error\") or {}).get(\"message\")"),
	     "None\nNone\n"
	     "1 change of /mnt/user-data/workspace/g.txt cannot be taken back (the first:"
	     " /mnt/user-data/workspace/g.txt, made while no run was open: nothing kept what"
	     " was there before); nothing was changed\n"
	     "'/etc/passwd' is not a path under /mnt/user-data/workspace or"
	     " /mnt/user-data/outputs\n"
	     "'/mnt/user-data/workspace/../../x' is not a path under /mnt/user-data/workspace"
	     " or /mnt/user-data/outputs\n"
	     "expected one of 'before' and 'at'\n"
	     "no run 99 of alice/t1\n"
	     "'at' must be a time such as 2026-12-01T19:30:00Z (UTC)\n");
}
END_TEST

START_TEST(test_broker_only_its_uid_and_root)
{
	/* The socket is 0600 in a 0700 directory, and peers are checked. */
	EQ_OUT("600\n", "stat -c %%a '%s/run/broker.sock'", H);
	ck_assert_int_ne(
		STATUS("setpriv --reuid=65534 --regid=65534 --clear-groups"
		       " python3 tests/tools/bclient.py '%s' '{\"op\":\"ping\"}' 2>/dev/null",
		       H),
		0);
}
END_TEST

START_TEST(test_broker_leases_park_and_idle_unmount)
{
	teardown();
	start("[broker]\nidle_timeout = 1\n");
	char *r = raw(
		"'{\"op\":\"acquire\",\"user\":\"alice\",\"thread\":\"t1\",\"owner\":\"lead\"}'"
		" '{\"op\":\"acquire\",\"user\":\"alice\",\"thread\":\"t1\",\"owner\":\"subagent:7\"}'"
		" '{\"op\":\"acquire\",\"user\":\"alice\",\"thread\":\"t1\",\"owner\":\"lead\"}'");
	r[strcspn(r, "\n")] = '\0'; /* the first reply */
	char *mnt = field(r, "d[\"mount\"], d[\"sandbox\"]");
	/* The sandbox id: sha256(thread)[:8]. */
	char *want = OUT("printf t1 | sha256sum | cut -c1-8");
	ck_assert_msg(strstr(mnt, want ? strtok(want, "\n") : "x"), "%s", mnt);
	mnt[strcspn(mnt, " ")] = '\0';
	OK("grep -q ' %s fuse' /proc/mounts", mnt);
	r = raw("'{\"op\":\"release\",\"user\":\"alice\",\"thread\":\"t1\",\"owner\":\"subagent:7\"}'"
		" '{\"op\":\"status\"}'");
	ck_assert_msg(strstr(r, "\"parked\": false") && strstr(r, "\"leases\": 1") &&
			      strstr(r, "\"state\": \"active\""),
		      "%s", r);
	/* Held: never unmounted while a lease is held. The witness that
	 * the idle sweep ran with t1 as old as a view it unmounts: t2,
	 * parked after every change to t1's leases, is unmounted by it
	 * (one sweep goes over every view under the provider's lock, so
	 * the status that sees t2 unmounted comes after that sweep). */
	raw("'{\"op\":\"acquire\",\"user\":\"alice\",\"thread\":\"t2\",\"owner\":\"lead\"}'"
	    " '{\"op\":\"release\",\"user\":\"alice\",\"thread\":\"t2\",\"owner\":\"lead\"}'");
	OK("for i in $(seq 100); do grep -q ' %s/run/views/alice/t2 ' /proc/mounts || exit 0;"
	   " sleep 0.1; done; exit 1",
	   H);
	SAME(field(raw("'{\"op\":\"status\"}'"),
		   "tuple(sorted(v[\"thread\"] + \":\" + v[\"state\"] for v in d[\"views\"]))"),
	     "t1:active t2:unmounted\n");
	OK("grep -q ' %s fuse' /proc/mounts", mnt);
	r = raw("'{\"op\":\"release\",\"user\":\"alice\",\"thread\":\"t1\",\"owner\":\"lead\"}'"
		" '{\"op\":\"status\"}'");
	ck_assert_msg(strstr(r, "\"parked\": true") && strstr(r, "\"state\": \"parked\""), "%s", r);
	OK("for i in $(seq 100); do grep -q ' %s fuse' /proc/mounts || exit 0; sleep 0.1; done; exit 1",
	   mnt);
	/* The next acquire mounts it again. */
	raw("'{\"op\":\"acquire\",\"user\":\"alice\",\"thread\":\"t1\",\"owner\":\"lead\"}'");
	OK("grep -q ' %s fuse' /proc/mounts", mnt);
}
END_TEST

/* An acquire with "hold" lasts as long as its connection: the client
 * that took it going away (a crash too) gives it back, and its scope's
 * shell ends; one without stays. "hold" is only for acquire. */
START_TEST(test_broker_a_held_lease_ends_with_its_connection)
{
	raw("'{\"op\":\"acquire\",\"user\":\"alice\",\"thread\":\"t1\",\"owner\":\"kept\"}'");
	char *r = raw("'{\"op\":\"acquire\",\"user\":\"alice\",\"thread\":\"t1\","
		      "\"owner\":\"held\",\"hold\":true}' '{\"op\":\"status\"}'");
	/* While its connection lives, both leases count. */
	ck_assert_msg(strstr(r, "\"leases\": 2"), "%s", r);
	SAME(field(raw("'{\"op\":\"status\"}'"), "d[\"views\"][0][\"leases\"]"), "1\n");
	/* The shell of a held lease's scope ends with its connection. */
	OK("python3 tests/tools/bclient.py '%s' --leave-after 0.5"
	   " '{\"op\":\"acquire\",\"user\":\"alice\",\"thread\":\"t1\",\"owner\":\"s2\","
	   "\"hold\":true}'",
	   H);
	raw("'{\"op\":\"exec\",\"user\":\"alice\",\"thread\":\"t1\",\"scope\":\"s3\","
	    "\"command\":\"sleep 100777 > /dev/null 2>&1 &\"}'");
	r = raw("'{\"op\":\"acquire\",\"user\":\"alice\",\"thread\":\"t1\",\"owner\":\"s3\","
		"\"hold\":true}' '{\"op\":\"status\"}'");
	ck_assert_msg(strstr(r, "\"leases\": 2"), "%s", r);
	ASSERT_GONE("sleep 10077[7]");
	SAME(field(raw("'{\"op\":\"release\",\"user\":\"alice\",\"thread\":\"t1\","
		       "\"owner\":\"kept\",\"hold\":true}'"),
		   "d[\"error\"][\"code\"], d[\"error\"][\"message\"]"),
	     "bad_request 'hold' is true or false, and only for acquire\n");
}
END_TEST

/* acquire with "shell": the owner's scope's shell is started with the
 * view (forked before the mount, let go after it), so a command that
 * wants the shell as it is finds one; where the view cannot be mounted,
 * no shell and nothing of its start is left. */
START_TEST(test_broker_acquire_starts_the_owner_s_shell)
{
	const char *ws = fmt_cmd("%s/users/alice/threads/t1/user-data/workspace", H);
	char *r = raw("'{\"op\":\"acquire\",\"user\":\"alice\",\"thread\":\"t1\","
		      "\"owner\":\"sb1\",\"shell\":true}'"
		      " '{\"op\":\"exec\",\"user\":\"alice\",\"thread\":\"t1\",\"scope\":\"sb1\","
		      "\"existing\":true,\"command\":\"echo in > /mnt/user-data/workspace/f;"
		      " pwd\"}'");
	SAME(fields(r, "d[\"ok\"], (d.get(\"output\") or \"\").strip()"),
	     "True \nTrue /mnt/user-data/workspace\n");
	SAME(read_file(fmt_cmd("%s/f", ws)), "in\n");
	/* The shell is the scope's: cd and variables carry over. */
	raw("'{\"op\":\"exec\",\"user\":\"alice\",\"thread\":\"t1\",\"scope\":\"sb1\","
	    "\"command\":\"cd /tmp; X=1\"}'");
	SAME(field(raw("'{\"op\":\"exec\",\"user\":\"alice\",\"thread\":\"t1\","
		       "\"scope\":\"sb1\",\"existing\":true,\"command\":\"echo $PWD $X\"}'"),
		   "d[\"output\"]"),
	     "/tmp 1\n\n");
	/* A view that cannot be mounted: the refusal, and the shell forked
	 * for it gone. */
	OK("mkdir -p '%s/users/alice/threads' && touch '%s/users/alice/threads/t2'", H, H);
	r = raw("'{\"op\":\"acquire\",\"user\":\"alice\",\"thread\":\"t2\","
		"\"owner\":\"sb2\",\"shell\":true}'"
		" '{\"op\":\"exec\",\"user\":\"alice\",\"thread\":\"t2\",\"scope\":\"sb2\","
		"\"existing\":true,\"command\":\"true\"}'");
	SAME(fields(r, "d[\"ok\"], d[\"error\"][\"code\"]"),
	     "False mount_failed\nFalse mount_failed\n");
	/* The view's reservation given back, and of the broker's children
	 * only t1's shell (bwrap) left. */
	r = raw("'{\"op\":\"status\"}'");
	SAME(field(r, "[(v[\"thread\"], v[\"running\"], v[\"state\"]) for v in d[\"views\"]]"),
	     "[('t2', 0, 'unmounted'), ('t1', 0, 'active')]\n");
	char *pid = field(r, "d[\"pid\"]");
	pid[strcspn(pid, "\n")] = '\0';
	SAME(OUT("pgrep -P %s | xargs -r ps -o comm= -p", pid), "bwrap\n");
	SAME(field(raw("'{\"op\":\"acquire\",\"user\":\"alice\",\"thread\":\"t1\","
		       "\"owner\":\"x\",\"shell\":1}'"),
		   "d[\"error\"][\"message\"]"),
	     "'shell' is true or false, and only for acquire\n");
}
END_TEST

/* tool: a file tool in the thread's view, the program named VIA:NAME in
 * its journal; a refused write says what changed since the read; bad
 * requests are refused before anything runs. */
START_TEST(test_broker_tool_runs_a_file_tool_in_the_view)
{
	const char *ws = fmt_cmd("%s/users/alice/threads/t1/user-data/workspace", H);
	int st;

	sbx_exec(&st, "-- 'echo one > /mnt/user-data/workspace/a.txt'");
	ck_assert_int_eq(st, 0);
	char *r = raw("'{\"op\":\"tool\",\"user\":\"alice\",\"thread\":\"t1\",\"name\":"
		      "\"read_file\",\"arguments\":{\"path\":\"/mnt/user-data/workspace/a.txt\"},"
		      "\"via\":\"mcp\"}'"
		      " '{\"op\":\"tool\",\"user\":\"alice\",\"thread\":\"t1\",\"name\":"
		      "\"write_file\",\"arguments\":{\"path\":\"/mnt/user-data/workspace/b.txt\","
		      "\"content\":\"made\"},\"via\":\"mcp\"}'"
		      " '{\"op\":\"tool\",\"user\":\"alice\",\"thread\":\"t1\",\"name\":"
		      "\"read_file\",\"arguments\":{\"path\":\"/etc/passwd\"}}'"
		      " '{\"op\":\"tool\",\"user\":\"alice\",\"thread\":\"t1\",\"name\":"
		      "\"rm\"}'"
		      " '{\"op\":\"tool\",\"user\":\"alice\",\"thread\":\"t1\",\"name\":"
		      "\"ls\",\"via\":\"HTTP\"}'");
	SAME(fields(r, "d[\"ok\"], d.get(\"is_error\"), (d.get(\"text\") or"
		       " d[\"error\"][\"code\"])[:40]"),
	     "True False one\n\n"
	     "True False OK\n"
	     "True True Error: Only paths under /mnt/user-data/,\n"
	     "False None unknown_tool\n"
	     "False None bad_request\n");
	OK("grep -qx made '%s/b.txt'", ws);
	SAME(OUT("'%s' watch --home '%s' --user alice --thread t1 --once --since 0 --format json | python3"
		 " tests/tools/jsonq.py --lines \"d.get('path'), d.get('command')\" | grep b.txt",
		 test_bin("sbx"), H),
	     "/mnt/user-data/workspace/b.txt mcp:write_file\n");
	/* Changed on the host after the read: refused, with what changed. */
	OK("echo two > '%s/a.txt'", ws);
	r = raw("'{\"op\":\"tool\",\"user\":\"alice\",\"thread\":\"t1\",\"name\":"
		"\"write_file\",\"arguments\":{\"path\":\"/mnt/user-data/workspace/a.txt\","
		"\"content\":\"mine\"},\"via\":\"mcp\"}'");
	char *text = field(r, "d[\"text\"]");
	ck_assert_msg(strstr(text, "blocked") && strstr(text, "The version you read: 4 bytes"),
		      "%s", text);
	OK("grep -qx two '%s/a.txt'", ws);
}
END_TEST

/* A request of the AIO set (profile "aio") for the file tool NAME with
 * ARGS (JSON), as sbx serve sends one. */
static char *aio(const char *name, const char *args)
{
	return fmt_cmd("'{\"op\":\"tool\",\"user\":\"alice\",\"thread\":\"t1\",\"profile\":"
		       "\"aio\",\"via\":\"aio\",\"name\":\"%s\",\"arguments\":%s}'",
		       name, args);
}

/* The AIO set in the view: a file the thread has not read in its current
 * version is refused (permission_denied, the gate's words); a read lets
 * the older client's append through (the whole file written back), the
 * newer one's append: true too; a file made anew needs no read; the
 * journal names aio:file_write; a bad argument is a validation error. */
START_TEST(test_broker_aio_file_tools_go_through_the_gate)
{
	const char *ws = fmt_cmd("%s/users/alice/threads/t1/user-data/workspace", H);

	char *r = raw(aio("file_write", "{\"file\":\"notes.txt\",\"content\":\"v1\\n\"}"));
	SAME(field(r, "d[\"is_error\"], json.dumps(d[\"structured\"], sort_keys=True)"),
	     "False {\"bytes_written\": 3, \"file\": \"/mnt/user-data/workspace/notes.txt\"}\n");
	OK("echo host > '%s/notes.txt'", ws);
	r = raw(fmt_cmd("%s %s %s %s %s",
			aio("file_write", "{\"file\":\"notes.txt\",\"content\":\"agent\"}"),
			aio("file_read", "{\"file\":\"/mnt/user-data/workspace/notes.txt\"}"),
			aio("file_write",
			    "{\"file\":\"notes.txt\",\"content\":\"host\\nagent\\n\"}"),
			aio("file_write", "{\"file\":\"notes.txt\",\"content\":\"more\","
					  "\"append\":true,\"trailing_newline\":true}"),
			aio("file_read", "{\"start_line\":1}")));
	SAME(fields(r,
		    "d[\"is_error\"], d[\"structured\"].get(\"error_type\"),"
		    " d[\"structured\"].get(\"content\") or d[\"structured\"].get(\"validation\")"
		    " or d[\"structured\"].get(\"bytes_written\")"),
	     "True permission_denied None\n"
	     "False None host\n\n"
	     "False None 11\n"
	     "False None 5\n"
	     "True None [{'loc': ['body', 'file'], 'msg': 'Field required', 'type': 'missing'}]\n");
	/* The refusal's message is its text: the gate's words, and what
	 * changed since the thread's own write. */
	char *refused = strtok(r, "\n");
	SAME(field(refused, "d[\"structured\"][\"message\"] == d[\"text\"],"
			    " d[\"text\"].startswith(\"file_write blocked \u2014 \"),"
			    " \"\\n\\nThe version you read: 3 bytes\" in d[\"text\"]"),
	     "True True True\n");
	SAME(read_file(fmt_cmd("%s/notes.txt", ws)), "host\nagent\nmore\n");
	SAME(OUT("'%s' watch --home '%s' --user alice --thread t1 --once --since 0 --format json |"
		 " python3 tests/tools/jsonq.py --lines \"d.get('path'), d.get('command')\" |"
		 " grep notes.txt | sort -u",
		 test_bin("sbx"), H),
	     "/mnt/user-data/workspace/notes.txt aio:file_write\n");
	r = raw("'{\"op\":\"tool\",\"user\":\"alice\",\"thread\":\"t1\",\"profile\":\"mcp\","
		"\"name\":\"file_read\"}' '{\"op\":\"tool\",\"user\":\"alice\",\"thread\":\"t1\","
		"\"name\":\"file_read\"}'");
	SAME(fields(r, "d[\"error\"][\"code\"]"), "bad_request\nunknown_tool\n");
}
END_TEST

/* A request of the AIO set whose arguments travel in a memfd
 * (arguments_fd), bclient's "_pass" ARGS. */
static char *aio_passed(const char *name, const char *args)
{
	return fmt_cmd("'{\"op\":\"tool\",\"user\":\"alice\",\"thread\":\"t1\",\"profile\":"
		       "\"aio\",\"via\":\"aio\",\"name\":\"%s\",\"arguments_fd\":true,"
		       "\"_pass\":%s}'",
		       name, args);
}

/* tool with arguments_fd: the arguments are the JSON object in the memfd
 * passed with the line, past the line's 1 MiB (a 3 MiB write written
 * whole, its program aio:file_write); no fd, a pipe, what is not an
 * object, both ways at once are bad_request; an fd is its own request's
 * only (the next request without one has none). */
START_TEST(test_broker_tool_arguments_in_a_memfd)
{
	const char *ws = fmt_cmd("%s/users/alice/threads/t1/user-data/workspace", H);

	char *r = OUT("python3 -c 'import json; print(json.dumps({\"op\": \"tool\", \"user\":"
		      " \"alice\", \"thread\": \"t1\", \"profile\": \"aio\", \"via\": \"aio\","
		      " \"name\": \"file_write\", \"arguments_fd\": True, \"_pass\":"
		      " {\"file\": \"big.txt\", \"content\": \"x\" * 3000000,"
		      " \"trailing_newline\": True}}))' |"
		      " python3 tests/tools/bclient.py '%s' --stdin",
		      H);
	SAME(field(r, "d[\"is_error\"], d[\"structured\"]"),
	     "False {'bytes_written': 3000001, 'file': '/mnt/user-data/workspace/big.txt'}\n");
	SAME(OUT("wc -c < '%s/big.txt'; tr -d x < '%s/big.txt' | od -c | head -1", ws, ws),
	     "3000001\n0000000  \\n\n");
	r = raw(fmt_cmd("%s %s %s %s %s %s",
			aio_passed("file_read", "{\"file\":\"big.txt\",\"start_line\":0,"
						"\"end_line\":0}"),
			"'{\"op\":\"tool\",\"user\":\"alice\",\"thread\":\"t1\",\"profile\":"
			"\"aio\",\"name\":\"file_read\",\"arguments_fd\":true}'",
			"'{\"op\":\"tool\",\"user\":\"alice\",\"thread\":\"t1\",\"profile\":"
			"\"aio\",\"name\":\"file_read\",\"arguments_fd\":true,\"_pass\":{},"
			"\"_pass_pipe\":true}'",
			aio_passed("file_read", "\"[1]\""), aio_passed("file_read", "\"{\""),
			"'{\"op\":\"tool\",\"user\":\"alice\",\"thread\":\"t1\",\"profile\":"
			"\"aio\",\"name\":\"file_read\",\"arguments_fd\":true,\"arguments\":{},"
			"\"_pass\":{}}'"));
	SAME(fields(r, "d.get(\"is_error\"), d.get(\"error\", {}).get(\"code\"),"
		       " d.get(\"error\", {}).get(\"message\", \"\")[:40]"),
	     "False None \n"
	     "None bad_request 'arguments_fd': no fd came with the requ\n"
	     "None bad_request 'arguments_fd': the fd is not a memfd\n"
	     "None bad_request 'arguments_fd': not a JSON object\n"
	     "None bad_request 'arguments_fd': string or '}' expected n\n"
	     "None bad_request 'arguments' and 'arguments_fd' exclude e\n");
	SAME(OUT("'%s' watch --home '%s' --user alice --thread t1 --once --since 0 --format json |"
		 " python3 tests/tools/jsonq.py --lines \"d.get('path'), d.get('command')\" |"
		 " grep big.txt | sort -u",
		 test_bin("sbx"), H),
	     "/mnt/user-data/workspace/big.txt aio:file_write\n");
}
END_TEST

/* open: the file's fd passed with the reply (its bytes the file's, its
 * size said); a directory, a symlink out of the view, a path outside it
 * and a missing file are refused with the AIO set's error_type as the
 * code, and no fd. */
START_TEST(test_broker_open_passes_the_file)
{
	const char *ws = fmt_cmd("%s/users/alice/threads/t1/user-data/workspace", H);
	int st;

	sbx_exec(&st, "-- 'head -c 3000000 /dev/urandom > /mnt/user-data/workspace/big.bin &&"
		      " mkdir /mnt/user-data/workspace/dir'");
	ck_assert_int_eq(st, 0);
	OK("ln -s /etc/passwd '%s/out'", ws);
	char *sum = OUT("sha256sum '%s/big.bin' | cut -d' ' -f1", ws);
	char *r = raw("--fds '{\"op\":\"open\",\"id\":1,\"user\":\"alice\",\"thread\":\"t1\","
		      "\"path\":\"/mnt/user-data/workspace/big.bin\"}'");
	SAME(field(r, "d[\"ok\"], d[\"id\"], d[\"size\"], d[\"_fds\"], d[\"_bytes\"],"
		      " d[\"_nonblock\"], d[\"_cloexec\"]"),
	     "True 1 3000000 1 3000000 False True\n");
	SAME(field(r, "d[\"_sha256\"]"), sum);
	r = raw("--fds '{\"op\":\"open\",\"user\":\"alice\",\"thread\":\"t1\",\"path\":\"dir\"}'"
		" '{\"op\":\"open\",\"user\":\"alice\",\"thread\":\"t1\",\"path\":\"out\"}'"
		" '{\"op\":\"open\",\"user\":\"alice\",\"thread\":\"t1\",\"path\":\"/etc/passwd\"}'"
		" '{\"op\":\"open\",\"user\":\"alice\",\"thread\":\"t1\",\"path\":\"none\"}'"
		" '{\"op\":\"open\",\"user\":\"alice\",\"thread\":\"t1\"}'");
	SAME(fields(r, "d[\"ok\"], d[\"_fds\"], d[\"error\"][\"code\"],"
		       " d[\"error\"].get(\"file_error\", {}).get(\"path\")"),
	     "False 0 is_a_directory /mnt/user-data/workspace/dir\n"
	     "False 0 permission_denied /mnt/user-data/workspace/out\n"
	     "False 0 permission_denied /etc/passwd\n"
	     "False 0 not_found /mnt/user-data/workspace/none\n"
	     "False 0 bad_request None\n");
	SAME(field(strtok(r, "\n"), "d[\"error\"][\"message\"]"),
	     "IsADirectoryError: [Errno 21] Is a directory: '/mnt/user-data/workspace/dir'\n");
}
END_TEST

/* --exit-idle: the broker stops once no client has been connected for
 * that long (unmounting its views), never while one is. */
START_TEST(test_broker_exit_idle_stops_once_no_client_is_left)
{
	const char *h = test_dir("idlehome");

	test_home_store(h);
	OK("'%s' broker --home '%s' --exit-idle 1 >/dev/null", test_bin("sbx"), h);
	/* A client holding a lease for 2.5 s keeps it, and its view. */
	OK("cd tests/tools && (python3 bclient.py '%s' --leave-after 2.5"
	   " '{\"op\":\"acquire\",\"user\":\"alice\",\"thread\":\"t1\",\"owner\":\"o\"}' &)",
	   h);
	OK("for i in $(seq 100); do grep -q ' %s/run/views/alice/t1 ' /proc/mounts && exit 0;"
	   " sleep 0.05; done; exit 1",
	   h);
	OK("sleep 1.8; python3 tests/tools/bclient.py '%s' '{\"op\":\"ping\"}' | grep -q true", h);
	/* Then it stops, and takes its view with it. */
	OK("for i in $(seq 100); do test -S '%s/run/broker.sock' || exit 0; sleep 0.1; done; exit 1",
	   h);
	OK("for i in $(seq 100); do grep -q ' %s/run/views/alice/t1 ' /proc/mounts || exit 0;"
	   " sleep 0.1; done; exit 1",
	   h);
	ck_assert_int_eq(STATUS("'%s' broker --home '%s' --exit-idle 0 2>/dev/null",
				test_bin("sbx"), h),
			 2);
}
END_TEST

/* The pid of the daemon of alice's THREAD (its lease row). */
static int daemon_pid(const char *thread)
{
	int pid = atoi(OUT("tests/tools/sbxsql '%s' \"SELECT pid FROM leases WHERE thread = '%s'\"",
			   H, thread));

	ck_assert_int_gt(pid, 1);
	return pid;
}

/* sbx umount of a view its own thread's sandboxes still use is refused,
 * naming their processes (they bind it: unmounted, it would live on in
 * them, its daemon too), and the session goes on; once the session has
 * ended, the unmount goes through and the daemon exits; the next command
 * mounts the view again. */
START_TEST(test_broker_umount_of_a_view_its_session_uses_is_refused)
{
	int st;
	char *mnt = fmt_cmd("%s/run/views/alice/t1", H);

	SAME(sbx_exec(&st, "--scope s -- 'cd /mnt/user-data/outputs; echo up'"), "up\n");
	int daemon = daemon_pid("t1");
	char *out = capture(fmt_cmd("'%s' umount '%s' 2>&1", test_bin("sbx"), mnt), &st);
	ck_assert_msg(st == 1, "exit %d: %s", st, out);
	ck_assert_msg(strstr(out,
			     fmt_cmd("sbx: umount: %s: in use by 2 other mount namespaces", mnt)) &&
			      strstr(out, " (bwrap), pid ") && strstr(out, "left mounted\n"),
		      "%s", out);
	OK("grep -q ' %s fuse' /proc/mounts", mnt);
	SAME(sbx_exec(&st, "--scope s -- pwd"), "/mnt/user-data/outputs\n");
	ck_assert_int_eq(daemon_pid("t1"), daemon);
	/* Ended, the session holds it no more (its processes go a moment
	 * after the reply). */
	sbx_exec(&st, "--scope s -- exit");
	OK("for i in $(seq 100); do '%s' umount '%s' 2>/dev/null && exit 0; sleep 0.1; done; exit 1",
	   test_bin("sbx"), mnt);
	ck_assert_msg(eventually(has_exited_pid, fmt_cmd("%d", daemon)), "daemon %d still runs",
		      daemon);
	SAME(sbx_exec(&st, "--scope s -- pwd"), "/mnt/user-data/workspace\n");
}
END_TEST

/* A parked view whose thread has a shell session is not idle: the
 * session binds it, and an idle unmount would leave it, and its daemon,
 * alive in the session's namespaces while the broker mounted a second
 * one. Witness that the idle sweep ran: t2, parked after t1's session
 * began, is unmounted by it. */
START_TEST(test_broker_a_session_keeps_its_view_from_the_idle_unmount)
{
	int st;

	teardown();
	start("[broker]\nidle_timeout = 1\n");
	SAME(sbx_exec(&st, "--scope s -- 'echo up'"), "up\n");
	int daemon = daemon_pid("t1");
	raw("'{\"op\":\"acquire\",\"user\":\"alice\",\"thread\":\"t2\",\"owner\":\"lead\"}'"
	    " '{\"op\":\"release\",\"user\":\"alice\",\"thread\":\"t2\",\"owner\":\"lead\"}'");
	OK("for i in $(seq 100); do grep -q ' %s/run/views/alice/t2 ' /proc/mounts || exit 0;"
	   " sleep 0.1; done; exit 1",
	   H);
	OK("grep -q ' %s/run/views/alice/t1 fuse' /proc/mounts", H);
	SAME(sbx_exec(&st, "--scope s -- 'echo still'"), "still\n");
	ck_assert_int_eq(daemon_pid("t1"), daemon);
}
END_TEST

START_TEST(test_broker_a_client_going_away_disturbs_no_one)
{
	int st;

	OK("python3 tests/tools/bclient.py '%s' --leave-after 1 '{\"op\":\"exec\",\"user\":\"alice\","
	   "\"thread\":\"t1\",\"command\":\"sleep 302.7\"}' &"
	   " python3 tests/tools/bclient.py '%s' --leave-after 1 '{\"op\":\"exec\",\"user\":\"bob\","
	   "\"thread\":\"t2\",\"command\":\"sleep 303.7\"}'",
	   H, H);
	SAME(sbx_exec(&st, "-- 'echo fine'"), "fine\n");
	ASSERT_GONE("sleep 30[23][.]7");
	SAME(sbx_exec(&st, "-- 'echo still'"), "still\n");
}
END_TEST

/* Requests sent at once on one connection are answered in turn, and a
 * client that shuts down its sending side after them (nc -N, a
 * framework that half-closes) still gets every reply. (Before, data or
 * a half-close during a command counted as the client gone: the command
 * was killed and no reply came, EOF or a hang.) */
START_TEST(test_broker_pipelined_and_half_closed_requests)
{
	static const char one[] = "'{\"op\":\"exec\",\"user\":\"alice\",\"thread\":\"t1\",%s"
				  "\"command\":\"sleep 0.3; echo %s\"}'";
	char *reqs = fmt_cmd("%s %s %s", fmt_cmd(one, "", "first"),
			     fmt_cmd(one, "\"scope\":\"p\",", "second"), fmt_cmd(one, "", "third"));

	for (int half = 0; half < 2; half++) {
		char *r = raw(fmt_cmd("--pipeline%s %s", half ? " --half-close" : "", reqs));
		SAME(fields(r, "d[\"code\"], d[\"output\"].strip()"),
		     "0 first\n0 second\n0 third\n");
	}
}
END_TEST

START_TEST(test_broker_shutdown_and_a_killed_broker)
{
	int st;

	SAME(sbx_exec(&st, "-- true"), "");
	char *mnt = OUT("grep ' %s/run/views/' /proc/mounts | cut -d' ' -f2", H);
	ck_assert_msg(*mnt, "no view mounted");
	mnt[strcspn(mnt, "\n")] = '\0';
	/* Killed: its view stays behind... */
	OK("kill -9 $(head -1 '%s/run/broker.lock')", H);
	OK("for i in $(seq 50); do '%s' broker --home '%s' --status >/dev/null 2>&1 || exit 0;"
	   " sleep 0.1; done; exit 1",
	   test_bin("sbx"), H);
	OK("grep -q ' %s ' /proc/mounts", mnt);
	/* ...and the next broker is not stopped by it. */
	OK("'%s' broker --home '%s' >/dev/null", test_bin("sbx"), H);
	SAME(sbx_exec(&st, "-- 'echo again'"), "again\n");
	ck_assert(strstr(read_file(fmt_cmd("%s/run/broker.log", H)), "left mounted"));
	/* Shut down: everything it mounted is unmounted when it returns. */
	OK("'%s' broker --home '%s' --shutdown", test_bin("sbx"), H);
	OK("! grep -q ' %s/run/views/' /proc/mounts", H);
	sbx_exec(&st, "-- true");
	ck_assert_int_eq(st, 1); /* no broker: said so */
}
END_TEST

/* Until FILE holds TEXT (at most 30 s). */
static void wait_for_text(const char *file, const char *text)
{
	OK("for i in $(seq 300); do grep -qsF -- '%s' '%s' && exit 0; sleep 0.1; done; exit 1",
	   text, file);
}

/* Until N lines of FILE hold TEXT (at most 30 s). */
static void wait_for_lines(const char *file, const char *text, int n)
{
	OK("for i in $(seq 300); do [ \"$(grep -csF -- '%s' '%s')\" -ge %d ] && exit 0; sleep 0.1;"
	   " done; exit 1",
	   text, file, n);
}

/* A shutdown answers every request it has: a command running is stopped
 * with its output so far (exit 143), in a scope too; one waiting for its
 * turn is refused ("shutting_down"). --shutdown returns once the broker
 * is gone: no view mounted, no process left, and a new broker starts at
 * once. (Before, the clients got EOF with no reply, and --shutdown
 * returned while the broker was still stopping.) */
START_TEST(test_broker_shutdown_answers_every_request)
{
	const char *d = test_dir("shutdown");
	static const char req[] = "'{\"op\":\"exec\",\"user\":\"alice\",\"thread\":\"t1\",%s"
				  "\"command\":\"echo %s-up; sleep 30%d.7\"}'";
	int st;

	teardown();
	start("[broker]\nbash_max_sessions = 1\n");
	OK("cd tests/tools && (python3 bclient.py '%s' --all %s > '%s/a' &)", H,
	   fmt_cmd(req, "", "A", 4), d);
	OK("cd tests/tools && (python3 bclient.py '%s' --all %s > '%s/b' &)", H,
	   fmt_cmd(req, "\"scope\":\"s\",", "B", 5), d);
	wait_for_text(fmt_cmd("%s/a", d), "A-up");
	wait_for_text(fmt_cmd("%s/b", d), "B-up");
	OK("cd tests/tools && (python3 bclient.py '%s' --all %s > '%s/c' &)", H,
	   fmt_cmd(req, "", "C", 6), d);
	wait_for_text(fmt_cmd("%s/run/broker.log", H), "waits for a turn");

	OK("'%s' broker --home '%s' --shutdown", test_bin("sbx"), H);
	OK("! grep ' %s/run/views/' /proc/mounts", H);
	ASSERT_GONE("^sleep 30[456][.]7");
	start(NULL);
	for (int i = 0; i < 2; i++) {
		const char *f = fmt_cmd("%s/%c", d, "ab"[i]);
		wait_for_text(f, "\"ok\"");
		SAME(field(OUT("grep '\"ok\"' '%s'", f),
			   "d[\"code\"], d[\"stopped\"], d[\"output\"]"),
		     fmt_cmd("143 True %c-up\n\nThe broker shut down while the command ran, and"
			     " stopped it.\nExit Code: 143\n",
			     "AB"[i]));
	}
	wait_for_text(fmt_cmd("%s/c", d), "\"ok\"");
	SAME(field(OUT("grep '\"ok\"' '%s/c'", d), "d[\"error\"][\"code\"]"), "shutting_down\n");
	/* sbx exec says so, and exits 143. */
	SAME(sbx_exec(&st, "-- 'echo again'"), "again\n");
	const char *e = fmt_cmd("%s/e", d);
	OK("('%s' exec --home '%s' --user alice --thread t1 -- 'echo up; sleep 307';"
	   " echo \"status $?\") > '%s' 2>&1 &",
	   test_bin("sbx"), H, e);
	wait_for_text(e, "up");
	OK("'%s' broker --home '%s' --shutdown", test_bin("sbx"), H);
	wait_for_text(e, "status");
	SAME(read_file(e), "up\nsbx: exec: the broker shut down while the command ran, and stopped"
			   " it\nstatus 143\n");
}
END_TEST

/* A client that stops reading holds up nothing: a flood's output events
 * wait in a bounded outbox (then are dropped), so its command still ends
 * at its timeout, in a scope and one-off; the scope can be released; and
 * when the client reads again it gets its final reply, with the output
 * and "events_dropped". (The connection's thread sat in send(), the
 * timeout never came, a release of the scope never answered.) */
START_TEST(test_broker_a_client_that_stops_reading)
{
	const char *d = test_dir("stall"), *go = fmt_cmd("%s/go", test_dir("stall"));
	static const char req[] = "'{\"op\":\"exec\",\"user\":\"alice\",\"thread\":\"t1\",%s"
				  "\"timeout\":2,\"command\":\"seq 1 100000000\"}'";

	for (int i = 0; i < 2; i++)
		OK("cd tests/tools && (python3 bclient.py '%s' --read-when '%s' %s > '%s/%d' &)", H,
		   go, fmt_cmd(req, i ? "" : "\"scope\":\"flood\","), d, i);
	const char *log = fmt_cmd("%s/run/broker.log", H);
	OK("for i in $(seq 300); do [ $(grep -c 'exit 124 (timed out)' '%s') -ge 2 ] && exit 0;"
	   " sleep 0.1; done; exit 1",
	   log);
	SAME(raw("'{\"op\":\"acquire\",\"user\":\"alice\",\"thread\":\"t1\",\"owner\":\"flood\"}'"
		 " '{\"op\":\"release\",\"user\":\"alice\",\"thread\":\"t1\",\"owner\":\"flood\"}'"
		 " | tail -1 | cut -c1-11"),
	     "{\"ok\": true\n");
	OK("touch '%s'", go);
	for (int i = 0; i < 2; i++) {
		const char *f = fmt_cmd("%s/%d", d, i);
		wait_for_text(f, "\"ok\"");
		SAME(field(OUT("grep '\"ok\"' '%s'", f),
			   "d[\"code\"], d[\"events_dropped\"],"
			   " d[\"output\"].startswith(\"1\\n2\\n3\\n\"), d[\"stdout_bytes\"] > 1 << 20"),
		     "124 True True True\n");
	}
}
END_TEST

/* SIGTERM, SIGINT and SIGHUP stop the broker as --shutdown does: its
 * views unmounted, its cgroups removed, "stopped" in its log. (A helper
 * thread that left them unblocked used to take the default action:
 * the process died with everything left behind; and the view daemons
 * inherited them blocked.) */
START_TEST(test_broker_signals_stop_it_cleanly)
{
	static const char *const sig[] = { "TERM", "INT", "HUP" };
	char *tag = OUT("printf %%s '%s' | sha256sum | cut -c1-12", H);
	int st;

	tag[strcspn(tag, "\n")] = '\0';
	for (size_t i = 0; i < sizeof(sig) / sizeof(*sig); i++) {
		if (i > 0)
			start(NULL);
		SAME(sbx_exec(&st, "--scope s -- 'sleep 61.7 >/dev/null 2>&1 & echo up'"), "up\n");
		/* Its view daemons block no signals (they came blocked). */
		OK("n=0; for p in $(pgrep -x sbxfs); do tr '\\0' ' ' < /proc/$p/cmdline |"
		   " grep -q -- '--home %s ' || continue; n=$((n+1));"
		   " grep -q '^SigBlk:[[:space:]]*0*$' /proc/$p/status || exit 1; done; [ $n -gt 0 ]",
		   H);
		/* Until the process is gone (or a zombie nobody reaped yet). */
		OK("p=$(head -1 '%s/run/broker.lock') && kill -%s $p && for i in $(seq 100); do"
		   " grep -qs '^State:[[:space:]]*[^Z]' /proc/$p/status || exit 0; sleep 0.1; done;"
		   " exit 1",
		   H, sig[i]);
		ck_assert_msg(strstr(read_file(fmt_cmd("%s/run/broker.log", H)), "info: stopped"),
			      "SIG%s: %s", sig[i], read_file(fmt_cmd("%s/run/broker.log", H)));
		OK("! grep -q ' %s/run/views/' /proc/mounts", H);
		OK("! ls -d /sys/fs/cgroup/sbx-%s /sys/fs/cgroup/*/sbx-%s 2>/dev/null", tag, tag);
		OK("! pgrep -x -f 'sleep 61[.]7'");
		OK("rm '%s/run/broker.log'", H);
	}
}
END_TEST

/* A view whose daemon died is mounted again for the next command. */
START_TEST(test_broker_a_killed_view_daemon)
{
	int st;

	SAME(sbx_exec(&st, "-- 'echo one > /mnt/user-data/workspace/f'"), "");
	OK("pkill -9 -f 'sbxfs --home %s/? '", H);
	SAME(sbx_exec(&st, "-- 'cat /mnt/user-data/workspace/f'"), "one\n");
	ck_assert(strstr(read_file(fmt_cmd("%s/run/broker.log", H)), "does not answer"));
}
END_TEST

/* A view that cannot be mounted: the client is told sbxfs's reason,
 * not sent to a log it may not be able to read. */
START_TEST(test_broker_mount_failure_says_why)
{
	int st;

	OK("mkdir -p '%s/users/alice/threads' && touch '%s/users/alice/threads/t1'", H, H);
	char *out = sbx_exec(&st, "-- true");
	ck_assert_int_ne(st, 0);
	ck_assert_msg(strstr(out, "sbxfs could not mount alice/t1: cannot create the directories"
				  " of thread alice/t1") &&
			      strstr(out, "Not a directory"),
		      "%s", out);
	/* sbxfs's own line still reaches the broker's log. */
	ck_assert(strstr(read_file(fmt_cmd("%s/run/broker.log", H)),
			 "sbxfs: cannot create the directories of thread alice/t1"));
}
END_TEST

START_TEST(test_broker_one_per_home_and_bad_configuration)
{
	int st;
	char *cmd = fmt_cmd("'%s' broker --home '%s' 2>&1", test_bin("sbx"), H);
	char *out = capture(cmd, &st);

	ck_assert_int_eq(st, 1);
	ck_assert_msg(strstr(out, "already runs"), "%s", out);
	const char *bad = test_dir("badhome");
	ck_assert_int_eq(write_file(fmt_cmd("%s/sbx.conf", bad),
				    "[broker]\ntimeout = 10\ntimeout = soon\n"),
			 0);
	out = capture(fmt_cmd("'%s' broker --home '%s' 2>&1", test_bin("sbx"), bad), &st);
	ck_assert_int_eq(st, 1);
	ck_assert_msg(strstr(out, "sbx.conf:3:"), "%s", out);
	ck_assert_int_eq(write_file(fmt_cmd("%s/sbx.conf", bad),
				    "[broker]\nmax_running = 10\nmax_shell_sessions = 10\n"),
			 0);
	out = capture(fmt_cmd("'%s' broker --home '%s' 2>&1", test_bin("sbx"), bad), &st);
	ck_assert_int_eq(st, 1);
	ck_assert_msg(strstr(out, "max_shell_sessions"), "%s", out);
}
END_TEST

START_TEST(test_broker_output_limits)
{
	char *r = raw("'{\"op\":\"exec\",\"user\":\"alice\",\"thread\":\"t1\","
		      "\"command\":\"head -c 11534336 /dev/zero | tr \\\\\\\\0 x; exit 3\"}'");
	SAME(field(r, "len(d[\"output\"]) <= 20000, d[\"stdout_bytes\"],"
		      " \"middle truncated\" in d[\"output\"],"
		      " \"output truncated after 10485760 of 11534336 bytes\" in d[\"output\"],"
		      " d[\"output\"].endswith(\"\\nExit Code: 3\")"),
	     "True 11534336 True True True\n");
}
END_TEST

/* Until alice/t1's view has N commands in it, running or waiting for
 * their scope's shell (the broker's status; at most 20 s). */
static void wait_for_commands(int n)
{
	OK("cd tests/tools && for i in $(seq 200); do"
	   " python3 bclient.py '%s' '{\"op\":\"status\"}' | python3 jsonq.py"
	   " 'sum(v[\"running\"] for v in d[\"views\"] if v[\"thread\"] == \"t1\")' |"
	   " grep -qx %d && exit 0; sleep 0.1; done; exit 1",
	   H, n);
}

/* An exec request of alice/t1 (in SCOPE if not NULL) running CMD. */
static char *exec_req(const char *scope, const char *cmd)
{
	return fmt_cmd("'{\"op\":\"exec\",\"user\":\"alice\",\"thread\":\"t1\",%s%s%s"
		       "\"command\":\"%s\"}'",
		       scope ? "\"scope\":\"" : "", scope ? scope : "", scope ? "\"," : "", cmd);
}

/* The command of a test's first request: says UP, then holds its turn
 * until the test creates the workspace's file "go"; then appends NAME to
 * the file "order". */
static char *held(const char *up, const char *name)
{
	return fmt_cmd("echo %s; until [ -e /mnt/user-data/workspace/go ]; do sleep 0.05; done;"
		       " echo %s >> /mnt/user-data/workspace/order",
		       up, name);
}

/* Lets the held command go. */
static void let_go(void)
{
	OK("touch '%s/users/alice/threads/t1/user-data/workspace/go'", H);
}

/* bash_max_sessions one-off commands per sandbox at once: the next one
 * waits its turn, and a waiter whose client leaves never runs. */
START_TEST(test_broker_one_off_commands_are_admitted_in_turn)
{
	const char *d = test_dir("turns"), *log;

	teardown();
	start("[broker]\nbash_max_sessions = 1\n");
	log = fmt_cmd("%s/run/broker.log", H);
	/* A has the turn; C waits for it, then its client goes away; B
	 * waits too. */
	OK("cd tests/tools && (python3 bclient.py '%s' --all %s > '%s/a' &)", H,
	   exec_req(NULL, held("A-up", "A")), d);
	wait_for_text(fmt_cmd("%s/a", d), "A-up");
	OK("cd tests/tools && ((python3 bclient.py '%s' --leave-after 0.3 %s;"
	   " echo gone > '%s/c-gone') &)",
	   H, exec_req(NULL, "echo C >> /mnt/user-data/workspace/order"), d);
	wait_for_lines(log, "waits for a turn", 1);
	OK("cd tests/tools && (python3 bclient.py '%s' %s > '%s/b' &)", H,
	   exec_req(NULL, "echo B >> /mnt/user-data/workspace/order"), d);
	wait_for_lines(log, "waits for a turn", 2);
	wait_for_text(fmt_cmd("%s/c-gone", d), "gone");
	let_go();
	wait_for_text(fmt_cmd("%s/b", d), "\"ok\"");
	SAME(read_file(fmt_cmd("%s/users/alice/threads/t1/user-data/workspace/order", H)),
	     "A\nB\n");
}
END_TEST

/* One persistent shell per scope: cd, exports and background jobs carry
 * over; other scopes and one-off commands are separate; `exit` or a
 * timeout ends a shell and the next command gets a new one. */
START_TEST(test_broker_sessions_keep_state_per_scope)
{
	int st;

	SAME(sbx_exec(&st, "--scope lead -- 'cd /mnt/user-data/outputs; export FOO=bar;"
			   " sleep 60 >/dev/null 2>&1 & echo started'"),
	     "started\n");
	SAME(sbx_exec(&st, "--scope lead -- 'pwd; echo $FOO; jobs | wc -l'"),
	     "/mnt/user-data/outputs\nbar\n1\n");
	SAME(sbx_exec(&st, "--scope subagent:1 -- 'pwd; echo ${FOO:-unset}'"),
	     "/mnt/user-data/workspace\nunset\n");
	/* Explicit variables: one-off, the scope's shell untouched. */
	SAME(sbx_exec(&st, "--scope lead --env A=1 -- 'export FOO=changed; echo $A'"), "1\n");
	SAME(sbx_exec(&st, "--scope lead -- 'echo $FOO'"), "bar\n");
	/* No trailing newline, stderr, the status: as one-off commands. */
	SAME(sbx_exec(&st, "--scope lead -- 'printf x; echo e >&2; false'"), "xe\n");
	ck_assert_int_eq(st, 1);
	sbx_exec(&st, "--scope lead -- 'exit 7'");
	ck_assert_int_eq(st, 7);
	SAME(sbx_exec(&st, "--scope lead -- 'pwd; echo ${FOO:-new}'"),
	     "/mnt/user-data/workspace\nnew\n");
	sbx_exec(&st, "--scope lead --timeout 1 -- 'export FOO=x; sleep 29.5'");
	ck_assert_int_eq(st, 124);
	SAME(sbx_exec(&st, "--scope lead -- 'echo ${FOO:-fresh}'"), "fresh\n");
	ASSERT_GONE("^sleep 29[.]5$");
}
END_TEST

/* A scoped command that times out returns every byte it wrote before
 * the kill, as a one-off does (before: output up to "26" of 30 lines,
 * stdout_bytes 68 of 103). */
START_TEST(test_broker_scoped_timeout_keeps_all_output)
{
	static const char cmd[] = "-- 'seq 1 30; echo LAST-LINE-BEFORE-HANG; sleep 20'";
	char want[256] = "", *one, *scoped;
	int st;

	for (int i = 1; i <= 30; i++)
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%d\n", i);
	strcat(want, "LAST-LINE-BEFORE-HANG\n");
	for (int round = 0; round < 3; round++) {
		one = sbx_exec(&st, fmt_cmd("--timeout 2 %s", cmd));
		ck_assert_int_eq(st, 124);
		scoped = sbx_exec(&st, fmt_cmd("--scope s%d --timeout 2 %s", round, cmd));
		ck_assert_int_eq(st, 124);
		ck_assert_msg(!strncmp(one, want, strlen(want)), "one-off:\n%s", one);
		ck_assert_msg(!strncmp(scoped, want, strlen(want)), "scoped:\n%s", scoped);
	}
}
END_TEST

/* A scoped command streams as it goes, as a one-off does (before, the
 * last 35 bytes waited for more output: here, for the command's end). */
START_TEST(test_broker_scoped_output_streams)
{
	const char *outf = fmt_cmd("%s/stream.out", test_dir("stream"));

	OK("'%s' exec --home '%s' --user alice --thread t1 --scope s -- 'echo first; sleep 5;"
	   " echo second' > '%s' 2>&1 &",
	   test_bin("sbx"), H, outf);
	char *got = NULL;
	for (int i = 0; i < 400 && !(got && strstr(got, "first\n")); i++) {
		free(got);
		usleep(10000);
		got = read_file(outf);
	}
	ck_assert_msg(got && !strcmp(got, "first\n"), "after 4 s: '%s'", got ? got : "(none)");
	OK("for i in $(seq 100); do grep -q second '%s' && exit 0; sleep 0.1; done; exit 1", outf);
}
END_TEST

/* The command line of `sbx exec` in alice/t1's SCOPE, up to its "--"
 * (bounded: a hang fails the test instead of stopping the suite). */
static char *in_scope(const char *scope)
{
	return fmt_cmd("timeout 20 '%s' exec --home '%s' --user alice --thread t1 --scope %s --",
		       test_bin("sbx"), H, scope);
}

/* A scoped command that closes or redirects the shell's own output for
 * good: the broker never waits on a shell that is alive (before, a
 * thread sat in waitpid forever, and the scope with it). */
START_TEST(test_broker_scope_survives_its_shell_closing_a_stream)
{
	char *x = in_scope("s");
	int st;

	SAME(OUT("%s 'export K=kept; exec 2>/dev/null; echo ok' 2>&1", x), "ok\n");
	SAME(OUT("%s 'echo $K; echo hidden >&2' 2>&1", x), "kept\n"); /* stderr stays away */
	/* With the shell's stdout closed its status cannot come back: the
	 * command ends at its timeout, and the scope gets a new shell. */
	char *out =
		capture(fmt_cmd("%s 'exec >&-; echo gone >&2' 2>&1", in_scope("s3 --timeout 2")),
			&st);
	ck_assert_msg(st == 124 && strstr(out, "gone\n"), "exit %d: %s", st, out);
	SAME(OUT("%s 'echo ${K:-new}' 2>&1", in_scope("s3")), "new\n");
}
END_TEST

/* A scope whose shell sends one stream into the other (exec 2>&1,
 * exec 1>&2): each end marker is found on either pipe, and the status
 * is the command's. (Both markers had one token: after exec 2>&1,
 * stderr's marker, always 0, came first on stdout and was taken for
 * the status; `false` reported 0 and marker lines showed in output.) */
START_TEST(test_broker_scope_with_its_streams_joined)
{
	char *x = in_scope("j");
	int st;

	SAME(OUT("%s 'exec 2>&1; echo joined' 2>&1", x), "joined\n");
	SAME(capture(fmt_cmd("%s false 2>&1", x), &st), "");
	ck_assert_int_eq(st, 1);
	SAME(capture(fmt_cmd("%s 'echo out; echo err >&2; exit 3' 2>&1", x), &st), "out\nerr\n");
	ck_assert_int_eq(st, 3);
	/* stdout into stderr: the status still comes. */
	x = in_scope("k");
	SAME(OUT("%s 'exec 1>&2; echo to-err' 2>&1", x), "to-err\n");
	SAME(capture(fmt_cmd("%s 'echo again; (exit 4)' 2>&1", x), &st), "again\n");
	ck_assert_int_eq(st, 4);
}
END_TEST

/* The short soak (make stress runs the long one): concurrent scoped and
 * one-off commands over four sandboxes, timeouts, clients that go away,
 * releases, evictions, two shutdowns and a crash of the broker, each
 * followed by a new one; one reply each, all output before a timeout,
 * nothing left behind (tests/tools/soak.py). */
START_TEST(test_broker_short_soak)
{
#ifdef __SANITIZE_ADDRESS__
	const char *rss = "off"; /* its quarantine holds freed memory */
#else
	const char *rss = "on";
#endif
	OK("python3 tests/tools/soak.py '%s' '%s' --clients 4 --seconds 8 --seed 7 --restarts 3 --rss %s",
	   test_bin("sbx"), test_dir("soak"), rss);
}
END_TEST

/* Commands of one scope run in order; different scopes at once. */
START_TEST(test_broker_sessions_order_and_concurrency)
{
	const char *d = test_dir("order");

	/* A1 holds scope a: B, in scope b, runs meanwhile; A2 waits. */
	OK("cd tests/tools && (python3 bclient.py '%s' --all %s > '%s/a1' &)", H,
	   exec_req("a", held("A1-up", "A1")), d);
	wait_for_text(fmt_cmd("%s/a1", d), "A1-up");
	SAME(field(OUT("cd tests/tools && timeout 20 python3 bclient.py '%s' %s", H,
		       exec_req("b", "echo B >> /mnt/user-data/workspace/order")),
		   "d[\"code\"]"),
	     "0\n");
	OK("cd tests/tools && (python3 bclient.py '%s' %s > '%s/a2' &)", H,
	   exec_req("a", "echo A2 >> /mnt/user-data/workspace/order"), d);
	wait_for_commands(2);
	let_go();
	wait_for_text(fmt_cmd("%s/a2", d), "\"ok\"");
	SAME(read_file(fmt_cmd("%s/users/alice/threads/t1/user-data/workspace/order", H)),
	     "B\nA1\nA2\n");
}
END_TEST

/* max_shell_sessions counts per sandbox, as the reference's per AIO
 * sandbox: scopes of another thread never evict this thread's shells
 * (before, one scope in t2 evicted t1's oldest). The broker-wide ceiling
 * evicts the oldest idle shell of any sandbox. */
START_TEST(test_broker_session_limit_is_per_sandbox)
{
	int st;

	teardown();
	start("[broker]\nmax_running = 1\nmax_shell_sessions = 2\nmax_shell_sessions_total = 3\n");
	sbx_exec(&st, "--scope s1 -- 'export V=1'");
	sbx_exec(&st, "--scope s2 -- 'export V=2'");
	char *t2 = fmt_cmd("'%s' exec --home '%s' --user alice --thread t2 --scope s1 --",
			   test_bin("sbx"), H);
	SAME(OUT("%s 'export V=3; echo other' 2>&1", t2), "other\n");
	SAME(sbx_exec(&st, "--scope s1 -- 'echo ${V:-none}'"), "1\n");
	SAME(sbx_exec(&st, "--scope s2 -- 'echo ${V:-none}'"), "2\n");
	ck_assert(!strstr(read_file(fmt_cmd("%s/run/broker.log", H)), "evicted"));
	/* A fourth shell in all: t2's, the oldest idle, makes room. */
	SAME(OUT("'%s' exec --home '%s' --user bob --thread t1 --scope s9 -- 'echo bob' 2>&1",
		 test_bin("sbx"), H),
	     "bob\n");
	ck_assert(strstr(
		read_file(fmt_cmd("%s/run/broker.log", H)),
		"session alice/t2 scope s1: evicted (oldest idle; 3 sessions in all at most"));
	SAME(sbx_exec(&st, "--scope s1 -- 'echo ${V:-none}'"), "1\n");
	SAME(OUT("%s 'echo ${V:-none}' 2>&1", t2), "none\n");
}
END_TEST

/* max_shell_sessions: the oldest idle shell makes room; a released
 * lease ends its scope's shell. */
START_TEST(test_broker_sessions_eviction_and_release)
{
	int st;

	teardown();
	start("[broker]\nmax_running = 1\nmax_shell_sessions = 2\n");
	sbx_exec(&st, "--scope s1 -- 'export V=1'");
	sbx_exec(&st, "--scope s2 -- 'export V=2'");
	SAME(sbx_exec(&st, "--scope s2 -- 'echo ${V:-none}'"), "2\n");
	SAME(sbx_exec(&st, "--scope s3 -- 'echo ${V:-none}'"), "none\n"); /* evicts s1 */
	SAME(sbx_exec(&st, "--scope s2 -- 'echo ${V:-none}'"), "2\n");
	SAME(sbx_exec(&st, "--scope s1 -- 'echo ${V:-none}'"), "none\n");
	ck_assert(strstr(read_file(fmt_cmd("%s/run/broker.log", H)), "evicted"));
	raw("'{\"op\":\"acquire\",\"user\":\"alice\",\"thread\":\"t1\",\"owner\":\"s2\"}'"
	    " '{\"op\":\"release\",\"user\":\"alice\",\"thread\":\"t1\",\"owner\":\"s2\"}'");
	SAME(sbx_exec(&st, "--scope s2 -- 'echo ${V:-ended}'"), "ended\n");
}
END_TEST

/* A request OP of alice/THREAD with the JSON members MORE ("" for none). */
static char *req_of(const char *thread, const char *op, const char *more)
{
	return fmt_cmd("'{\"op\":\"%s\",\"user\":\"alice\",\"thread\":\"%s\"%s%s}'", op, thread,
		       *more ? "," : "", more);
}

static char *req(const char *op, const char *more)
{
	return req_of("t1", op, more);
}

/* What a test reads of each reply to a session request or an exec. */
#define SESSION_FIELDS                                                                    \
	"d.get(\"id\"), d[\"ok\"], d.get(\"scope\"), d.get(\"cwd\"), d.get(\"created\")," \
	" d.get(\"ended\"), repr(d.get(\"output\")), d.get(\"shell_ended\"),"             \
	" (d.get(\"error\") or {}).get(\"code\"), (d.get(\"error\") or {}).get(\"message\")"

/* Explicit sessions, as the AIO API's shell sessions: session_open makes
 * a scope's shell (idempotent; in CWD), an exec with "existing" runs only
 * in a shell that exists, and otherwise nothing runs ("no_session",
 * "Session not found"); session_close ends it. An exec without
 * "existing" makes its scope's shell as before. */
/* The release of an owner ends the shell of the scope of its name and
 * those of the scopes named OWNER:... (an AIO sandbox's sessions, owned
 * by "aio:ID", are "aio:ID:shell:SID"); others' stay. */
START_TEST(test_broker_release_ends_the_owners_scopes)
{
	char *r = raw(fmt_cmd(
		"%s %s %s %s %s %s %s %s", req("acquire", "\"id\":1,\"owner\":\"o\""),
		req("session_open", "\"id\":2,\"scope\":\"o\""),
		req("session_open", "\"id\":3,\"scope\":\"o:x\""),
		req("session_open", "\"id\":4,\"scope\":\"ox\""),
		req("release", "\"id\":5,\"owner\":\"o\""),
		req("exec", "\"id\":6,\"scope\":\"o\",\"existing\":true,\"command\":\"true\""),
		req("exec", "\"id\":7,\"scope\":\"o:x\",\"existing\":true,\"command\":\"true\""),
		req("exec",
		    "\"id\":8,\"scope\":\"ox\",\"existing\":true,\"command\":\"echo kept\"")));
	SAME(fields(r, SESSION_FIELDS),
	     "1 True None None None None None None None None\n"
	     "2 True o /mnt/user-data/workspace True None None None None None\n"
	     "3 True o:x /mnt/user-data/workspace True None None None None None\n"
	     "4 True ox /mnt/user-data/workspace True None None None None None\n"
	     "5 True None None None None None None None None\n"
	     "6 False None None None None None None no_session Session not found\n"
	     "7 False None None None None None None no_session Session not found\n"
	     "8 True None None None None 'kept\\n' None None None\n");
}
END_TEST

START_TEST(test_broker_sessions_opened_and_closed_explicitly)
{
	const char *ws = fmt_cmd("%s/users/alice/threads/t1/user-data/workspace", H);
	char *r = raw(fmt_cmd(
		"%s %s %s %s %s %s %s %s %s %s %s", req("session_open", "\"id\":1,\"scope\":\"a\""),
		req("session_open", "\"id\":2,\"scope\":\"a\",\"cwd\":\"/mnt/user-data/outputs\""),
		req("exec", "\"id\":3,\"scope\":\"a\",\"existing\":true,"
			    "\"command\":\"export K=kept; cd /mnt/user-data/outputs\""),
		req("exec",
		    "\"id\":4,\"scope\":\"a\",\"existing\":true,\"command\":\"pwd; echo $K\""),
		req("session_open", "\"id\":5,\"scope\":\"b\",\"cwd\":\"/mnt/user-data/outputs\""),
		req("exec", "\"id\":6,\"scope\":\"b\",\"existing\":true,\"command\":\"pwd\""),
		req("session_close", "\"id\":7,\"scope\":\"a\""),
		req("exec", "\"id\":8,\"scope\":\"a\",\"existing\":true,"
			    "\"command\":\"touch /mnt/user-data/workspace/ran\""),
		req("exec", "\"id\":9,\"scope\":\"never\",\"existing\":true,"
			    "\"command\":\"touch /mnt/user-data/workspace/ran\""),
		req("session_close", "\"id\":10,\"scope\":\"a\""),
		req("exec", "\"id\":11,\"scope\":\"a\",\"command\":\"echo ${K:-fresh}\"")));
	SAME(fields(r, SESSION_FIELDS),
	     "1 True a /mnt/user-data/workspace True None None None None None\n"
	     "2 True a /mnt/user-data/workspace False None None None None None\n"
	     "3 True None None None None '(no output)' None None None\n"
	     "4 True None None None None '/mnt/user-data/outputs\\nkept\\n' None None None\n"
	     "5 True b /mnt/user-data/outputs True None None None None None\n"
	     "6 True None None None None '/mnt/user-data/outputs\\n' None None None\n"
	     "7 True a None None True None None None None\n"
	     "8 False None None None None None None no_session Session not found\n"
	     "9 False None None None None None None no_session Session not found\n"
	     "10 False None None None None None None no_session Session not found\n"
	     "11 True None None None None 'fresh\\n' None None None\n");
	ck_assert(!exists(fmt_cmd("%s/ran", ws)));
	/* Refused before anything runs: an "existing" needs a scope and no
	 * env (which makes a command one-off); a cwd is a virtual path of
	 * the view, for one-off commands and new shells. */
	r = raw(fmt_cmd("%s %s %s %s %s %s %s %s %s", req("session_open", "\"id\":1"),
			req("session_close", "\"id\":2"),
			req("exec", "\"id\":3,\"existing\":true,\"command\":\"true\""),
			req("exec",
			    "\"id\":4,\"scope\":\"a\",\"existing\":true,\"env\":{\"A\":\"1\"},"
			    "\"command\":\"true\""),
			req("session_open", "\"id\":5,\"scope\":\"c\",\"cwd\":\"/etc\""),
			req("session_open",
			    "\"id\":6,\"scope\":\"c\",\"cwd\":\"/mnt/user-data/../../etc\""),
			req("exec", "\"id\":7,\"cwd\":\"mnt/user-data\",\"command\":\"true\""),
			req("exec", "\"id\":8,\"cwd\":\"/mnt/skills2\",\"command\":\"true\""),
			req("exec", "\"id\":9,\"scope\":\"a\",\"cwd\":\"/mnt/user-data/outputs\","
				    "\"command\":\"true\"")));
	SAME(fields(r, "d[\"id\"], d[\"ok\"], d[\"error\"][\"code\"], d[\"error\"][\"message\"]"),
	     "1 False bad_request 'scope' must be a string without NUL (missing)\n"
	     "2 False bad_request 'scope' must be a string without NUL (missing)\n"
	     "3 False bad_request 'existing' needs a 'scope', and no 'env'\n"
	     "4 False bad_request 'existing' needs a 'scope', and no 'env'\n"
	     "5 False bad_request 'cwd' must be /mnt/user-data, /mnt/skills, /mnt/acp-workspace"
	     " or a configured mount, or a directory below one, without . or .. (not '/etc')\n"
	     "6 False bad_request 'cwd' must be /mnt/user-data, /mnt/skills, /mnt/acp-workspace"
	     " or a configured mount, or a directory below one, without . or .. (not"
	     " '/mnt/user-data/../../etc')\n"
	     "7 False bad_request 'cwd' must be /mnt/user-data, /mnt/skills, /mnt/acp-workspace"
	     " or a configured mount, or a directory below one, without . or .. (not"
	     " 'mnt/user-data')\n"
	     "8 False bad_request 'cwd' must be /mnt/user-data, /mnt/skills, /mnt/acp-workspace"
	     " or a configured mount, or a directory below one, without . or .. (not"
	     " '/mnt/skills2')\n"
	     "9 False bad_request 'cwd' is for one-off commands and session_open: a scope's"
	     " shell keeps its own working directory\n");
}
END_TEST

/* A shell past max_shell_sessions is evicted (the oldest idle of its
 * sandbox), and its scope then answers "no_session" to an "existing"
 * exec. An acquire's max_shell_sessions sets its sandbox's limit, as the
 * AIO provisioner's does; lowered, every shell over it goes. */
START_TEST(test_broker_evicted_session_answers_no_session)
{
	teardown();
	start("[broker]\nmax_running = 1\nmax_shell_sessions = 2\n");
	char *r = raw(fmt_cmd(
		"%s %s %s %s %s %s", req("session_open", "\"id\":1,\"scope\":\"a\""),
		req("session_open", "\"id\":2,\"scope\":\"b\""),
		req("session_open", "\"id\":3,\"scope\":\"c\""),
		req("exec", "\"id\":4,\"scope\":\"a\",\"existing\":true,\"command\":\"echo a\""),
		req("exec", "\"id\":5,\"scope\":\"b\",\"existing\":true,\"command\":\"echo b\""),
		req("exec", "\"id\":6,\"scope\":\"c\",\"existing\":true,\"command\":\"echo c\"")));
	SAME(fields(r, "d[\"id\"], d[\"ok\"], d.get(\"created\"), repr(d.get(\"output\")),"
		       " (d.get(\"error\") or {}).get(\"code\")"),
	     "1 True True None None\n2 True True None None\n3 True True None None\n"
	     "4 False None None no_session\n5 True None 'b\\n' None\n6 True None 'c\\n' None\n");
	ck_assert(strstr(read_file(fmt_cmd("%s/run/broker.log", H)),
			 "session alice/t1 scope a: evicted (oldest idle of its sandbox; 2 sessions"
			 " per sandbox at most)"));
	/* t2's own limit, from its acquire; t1 keeps the configuration's. */
	r = raw(fmt_cmd("%s %s %s %s %s %s %s %s",
			req_of("t2", "acquire",
			       "\"id\":1,\"owner\":\"aio\",\"max_shell_sessions\":3"),
			req_of("t1", "acquire", "\"id\":2,\"owner\":\"aio\""),
			req_of("t2", "session_open", "\"id\":3,\"scope\":\"x\""),
			req_of("t2", "session_open", "\"id\":4,\"scope\":\"y\""),
			req_of("t2", "session_open", "\"id\":5,\"scope\":\"z\""),
			req_of("t2", "exec",
			       "\"id\":6,\"scope\":\"x\",\"existing\":true,"
			       "\"command\":\"echo x\""),
			req_of("t2", "session_open", "\"id\":7,\"scope\":\"w\""),
			req_of("t2", "exec",
			       "\"id\":8,\"scope\":\"y\",\"existing\":true,"
			       "\"command\":\"echo y\"")));
	SAME(fields(r, "d[\"id\"], d[\"ok\"], d.get(\"max_shell_sessions\"),"
		       " repr(d.get(\"output\")), (d.get(\"error\") or {}).get(\"code\")"),
	     "1 True 3 None None\n2 True 2 None None\n3 True None None None\n"
	     "4 True None None None\n5 True None None None\n6 True None 'x\\n' None\n"
	     "7 True None None None\n8 False None None no_session\n");
	/* Lowered to 1: the next shell leaves no other. */
	r = raw(fmt_cmd(
		"%s %s %s %s %s %s %s",
		req_of("t2", "acquire", "\"id\":1,\"owner\":\"aio\",\"max_shell_sessions\":1"),
		req_of("t2", "session_open", "\"id\":2,\"scope\":\"v\""),
		req_of("t2", "exec",
		       "\"id\":3,\"scope\":\"x\",\"existing\":true,"
		       "\"command\":\"echo x\""),
		req_of("t2", "exec",
		       "\"id\":4,\"scope\":\"v\",\"existing\":true,"
		       "\"command\":\"echo v\""),
		req_of("t2", "acquire", "\"id\":5,\"owner\":\"o\",\"max_shell_sessions\":0"),
		req_of("t2", "acquire", "\"id\":6,\"owner\":\"o\",\"max_shell_sessions\":1001"),
		req_of("t2", "acquire", "\"id\":7,\"owner\":\"o\",\"max_shell_sessions\":\"2\"")));
	SAME(fields(r,
		    "d[\"id\"], d[\"ok\"], repr(d.get(\"output\")),"
		    " (d.get(\"error\") or {}).get(\"code\"), (d.get(\"error\") or {}).get(\"message\")"),
	     "1 True None None None\n2 True None None None\n"
	     "3 False None no_session Session not found\n4 True 'v\\n' None None\n"
	     "5 False None bad_request 'max_shell_sessions' must be a number of shells from 1 to 1000\n"
	     "6 False None bad_request 'max_shell_sessions' must be a number of shells from 1 to 1000\n"
	     "7 False None bad_request 'max_shell_sessions' must be a number of shells from 1 to 1000\n");
}
END_TEST

/* A command that ends its scope's shell (exit, exit N, kill $$) returns
 * at once with the shell's status and "shell_ended"; the scope's session
 * is gone ("no_session" to an "existing" exec); session_close of it says
 * it had ended. Each client is bounded well below the command's timeout
 * (600 s): a hang fails here. */
START_TEST(test_broker_exit_ends_its_session)
{
	char *r = OUT(
		"timeout 20 python3 tests/tools/bclient.py '%s' %s %s %s %s %s %s %s %s %s %s %s %s",
		H, req("session_open", "\"id\":1,\"scope\":\"s\""),
		req("exec",
		    "\"id\":2,\"scope\":\"s\",\"existing\":true,\"command\":\"export A=1\""),
		req("exec",
		    "\"id\":3,\"scope\":\"s\",\"existing\":true,\"command\":\"echo $A; exit\""),
		req("exec", "\"id\":4,\"scope\":\"s\",\"existing\":true,\"command\":\"echo $A\""),
		req("session_open", "\"id\":5,\"scope\":\"s\""),
		req("exec", "\"id\":6,\"scope\":\"s\",\"existing\":true,"
			    "\"command\":\"sleep 313.7 & exit 3\""),
		req("session_close", "\"id\":7,\"scope\":\"s\""),
		req("session_open", "\"id\":8,\"scope\":\"s\""),
		req("exec", "\"id\":9,\"scope\":\"s\",\"existing\":true,\"command\":\"kill $$\""),
		req("session_open", "\"id\":10,\"scope\":\"s\""),
		req("exec",
		    "\"id\":11,\"scope\":\"s\",\"existing\":true,\"command\":\"echo ${A:-new}\""),
		req("exec", "\"id\":12,\"scope\":\"i\",\"command\":\"exit 4\""));
	SAME(fields(r, SESSION_FIELDS ", d.get(\"code\")"),
	     "1 True s /mnt/user-data/workspace True None None None None None None\n"
	     "2 True None None None None '(no output)' None None None 0\n"
	     "3 True None None None None '1\\n' True None None 0\n"
	     "4 False None None None None None None no_session Session not found None\n"
	     "5 True s /mnt/user-data/workspace True None None None None None None\n"
	     "6 True None None None None '\\nExit Code: 3' True None None 3\n"
	     "7 True s None None False None None None None None\n"
	     "8 True s /mnt/user-data/workspace True None None None None None None\n"
	     "9 True None None None None '\\nExit Code: 143' True None None 143\n"
	     "10 True s /mnt/user-data/workspace True None None None None None None\n"
	     "11 True None None None None 'new\\n' None None None 0\n"
	     "12 True None None None None '\\nExit Code: 4' True None None 4\n");
	ASSERT_GONE("^sleep 313[.]7$");
}
END_TEST

/* idle_timeout (the AIO API's no_change_timeout): a command silent that
 * long is killed, its whole tree, as a timeout kills it; each output
 * starts the count again. Code 124, "idle_timed_out"; in a scope the
 * shell ends with it. The timeout is still the timeout. */
START_TEST(test_broker_idle_timeout_kills_a_silent_command)
{
	char *r = raw(fmt_cmd(
		"%s %s %s %s %s",
		req("exec",
		    "\"id\":1,\"idle_timeout\":3,"
		    "\"command\":\"echo a; sleep 1; echo b; sleep 1; echo c; sleep 311.7\""),
		req("session_open", "\"id\":2,\"scope\":\"s\""),
		req("exec", "\"id\":3,\"scope\":\"s\",\"existing\":true,\"idle_timeout\":2,"
			    "\"command\":\"export A=1; echo a; sleep 312.7\""),
		req("exec", "\"id\":4,\"scope\":\"s\",\"existing\":true,\"command\":\"echo $A\""),
		req("exec", "\"id\":5,\"timeout\":2,\"idle_timeout\":30,"
			    "\"command\":\"while :; do echo x; sleep 0.2; done\"")));
	SAME(fields(r, "d[\"id\"], d[\"ok\"], d.get(\"code\"), d.get(\"timed_out\"),"
		       " d.get(\"idle_timed_out\"), repr(d.get(\"output\", \"\")[:6]),"
		       " d.get(\"output\", \"\").split(\"\\n\")[-2:],"
		       " (d.get(\"error\") or {}).get(\"code\")"),
	     "1 True 124 False True 'a\\nb\\nc\\n' ['Command produced no output for 3 seconds and"
	     " was terminated.', 'Exit Code: 124'] None\n"
	     "2 True None None None '' [''] None\n"
	     "3 True 124 False True 'a\\n\\nCom' ['Command produced no output for 2 seconds and"
	     " was terminated.', 'Exit Code: 124'] None\n"
	     "4 False None None None '' [''] no_session\n"
	     "5 True 124 True None 'x\\nx\\nx\\n' ['Command timed out after 2 seconds and was"
	     " terminated. To run a long-lived process such as a web server, start it in the"
	     " background and redirect its output, e.g. `your-command >"
	     " /mnt/user-data/workspace/server.log 2>&1 &`.', 'Exit Code: 124'] None\n");
	ASSERT_GONE("^sleep 31[12][.]7$");
	SAME(field(raw(req("exec", "\"idle_timeout\":0,\"command\":\"true\"")),
		   "d[\"error\"][\"message\"]"),
	     "'idle_timeout' must be whole seconds from 1 to 86400\n");
}
END_TEST

/* A one-off command's cwd (the AIO API's exec_dir), in the sandbox and
 * on the host; "raw": the final reply has each stream whole, apart. */
START_TEST(test_broker_exec_cwd_and_raw_streams)
{
	static const char cmd[] = "\"command\":\"pwd; printf \\\"a\\\\nStd Error:\\\\n\\\";"
				  " echo e >&2; exit 2\"";
	char *r = raw(fmt_cmd("%s %s %s %s",
			      req("exec", fmt_cmd("\"id\":1,\"cwd\":\"/mnt/user-data/outputs\","
						  "\"raw\":true,%s",
						  cmd)),
			      req("exec", fmt_cmd("\"id\":2,%s", cmd)),
			      req("exec", "\"id\":3,\"cwd\":\"/mnt/user-data/workspace/nope\","
					  "\"command\":\"true\""),
			      req("session_open", "\"id\":4,\"scope\":\"n\","
						  "\"cwd\":\"/mnt/user-data/workspace/nope\"")));
	SAME(fields(r, "d[\"id\"], d[\"ok\"], d.get(\"code\"), repr(d.get(\"output\")),"
		       " repr(d.get(\"stdout\")), repr(d.get(\"stderr\")),"
		       " (d.get(\"error\") or {}).get(\"message\")"),
	     "1 True 2 '/mnt/user-data/outputs\\na\\nStd Error:\\n\\nStd Error:\\ne\\n\\nExit Code: 2'"
	     " '/mnt/user-data/outputs\\na\\nStd Error:\\n' 'e\\n' None\n"
	     "2 True 2 '/mnt/user-data/workspace\\na\\nStd Error:\\n\\nStd Error:\\ne\\n\\nExit"
	     " Code: 2' None None None\n"
	     "3 False None None None None 'cwd' /mnt/user-data/workspace/nope: No such file or"
	     " directory\n"
	     "4 False None None None None 'cwd' /mnt/user-data/workspace/nope: No such file or"
	     " directory\n");
	SAME(field(raw(req("exec", "\"existing\":true,\"scope\":\"n\",\"command\":\"true\"")),
		   "d[\"error\"][\"code\"]"),
	     "no_session\n");
	/* On the host: the directory of the view, shown as its virtual
	 * path; a shell made there by session_open. */
	teardown();
	start("[broker]\nallow_host_bash = true\n");
	r = raw(fmt_cmd("%s %s %s",
			req("exec", "\"id\":1,\"host\":true,\"cwd\":\"/mnt/user-data/outputs\","
				    "\"raw\":true,\"command\":\"pwd\""),
			req("session_open", "\"id\":2,\"host\":true,\"scope\":\"h\","
					    "\"cwd\":\"/mnt/user-data/outputs\""),
			req("exec", "\"id\":3,\"host\":true,\"scope\":\"h\",\"existing\":true,"
				    "\"command\":\"pwd\"")));
	SAME(fields(r, "d[\"id\"], d[\"ok\"], repr(d.get(\"output\")), repr(d.get(\"stdout\")),"
		       " d.get(\"cwd\")"),
	     "1 True '/mnt/user-data/outputs\\n' '/mnt/user-data/outputs\\n' None\n"
	     "2 True None None /mnt/user-data/outputs\n"
	     "3 True '/mnt/user-data/outputs\\n' None None\n");
}
END_TEST

/* The configuration's extra mounts appear at /mnt/NAME (read-only with
 * :ro, enforced by the view); network = on keeps the host's network. */
START_TEST(test_broker_extra_mounts_and_network)
{
	const char *data = test_dir("data"), *scratch = test_dir("scratch");
	int st;

	ck_assert_int_eq(write_file(fmt_cmd("%s/in.txt", data), "dataset\n"), 0);
	teardown();
	start(fmt_cmd("[broker]\nnetwork = on\n[mounts]\ndata = %s:ro\nscratch = %s\n", data,
		      scratch));
	SAME(sbx_exec(&st, "-- 'cat /mnt/data/in.txt; touch /mnt/data/x 2>/dev/null || echo ro;"
			   " echo out > /mnt/scratch/o.txt'"),
	     "dataset\nro\n");
	SAME(read_file(fmt_cmd("%s/o.txt", scratch)), "out\n");
	ck_assert(!exists(fmt_cmd("%s/x", data)));
	char *host = OUT("tail -n +3 /proc/net/dev | wc -l");
	SAME(sbx_exec(&st, "-- 'tail -n +3 /proc/net/dev | wc -l'"), host);
}
END_TEST

/* One-off commands after a sandbox's first run in its launcher
 * (exec/launcher.h), which gives each exactly what a fresh sandbox
 * would: the same environment and working directory, its exit status
 * or signal, a timeout that kills its whole tree; and the broker's log
 * says the launcher ran it. */
START_TEST(test_broker_one_offs_run_in_a_launcher)
{
	const char *log = fmt_cmd("%s/run/broker.log", H);
	const char *env = "'{\"op\":\"exec\",\"user\":\"alice\",\"thread\":\"t1\","
			  "\"cwd\":\"/mnt/user-data\",\"env\":{\"A\":\"1\",\"PWD\":\"/x\"},"
			  "\"command\":\"tr \\\"\\\\0\\\" \\\"\\\\n\\\" < /proc/$$/environ"
			  " | grep -v ^LC_ | sort; pwd\"}'";
	int st;

	/* The first: a fresh sandbox, and its launcher started after. */
	char *fresh = field(raw(env), "d[\"output\"]");
	wait_for_text(log, "launcher alice/t1: started");
	ck_assert(!strstr(read_file(log), "(launcher)"));
	char *launched = field(raw(env), "d[\"output\"]");
	SAME(launched, fresh);
	ck_assert_msg(strstr(fresh, "A=1\n") && strstr(fresh, "PWD=/mnt/user-data\n"), "%s", fresh);
	ck_assert_msg(strstr(read_file(log), "exec alice/t1 (launcher): exit 0"), "%s",
		      read_file(log));
	/* Its status, a signal's, its output and stderr. */
	SAME(sbx_exec(&st, "-- 'echo out; echo err >&2; exit 7'"), "out\nerr\n");
	ck_assert_int_eq(st, 7);
	sbx_exec(&st, "-- 'kill -TERM $$'");
	ck_assert_int_eq(st, 128 + 15);
	/* A timeout kills the whole tree (and the launcher with its
	 * sandbox: the next one-off runs afresh, and starts another). */
	char *out = sbx_exec(&st, "--timeout 1 -- 'sleep 300.7 & setsid sleep 301.7 & sleep 302.7;"
				  " echo never'");
	ck_assert_int_eq(st, 124);
	ck_assert_msg(!strstr(out, "never"), "%s", out);
	ASSERT_GONE("sleep 30[012][.]7");
	int before = atoi(OUT("grep -c 'launcher alice/t1: started' '%s'", log));
	SAME(sbx_exec(&st, "-- 'echo again'"), "again\n");
	wait_for_lines(log, "launcher alice/t1: started", before + 1);
	/* Background jobs do not hold it, and do not outlive it. */
	SAME(sbx_exec(&st, "--timeout 5 -- 'sleep 303.7 >/dev/null 2>&1 & echo started'"),
	     "started\n");
	ck_assert_int_eq(st, 0);
	ASSERT_GONE("sleep 30[3][.]7");
	SAME(sbx_exec(&st, "-- 'pgrep sleep || echo none'"), "none\n");
	ck_assert_int_ge(atoi(OUT("grep -c 'exec alice/t1 (launcher)' '%s'", log)), 5);
}
END_TEST

/* one_off = fresh: every one-off gets a sandbox of its own, as before. */
START_TEST(test_broker_one_off_fresh_is_a_choice)
{
	const char *log;
	int st;

	teardown();
	start("[broker]\none_off = fresh\n");
	log = fmt_cmd("%s/run/broker.log", H);
	for (int i = 0; i < 3; i++) {
		SAME(sbx_exec(&st, "-- 'cat /proc/1/comm'"), "bwrap\n");
		ck_assert_int_eq(st, 0);
	}
	ck_assert(!strstr(read_file(log), "launcher"));
}
END_TEST

Suite *suite_view_broker(void)
{
	Suite *s = suite_create("view_broker");
	TCase *tc = tcase_create("broker");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_broker_exec_in_the_namespace_sandbox);
	tcase_add_test(tc, test_broker_timeout_kills_the_whole_tree);
	tcase_add_test(tc, test_broker_background_jobs_do_not_hold_a_command);
	tcase_add_test(tc, test_broker_environment_is_built);
	tcase_add_test(tc, test_broker_identity_values);
	tcase_add_test(tc, test_broker_host_mode_refused_unless_allowed);
	tcase_add_test(tc, test_broker_protocol_errors);
	tcase_add_test(tc, test_broker_present_for_the_receipt);
	tcase_add_test(tc, test_broker_runs_begun_and_ended);
	tcase_add_test(tc, test_broker_runs_undone);
	tcase_add_test(tc, test_broker_restores_a_path);
	tcase_add_test(tc, test_broker_only_its_uid_and_root);
	tcase_add_test(tc, test_broker_leases_park_and_idle_unmount);
	tcase_add_test(tc, test_broker_a_held_lease_ends_with_its_connection);
	tcase_add_test(tc, test_broker_acquire_starts_the_owner_s_shell);
	tcase_add_test(tc, test_broker_tool_runs_a_file_tool_in_the_view);
	tcase_add_test(tc, test_broker_aio_file_tools_go_through_the_gate);
	tcase_add_test(tc, test_broker_open_passes_the_file);
	tcase_add_test(tc, test_broker_tool_arguments_in_a_memfd);
	tcase_add_test(tc, test_broker_exit_idle_stops_once_no_client_is_left);
	tcase_add_test(tc, test_broker_a_client_going_away_disturbs_no_one);
	tcase_add_test(tc, test_broker_pipelined_and_half_closed_requests);
	tcase_add_test(tc, test_broker_shutdown_and_a_killed_broker);
	tcase_add_test(tc, test_broker_signals_stop_it_cleanly);
	tcase_add_test(tc, test_broker_a_killed_view_daemon);
	tcase_add_test(tc, test_broker_mount_failure_says_why);
	tcase_add_test(tc, test_broker_one_per_home_and_bad_configuration);
	tcase_add_test(tc, test_broker_output_limits);
	tcase_add_test(tc, test_broker_one_off_commands_are_admitted_in_turn);
	tcase_add_test(tc, test_broker_sessions_keep_state_per_scope);
	tcase_add_test(tc, test_broker_sessions_order_and_concurrency);
	tcase_add_test(tc, test_broker_sessions_eviction_and_release);
	tcase_add_test(tc, test_broker_session_limit_is_per_sandbox);
	tcase_add_test(tc, test_broker_scoped_timeout_keeps_all_output);
	tcase_add_test(tc, test_broker_scoped_output_streams);
	tcase_add_test(tc, test_broker_scope_survives_its_shell_closing_a_stream);
	tcase_add_test(tc, test_broker_scope_with_its_streams_joined);
	tcase_add_test(tc, test_broker_short_soak);
	tcase_add_test(tc, test_broker_shutdown_answers_every_request);
	tcase_add_test(tc, test_broker_a_client_that_stops_reading);
	tcase_add_test(tc, test_broker_extra_mounts_and_network);
	tcase_add_test(tc, test_broker_one_offs_run_in_a_launcher);
	tcase_add_test(tc, test_broker_one_off_fresh_is_a_choice);
	suite_add_tcase(s, tc);
	/* What the AIO API's shell and bash calls need of it. */
	TCase *aio = tcase_create("aio");
	tcase_set_timeout(aio, 60);
	tcase_add_checked_fixture(aio, setup, teardown);
	tcase_add_test(aio, test_broker_sessions_opened_and_closed_explicitly);
	tcase_add_test(aio, test_broker_release_ends_the_owners_scopes);
	tcase_add_test(aio, test_broker_evicted_session_answers_no_session);
	tcase_add_test(aio, test_broker_exit_ends_its_session);
	tcase_add_test(aio, test_broker_idle_timeout_kills_a_silent_command);
	tcase_add_test(aio, test_broker_exec_cwd_and_raw_streams);
	suite_add_tcase(s, aio);
	/* What its sessions' sandboxes hold of the view. */
	TCase *held = tcase_create("held");
	tcase_set_timeout(held, 60);
	tcase_add_checked_fixture(held, setup, teardown);
	tcase_add_test(held, test_broker_umount_of_a_view_its_session_uses_is_refused);
	tcase_add_test(held, test_broker_a_session_keeps_its_view_from_the_idle_unmount);
	suite_add_tcase(s, held);
	return s;
}
