/* What a broker command runs with and returns: the environment built,
 * the identity prefix (hostile values), shell quoting, the output text
 * (streams, truncation, exit lines), UTF-8 cleaning, and the path
 * rewriting and masking of host mode, and a killed command's tree. */
#include "common/ids.h"
#include "common/utf8.h"
#include "exec/env.h"
#include "exec/guard.h"
#include "exec/hostpath.h"
#include "exec/output.h"
#include "exec/request.h"
#include "exec/runner.h"
#include "tests/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

START_TEST(test_exec_valid_names)
{
	ck_assert(env_valid_name("A_1"));
	ck_assert(env_valid_name("_a"));
	ck_assert(!env_valid_name("1A"));
	ck_assert(!env_valid_name("A-B"));
	ck_assert(!env_valid_name("A=B"));
	ck_assert(!env_valid_name(""));
}
END_TEST

/* The broker's environment in the tests below: secrets under names no
 * denylist knows, a host path in SBX_HOME, a harmless name, and the
 * fixed set. */
static char *broker_env[] = {
	"SQLALCHEMY_DATABASE_URI=postgresql://app:pw@db/app",
	"CELERY_BROKER_URL=redis://:pw@redis:6379/0",
	"AZURE_STORAGE_CONNECTION_STRING=AccountName=a;AccountKey=pw",
	"HTTPS_PROXY=http://u:pw@proxy:3128",
	"NPM_CONFIG__AUTH=dTpwdw==",
	"SLACK_WEBHOOK_URL=https://hooks.slack.com/services/T/B/pw",
	"SBX_HOME=/var/lib/sbxfs",
	"HARMLESS=1",
	"PATH=/root/.cargo/bin:/usr/bin:/bin",
	"HOME=/root",
	"USER=root",
	"LOGNAME=root",
	"LANG=C.UTF-8",
	"LC_ALL=C",
	"LC_TIME=en_GB.UTF-8",
	"LCX=1",
	"TERM=xterm",
	"TZ=UTC",
	"DEERFLOW_CHANNEL_USER_ID=U1",
	"DEERFLOW_USER_ID=alice",
	"NOEQUALS",
	NULL,
};

/* "K=V" lines of ENV, freed. */
static char *joined(char **env)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	ck_assert_ptr_nonnull(env);
	ck_assert_ptr_nonnull(f);
	for (size_t i = 0; env[i]; i++)
		fprintf(f, "%s\n", env[i]);
	ck_assert_int_eq(fclose(f), 0);
	env_free(env);
	return out;
}

/* Only the fixed set reaches a command from the broker's environment;
 * in the sandbox, its own PATH, home and user replace the broker's. */
START_TEST(test_exec_env_build_is_an_allowlist)
{
	static const char fixed[] = "LANG=C.UTF-8\nLC_ALL=C\nLC_TIME=en_GB.UTF-8\nTERM=xterm\n"
				    "TZ=UTC\nDEERFLOW_CHANNEL_USER_ID=U1\nDEERFLOW_USER_ID=alice\n";
	char *got = joined(env_build(broker_env, false, NULL, NULL, 0));
	char *want = NULL;

	ck_assert_int_ge(asprintf(&want,
				  "PATH=" ENV_SANDBOX_PATH
				  "\nHOME=/tmp\nUSER=agent\nLOGNAME=agent\n%s",
				  fixed),
			 0);
	ck_assert_str_eq(got, want);
	free(got);
	free(want);
	got = joined(env_build(broker_env, true, NULL, NULL, 0));
	ck_assert_int_ge(asprintf(&want,
				  "PATH=/root/.cargo/bin:/usr/bin:/bin\nHOME=/root\nUSER=root\n"
				  "LOGNAME=root\n%s",
				  fixed),
			 0);
	ck_assert_str_eq(got, want);
	free(got);
	free(want);
	got = joined(env_build(NULL, false, NULL, NULL, 0));
	ck_assert_str_eq(got, "PATH=" ENV_SANDBOX_PATH "\nHOME=/tmp\nUSER=agent\nLOGNAME=agent\n");
	free(got);
}
END_TEST

/* sbx.conf's names take the broker's values (over the sandbox's own);
 * the request's variables are kept whatever their names, over all. */
