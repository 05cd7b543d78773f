/* config.c - see config.h.
 *
 * libinih does the INI syntax, but it is lenient where a configuration
 * must not be, so it reads through read_line() below, which turns what it
 * would do quietly into errors or plain lines:
 *
 *  - a line longer than its fixed buffer (INI_MAX_LINE, 200 bytes with
 *    "\r\n\0" in Debian's build) is split, and the tail parsed as a line
 *    of its own: a long value containing '=' would set a key nobody wrote,
 *    and every later line number is off by one. Refused.
 *  - fgets stops at a NUL byte and the rest of the line is lost. Refused.
 *  - an indented line continues the previous value (Python's configparser):
 *    "  timeout = 5" after "isolation = host" would set isolation to
 *    "timeout = 5". Leading blanks are dropped instead.
 *  - the handler only hears of a section through its keys, so a misspelt,
 *    empty one would pass. Section lines are checked here.
 *
 * The reader counts lines exactly as libinih does (one per call), so its
 * count is the line of the pair the handler is given. The first error
 * stops the parse; libinih reports its own syntax errors by line only.
 */
#include "config.h"
#include "cleanup.h"
#include "home.h"
#include "ids.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SECONDS_MAX 86400

struct parse {
	FILE *f;
	struct config *c;
	unsigned lineno;    /* of the line last given to libinih */
	unsigned fail_line; /* of our first error, 0 if none */
	int fail;	    /* its -errno */
	char why[512];
	int ioerr;			   /* -errno of a failed read */
	bool top_only;			   /* config_load_top(): all else passed over */
	unsigned running_line, shell_line; /* where max_* were last set */
	unsigned mount_line[CONFIG_MAX_MOUNTS];
};

bool store_target_is_postgres(const char *target)
{
	return !strncmp(target, "postgresql://", 13) || !strncmp(target, "postgres://", 11) ||
	       (target[0] != '/' && strchr(target, '=') != NULL);
}

bool store_target_ok(const char *value)
{
	return !strcmp(value, "sqlite") || store_target_is_postgres(value);
}

bool lease_host_ok(const char *host)
{
	size_t n = strlen(host);

	if (n == 0 || n >= LEASE_HOST_MAX || host[0] == '.' || host[0] == '-')
		return false;
	return strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
	       n;
}

void config_defaults(struct config *c)
{
	memset(c, 0, sizeof(*c));
	c->lease_ms = LEASE_TTL_DEFAULT_MS;
	c->isolation = ISOLATION_NAMESPACE;
	c->allow_host_bash = false;
	c->network = false;
	c->timeout = 600;
	c->idle_timeout = 900;
	c->max_running = 3;
	c->max_shell_sessions = 10;
	c->max_shell_sessions_total = 1000;
	c->bash_max_sessions = 50;
	c->sandbox_uid_base = 2000000000;
	c->sandbox_uid_count = 65536;
	c->limits = (struct config_limits){
		.pids = 1024,
		.memory = 2ull << 30,
		.swap = 0,
		.cpu_milli = 0,
		.cpu_weight = 100,
		.disk = 20ull << 30,
		.disk_inodes = 1000000,
		.cgroups = true,
	};
	c->undo.max_age_days = 7;
	c->undo.budget = 1ull << 30;
	c->serve.max_body = 4ull << 20;
	c->serve.max_sessions = 64;
	c->serve.idle_timeout = 900;
	c->serve.max_connections = 256;
	c->serve.max_sandboxes = 256;
	c->serve.max_upload = 64ull << 20;
}

void config_free(struct config *c)
{
	free(TAKE_PTR(c->store));
	free(c->bwrap);
	c->bwrap = NULL;
	for (size_t i = 0; i < c->nmounts; i++) {
		free(c->mounts[i].name);
		free(c->mounts[i].hostdir);
		c->mounts[i].name = c->mounts[i].hostdir = NULL;
	}
	c->nmounts = 0;
	for (size_t i = 0; i < c->nenv_pass; i++)
		free(TAKE_PTR(c->env_pass[i]));
	c->nenv_pass = 0;
	free(TAKE_PTR(c->serve.listen));
	free(TAKE_PTR(c->serve.token_file));
	free(TAKE_PTR(c->serve.public_url));
}

