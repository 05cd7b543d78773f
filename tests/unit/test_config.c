/* sbx.conf (common/config.c): defaults for what it does not
 * set, every problem refused with "PATH:LINE: reason", and nothing that
 * libinih would let through quietly (split long lines, continuation lines,
 * bytes after a NUL, empty unknown sections). */
#include "common/units.h"
#include "common/config.h"
#include "store/lease.h"
#include "store/store.h"
#include "tests/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The longest line libinih's buffer holds, "\r\n\0" aside. */
#define LINE_MAX_BYTES (INI_MAX_LINE - 3)

static char *conf_path(void)
{
	char *path;

	ck_assert_int_ge(asprintf(&path, "%s/sbx.conf", test_dir("config")), 0);
	return path;
}

static void write_bytes(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	ck_assert_int_eq(close(fd), 0);
}

/* Writes CONTENT to a fresh sbx.conf and loads it; *PATH is its name. */
static int load(const char *content, struct config *c, char *err, size_t errlen, char **path)
{
	*path = conf_path();
	ck_assert_int_eq(write_file(*path, content), 0);
	return config_load(*path, c, err, errlen);
}

static void assert_defaults(const struct config *c)
{
	ck_assert_int_eq(c->isolation, ISOLATION_NAMESPACE);
	ck_assert(!c->allow_host_bash);
	ck_assert(!c->one_off_fresh);
	ck_assert(!c->network);
	ck_assert_uint_eq(c->timeout, 600);
	ck_assert_uint_eq(c->idle_timeout, 900);
	ck_assert_uint_eq(c->max_running, 3);
	ck_assert_uint_eq(c->max_shell_sessions, 10);
	ck_assert_uint_eq(c->bash_max_sessions, 50);
	ck_assert_ptr_null(c->bwrap);
	ck_assert_uint_eq(c->sandbox_uid_base, 2000000000);
	ck_assert_uint_eq(c->sandbox_uid_count, 65536);
	ck_assert_uint_eq(c->limits.pids, 1024);
	ck_assert_uint_eq(c->limits.memory, 2ull << 30);
	ck_assert_uint_eq(c->limits.swap, 0);
	ck_assert_uint_eq(c->limits.cpu_milli, 0);
	ck_assert_uint_eq(c->limits.cpu_weight, 100);
	ck_assert_uint_eq(c->limits.disk, 20ull << 30);
	ck_assert_uint_eq(c->limits.disk_inodes, 1000000);
	ck_assert(c->limits.cgroups);
	ck_assert_uint_eq(c->nmounts, 0);
	ck_assert_uint_eq(c->nenv_pass, 0);
	ck_assert_ptr_null(c->env_pass[0]);
	ck_assert_ptr_null(c->serve.listen);
	ck_assert_ptr_null(c->serve.token_file);
	ck_assert_uint_eq(c->serve.max_body, 4ull << 20);
	ck_assert_uint_eq(c->serve.max_sessions, 64);
	ck_assert_uint_eq(c->serve.idle_timeout, 900);
	ck_assert_uint_eq(c->serve.max_connections, 256);
}

START_TEST(test_config_defaults)
{
	struct config c;

	memset(&c, 0xa5, sizeof(c));
	config_defaults(&c);
	assert_defaults(&c);
	config_free(&c);
}
END_TEST

START_TEST(test_config_missing_file_is_the_defaults)
{
	struct config c;
	char err[512], *path = conf_path();

	ck_assert_int_eq(config_load(path, &c, err, sizeof(err)), -ENOENT);
	assert_defaults(&c);
	config_free(&c);
}
END_TEST

START_TEST(test_config_empty_file_is_the_defaults)
{
	struct config c;
	char err[512], *path;

	ck_assert_int_eq(load("", &c, err, sizeof(err), &path), 0);
	assert_defaults(&c);
	ck_assert_int_eq(load("; nothing\n# here\n\n[broker]\n[mounts]\n", &c, err, sizeof(err),
			      &path),
			 0);
	assert_defaults(&c);
	config_free(&c);
}
END_TEST

/* As the reference: without an explicit max_shell_sessions, a max_running
 * that needs more than the default of 10 raises it to max_running + 1;
 * an explicit value keeps its check (test_config_refuses_with_file_and_line). */
START_TEST(test_config_raises_max_shell_sessions_for_max_running)
{
	static const struct {
		const char *text;
		unsigned running, shells;
	} cases[] = {
		{ "[broker]\nmax_running = 10\n", 10, 11 },
		{ "[broker]\nmax_running = 9\n", 9, 10 },
		{ "[broker]\nmax_running = 2\n", 2, 10 },
		{ "[broker]\nmax_running = 1000\n", 1000, 1001 },
		{ "[broker]\nmax_running = 20\nmax_shell_sessions = 30\n", 20, 30 },
	};
	char err[512], *path;

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct config c;

		ck_assert_msg(load(cases[i].text, &c, err, sizeof(err), &path) == 0, "%s", err);
		ck_assert_uint_eq(c.max_running, cases[i].running);
		ck_assert_uint_eq(c.max_shell_sessions, cases[i].shells);
		config_free(&c);
	}
}
END_TEST