START_TEST(test_exec_env_build_adds_what_is_named)
{
	char *pass[] = { "HTTPS_PROXY", "PATH", "NOT_SET", "NOEQUALS", NULL };
	char *extra[] = { "API_TOKEN=explicit", "LANG=fr_FR.UTF-8", "HOME=/mnt/user-data" };
	char *got = joined(env_build(broker_env, false, pass, extra, 3));

	ck_assert_str_eq(got,
			 "PATH=/root/.cargo/bin:/usr/bin:/bin\nHOME=/mnt/user-data\n"
			 "USER=agent\nLOGNAME=agent\nHTTPS_PROXY=http://u:pw@proxy:3128\n"
			 "LANG=fr_FR.UTF-8\nLC_ALL=C\nLC_TIME=en_GB.UTF-8\nTERM=xterm\nTZ=UTC\n"
			 "DEERFLOW_CHANNEL_USER_ID=U1\nDEERFLOW_USER_ID=alice\n"
			 "API_TOKEN=explicit\n");
	free(got);
	got = joined(env_build(broker_env, true, pass, NULL, 0));
	ck_assert_msg(strstr(got, "HTTPS_PROXY=http://u:pw@proxy:3128\n") &&
			      !strstr(got, "SBX_HOME"),
		      "%s", got);
	free(got);
}
END_TEST

static char *prefix_of(const char *id, size_t len)
{
	char *p = NULL;

	ck_assert_int_eq(identity_prefix(id, len, &p), 0);
	return p;
}

START_TEST(test_exec_identity_prefix_hostile_values)
{
	char big[10241], limit[257];

	ck_assert_str_eq(prefix_of(NULL, 0), "");
	ck_assert_str_eq(prefix_of("", 0), "unset DEERFLOW_CHANNEL_USER_ID; ");
	ck_assert_str_eq(prefix_of("alice", 5), "export DEERFLOW_CHANNEL_USER_ID='alice'; ");
	/* Found by fuzzing: the id is ID_LEN bytes, not a C string. */
	ck_assert_str_eq(prefix_of("bobXYZ", 3), "export DEERFLOW_CHANNEL_USER_ID='bob'; ");
	ck_assert_str_eq(prefix_of("a'b", 3), "export DEERFLOW_CHANNEL_USER_ID='a'\\''b'; ");
	ck_assert_str_eq(prefix_of("$(id)`id`", 9),
			 "export DEERFLOW_CHANNEL_USER_ID='$(id)`id`'; ");
	ck_assert_str_eq(prefix_of("a\nb", 3), "unset DEERFLOW_CHANNEL_USER_ID; ");
	ck_assert_str_eq(prefix_of("a\0b", 3), "unset DEERFLOW_CHANNEL_USER_ID; ");
	ck_assert_str_eq(prefix_of("\xff\xfe", 2), "unset DEERFLOW_CHANNEL_USER_ID; ");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_str_eq(prefix_of(big, strlen(big)), "unset DEERFLOW_CHANNEL_USER_ID; ");
	memset(limit, 'y', 256);
	limit[256] = '\0';
	ck_assert(!strncmp(prefix_of(limit, 256), "export ", 7));
	/* 256 characters, not bytes: 256 two-byte characters pass. */
	char wide[513];
	for (int i = 0; i < 256; i++)
		memcpy(wide + 2 * i, "\xc3\xa9", 2);
	wide[512] = '\0';
	ck_assert(!strncmp(prefix_of(wide, 512), "export ", 7));
	/* What the shell makes of a quoted hostile value: the value itself. */
	char *p = prefix_of("x'; touch /tmp/pwned-sbx; '$(id)", 32), cmd[512];
	snprintf(cmd, sizeof(cmd),
		 "%s test \"$DEERFLOW_CHANNEL_USER_ID\" = \"x'; touch /tmp/pwned-sbx; '\\$(id)\"",
		 p);
	ck_assert_int_eq(sh("%s", cmd), 0);
	ck_assert(!exists("/tmp/pwned-sbx"));
}
END_TEST