/* S (LEN bytes) made fit for a message: a file full of junk must not put
 * terminal escapes or an unbounded string into it. */
static const char *printable(char *buf, size_t size, const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len && s[i] && n + 1 < size; i++)
		buf[n++] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	buf[n] = '\0';
	return buf;
}

/* printable() into a buffer of its own (a compound literal, which lives
 * as long as the enclosing block), so a message may quote several. */
#define Q(s) printable((char[200]){ 0 }, 200, (s), strlen(s))

static __attribute__((format(printf, 3, 4))) int fail(struct parse *p, int err, const char *fmt,
						      ...)
{
	va_list ap;

	if (p->fail_line)
		return p->fail;
	va_start(ap, fmt);
	vsnprintf(p->why, sizeof(p->why), fmt, ap);
	va_end(ap);
	p->fail_line = p->lineno;
	p->fail = err;
	return err;
}

/* A line read_line() refuses (CH is its byte at hand): config_load_top()
 * passes over it whole, as a blank line. */
static char *pass_over(struct parse *p, char *buf, int ch)
{
	while (ch != EOF && ch != '\n')
		ch = getc(p->f);
	buf[0] = '\0';
	return buf;
}

/* Gives libinih the next line, at most NUM - 3 bytes without its "\n" or
 * "\r\n" (what its buffer holds, by its own rule), with leading blanks and
 * a UTF-8 BOM removed. NULL ends the parse: end of file, or an error. */
static char *read_line(char *buf, int num, void *stream)
{
	struct parse *p = stream;
	size_t max, n = 0, skip = 0;
	int ch;

	/* config_load_top() reads on past a bad value: the store is still
	 * the one the file names. */
	if ((p->fail_line && !p->top_only) || p->ioerr)
		return NULL;
	ch = getc(p->f);
	if (ch == EOF) {
		if (ferror(p->f))
			p->ioerr = neg_errno();
		return NULL;
	}
	p->lineno++;
	if (num < 4) {
		fail(p, -EINVAL, "libinih's line buffer holds %d bytes", num);
		return NULL;
	}
	max = (size_t)num - 3;
	/* One byte beyond MAX is kept for a '\r' that turns out to end the line. */
	for (; ch != EOF && ch != '\n'; ch = getc(p->f)) {
		if (ch == '\0') {
			if (p->top_only)
				return pass_over(p, buf, ch);
			fail(p, -EINVAL, "the line contains a NUL byte");
			return NULL;
		}
		if (n > max)
			goto too_long;
		buf[n++] = (char)ch;
	}
	if (ch == EOF && ferror(p->f)) {
		p->ioerr = neg_errno();
		return NULL;
	}
	if (n && buf[n - 1] == '\r')
		n--;
	if (n > max)
		goto too_long;
	buf[n] = '\0';

	if (p->lineno == 1 && !strncmp(buf, "\xEF\xBB\xBF", 3))
		skip = 3;
	while (isspace((unsigned char)buf[skip]))
		skip++;
	memmove(buf, buf + skip, n - skip + 1);

	if (buf[0] == '[' && !p->top_only) {
		const char *end = strchr(buf, ']'), *rest;
		size_t len;
		char q[200];

		if (!end)
			return buf; /* libinih's syntax error */
		len = (size_t)(end - buf - 1);
		if (!((len == 6 && !strncmp(buf + 1, "broker", 6)) ||
		      (len == 6 && !strncmp(buf + 1, "limits", 6)) ||
		      (len == 6 && !strncmp(buf + 1, "mounts", 6)) ||
		      (len == 4 && !strncmp(buf + 1, "undo", 4)) ||
		      (len == 5 && !strncmp(buf + 1, "serve", 5)))) {
			fail(p, -EINVAL, "unknown section [%s]",
			     printable(q, sizeof(q), buf + 1, len));
			return NULL;
		}
		rest = end + 1 + strspn(end + 1, " \t\r\v\f");
		if (*rest && *rest != ';' && *rest != '#') {
			fail(p, -EINVAL, "unexpected '%s' after [%.6s]", Q(rest), buf + 1);
			return NULL;
		}
	}
	return buf;

too_long:
	if (p->top_only)
		return pass_over(p, buf, ch);
	fail(p, -EINVAL, "the line is longer than %zu bytes", max);
	return NULL;
}