START_TEST(test_config_reads_every_key)
{
	struct config c;
	char err[512], *path;
	int r = load("; the broker\n"
		     "[broker]\n"
		     "isolation = host\n"
		     "allow_host_bash = yes\n"
		     "network = on\n"
		     "timeout = 30\n"
		     "idle_timeout=86400\n"
		     "max_running = 1000\n"
		     "max_shell_sessions = 1000   ; inline comment\n"
		     "bash_max_sessions = 10000\n"
		     "one_off = Fresh\n"
		     "max_running = 7\n" /* later wins */
		     "\n"
		     "[mounts]\n"
		     "data = /srv/data\n"
		     "ref = /srv/ref:ro\n"
		     "  odd.name_1-x=/a;b c\n" /* ';' not after a blank: kept */
		     "[broker]\n"
		     "timeout = 45\n",
		     &c, err, sizeof(err), &path);

	ck_assert_msg(r == 0, "%d %s", r, err);
	ck_assert_int_eq(c.isolation, ISOLATION_HOST);
	ck_assert(c.allow_host_bash);
	ck_assert(c.network);
	ck_assert(c.one_off_fresh);
	ck_assert_uint_eq(c.timeout, 45);
	ck_assert_uint_eq(c.idle_timeout, 86400);
	ck_assert_uint_eq(c.max_running, 7);
	ck_assert_uint_eq(c.max_shell_sessions, 1000);
	ck_assert_uint_eq(c.bash_max_sessions, 10000);
	ck_assert_uint_eq(c.nmounts, 3);
	ck_assert_str_eq(c.mounts[0].name, "data");
	ck_assert_str_eq(c.mounts[0].hostdir, "/srv/data");
	ck_assert(!c.mounts[0].ro);
	ck_assert_str_eq(c.mounts[1].name, "ref");
	ck_assert_str_eq(c.mounts[1].hostdir, "/srv/ref");
	ck_assert(c.mounts[1].ro);
	ck_assert_str_eq(c.mounts[2].name, "odd.name_1-x");
	ck_assert_str_eq(c.mounts[2].hostdir, "/a;b c");
	ck_assert(!c.mounts[2].ro);
	config_free(&c);
	ck_assert_uint_eq(c.nmounts, 0);
	config_free(&c); /* twice is harmless */
}
END_TEST

START_TEST(test_config_serve_keys)
{
	struct config c;
	char err[512], *path;
	int r = load("[serve]\n"
		     "listen = [::1]:0\n"
		     "token_file = /etc/sbx/token\n"
		     "max_body = 64K\n"
		     "max_sessions = 2\n"
		     "idle_timeout = 5\n"
		     "max_connections = 4\n"
		     "listen = 127.0.0.1:9000\n", /* later wins */
		     &c, err, sizeof(err), &path);

	ck_assert_msg(r == 0, "%d %s", r, err);
	ck_assert_str_eq(c.serve.listen, "127.0.0.1:9000");
	ck_assert_str_eq(c.serve.token_file, "/etc/sbx/token");
	ck_assert_uint_eq(c.serve.max_body, 64 << 10);
	ck_assert_uint_eq(c.serve.max_sessions, 2);
	ck_assert_uint_eq(c.serve.idle_timeout, 5);
	ck_assert_uint_eq(c.serve.max_connections, 4);
	config_free(&c);
	ck_assert_ptr_null(c.serve.listen);
	ck_assert_ptr_null(c.serve.token_file);
}
END_TEST

