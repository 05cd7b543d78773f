/* sbx serve as the reference framework's sandbox and provisioner APIs
 * (docs/aio.md): each test runs one group of tests/tools/aiocheck.py,
 * the conformance checks written from the API's description with a
 * plain HTTP client, against a fresh server, and passes when the checker
 * says "N passed, 0 failed". The checker's lines name each check; a
 * failure shows them all. The aio_hosts case runs two servers on one
 * PostgreSQL store (docs/aio.md, "Across hosts") with curl. */
#include "tests/cmd.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* One group's bound: the shell group waits out its timeouts (a few
 * seconds each), the download streams 100 MiB. */
#define GROUP_S 150

static const char *H; /* the server's home */
static char port[16];

static void setup(void)
{
	tool_env();
	H = test_dir("ahome");
	test_home_store(H);
	snprintf(port, sizeof(port), "%s", serve_start_in(H, "--listen 127.0.0.1:0"));
}

static void teardown(void)
{
	if (H) {
		serve_stop_in(H);
		broker_stop(H);
	}
}

/* Runs aiocheck.py's GROUP against the server: it must end with no
 * check failed. */
static void aiocheck(const char *group)
{
	int st;
	bool late;
	char *out = capture_for(fmt_cmd("python3 tests/tools/aiocheck.py http://127.0.0.1:%s"
					" --key-file '%s/serve.token' --home '%s'"
					" --pid \"$(cat '%s/serve.pid')\" --groups %s",
					port, H, H, H, group),
				GROUP_S, &st, &late);
	size_t n = strlen(out);
	while (n && out[n - 1] == '\n')
		n--;
	const char *last = out + n;
	while (last > out && last[-1] != '\n')
		last--;
	unsigned passed = 0, failed = 1;
	bool summary = sscanf(last, "%u passed, %u failed", &passed, &failed) == 2;
	ck_assert_msg(!late && st == 0 && summary && passed > 0 && failed == 0,
		      "aiocheck.py --groups %s (exit %d):\n%.6000s\nserve.log:\n%.2000s", group, st,
		      out, read_file(fmt_cmd("%s/serve.log", H)));
}

START_TEST(test_aio_provision)
{
	aiocheck("provision");
}
END_TEST

START_TEST(test_aio_context)
{
	aiocheck("context");
}
END_TEST

START_TEST(test_aio_auth)
{
	aiocheck("auth");
}
END_TEST

START_TEST(test_aio_shell)
{
	aiocheck("shell");
}
END_TEST

START_TEST(test_aio_bash)
{
	aiocheck("bash");
}
END_TEST

START_TEST(test_aio_file)
{
	aiocheck("file");
}
END_TEST

START_TEST(test_aio_download)
{
	aiocheck("download");
}
END_TEST

/* ---- two hosts ------------------------------------------------------------------ */

/* A host of the deployment: its home, and the URL its sbx serve is
 * reached at ([serve] public_url). */
struct host {
	const char *home, *url;
};

static const char *token; /* the deployment's: every host's provisioner key */

/* An HTTP answer: its status, its Location (or ""), the file its body is
 * in. */
struct answer {
	int status;
	char location[1024];
	const char *body;
};

/* METHOD URL with the provisioner's key and the JSON BODY (NULL: none);
 * with FOLLOW, redirects are followed (curl -L: a 307 keeps the method
 * and the body). */
static struct answer call(const char *method, const char *url, const char *json, bool follow)
{
	static unsigned n;
	struct answer a = { .body = fmt_cmd("%s/answer-%u", test_dir("answers"), n++) };
	char *out = OUT("curl -s%s -o '%s' -w '%%{http_code} %%{redirect_url}' -X %s"
			" -H 'X-API-Key: %s'%s%s%s '%s'",
			follow ? " -L" : "", a.body, method, token,
			json ? " -H 'Content-Type: application/json' --data '" : "",
			json ? json : "", json ? "'" : "", url);

	a.location[0] = '\0';
	ck_assert_msg(sscanf(out, "%d %1023s", &a.status, a.location) >= 1, "curl: %s", out);
	return a;
}

/* The Python expression EXPR of the answer's JSON body d (jsonq.py). */
static char *field(const struct answer *a, const char *expr)
{
	char *v = OUT("python3 tests/tools/jsonq.py \"%s\" '%s'", expr, a->body);

	v[strcspn(v, "\n")] = '\0';
	return v;
}

/* The provisioner of H: METHOD /api/sandboxes[PATH]. */
static struct answer api(const struct host *h, const char *method, const char *path,
			 const char *json)
{
	return call(method, fmt_cmd("%s/api/sandboxes%s", h->url, path), json, false);
}

static const char *make_body(const char *id, const char *thread)
{
	return fmt_cmd("{\"sandbox_id\": \"%s\", \"thread_id\": \"%s\", \"user_id\": \"u\"}", id,
		       thread);
}