static int set_bool(struct parse *p, const char *key, const char *v, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(v, yes[i]) || !strcasecmp(v, no[i])) {
			*out = !strcasecmp(v, yes[i]);
			return 0;
		}
	}
	return fail(p, -EINVAL, "%s must be true or false (yes/no, on/off, 1/0), not '%s'", key,
		    Q(v));
}

/* Decimal digits (no sign, no blanks, no "1e3", no "0x10") up to MAX;
 * *END, if not NULL, gets what follows them. */
static int parse_digits(const char *s, uint64_t max, uint64_t *out, const char **end)
{
	uint64_t v = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > max)
			return -ERANGE;
	}
	if (end)
		*end = s;
	else if (*s)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_unsigned(const char *s, unsigned max, unsigned *out)
{
	uint64_t v;
	int r = parse_digits(s, max, &v, NULL);

	if (r == 0)
		*out = (unsigned)v;
	return r;
}

int config_parse_size(const char *s, uint64_t *out)
{
	static const char *const units[] = { "K", "M", "G", "T" };
	const char *end;
	uint64_t v;
	int shift = 0;

	if (parse_digits(s, 1ull << 60, &v, &end) < 0)
		return -EINVAL;
	if (*end) {
		for (int i = 0; i < 4 && !shift; i++)
			if (toupper((unsigned char)*end) == units[i][0])
				shift = 10 * (i + 1);
		if (shift)
			end++;
		if (!strcasecmp(end, "iB") && shift)
			end += 2;
		else if (!strcasecmp(end, "B"))
			end++;
		if (*end)
			return -EINVAL;
	}
	if (shift && v > (1ull << 60) >> shift)
		return -ERANGE;
	*out = v << shift;
	return 0;
}

/* "1", "0.5", "1.25": thousandths, at most MAX. */
static int parse_milli(const char *s, unsigned max, unsigned *out)
{
	const char *end;
	uint64_t whole, frac = 0;
	int digits = 0;

	if (parse_digits(s, max / 1000 + 1, &whole, &end) < 0)
		return -EINVAL;
	if (*end == '.') {
		for (end++; *end >= '0' && *end <= '9'; end++, digits++)
			if (digits < 3)
				frac = frac * 10 + (uint64_t)(*end - '0');
		if (!digits)
			return -EINVAL;
		for (int d = digits; d < 3; d++)
			frac *= 10;
	}
	if (*end || whole * 1000 + frac > max)
		return -EINVAL;
	*out = (unsigned)(whole * 1000 + frac);
	return 0;
}

static int set_number(struct parse *p, const char *key, const char *v, const char *unit,
		      unsigned max, unsigned *out)
{
	unsigned n;

	if (parse_unsigned(v, max, &n) < 0 || n < 1)
		return fail(p, -EINVAL, "%s must be a whole number%s from 1 to %u, not '%s'", key,
			    unit, max, Q(v));
	*out = n;
	return 0;
}

/* Adds the names of V (blank-separated) to env_pass, each once. It is a
 * list rather than one value, so that no line length limits it. */
static int add_env_pass(struct parse *p, const char *v)
{
	struct config *c = p->c;
	_cleanup_(freep) char *names = strdup(v);
	char *save = NULL;

	if (!names)
		return fail(p, -ENOMEM, "out of memory");
	if (!names[strspn(names, " \t")])
		return fail(p, -EINVAL, "env_pass must name one or more variables");
	for (char *n = strtok_r(names, " \t", &save); n; n = strtok_r(NULL, " \t", &save)) {
		bool known = false;
		if (!env_valid_name(n))
			return fail(p, -EINVAL,
				    "env_pass: '%s' is not a variable name (letters, digits and"
				    " '_', not starting with a digit)",
				    Q(n));
		for (size_t i = 0; i < c->nenv_pass && !known; i++)
			known = !strcmp(c->env_pass[i], n);
		if (known)
			continue;
		if (c->nenv_pass == CONFIG_MAX_ENV_PASS)
			return fail(p, -EINVAL, "env_pass: more than %d names",
				    CONFIG_MAX_ENV_PASS);
		if (!(c->env_pass[c->nenv_pass] = strdup(n)))
			return fail(p, -ENOMEM, "out of memory");
		c->nenv_pass++;
	}
	return 0;
}