/* env_pass lists names: its lines add up, a name twice is kept once. */
START_TEST(test_config_env_pass_adds_up)
{
	struct config c;
	char err[512], *path;
	int r = load("[broker]\n"
		     "env_pass = HTTP_PROXY \tNO_PROXY\n"
		     "timeout = 5\n"
		     "env_pass = pip_index_url HTTP_PROXY   ; a comment\n",
		     &c, err, sizeof(err), &path);

	ck_assert_msg(r == 0, "%d %s", r, err);
	ck_assert_uint_eq(c.nenv_pass, 3);
	ck_assert_str_eq(c.env_pass[0], "HTTP_PROXY");
	ck_assert_str_eq(c.env_pass[1], "NO_PROXY");
	ck_assert_str_eq(c.env_pass[2], "pip_index_url");
	ck_assert_ptr_null(c.env_pass[3]);
	config_free(&c);
	ck_assert_uint_eq(c.nenv_pass, 0);
	ck_assert_ptr_null(c.env_pass[0]);

	/* Up to CONFIG_MAX_ENV_PASS names, 8 a line. */
	char text[4096], want[600];
	size_t n = snprintf(text, sizeof(text), "[broker]");
	for (int i = 0; i < CONFIG_MAX_ENV_PASS; i++)
		n += snprintf(text + n, sizeof(text) - n, "%sV%d",
			      i % 8 ? " " : "\nenv_pass = ", i);
	snprintf(text + n, sizeof(text) - n, "\n");
	ck_assert_int_eq(load(text, &c, err, sizeof(err), &path), 0);
	ck_assert_uint_eq(c.nenv_pass, CONFIG_MAX_ENV_PASS);
	ck_assert_str_eq(c.env_pass[CONFIG_MAX_ENV_PASS - 1], "V63");
	ck_assert_ptr_null(c.env_pass[CONFIG_MAX_ENV_PASS]);
	config_free(&c);
	snprintf(text + n, sizeof(text) - n, "\nenv_pass = V1 ONE_MORE\n");
	ck_assert_int_eq(load(text, &c, err, sizeof(err), &path), -EINVAL);
	snprintf(want, sizeof(want), "%s:%d: env_pass: more than %d names", path,
		 CONFIG_MAX_ENV_PASS / 8 + 2, CONFIG_MAX_ENV_PASS);
	ck_assert_str_eq(err, want);
	ck_assert_uint_eq(c.nenv_pass, 0);
	config_free(&c);
}
END_TEST

START_TEST(test_config_limits_and_sandbox_ids)
{
	struct config c;
	char err[512], *path, size[32];
	int r = load("[broker]\nbwrap = /opt/bwrap\nsandbox_uid_base = 300000\n"
		     "sandbox_uid_count = 100\n"
		     "[limits]\npids = 64\nmemory = 256M\nswap = 1GiB\ncpu = 1.5\n"
		     "cpu_weight = 50\ndisk = 64K\ndisk_inodes = 0\ncgroups = off\n",
		     &c, err, sizeof(err), &path);

	ck_assert_msg(r == 0, "%d %s", r, err);
	ck_assert_str_eq(c.bwrap, "/opt/bwrap");
	ck_assert_uint_eq(c.sandbox_uid_base, 300000);
	ck_assert_uint_eq(c.sandbox_uid_count, 100);
	ck_assert_uint_eq(c.limits.pids, 64);
	ck_assert_uint_eq(c.limits.memory, 256u << 20);
	ck_assert_uint_eq(c.limits.swap, 1u << 30);
	ck_assert_uint_eq(c.limits.cpu_milli, 1500);
	ck_assert_uint_eq(c.limits.cpu_weight, 50);
	ck_assert_uint_eq(c.limits.disk, 64u << 10);
	ck_assert_uint_eq(c.limits.disk_inodes, 0);
	ck_assert(!c.limits.cgroups);
	config_free(&c);
	/* Sizes in messages. */
	ck_assert_str_eq(size_text(256u << 20, size, sizeof(size)), "256 MiB");
	ck_assert_str_eq(size_text(3u << 29, size, sizeof(size)), "1.5 GiB");
	ck_assert_str_eq(size_text(512, size, sizeof(size)), "512 bytes");
	/* 0 is no limit, and plain bytes are bytes. */
	r = load("[limits]\nmemory = 0\npids = 0\ndisk = 1000\ncpu = 0.25\n", &c, err, sizeof(err),
		 &path);
	ck_assert_msg(r == 0, "%d %s", r, err);
	ck_assert_uint_eq(c.limits.memory, 0);
	ck_assert_uint_eq(c.limits.pids, 0);
	ck_assert_uint_eq(c.limits.disk, 1000);
	ck_assert_uint_eq(c.limits.cpu_milli, 250);
	config_free(&c);
}
END_TEST

/* libinih would take an indented line as the continuation of the value
 * above it: here isolation would become "timeout = 5". */
START_TEST(test_config_indented_lines_are_plain_lines)
{
	struct config c;
	char err[512], *path;
	int r = load("  [broker]\n"
		     "\tisolation = host\n"
		     "    timeout = 5\n"
		     " \t ; an indented comment\n",
		     &c, err, sizeof(err), &path);

	ck_assert_msg(r == 0, "%d %s", r, err);
	ck_assert_int_eq(c.isolation, ISOLATION_HOST);
	ck_assert_uint_eq(c.timeout, 5);
	config_free(&c);
}
END_TEST