/* Who holds THREAD live, by the store's clock, as sbx hosts of HOME says:
 * "HOST u/THREAD", or "". */
static char *holder(const char *home, const char *thread)
{
	return OUT("'%s' hosts --home '%s' | awk '$2 == \"u/%s\" { print $1, $2 }'",
		   test_bin("sbx"), home, thread);
}

static bool not_held(const char *arg)
{
	char home[PATH_MAX], thread[64];

	return sscanf(arg, "%4095[^|]|%63s", home, thread) == 2 && !holder(home, thread)[0];
}

static const struct host *host_b; /* for b_answers() */

/* ARG is a sandbox_url: true once host B's GET of s1 answers it. */
static bool b_answers(const char *arg)
{
	struct answer r = api(host_b, "GET", "/s1", NULL);

	return r.status == 200 && !strcmp(field(&r, "d['sandbox_url']"), arg);
}

/* A host's home: one PostgreSQL store, host id ID, short leases (a
 * takeover within seconds) and a quick unmount of a view given back, its
 * sbx serve on a port of its own, the deployment's token. */
static struct host host_home(const char *id, const char *store, unsigned port, const char *tok)
{
	struct host h = { test_dir(fmt_cmd("host%s", id)), fmt_cmd("http://127.0.0.1:%u", port) };

	ck_assert_int_eq(write_file(fmt_cmd("%s/sbx.conf", h.home),
				    fmt_cmd("store = %s\nhost = %s\nlease = 2\n"
					    "[broker]\nidle_timeout = 1\n"
					    "[serve]\nlisten = 127.0.0.1:%u\npublic_url = %s\n"
					    "token_file = %s\n",
					    store, id, port, h.url, tok)),
			 0);
	OK("mkdir -p '%s/users'", h.home);
	return h;
}

/* Two hosts as a deployment has them (test_hosts.c's two brokers): a
 * home each, with its own host id, public_url, broker and sbx serve; one
 * PostgreSQL store; the threads' files shared (B's users/ is A's,
 * bind-mounted: the NFS export of a real deployment); one token. The
 * provisioner of either answers the URL of the host that holds the
 * thread; a sandbox request sent to another host is redirected there;
 * a DELETE anywhere makes the holder give the thread back; and when
 * the holder dies, the other takes the sandbox over once its lease
 * expired, at the same path. */