/* V into *OUT, a copy replacing what was there. */
static int set_string(struct parse *p, const char *v, char **out)
{
	char *copy = strdup(v);

	if (!copy)
		return fail(p, -ENOMEM, "out of memory");
	free(*out);
	*out = copy;
	return 0;
}

static int set_broker(struct parse *p, const char *key, const char *v)
{
	struct config *c = p->c;

	if (!strcmp(key, "isolation")) {
		if (!strcasecmp(v, "namespace"))
			c->isolation = ISOLATION_NAMESPACE;
		else if (!strcasecmp(v, "host"))
			c->isolation = ISOLATION_HOST;
		else
			return fail(p, -EINVAL, "isolation must be namespace or host, not '%s'",
				    Q(v));
		return 0;
	}
	if (!strcmp(key, "allow_host_bash"))
		return set_bool(p, key, v, &c->allow_host_bash);
	if (!strcmp(key, "network"))
		return set_bool(p, key, v, &c->network);
	if (!strcmp(key, "timeout"))
		return set_number(p, key, v, " of seconds", SECONDS_MAX, &c->timeout);
	if (!strcmp(key, "idle_timeout"))
		return set_number(p, key, v, " of seconds", SECONDS_MAX, &c->idle_timeout);
	if (!strcmp(key, "max_running")) {
		p->running_line = p->lineno;
		return set_number(p, key, v, "", 1000, &c->max_running);
	}
	if (!strcmp(key, "max_shell_sessions")) {
		p->shell_line = p->lineno;
		return set_number(p, key, v, "", 1000, &c->max_shell_sessions);
	}
	if (!strcmp(key, "max_shell_sessions_total"))
		return set_number(p, key, v, "", 100000, &c->max_shell_sessions_total);
	if (!strcmp(key, "bash_max_sessions"))
		return set_number(p, key, v, "", 10000, &c->bash_max_sessions);
	if (!strcmp(key, "one_off")) {
		if (!strcasecmp(v, "launcher"))
			c->one_off_fresh = false;
		else if (!strcasecmp(v, "fresh"))
			c->one_off_fresh = true;
		else
			return fail(p, -EINVAL, "one_off must be launcher or fresh, not '%s'",
				    Q(v));
		return 0;
	}
	if (!strcmp(key, "bwrap")) {
		if (v[0] != '/')
			return fail(p, -EINVAL, "bwrap must be an absolute path, not '%s'", Q(v));
		return set_string(p, v, &c->bwrap);
	}
	if (!strcmp(key, "sandbox_uid_base")) {
		unsigned n;
		int r = set_number(p, key, v, "", 0x7fffffff, &n);
		c->sandbox_uid_base = n;
		return r;
	}
	if (!strcmp(key, "sandbox_uid_count"))
		return set_number(p, key, v, "", 1u << 24, &c->sandbox_uid_count);
	if (!strcmp(key, "env_pass"))
		return add_env_pass(p, v);
	return fail(p, -EINVAL, "unknown key '%s' in [broker]", Q(key));
}

static int set_size(struct parse *p, const char *key, const char *v, uint64_t *out)
{
	if (config_parse_size(v, out) < 0)
		return fail(p, -EINVAL,
			    "%s must be a size such as 0, 512M or 2G (at most 1 EiB),"
			    " not '%s'",
			    key, Q(v));
	return 0;
}

static int set_limits(struct parse *p, const char *key, const char *v)
{
	struct config_limits *l = &p->c->limits;
	uint64_t n;

	if (!strcmp(key, "pids")) {
		if (parse_unsigned(v, 4194304, &l->pids) < 0)
			return fail(p, -EINVAL,
				    "pids must be a whole number from 0 (no limit) to"
				    " 4194304, not '%s'",
				    Q(v));
		return 0;
	}
	if (!strcmp(key, "memory"))
		return set_size(p, key, v, &l->memory);
	if (!strcmp(key, "swap"))
		return set_size(p, key, v, &l->swap);
	if (!strcmp(key, "disk"))
		return set_size(p, key, v, &l->disk);
	if (!strcmp(key, "disk_inodes")) {
		if (parse_digits(v, 1ull << 40, &n, NULL) < 0)
			return fail(p, -EINVAL,
				    "disk_inodes must be a whole number (0: no limit),"
				    " not '%s'",
				    Q(v));
		l->disk_inodes = n;
		return 0;
	}
	if (!strcmp(key, "cpu")) {
		if (parse_milli(v, 1024000, &l->cpu_milli) < 0)
			return fail(p, -EINVAL,
				    "cpu must be a number of CPUs such as 1 or 0.5"
				    " (0: no quota), not '%s'",
				    Q(v));
		return 0;
	}
	if (!strcmp(key, "cpu_weight"))
		return set_number(p, key, v, "", 10000, &l->cpu_weight);
	if (!strcmp(key, "cgroups")) {
		if (!strcasecmp(v, "auto"))
			l->cgroups = true;
		else if (!strcasecmp(v, "off"))
			l->cgroups = false;
		else
			return fail(p, -EINVAL, "cgroups must be auto or off, not '%s'", Q(v));
		return 0;
	}
	return fail(p, -EINVAL, "unknown key '%s' in [limits]", Q(key));
}