START_TEST(test_config_crlf_and_bom)
{
	struct config c;
	char err[512], *path;
	int r = load("\xEF\xBB\xBF[broker]\r\ntimeout = 7\r\n[mounts]\r\nx = /x:ro\r\n", &c, err,
		     sizeof(err), &path);

	ck_assert_msg(r == 0, "%d %s", r, err);
	ck_assert_uint_eq(c.timeout, 7);
	ck_assert_str_eq(c.mounts[0].hostdir, "/x");
	ck_assert(c.mounts[0].ro);
	config_free(&c);
}
END_TEST

static const struct {
	const char *text;
	bool value;
} bools[] = {
	{ "true", true }, { "TRUE", true },   { "Yes", true },	  { "on", true },  { "ON", true },
	{ "1", true },	  { "false", false }, { "False", false }, { "no", false }, { "NO", false },
	{ "off", false }, { "Off", false },   { "0", false },
};

START_TEST(test_config_booleans)
{
	struct config c;
	char err[512], *path, *text;
	int r;

	/* Each from the opposite of its value, so a no-op would fail. */
	ck_assert_int_ge(asprintf(&text,
				  "[broker]\nallow_host_bash = %s\nnetwork = %s\n"
				  "network = %s\n",
				  bools[_i].value ? "no" : "yes", bools[_i].value ? "off" : "on",
				  bools[_i].text),
			 0);
	r = load(text, &c, err, sizeof(err), &path);
	ck_assert_msg(r == 0, "%d %s", r, err);
	ck_assert(c.network == bools[_i].value);
	ck_assert(c.allow_host_bash == !bools[_i].value);
	config_free(&c);
}
END_TEST