START_TEST(test_exec_output_text_formats)
{
	struct capture out = { 0 }, err = { 0 };

	ck_assert_str_eq(output_text(&out, &err, 0, false, 600, NULL, OUTPUT_MAX_CHARS),
			 "(no output)");
	ck_assert_str_eq(output_text(&out, &err, 2, false, 600, NULL, OUTPUT_MAX_CHARS),
			 "\nExit Code: 2");
	capture_add(&err, "oops\n", 5);
	ck_assert_str_eq(output_text(&out, &err, 1, false, 600, NULL, OUTPUT_MAX_CHARS),
			 "oops\n\nExit Code: 1");
	capture_add(&out, "hi\n", 3);
	ck_assert_str_eq(output_text(&out, &err, 0, false, 600, NULL, OUTPUT_MAX_CHARS),
			 "hi\n\nStd Error:\noops\n");
	char *t = output_text(&out, &err, 124, true, 1, NULL, OUTPUT_MAX_CHARS);
	ck_assert(strstr(t, "\nCommand timed out after 1 second and was terminated."));
	ck_assert(strstr(t, "Exit Code: 124") == t + strlen(t) - strlen("Exit Code: 124"));
	capture_free(&out);
	capture_free(&err);
}
END_TEST

START_TEST(test_exec_capture_limit_and_middle_truncation)
{
	struct capture out = { 0 }, err = { 0 };
	char *chunk = malloc(1 << 20);

	memset(chunk, 'x', 1 << 20);
	for (int i = 0; i < 11; i++)
		ck_assert_int_eq(capture_add(&out, chunk, 1 << 20), 0);
	ck_assert_uint_eq(out.len, CAPTURE_LIMIT);
	ck_assert_uint_eq(out.total, 11u << 20);
	char *t = output_text(&out, &err, 3, false, 600, NULL, OUTPUT_MAX_CHARS);
	ck_assert_uint_le(utf8_chars(t), OUTPUT_MAX_CHARS);
	ck_assert(strstr(t, "[middle truncated: "));
	ck_assert(strstr(t, "[output truncated after 10485760 of 11534336 bytes"));
	ck_assert(strstr(t, "\nExit Code: 3") == t + strlen(t) - strlen("\nExit Code: 3"));
	/* Characters, not bytes; and exactly at the limit nothing is cut. */
	char *s = malloc(30001);
	for (int i = 0; i < 10000; i++)
		memcpy(s + 3 * i, "\xe2\x82\xac", 3); /* a euro sign */
	s[30000] = '\0';
	ck_assert_str_eq(output_middle_truncate(s, 10000), s);
	char *cut = output_middle_truncate(s, 100);
	ck_assert_uint_le(utf8_chars(cut), 100);
	ck_assert(!strncmp(cut, "\xe2\x82\xac", 3));
	/* Found by fuzzing: an "exit line" of any length was kept whole. */
	char *fake = malloc(200);
	memset(fake, 'x', 150);
	strcpy(fake + 150, "\nExit Code: 12345678901234567890123456789012345");
	ck_assert_uint_le(utf8_chars(output_middle_truncate(fake, 100)), 100);
	capture_free(&out);
	free(chunk);
	free(s);
}
END_TEST

START_TEST(test_exec_utf8_clean)
{
	size_t keep;

	ck_assert_str_eq(utf8_clean("a\xffz", 3, NULL), "a\xef\xbf\xbdz");
	ck_assert_str_eq(utf8_clean("a\0b", 3, NULL), "a\xef\xbf\xbd"
						      "b");
	/* A character cut by the end of a chunk waits for the next one. */
	ck_assert_str_eq(utf8_clean("ab\xe2\x82", 4, &keep), "ab");
	ck_assert_uint_eq(keep, 2);
	ck_assert_str_eq(utf8_clean("ab\xe2\x82", 4, NULL), "ab\xef\xbf\xbd\xef\xbf\xbd");
}
END_TEST