static int set_undo(struct parse *p, const char *key, const char *v)
{
	if (!strcmp(key, "max_age_days")) {
		if (parse_unsigned(v, 36500, &p->c->undo.max_age_days) < 0)
			return fail(p, -EINVAL,
				    "max_age_days must be a whole number from 0 (no age limit)"
				    " to 36500, not '%s'",
				    Q(v));
		return 0;
	}
	if (!strcmp(key, "budget"))
		return set_size(p, key, v, &p->c->undo.budget);
	return fail(p, -EINVAL, "unknown key '%s' in [undo]", Q(key));
}

static int set_serve(struct parse *p, const char *key, const char *v)
{
	struct config_serve *s = &p->c->serve;

	if (!strcmp(key, "listen")) {
		/* sbx serve reads the address: here only its shape. */
		const char *colon = strrchr(v, ':');
		if (!colon || colon == v || !colon[1] ||
		    strspn(colon + 1, "0123456789") != strlen(colon + 1))
			return fail(p, -EINVAL, "listen must be ADDR:PORT, not '%s'", Q(v));
		return set_string(p, v, &s->listen);
	}
	if (!strcmp(key, "token_file")) {
		if (v[0] != '/')
			return fail(p, -EINVAL, "token_file must be an absolute path, not '%s'",
				    Q(v));
		return set_string(p, v, &s->token_file);
	}
	if (!strcmp(key, "max_body")) {
		uint64_t n;
		if (config_parse_size(v, &n) < 0 || n < 1024 || n > 1ull << 30)
			return fail(p, -EINVAL,
				    "max_body must be a size from 1K to 1G (such as 4M), not '%s'",
				    Q(v));
		s->max_body = n;
		return 0;
	}
	if (!strcmp(key, "max_upload")) {
		uint64_t n;
		if (config_parse_size(v, &n) < 0 || n < 1024 || n > 1ull << 32)
			return fail(
				p, -EINVAL,
				"max_upload must be a size from 1K to 4G (such as 64M), not '%s'",
				Q(v));
		s->max_upload = n;
		return 0;
	}
	if (!strcmp(key, "public_url")) {
		if (strncmp(v, "http://", 7) && strncmp(v, "https://", 8))
			return fail(p, -EINVAL,
				    "public_url must begin http:// or https://, not '%s'", Q(v));
		return set_string(p, v, &s->public_url);
	}
	if (!strcmp(key, "max_sandboxes"))
		return set_number(p, key, v, "", 100000, &s->max_sandboxes);
	if (!strcmp(key, "max_sessions"))
		return set_number(p, key, v, "", 10000, &s->max_sessions);
	if (!strcmp(key, "idle_timeout"))
		return set_number(p, key, v, " of seconds", SECONDS_MAX, &s->idle_timeout);
	if (!strcmp(key, "max_connections")) {
		unsigned n;
		if (parse_unsigned(v, 10000, &n) < 0 || n < 4)
			return fail(p, -EINVAL,
				    "max_connections must be a whole number from 4 to 10000, not "
				    "'%s'",
				    Q(v));
		s->max_connections = n;
		return 0;
	}
	return fail(p, -EINVAL, "unknown key '%s' in [serve]", Q(key));
}