/* Every kind of error: the message after the path, which carries the line. */
static const struct {
	const char *text;
	const char *err;
} bad[] = {
	{ "[broker]\n\n; comment\n\n\n\ntimeout = abc\n",
	  ":7: timeout must be a whole number of seconds from 1 to 86400, not 'abc'" },
	{ "[broker]\ntimeout = 0\n",
	  ":2: timeout must be a whole number of seconds from 1 to 86400, not '0'" },
	{ "[broker]\ntimeout = 86401\n",
	  ":2: timeout must be a whole number of seconds from 1 to 86400, not '86401'" },
	{ "[broker]\ntimeout = -5\n",
	  ":2: timeout must be a whole number of seconds from 1 to 86400, not '-5'" },
	{ "[broker]\ntimeout = +5\n",
	  ":2: timeout must be a whole number of seconds from 1 to 86400, not '+5'" },
	{ "[broker]\ntimeout = 1e3\n",
	  ":2: timeout must be a whole number of seconds from 1 to 86400, not '1e3'" },
	{ "[broker]\ntimeout = 99999999999999999999999\n",
	  ":2: timeout must be a whole number of seconds from 1 to 86400, not '99999999999999999999999'" },
	{ "[broker]\ntimeout =\n",
	  ":2: timeout must be a whole number of seconds from 1 to 86400, not ''" },
	{ "[broker]\ntimeout = 5 s\n",
	  ":2: timeout must be a whole number of seconds from 1 to 86400, not '5 s'" },
	{ "[broker]\nidle_timeout = 0\n",
	  ":2: idle_timeout must be a whole number of seconds from 1 to 86400, not '0'" },
	{ "[broker]\nmax_running = 1001\n",
	  ":2: max_running must be a whole number from 1 to 1000, not '1001'" },
	{ "[broker]\nmax_running = 0\n",
	  ":2: max_running must be a whole number from 1 to 1000, not '0'" },
	{ "[broker]\nmax_shell_sessions = 1001\n",
	  ":2: max_shell_sessions must be a whole number from 1 to 1000, not '1001'" },
	{ "[broker]\nbash_max_sessions = 10001\n",
	  ":2: bash_max_sessions must be a whole number from 1 to 10000, not '10001'" },
	{ "[broker]\nbash_max_sessions = 0x10\n",
	  ":2: bash_max_sessions must be a whole number from 1 to 10000, not '0x10'" },
	{ "[broker]\nisolation = docker\n",
	  ":2: isolation must be namespace or host, not 'docker'" },
	{ "[broker]\nnetwork = maybe\n",
	  ":2: network must be true or false (yes/no, on/off, 1/0), not 'maybe'" },
	{ "[broker]\nallow_host_bash =\n",
	  ":2: allow_host_bash must be true or false (yes/no, on/off, 1/0), not ''" },
	{ "[broker]\nallow_host_bash = truee\n",
	  ":2: allow_host_bash must be true or false (yes/no, on/off, 1/0), not 'truee'" },
	{ "[broker]\ntimeout = 5\nfoo = 1\n", ":3: unknown key 'foo' in [broker]" },
	{ "[broker]\nTimeout = 5\n", ":2: unknown key 'Timeout' in [broker]" },
	{ "[broker]\n= 5\n", ":2: unknown key '' in [broker]" },
	{ "[broker]\nx\x1b[2J = 5\n", ":2: unknown key 'x?[2J' in [broker]" },
	{ "[broker]\ntimeout = 5\n\n\n\n\n\n\n[bogus]\nkey = 1\n", ":9: unknown section [bogus]" },
	{ "[broker]\n[Broker]\n", ":2: unknown section [Broker]" },
	{ "[mounts]\n[]\n", ":2: unknown section []" },
	{ "[ broker ]\ntimeout = 5\n", ":1: unknown section [ broker ]" },
	{ "[broker] timeout = 5\n", ":1: unexpected 'timeout = 5' after [broker]" },
	{ "timeout = 5\n[broker]\n",
	  ":1: 'timeout' comes before any section ([broker], [limits], [mounts], [undo] or [serve])" },
	/* The home's leases (store/lease.h): top-level keys, checked too. */
	{ "host = a b\n", ":1: host: expected 1 to 64 letters, digits, '.', '_' or '-'" },
	{ "lease = 0\n", ":1: lease: expected seconds from 0.3 to 3600" },
	{ "store = sqlite\nmax-views = lots\n",
	  ":2: max-views: expected a count from 0 (no limit) to 1000000" },
	{ "max-views-per-host = -1\n",
	  ":1: max-views-per-host: expected a count from 0 (no limit) to 1000000" },
	{ "[broker]\njunk\n", ":2: expected name = value, not 'junk'" },
	{ "[broker]\n\tjunk here ; = 5\n", ":2: expected name = value, not 'junk here ; = 5'" },
	{ "[broker\ntimeout = 5\n", ":1: '[broker' lacks a closing ']'" },
	/* The first error is the one reported, whichever kind it is. */
	{ "[broker]\njunk\ntimeout = x\n", ":2: expected name = value, not 'junk'" },
	{ "[broker]\ntimeout = x\njunk\n",
	  ":2: timeout must be a whole number of seconds from 1 to 86400, not 'x'" },
	{ "[broker]\njunk\n[bogus]\n", ":2: expected name = value, not 'junk'" },
	/* The later of the two lines is blamed. */
	{ "[broker]\nmax_running = 3\n\nmax_shell_sessions = 3\n",
	  ":4: max_shell_sessions (3) must be at least max_running + 1 (4)" },
	{ "[broker]\nmax_shell_sessions = 4\n\n\nmax_running = 10\n",
	  ":5: max_shell_sessions (4) must be at least max_running + 1 (11)" },
	/* Mounts. */
	{ "[mounts]\ndata = srv/data\n", ":2: mount 'data': 'srv/data' is not an absolute path" },
	{ "[mounts]\ndata = ~/data\n", ":2: mount 'data': '~/data' is not an absolute path" },
	{ "[mounts]\ndata =\n", ":2: mount 'data': '' is not an absolute path" },
	{ "[mounts]\ndata = :ro\n", ":2: mount 'data': ':ro' is not an absolute path" },
	{ "[mounts]\ndata = /srv:rw\n",
	  ":2: mount 'data': '/srv:rw' may contain ':' only in a final ':ro'" },
	{ "[mounts]\ndata = /a:b/c\n",
	  ":2: mount 'data': '/a:b/c' may contain ':' only in a final ':ro'" },
	{ "[mounts]\ndata = /srv:ro:ro\n",
	  ":2: mount 'data': '/srv:ro:ro' may contain ':' only in a final ':ro'" },
	{ "[mounts]\na/b = /srv\n", ":2: invalid mount name 'a/b': it contains '/'" },
	{ "[mounts]\n.. = /srv\n", ":2: invalid mount name '..': \".\" and \"..\" are not ids" },
	{ "[mounts]\n= /srv\n", ":2: invalid mount name '': it is empty" },
	{ "[mounts]\nmy data = /srv\n",
	  ":2: invalid mount name 'my data': only letters, digits, '.', '_' and '-' are allowed" },
	{ "[mounts]\nskills = /srv\n", ":2: mount name 'skills' is reserved" },
	{ "[mounts]\nuser-data = /srv\n", ":2: mount name 'user-data' is reserved" },
	{ "[mounts]\nacp-workspace = /srv:ro\n", ":2: mount name 'acp-workspace' is reserved" },
	{ "[mounts]\ndata = /a\nref = /b\n[broker]\n[mounts]\ndata = /c:ro\n",
	  ":6: mount 'data' is already defined on line 2" },
	/* env_pass. */
	{ "[broker]\nenv_pass =\n", ":2: env_pass must name one or more variables" },
	{ "[broker]\nenv_pass = A 1B\n",
	  ":2: env_pass: '1B' is not a variable name (letters, digits and '_', not starting with a"
	  " digit)" },
	{ "[broker]\nenv_pass = LC_*\n",
	  ":2: env_pass: 'LC_*' is not a variable name (letters, digits and '_', not starting with a"
	  " digit)" },
	{ "[broker]\nenv_pass = A=B\n",
	  ":2: env_pass: 'A=B' is not a variable name (letters, digits and '_', not starting with a"
	  " digit)" },
	/* Limits and sandbox ids. */
	{ "[limits]\nmemory = lots\n",
	  ":2: memory must be a size such as 0, 512M or 2G (at most 1 EiB), not 'lots'" },
	{ "[limits]\nmemory = -1\n",
	  ":2: memory must be a size such as 0, 512M or 2G (at most 1 EiB), not '-1'" },
	{ "[limits]\ndisk = 2X\n",
	  ":2: disk must be a size such as 0, 512M or 2G (at most 1 EiB), not '2X'" },
	{ "[limits]\nswap = 9999999T\n",
	  ":2: swap must be a size such as 0, 512M or 2G (at most 1 EiB), not '9999999T'" },
	{ "[limits]\npids = many\n",
	  ":2: pids must be a whole number from 0 (no limit) to 4194304, not 'many'" },
	{ "[limits]\ncpu = 1.\n",
	  ":2: cpu must be a number of CPUs such as 1 or 0.5 (0: no quota), not '1.'" },
	{ "[limits]\ncpu_weight = 0\n",
	  ":2: cpu_weight must be a whole number from 1 to 10000, not '0'" },
	{ "[limits]\ncgroups = v1\n", ":2: cgroups must be auto or off, not 'v1'" },
	{ "[limits]\nrss = 1\n", ":2: unknown key 'rss' in [limits]" },
	{ "[broker]\nbwrap = bwrap\n", ":2: bwrap must be an absolute path, not 'bwrap'" },
	{ "[broker]\none_off = warm\n", ":2: one_off must be launcher or fresh, not 'warm'" },
	{ "[broker]\nsandbox_uid_base = 0\n",
	  ":2: sandbox_uid_base must be a whole number from 1 to 2147483647, not '0'" },
	{ "[broker]\nsandbox_uid_base = 2147483000\nsandbox_uid_count = 1000\n",
	  ": sandbox_uid_base + sandbox_uid_count must stay below 2^31" },
	/* sbx serve. */
	{ "[serve]\nlisten = 8739\n", ":2: listen must be ADDR:PORT, not '8739'" },
	{ "[serve]\nlisten = localhost:http\n",
	  ":2: listen must be ADDR:PORT, not 'localhost:http'" },
	{ "[serve]\ntoken_file = token\n", ":2: token_file must be an absolute path, not 'token'" },
	{ "[serve]\nmax_body = 512\n",
	  ":2: max_body must be a size from 1K to 1G (such as 4M), not '512'" },
	{ "[serve]\nmax_body = 2G\n",
	  ":2: max_body must be a size from 1K to 1G (such as 4M), not '2G'" },
	{ "[serve]\nmax_sessions = 0\n",
	  ":2: max_sessions must be a whole number from 1 to 10000, not '0'" },
	{ "[serve]\nidle_timeout = 0\n",
	  ":2: idle_timeout must be a whole number of seconds from 1 to 86400, not '0'" },
	{ "[serve]\nmax_connections = 3\n",
	  ":2: max_connections must be a whole number from 4 to 10000, not '3'" },
	{ "[serve]\nport = 1\n", ":2: unknown key 'port' in [serve]" },
};