START_TEST(test_exec_host_paths_rewritten_and_masked)
{
	const char *extra[] = { "data", NULL };
	const struct hostpath_mask mask[] = {
		{ "/h/run/views/u/t", "/mnt" },
		{ "/h/users/u/threads/t", "/mnt" },
		{ "/h/skills", "/mnt/skills" },
		{ NULL, NULL },
	};

	ck_assert_str_eq(hostpath_rewrite("cat /mnt/user-data/workspace/a /mnt/skills/x"
					  " /mnt/skills2 /mnt/data/y '/mnt/acp-workspace'",
					  "/M", extra),
			 "cat /M/user-data/workspace/a /M/skills/x /mnt/skills2 /M/data/y"
			 " '/M/acp-workspace'");
	ck_assert_str_eq(hostpath_mask("at /h/run/views/u/t/user-data/workspace and"
				       " /h/users/u/threads/t/user-data/outputs/r.md;"
				       " /h/run/views/u/t2 /h/skills/s/SKILL.md",
				       mask),
			 "at /mnt/user-data/workspace and /mnt/user-data/outputs/r.md;"
			 " /h/run/views/u/t2 /mnt/skills/s/SKILL.md");
	/* A working directory: a root of the view or plainly below one. */
	static const char *const in[] = { "/mnt/user-data", "/mnt/user-data/outputs/a b",
					  "/mnt/skills/public", "/mnt/acp-workspace/",
					  "/mnt/data/x/y" };
	static const char *const out[] = { "/mnt",
					   "/mnt/",
					   "/etc",
					   "mnt/user-data",
					   "/mnt/user-data2",
					   "/mnt/skills2/x",
					   "/mnt/other",
					   "/mnt/user-data/../../etc",
					   "/mnt/user-data/./x",
					   "/mnt/user-data//x",
					   "/mnt/data/..",
					   "" };
	for (size_t i = 0; i < sizeof(in) / sizeof(*in); i++)
		ck_assert_msg(hostpath_is_virtual(in[i], extra), "%s", in[i]);
	for (size_t i = 0; i < sizeof(out) / sizeof(*out); i++)
		ck_assert_msg(!hostpath_is_virtual(out[i], extra), "%s", out[i]);
}
END_TEST

static const char *parse_code(const char *line, struct request *q)
{
	const char *code = "ok";
	char err[256];

	if (request_parse(line, strlen(line), q, &code, err, sizeof(err)) == 0)
		code = "ok";
	return code;
}