static int add_mount(struct parse *p, const char *name, const char *v)
{
	/* The view's own roots: a mount of that name would hide one. */
	static const char *const reserved[] = VIEW_TOP_NAMES;
	struct config *c = p->c;
	struct config_mount *m;
	size_t len = strlen(v);
	const char *why;
	bool ro = false;

	if (name_id_check(name, &why) < 0)
		return fail(p, -EINVAL, "invalid mount name '%s': %s", Q(name), why);
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (!strcmp(name, reserved[i]))
			return fail(p, -EINVAL, "mount name '%s' is reserved", name);
	for (size_t i = 0; i < c->nmounts; i++)
		if (!strcmp(name, c->mounts[i].name))
			return fail(p, -EINVAL, "mount '%s' is already defined on line %u", name,
				    p->mount_line[i]);
	if (c->nmounts == CONFIG_MAX_MOUNTS)
		return fail(p, -EINVAL, "more than %d mounts", CONFIG_MAX_MOUNTS);
	if (len >= 3 && !strcmp(v + len - 3, ":ro")) {
		ro = true;
		len -= 3;
	}
	if (v[0] != '/')
		return fail(p, -EINVAL, "mount '%s': '%s' is not an absolute path", name, Q(v));
	if (memchr(v, ':', len))
		return fail(p, -EINVAL, "mount '%s': '%s' may contain ':' only in a final ':ro'",
			    name, Q(v));

	m = &c->mounts[c->nmounts];
	m->name = strdup(name);
	m->hostdir = strndup(v, len);
	m->ro = ro;
	if (!m->name || !m->hostdir) {
		free(m->name);
		free(m->hostdir);
		m->name = m->hostdir = NULL;
		return fail(p, -ENOMEM, "out of memory");
	}
	p->mount_line[c->nmounts++] = p->lineno;
	return 0;
}

/* The keys before any section: the home's, read by every program
 * (config_load_top()). */
static int set_top(struct parse *p, const char *key, const char *v)
{
	struct config *c = p->c;
	int64_t *limit = !strcmp(key, "max-views-per-host") ? &c->max_views_per_host
			 : !strcmp(key, "max-views")	    ? &c->max_views
							    : NULL;
	char *end;

	if (!strcmp(key, "store")) {
		/* config_load_top() takes it as written: store_where() says
		 * what is wrong with it, in its own words. */
		if (!p->top_only && (!store_target_ok(v) || strlen(v) >= STORE_TARGET_MAX))
			return fail(p, -EINVAL,
				    "store: expected sqlite, a postgresql:// URL or a libpq keyword"
				    " string");
		free(c->store);
		if (!(c->store = strdup(v)))
			return fail(p, -ENOMEM, "out of memory");
		return 0;
	}
	if (!strcmp(key, "host")) {
		if (!lease_host_ok(v))
			return fail(p, -EINVAL,
				    "host: expected 1 to 64 letters, digits, '.', '_' or '-'");
		snprintf(c->host, sizeof(c->host), "%s", v);
		return 0;
	}
	if (!strcmp(key, "lease")) {
		errno = 0;
		double sec = strtod(v, &end);
		if (errno || end == v || *end || !(sec >= 0.3 && sec <= 3600))
			return fail(p, -EINVAL, "lease: expected seconds from 0.3 to 3600");
		c->lease_ms = (int64_t)(sec * 1000);
		return 0;
	}
	if (limit) {
		errno = 0;
		long long n = strtoll(v, &end, 10);
		if (errno || end == v || *end || n < 0 || n > 1000000)
			return fail(p, -EINVAL, "%s: expected a count from 0 (no limit) to 1000000",
				    key);
		*limit = n;
		return 0;
	}
	if (p->top_only)
		return 0;
	return fail(p, -EINVAL,
		    "'%s' comes before any section ([broker], [limits], [mounts], [undo] or"
		    " [serve])",
		    Q(key));
}

/* libinih's handler: nonzero to go on. */
static int on_pair(void *user, const char *section, const char *name, const char *value)
{
	struct parse *p = user;

	if (!*section)
		return set_top(p, name, value) == 0 || p->top_only;
	if (p->top_only)
		return 1;
	if (!strcmp(section, "broker"))
		return set_broker(p, name, value) == 0;
	if (!strcmp(section, "limits"))
		return set_limits(p, name, value) == 0;
	if (!strcmp(section, "undo"))
		return set_undo(p, name, value) == 0;
	if (!strcmp(section, "mounts"))
		return add_mount(p, name, value) == 0;
	if (!strcmp(section, "serve"))
		return set_serve(p, name, value) == 0;
	/* read_line() refuses these already */
	fail(p, -EINVAL, "unknown section [%s]", Q(section));
	return 0;
}