START_TEST(test_config_refuses_with_file_and_line)
{
	struct config c;
	char err[512], want[600], *path;
	int r = load(bad[_i].text, &c, err, sizeof(err), &path);

	snprintf(want, sizeof(want), "%s%s", path, bad[_i].err);
	ck_assert_msg(r == -EINVAL, "%d for %s", r, bad[_i].text);
	ck_assert_str_eq(err, want);
	assert_defaults(&c); /* nothing half-read */
	config_free(&c);
}
END_TEST

START_TEST(test_config_mounts_up_to_the_limit)
{
	struct config c;
	char err[512], want[600], *path, text[4096];
	size_t n = snprintf(text, sizeof(text), "[mounts]\n");

	for (int i = 0; i < CONFIG_MAX_MOUNTS; i++)
		n += snprintf(text + n, sizeof(text) - n, "m%d = /srv/%d%s\n", i, i,
			      i % 2 ? ":ro" : "");
	ck_assert_int_eq(load(text, &c, err, sizeof(err), &path), 0);
	ck_assert_uint_eq(c.nmounts, CONFIG_MAX_MOUNTS);
	ck_assert_str_eq(c.mounts[15].name, "m15");
	ck_assert_str_eq(c.mounts[15].hostdir, "/srv/15");
	ck_assert(c.mounts[15].ro);
	ck_assert(!c.mounts[14].ro);
	config_free(&c);

	snprintf(text + n, sizeof(text) - n, "one-more = /srv/x\n");
	ck_assert_int_eq(load(text, &c, err, sizeof(err), &path), -EINVAL);
	snprintf(want, sizeof(want), "%s:%d: more than %d mounts", path, CONFIG_MAX_MOUNTS + 2,
		 CONFIG_MAX_MOUNTS);
	ck_assert_str_eq(err, want);
	ck_assert_uint_eq(c.nmounts, 0);
	config_free(&c);
}
END_TEST