START_TEST(test_aio_two_hosts)
{
	if (geteuid() != 0) {
		fprintf(stderr, "two hosts: needs root (a bind mount)\n");
		return;
	}
	tool_env();
	pg_server_up();
	const char *store = strdup(pg_database());
	const char *tok = fmt_cmd("%s/token", test_dir("token"));
	ck_assert_int_eq(write_file(tok, "0123456789abcdef0123456789abcdef\n"), 0);
	OK("chmod 600 '%s'", tok);
	token = "0123456789abcdef0123456789abcdef";
	unsigned pa, pb;
	ck_assert(sscanf(OUT("python3 -c 'import socket; s = [socket.socket() for _ in (0, 1)];"
			     " [x.bind((\"127.0.0.1\", 0)) for x in s];"
			     " print(*[x.getsockname()[1] for x in s])'"),
			 "%u %u", &pa, &pb) == 2);
	struct host a = host_home("a", store, pa, tok), b = host_home("b", store, pb, tok);
	OK("mount --bind '%s/users' '%s/users'", a.home, b.home);
	serve_start_in(a.home, "");
	serve_start_in(b.home, "");

	/* Made on A: A's URL. Asked of B, made again or looked up: A's
	 * URL, the same sandbox, and B did not take the thread. */
	struct answer r = api(&a, "POST", "", make_body("s1", "t1"));
	ck_assert_msg(r.status == 200, "POST on A: %d %s", r.status, read_file(r.body));
	char *url = field(&r, "d['sandbox_url']"), *gen = field(&r, "d['container_id']");
	ck_assert_msg(!strncmp(url, fmt_cmd("%s/sb/s1.", a.url), strlen(a.url) + 7), "%s", url);
	r = api(&b, "POST", "", make_body("s1", "t1"));
	ck_assert_int_eq(r.status, 200);
	SAME(field(&r, "d['sandbox_url'], d['container_id']"), fmt_cmd("%s %s", url, gen));
	r = api(&b, "GET", "/s1", NULL);
	ck_assert_int_eq(r.status, 200);
	SAME(field(&r, "d['sandbox_url']"), url);
	SAME(holder(b.home, "t1"), "a u/t1\n");
	r = api(&b, "POST", "", make_body("s1", "other"));
	ck_assert_msg(r.status == 409, "another thread's s1 on B: %d", r.status);

	/* A sandbox request sent to B: 307 to A, path and query kept; a
	 * client that follows it (method and body kept) is served by A. */
	const char *path = url + strlen(a.url);
	r = call("POST", fmt_cmd("%s%s/v1/bash/exec", b.url, path), "{\"command\": \"echo on-a\"}",
		 false);
	ck_assert_int_eq(r.status, 307);
	SAME(r.location, fmt_cmd("%s%s/v1/bash/exec", a.url, path));
	r = call("GET", fmt_cmd("%s%s/v1/file/download?path=/mnt/user-data/a%%20b", b.url, path),
		 NULL, false);
	ck_assert_int_eq(r.status, 307);
	SAME(r.location,
	     fmt_cmd("%s%s/v1/file/download?path=%%2Fmnt%%2Fuser-data%%2Fa%%20b", a.url, path));
	r = call("POST", fmt_cmd("%s%s/v1/bash/exec", b.url, path), "{\"command\": \"echo on-a\"}",
		 true);
	ck_assert_msg(r.status == 200, "followed: %d %s", r.status, read_file(r.body));
	SAME(field(&r, "d['data']['stdout']"), "on-a");

	/* Deleted on B, held by A: A gives the thread back. */
	r = api(&a, "POST", "", make_body("s2", "t2"));
	ck_assert_int_eq(r.status, 200);
	SAME(holder(a.home, "t2"), "a u/t2\n");
	r = api(&b, "DELETE", "/s2", NULL);
	ck_assert_int_eq(r.status, 200);
	ck_assert_msg(eventually(not_held, fmt_cmd("%s|t2", a.home)), "A holds t2:\n%s",
		      read_file(fmt_cmd("%s/serve.log", a.home)));
	ck_assert_int_eq(api(&a, "GET", "/s2", NULL).status, 404);

	/* The deployment's sandboxes, from either host. */
	const char *list =
		"d['count'], [(s['sandbox_id'], s['sandbox_url']) for s in d['sandboxes']]";
	r = api(&a, "GET", "", NULL);
	ck_assert_int_eq(r.status, 200);
	SAME(field(&r, list), fmt_cmd("1 [('s1', '%s')]", url));
	r = api(&b, "GET", "", NULL);
	ck_assert_int_eq(r.status, 200);
	SAME(field(&r, list), fmt_cmd("1 [('s1', '%s')]", url));

	/* A dies: its sbx serve, its broker and its view of t1. Once the
	 * lease expired, B takes the sandbox over: the same path under B's
	 * URL, and a shell there. */
	pid_t daemon = (pid_t)atoi(
		OUT("tests/tools/sbxsql '%s' \"SELECT pid FROM leases WHERE thread = 't1'\"",
		    a.home));
	pid_t broker = (pid_t)atoi(read_file(fmt_cmd("%s/run/broker.lock", a.home)));
	pid_t serve = (pid_t)atoi(read_file(fmt_cmd("%s/serve.pid", a.home)));
	ck_assert(daemon > 1 && broker > 1 && serve > 1);
	kill(serve, SIGKILL);
	kill(broker, SIGKILL);
	kill(daemon, SIGKILL);
	host_b = &b;
	char *moved = fmt_cmd("%s%s", b.url, path);
	ck_assert_msg(eventually(b_answers, moved), "B's GET of s1 never answered %s:\n%s", moved,
		      read_file(fmt_cmd("%s/serve.log", b.home)));
	SAME(holder(b.home, "t1"), "b u/t1\n");
	r = call("POST", fmt_cmd("%s/v1/shell/exec", moved), "{\"command\": \"echo on-b\"}", false);
	ck_assert_msg(r.status == 200, "exec on B: %d %s", r.status, read_file(r.body));
	SAME(field(&r, "d['data']['output'].strip()"), "on-b");

	serve_stop_in(b.home);
	broker_stop(b.home);
	sh("umount -l '%s/users'", b.home);
	pg_server_down();
}
END_TEST

Suite *suite_aio(void)
{
	Suite *s = suite_create("aio");
	TCase *tc = tcase_create("aio");

	tcase_set_timeout(tc, GROUP_S + 30);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_aio_provision);
	tcase_add_test(tc, test_aio_context);
	tcase_add_test(tc, test_aio_auth);
	tcase_add_test(tc, test_aio_shell);
	tcase_add_test(tc, test_aio_bash);
	tcase_add_test(tc, test_aio_file);
	tcase_add_test(tc, test_aio_download);
	suite_add_tcase(s, tc);
	/* Its own PostgreSQL server (or the PostgreSQL pass's), homes and
	 * servers: no fixture; on PostgreSQL whatever the pass, so not again
	 * in the PostgreSQL pass (run-tests leaves "engine-neutral" out). */
	TCase *hosts = tcase_create("aio_hosts");
	tcase_set_tags(hosts, "engine-neutral");
	tcase_set_timeout(hosts, 120);
	tcase_add_test(hosts, test_aio_two_hosts);
	suite_add_tcase(s, hosts);
	return s;
}