/* Why libinih refused line N: it only says which line, so read it again. */
static void syntax_error(struct parse *p, unsigned n)
{
	char line[256] = "";
	size_t len = 0, skip = 0;
	int ch = 0;

	p->fail_line = 0;
	p->lineno = n;
	if (fseek(p->f, 0, SEEK_SET) < 0) {
		fail(p, -EINVAL, "expected [section] or name = value");
		return;
	}
	clearerr(p->f);
	for (unsigned i = 1; i < n && ch != EOF; i++)
		while ((ch = getc(p->f)) != EOF && ch != '\n')
			;
	while ((ch = getc(p->f)) != EOF && ch != '\n' && len + 1 < sizeof(line))
		line[len++] = (char)ch;
	line[len] = '\0';
	if (n == 1 && !strncmp(line, "\xEF\xBB\xBF", 3))
		skip = 3;
	while (isspace((unsigned char)line[skip]))
		skip++;
	if (line[skip] == '[')
		fail(p, -EINVAL, "'%s' lacks a closing ']'", Q(line + skip));
	else
		fail(p, -EINVAL, "expected name = value, not '%s'", Q(line + skip));
}

/* What the file says as a whole, once every line is read: libinih's
 * syntax error (R, its line), and the keys that must agree. */
static void check_whole(struct parse *p, struct config *t, int r)
{
	if (r == -2) { /* libinih built to allocate its line buffer */
		p->fail_line = p->lineno = 0;
		fail(p, -ENOMEM, "out of memory");
	} else if (p->top_only) {
		return; /* syntax is config_load()'s to say */
	} else if (r > 0 && (!p->fail_line || (unsigned)r < p->fail_line)) {
		syntax_error(p, (unsigned)r);
	} else if (!p->fail_line && t->max_shell_sessions < t->max_running + 1 && !p->shell_line) {
		/* As the reference: a subagent each, and the lead agent's. */
		t->max_shell_sessions = t->max_running + 1;
	} else if (!p->fail_line && t->max_shell_sessions < t->max_running + 1) {
		/* Blame the later of the two lines: the one that broke it. */
		p->lineno = p->running_line > p->shell_line ? p->running_line : p->shell_line;
		fail(p, -EINVAL, "max_shell_sessions (%u) must be at least max_running + 1 (%u)",
		     t->max_shell_sessions, t->max_running + 1);
	} else if (!p->fail_line &&
		   (uint64_t)t->sandbox_uid_base + t->sandbox_uid_count > 0x80000000ull) {
		p->lineno = 0;
		fail(p, -EINVAL, "sandbox_uid_base + sandbox_uid_count must stay below 2^31");
	}
}

static int load(const char *path, struct config *c, bool top_only, char *err, size_t errlen)
{
	_cleanup_(fclosep) FILE *f = NULL;
	struct config t;
	struct parse p = { .c = &t, .top_only = top_only };
	int r;

	config_defaults(c);
	if (err && errlen)
		err[0] = '\0';
	f = fopen(path, "re");
	if (!f) {
		r = neg_errno();
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	p.f = f;
	config_defaults(&t);
	r = ini_parse_stream(read_line, &p, on_pair, &p);
	if (p.ioerr) {
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path, strerror(-p.ioerr));
		config_free(&t);
		return p.ioerr;
	}
	check_whole(&p, &t, r);
	if (p.fail_line || p.fail) {
		if (err && errlen) {
			if (p.fail_line && !top_only)
				snprintf(err, errlen, "%s:%u: %s", path, p.fail_line, p.why);
			else
				snprintf(err, errlen, "%s: %s", path, p.why);
		}
		if (!top_only) {
			config_free(&t);
			return p.fail;
		}
	}
	*c = t;
	return p.fail;
}

int config_load(const char *path, struct config *c, char *err, size_t errlen)
{
	return load(path, c, false, err, errlen);
}

int config_load_top(const char *path, struct config *c, char *err, size_t errlen)
{
	return load(path, c, true, err, errlen);
}