START_TEST(test_exec_request_parsing)
{
	struct request q;

	ck_assert_str_eq(
		parse_code("{\"op\":\"exec\",\"id\":7,\"user\":\"u\",\"thread\":\"t\","
			   "\"command\":\"ls\",\"timeout\":5,\"env\":{\"A\":\"1\"},"
			   "\"channel_user_id\":\"a\\u0000b\",\"scope\":\"s\",\"host\":false}",
			   &q),
		"ok");
	ck_assert_int_eq(q.op, REQ_EXEC);
	ck_assert_int_eq(json_integer_value(q.id), 7);
	ck_assert_uint_eq(q.timeout, 5);
	ck_assert_str_eq(q.env[0], "A=1");
	ck_assert_uint_eq(q.channel_user_id_len, 3); /* the NUL kept, for a refusal */
	ck_assert_str_eq(q.scope, "s");
	request_free(&q);
	static const char *const bad[] = {
		"",
		"[]",
		"{\"op\":1}",
		"{\"op\":\"exec\"}",
		"{\"op\":\"exec\",\"user\":\"u\\u0000x\",\"thread\":\"t\",\"command\":\"ls\"}",
		"{\"op\":\"exec\",\"user\":\"..\",\"thread\":\"t\",\"command\":\"ls\"}",
		"{\"op\":\"exec\",\"user\":\"u\",\"thread\":\"t\",\"command\":\"\"}",
		"{\"op\":\"exec\",\"user\":\"u\",\"thread\":\"t\",\"command\":\"x\",\"timeout\":1.5}",
		"{\"op\":\"exec\",\"user\":\"u\",\"thread\":\"t\",\"command\":\"x\",\"env\":{\"1A\":\"x\"}}",
		"{\"op\":\"exec\",\"user\":\"u\",\"thread\":\"t\",\"command\":\"x\",\"host\":\"yes\"}",
		"{\"op\":\"acquire\",\"user\":\"u\",\"thread\":\"t\",\"owner\":\"\"}",
		"{\"op\":\"ping\",\"op\":\"ping\"}",
		"{\"op\":\"present\",\"paths\":[\"/mnt/user-data/outputs/a\"]}",
		"{\"op\":\"present\",\"run\":0,\"paths\":[\"/mnt/user-data/outputs/a\"]}",
		"{\"op\":\"present\",\"run\":\"1\",\"paths\":[\"/mnt/user-data/outputs/a\"]}",
		"{\"op\":\"present\",\"run\":1}",
		"{\"op\":\"present\",\"run\":1,\"paths\":[]}",
		"{\"op\":\"present\",\"run\":1,\"paths\":\"/mnt/user-data/outputs/a\"}",
		"{\"op\":\"present\",\"run\":1,\"paths\":[7]}",
		"{\"op\":\"present\",\"run\":1,\"paths\":[\"/mnt/a\\u0000b\"]}",
		"{\"op\":\"present\",\"run\":1,\"paths\":[\"/x\"],\"tool\":\"\"}",
		"{\"op\":\"present\",\"run\":1,\"paths\":[\"/x\"],\"tool\":3}",
		"{\"op\":\"run_begin\",\"user\":\"u\"}",
		"{\"op\":\"run_begin\",\"user\":\"u\",\"thread\":\"../t\"}",
		"{\"op\":\"run_begin\",\"user\":\"u\",\"thread\":\"t\",\"max_files\":0}",
		"{\"op\":\"run_begin\",\"user\":\"u\",\"thread\":\"t\",\"max_files\":1000001}",
		"{\"op\":\"run_begin\",\"user\":\"u\",\"thread\":\"t\",\"max_files\":\"9\"}",
		"{\"op\":\"run_end\"}",
		"{\"op\":\"run_end\",\"run\":-3}",
		"{\"op\":\"run_end\",\"run\":2.5}",
		"{\"op\":\"exec\",\"user\":\"u\",\"thread\":\"t\",\"command\":\"x\",\"idle_timeout\":0}",
		"{\"op\":\"exec\",\"user\":\"u\",\"thread\":\"t\",\"command\":\"x\",\"idle_timeout\":86401}",
		"{\"op\":\"exec\",\"user\":\"u\",\"thread\":\"t\",\"command\":\"x\",\"existing\":1}",
		"{\"op\":\"exec\",\"user\":\"u\",\"thread\":\"t\",\"command\":\"x\",\"existing\":true}",
		"{\"op\":\"exec\",\"user\":\"u\",\"thread\":\"t\",\"command\":\"x\",\"scope\":\"s\","
		"\"existing\":true,\"env\":{\"A\":\"1\"}}",
		"{\"op\":\"exec\",\"user\":\"u\",\"thread\":\"t\",\"command\":\"x\",\"scope\":\"s\","
		"\"cwd\":\"/mnt/user-data\"}",
		"{\"op\":\"exec\",\"user\":\"u\",\"thread\":\"t\",\"command\":\"x\",\"cwd\":7}",
		"{\"op\":\"exec\",\"user\":\"u\",\"thread\":\"t\",\"command\":\"x\",\"raw\":\"yes\"}",
		"{\"op\":\"session_open\",\"user\":\"u\",\"thread\":\"t\"}",
		"{\"op\":\"session_open\",\"user\":\"u\",\"thread\":\"t\",\"scope\":\"\"}",
		"{\"op\":\"session_open\",\"user\":\"u\",\"thread\":\"t\",\"scope\":\"s\",\"host\":1}",
		"{\"op\":\"session_close\",\"user\":\"u\",\"thread\":\"t\",\"scope\":3}",
		"{\"op\":\"acquire\",\"user\":\"u\",\"thread\":\"t\",\"owner\":\"o\","
		"\"max_shell_sessions\":0}",
		"{\"op\":\"acquire\",\"user\":\"u\",\"thread\":\"t\",\"owner\":\"o\","
		"\"max_shell_sessions\":1001}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		ck_assert_msg(!strcmp(parse_code(bad[i], &q), "bad_request"), "%s", bad[i]);
		request_free(&q);
	}
	/* present names no thread: its run does; the paths are checked
	 * against the run's thread by the broker. */
	ck_assert_str_eq(parse_code("{\"op\":\"present\",\"run\":4,\"paths\":[\"/etc/x\","
				    "\"/mnt/user-data/outputs/a\"]}",
				    &q),
			 "ok");
	ck_assert_int_eq(q.op, REQ_PRESENT);
	ck_assert_int_eq(q.run, 4);
	ck_assert_str_eq(q.tool, "present_files");
	ck_assert_uint_eq(q.npaths, 2);
	ck_assert_str_eq(q.paths[1], "/mnt/user-data/outputs/a");
	request_free(&q);
	ck_assert_str_eq(parse_code("{\"op\":\"present\",\"run\":4,\"tool\":\"mcp:show\","
				    "\"paths\":[\"/mnt/user-data/outputs/a\"]}",
				    &q),
			 "ok");
	ck_assert_str_eq(q.tool, "mcp:show");
	request_free(&q);
	/* run_begin names a thread (its first snapshot at most max_files);
	 * run_end a run. */
	ck_assert_str_eq(parse_code("{\"op\":\"run_begin\",\"user\":\"u\",\"thread\":\"t\"}", &q),
			 "ok");
	ck_assert_int_eq(q.op, REQ_RUN_BEGIN);
	ck_assert_str_eq(q.thread, "t");
	ck_assert_int_eq(q.max_files, 0);
	request_free(&q);
	ck_assert_str_eq(parse_code("{\"op\":\"run_begin\",\"user\":\"u\",\"thread\":\"t\","
				    "\"max_files\":1000000}",
				    &q),
			 "ok");
	ck_assert_int_eq(q.max_files, 1000000);
	request_free(&q);
	ck_assert_str_eq(parse_code("{\"op\":\"run_end\",\"run\":7}", &q), "ok");
	ck_assert_int_eq(q.op, REQ_RUN_END);
	ck_assert_int_eq(q.run, 7);
	request_free(&q);
	/* What the AIO API's calls need: explicit sessions, an idle
	 * timeout, a working directory, the streams apart, a sandbox's own
	 * limit. */
	ck_assert_str_eq(parse_code("{\"op\":\"exec\",\"user\":\"u\",\"thread\":\"t\","
				    "\"command\":\"ls\",\"scope\":\"s\",\"existing\":true,"
				    "\"idle_timeout\":9,\"raw\":true}",
				    &q),
			 "ok");
	ck_assert(q.existing && q.raw && q.idle_timeout == 9 && !q.cwd);
	request_free(&q);
	ck_assert_str_eq(parse_code("{\"op\":\"exec\",\"user\":\"u\",\"thread\":\"t\","
				    "\"command\":\"ls\",\"scope\":\"s\",\"env\":{\"A\":\"1\"},"
				    "\"cwd\":\"/mnt/user-data/outputs\"}",
				    &q),
			 "ok"); /* one-off: env */
	ck_assert_str_eq(q.cwd, "/mnt/user-data/outputs");
	request_free(&q);
	ck_assert_str_eq(parse_code("{\"op\":\"session_open\",\"user\":\"u\",\"thread\":\"t\","
				    "\"scope\":\"s\",\"cwd\":\"/mnt/x\",\"host\":true}",
				    &q),
			 "ok");
	ck_assert(q.op == REQ_SESSION_OPEN && q.host && !strcmp(q.scope, "s") &&
		  !strcmp(q.cwd, "/mnt/x"));
	request_free(&q);
	ck_assert_str_eq(parse_code("{\"op\":\"session_close\",\"user\":\"u\",\"thread\":\"t\","
				    "\"scope\":\"s\"}",
				    &q),
			 "ok");
	ck_assert_int_eq(q.op, REQ_SESSION_CLOSE);
	request_free(&q);
	ck_assert_str_eq(parse_code("{\"op\":\"acquire\",\"user\":\"u\",\"thread\":\"t\","
				    "\"owner\":\"o\",\"max_shell_sessions\":1000}",
				    &q),
			 "ok");
	ck_assert_uint_eq(q.max_shell_sessions, 1000);
	request_free(&q);
	ck_assert_str_eq(parse_code("{\"op\":\"fly\",\"id\":\"x\"}", &q), "unknown_op");
	ck_assert_str_eq(json_string_value(q.id), "x");
	request_free(&q);
}
END_TEST