/* libinih would split the line at its buffer and parse the tail as a line
 * of its own: here "timeout = 1", which nobody wrote. */
START_TEST(test_config_refuses_lines_longer_than_libinih_reads)
{
	struct config c;
	char err[512], want[600], *path, text[2048], dir[LINE_MAX_BYTES + 2];
	size_t fixed = strlen("m = /");
	int r;

	/* Exactly the limit, with "\r\n" and without a final newline. */
	memset(dir, 'd', sizeof(dir));
	dir[LINE_MAX_BYTES - fixed] = '\0';
	snprintf(text, sizeof(text), "[mounts]\r\nm = /%s\r\nn = /%s", dir, dir);
	r = load(text, &c, err, sizeof(err), &path);
	ck_assert_msg(r == 0, "%d %s", r, err);
	ck_assert_uint_eq(strlen(c.mounts[0].hostdir), LINE_MAX_BYTES - fixed + 1);
	ck_assert_uint_eq(strlen(c.mounts[1].hostdir), LINE_MAX_BYTES - fixed + 1);
	config_free(&c);

	/* One byte more. */
	dir[LINE_MAX_BYTES - fixed] = 'd';
	dir[LINE_MAX_BYTES - fixed + 1] = '\0';
	snprintf(text, sizeof(text), "[mounts]\nok = /x\nm = /%s\n", dir);
	ck_assert_int_eq(load(text, &c, err, sizeof(err), &path), -EINVAL);
	snprintf(want, sizeof(want), "%s:3: the line is longer than %d bytes", path,
		 LINE_MAX_BYTES);
	ck_assert_str_eq(err, want);
	ck_assert_uint_eq(c.nmounts, 0);

	/* Far more, with an '=' where libinih would cut. */
	memset(text, 0, sizeof(text));
	strcpy(text, "[broker]\n; ");
	memset(text + strlen(text), 'x', INI_MAX_LINE - 1 - strlen("; "));
	strcat(text, "timeout = 1\n");
	ck_assert_int_eq(load(text, &c, err, sizeof(err), &path), -EINVAL);
	snprintf(want, sizeof(want), "%s:2: the line is longer than %d bytes", path,
		 LINE_MAX_BYTES);
	ck_assert_str_eq(err, want);
	ck_assert_uint_eq(c.timeout, 600);

	/* Far more, with "\r" where the limit falls. */
	memset(text, 0, sizeof(text));
	strcpy(text, "[broker]\n;");
	memset(text + strlen(text), 'x', LINE_MAX_BYTES - 1);
	strcat(text, "\rtimeout = 1\n");
	ck_assert_int_eq(load(text, &c, err, sizeof(err), &path), -EINVAL);
	snprintf(want, sizeof(want), "%s:2: the line is longer than %d bytes", path,
		 LINE_MAX_BYTES);
	ck_assert_str_eq(err, want);
	config_free(&c);
}
END_TEST