/* Host mode's path guard, case by case against the reference's rules. */
static const struct {
	const char *command, *why; /* why NULL: allowed */
} guard_cases[] = {
	{ "ls -la /mnt/user-data/workspace && cat /mnt/skills/x/SKILL.md", NULL },
	{ "cp /mnt/user-data/uploads/a /mnt/user-data/outputs/ /mnt/acp-workspace", NULL },
	{ "curl -s https://example.com/a/b/../c?x=/etc/passwd", NULL },
	{ "make > /dev/null 2>&1 && /usr/bin/python3 x.py && /bin/ls", NULL },
	{ "echo /devices/{id}/port /users/{user_id}", NULL },
	{ "echo $((10/2)) $((a / b)); python3 -c 'print(7/2)'", NULL },
	{ "echo '/端口/x'", NULL },
	{ "cd subdir && cd /mnt/user-data/outputs && pushd -L /mnt/skills", NULL },
	{ "cat /mnt/data/in.txt", NULL }, /* an extra mount */
	{ "grep -r x .; ls", NULL },
	{ "cat /etc/passwd", "Unsafe absolute paths in command: /etc/passwd. Use paths under"
			     " /mnt/user-data" },
	{ "cat /root/x /etc/passwd; head /etc/passwd",
	  "Unsafe absolute paths in command:"
	  " /etc/passwd, /root/x. Use paths under /mnt/user-data" },
	{ "cat /etc/{passwd,shadow}", "Unsafe absolute paths in command: /etc/{passwd,shadow}."
				      " Use paths under /mnt/user-data" },
	{ "echo ${HOME}/x /opt/${V}", "Unsafe absolute paths in command: /opt/${V}, /x. Use"
				      " paths under /mnt/user-data" },
	{ "cat /mnt/skills2/x", "Unsafe absolute paths in command: /mnt/skills2/x. Use paths"
				" under /mnt/user-data" },
	{ "./script.sh", "Unsafe absolute paths in command: /script.sh. Use paths under"
			 " /mnt/user-data" }, /* the reference's own quirk */
	{ "cat ../x", "Access denied: path traversal detected" },
	{ "tool --input=../x", "Access denied: path traversal detected" },
	{ "cat sub/../../x", "Access denied: path traversal detected" },
	{ "ls /mnt/user-data/../../etc", "Access denied: path traversal detected" },
	{ "cd ..", "Access denied: path traversal detected" },
	{ "cd /etc && ls", "Unsafe working directory change in command: cd /etc. Use paths"
			   " under /mnt/user-data" },
	{ "cd", "Unsafe working directory change in command: cd. Use paths under /mnt/user-data" },
	{ "cd ~/x", "Unsafe working directory change in command: cd ~/x. Use paths under"
		    " /mnt/user-data" },
	{ "X=1 cd $HOME", "Unsafe working directory change in command: cd $HOME. Use paths under"
			  " /mnt/user-data" },
	{ "pushd -", "Unsafe working directory change in command: pushd -. Use paths under"
		     " /mnt/user-data" },
	{ "ls /", "Unsafe absolute paths in command: /. Use paths under /mnt/user-data" },
	{ "true && find / -name x", "Unsafe absolute paths in command: /. Use paths under"
				    " /mnt/user-data" },
	{ "cat FILE:///etc/passwd", "Unsafe file:// URL in command: FILE:///etc/passwd. Use paths"
				    " under /mnt/user-data" },
	{ "echo $(cd /tmp; ls)", "Unsafe working directory change in command substitution. Use"
				 " paths under /mnt/user-data" },
	{ "echo 'unterminated /etc/x", "Unsafe absolute paths in command: /etc/x. Use paths under"
				       " /mnt/user-data" },
};

static void close_fd(void *arg)
{
	close(*(int *)arg);
	*(int *)arg = -1;
}

/* Runs SCRIPT (sh) as a stand-in for bwrap, its report descriptor
 * (--info-fd) its fd 3, for TIMEOUT_S seconds at most, into *R. */
static void run_stand_in(const char *script, unsigned timeout_s, struct run_result *r)
{
	char *const argv[] = { "/bin/sh", "-c", (char *)script, NULL };
	char *const envp[] = { "PATH=/usr/bin:/bin", NULL };
	int info[2];
	struct launch l;

	ck_assert_int_eq(pipe2(info, O_CLOEXEC), 0);
	launch_init(&l);
	l.pass[l.npass++] = info[1];
	struct run_spec spec = { .argv = argv,
				 .envp = envp,
				 .launch = &l,
				 .info_fd = info[0],
				 .timeout_s = timeout_s,
				 .cancel_fd = -1,
				 .stop_fd = -1,
				 .after_spawn = close_fd, /* as the broker does */
				 .after_spawn_arg = &info[1] };
	ck_assert_int_eq(run_command(&spec, r), 0);
	close(info[0]);
}

/* bwrap says which process is its sandbox's first (--info-fd) before
 * that process binds its life to bwrap's (PR_SET_PDEATHSIG, set only
 * once the sandbox is set up): a command killed in that window must take
 * it too. A stand-in for bwrap starts a process that outlives it (in a
 * session of its own), says so as bwrap does, and times out. (Its sleeps
 * are of lengths no other test uses: view_broker, running beside it,
 * looks for its own sleeps of 300-303 s left by a kill, by name.) */