/* fgets would stop at the NUL and libinih never see the rest. */
START_TEST(test_config_refuses_nul_bytes)
{
	static const char text[] = "[broker]\ntimeout = 6\0\n[mounts]\nx = /x\n";
	struct config c;
	char err[512], want[600], *path = conf_path();

	write_bytes(path, text, sizeof(text) - 1);
	ck_assert_int_eq(config_load(path, &c, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:2: the line contains a NUL byte", path);
	ck_assert_str_eq(err, want);
	assert_defaults(&c);
	config_free(&c);
}
END_TEST

/* Random bytes, weighted towards what the syntax cares about: a result,
 * never a crash, and an error message fit for a terminal. */
START_TEST(test_config_survives_junk)
{
	static const char alphabet[] =
		"[]=:;# \t\r\n\n\n/.-_abkmorstu019\0\x01\x1b\x7f\x80\xef\xbb\xbf\xff";
	char err[512], *path = conf_path(), data[3000];
	unsigned seed = 12345;
	struct config c;

	for (int round = 0; round < 400; round++) {
		size_t len = (seed = seed * 1103515245 + 12345) % sizeof(data);

		for (size_t i = 0; i < len; i++) {
			seed = seed * 1103515245 + 12345;
			data[i] = (seed >> 16) % 4 ? alphabet[(seed >> 8) % (sizeof(alphabet) - 1)]
						   : (char)(seed >> 20);
		}
		write_bytes(path, data, len);
		int r = config_load(path, &c, err, sizeof(err));
		ck_assert_msg(r == 0 || r == -EINVAL, "round %d: %d", round, r);
		if (r == 0) {
			ck_assert_uint_le(c.nmounts, CONFIG_MAX_MOUNTS);
			ck_assert_uint_ge(c.max_shell_sessions, c.max_running + 1);
		} else {
			ck_assert(!strncmp(err, path, strlen(path)));
			for (const char *s = err; *s; s++)
				ck_assert_msg((unsigned char)*s >= 0x20 && *s != 0x7f,
					      "round %d: control byte in '%s'", round, err);
			assert_defaults(&c);
		}
		config_free(&c);
	}
}
END_TEST

START_TEST(test_config_unreadable_paths)
{
	struct config c;
	char err[512], want[600];
	const char *dir = test_dir("config-dir");

	ck_assert_int_eq(config_load(dir, &c, err, sizeof(err)), -EISDIR);
	snprintf(want, sizeof(want), "%s: %s", dir, strerror(EISDIR));
	ck_assert_str_eq(err, want);
	assert_defaults(&c);
	config_free(&c);
}
END_TEST

START_TEST(test_config_error_buffer_may_be_small_or_absent)
{
	struct config c;
	char err[8], *path;

	ck_assert_int_eq(load("[broker]\ntimeout = x\n", &c, NULL, 0, &path), -EINVAL);
	ck_assert_int_eq(config_load(path, &c, err, sizeof(err)), -EINVAL);
	ck_assert_uint_eq(strlen(err), sizeof(err) - 1);
	ck_assert(!strncmp(err, path, sizeof(err) - 1));
	config_free(&c);
}
END_TEST

/* The keys before any section are read by every program of the home
 * (the store by store_where(), the host and its leases by
 * lease_config()) exactly as sbx doctor and the broker read the file: an
 * indented line is a line of its own, not the continuation of the value
 * above it. */
START_TEST(test_config_every_program_reads_the_home_s_keys_alike)
{
	struct config c;
	struct lease_config lc;
	char err[512], target[STORE_TARGET_MAX], *path;

	unsetenv(LEASE_HOST_ENV);
	unsetenv(STORE_ENV);
	ck_assert_int_eq(load("lease = 2\n  host = web-2\n  store = postgresql://db/sbx\n", &c, err,
			      sizeof(err), &path),
			 0);
	ck_assert_str_eq(c.host, "web-2");
	ck_assert_str_eq(c.store, "postgresql://db/sbx");
	config_free(&c);
	const char *home = dirname(path); /* the file is HOME/sbx.conf */
	ck_assert_msg(lease_config(home, &lc, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(lc.host, "web-2");
	ck_assert_int_eq(lc.ttl_ms, 2000);
	ck_assert_msg(store_where(home, target, sizeof(target), err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(target, "postgresql://db/sbx");
}
END_TEST

Suite *suite_unit_config(void)
{
	Suite *s = suite_create("unit_config");
	TCase *tc = tcase_create("config");

	tcase_add_test(tc, test_config_defaults);
	tcase_add_test(tc, test_config_missing_file_is_the_defaults);
	tcase_add_test(tc, test_config_empty_file_is_the_defaults);
	tcase_add_test(tc, test_config_raises_max_shell_sessions_for_max_running);
	tcase_add_test(tc, test_config_reads_every_key);
	tcase_add_test(tc, test_config_serve_keys);
	tcase_add_test(tc, test_config_env_pass_adds_up);
	tcase_add_test(tc, test_config_limits_and_sandbox_ids);
	tcase_add_test(tc, test_config_indented_lines_are_plain_lines);
	tcase_add_test(tc, test_config_crlf_and_bom);
	tcase_add_loop_test(tc, test_config_booleans, 0, sizeof(bools) / sizeof(bools[0]));
	tcase_add_loop_test(tc, test_config_refuses_with_file_and_line, 0,
			    sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, test_config_mounts_up_to_the_limit);
	tcase_add_test(tc, test_config_refuses_lines_longer_than_libinih_reads);
	tcase_add_test(tc, test_config_refuses_nul_bytes);
	tcase_add_test(tc, test_config_survives_junk);
	tcase_add_test(tc, test_config_unreadable_paths);
	tcase_add_test(tc, test_config_error_buffer_may_be_small_or_absent);
	tcase_add_test(tc, test_config_every_program_reads_the_home_s_keys_alike);
	suite_add_tcase(s, tc);
	return s;
}