START_TEST(test_exec_kill_takes_the_sandbox_bwrap_reported)
{
	struct run_result r;

	run_stand_in("setsid sleep 317 & echo $!;"
		     " printf '{\\n    \"child-pid\": %d\\n}\\n' $! >&3;"
		     " exec 3>&-; sleep 318",
		     1, &r);
	ck_assert(r.timed_out);
	ck_assert_ptr_nonnull(r.out.data);
	pid_t child = (pid_t)atoi(r.out.data);
	ck_assert_int_gt(child, 1);
	/* SIGKILL is sent: the process ends a moment later (a pidfd of it
	 * becomes readable; none can be had of one already gone). */
	int fd = (int)syscall(SYS_pidfd_open, child, 0);
	struct pollfd p = { fd, POLLIN, 0 };
	bool lives = fd >= 0 && poll(&p, 1, 5000) == 0;
	char cmdline[64];
	snprintf(cmdline, sizeof(cmdline), "/proc/%d/cmdline", (int)child);
	char *cmd = lives ? read_file(cmdline) : NULL;
	if (cmd && !strcmp(cmd, "sleep"))
		syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0); /* ours */
	free(cmd);
	if (fd >= 0)
		close(fd);
	ck_assert_msg(!lives, "the reported process %d outlived the kill", (int)child);
	run_result_free(&r);
}
END_TEST

/* A bwrap that fails to set up says why on stderr, then exits with its
 * report descriptor unwritten: a start failure, its reason kept, however
 * its exit falls between the runner's poll (woken by the reason) and its
 * reap. The old runner looked at the descriptor only where the poll had
 * seen it closed, and took some of these for a command that failed, its
 * reason held back with its output (CI: an empty reply). */
START_TEST(test_exec_failed_setup_is_a_start_failure_every_time)
{
	int missed = 0;

	for (int i = 0; i < 300; i++) {
		struct run_result r;
		run_stand_in("echo 'bwrap: cannot set up' >&2; exit 1", 10, &r);
		missed += !r.start_failed;
		ck_assert_msg(r.err.len == 21 && !memcmp(r.err.data, "bwrap: cannot set up\n", 21),
			      "stderr: %.*s", (int)r.err.len, r.err.data);
		run_result_free(&r);
	}
	ck_assert_msg(missed == 0, "%d of 300 failed set-ups taken for a command's exit", missed);
}
END_TEST

START_TEST(test_exec_host_mode_path_guard)
{
	const char *extra[] = { "data", NULL };
	char why[512] = "";
	int r = guard_check(guard_cases[_i].command, extra, why, sizeof(why));

	if (!guard_cases[_i].why)
		ck_assert_msg(r == 0, "%s: refused: %s", guard_cases[_i].command, why);
	else {
		ck_assert_msg(r == -EPERM, "%s: allowed", guard_cases[_i].command);
		ck_assert_str_eq(why, guard_cases[_i].why);
	}
}
END_TEST

Suite *suite_unit_exec(void)
{
	Suite *s = suite_create("unit_exec");
	TCase *tc = tcase_create("exec");

	tcase_add_test(tc, test_exec_valid_names);
	tcase_add_test(tc, test_exec_env_build_is_an_allowlist);
	tcase_add_test(tc, test_exec_env_build_adds_what_is_named);
	tcase_add_test(tc, test_exec_identity_prefix_hostile_values);
	tcase_add_test(tc, test_exec_output_text_formats);
	tcase_add_test(tc, test_exec_capture_limit_and_middle_truncation);
	tcase_add_test(tc, test_exec_utf8_clean);
	tcase_add_test(tc, test_exec_host_paths_rewritten_and_masked);
	tcase_add_test(tc, test_exec_request_parsing);
	tcase_add_test(tc, test_exec_kill_takes_the_sandbox_bwrap_reported);
	tcase_add_test(tc, test_exec_failed_setup_is_a_start_failure_every_time);
	tcase_add_loop_test(tc, test_exec_host_mode_path_guard, 0,
			    sizeof(guard_cases) / sizeof(*guard_cases));
	suite_add_tcase(s, tc);
	return s;
}
