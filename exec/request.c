/* request.c - see request.h. */
#include "request.h"
#include "common/clock.h"
#include "env.h"
#include "common/ids.h"
#include "store/receipt.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char **code, const char *c, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int fail(const char **code, const char *c, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	*code = c;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* String field KEY of O: *OUT, or NULL if absent and not REQUIRED.
 * False (with the message in ERR) if it is not a string without NUL. */
static bool str_field(json_t *o, const char *key, bool required, const char **out, char *err,
		      size_t errlen)
{
	json_t *v = json_object_get(o, key);

	*out = NULL;
	if (!v && !required)
		return true;
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
		snprintf(err, errlen, "'%s' must be a string without NUL%s", key,
			 v ? "" : " (missing)");
		return false;
	}
	*out = json_string_value(v);
	return true;
}

/* Boolean field KEY of O: *OUT, false if absent. False (with the
 * message in ERR) if it is neither true nor false. */
static bool bool_field(json_t *o, const char *key, bool *out, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	*out = json_is_true(v);
	if (!v || json_is_boolean(v))
		return true;
	snprintf(err, errlen, "'%s' must be true or false", key);
	return false;
}

/* Count field KEY of O, 1 to MAX: *OUT, 0 if absent or null. False
 * (with the message in ERR, which calls it WHAT) if it is anything
 * else. */
static bool count_field(json_t *o, const char *key, long long max, const char *what, long long *out,
			char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	*out = 0;
	if (!v || json_is_null(v))
		return true;
	if (json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) <= max) {
		*out = json_integer_value(v);
		return true;
	}
	snprintf(err, errlen, "'%s' must be %s from 1 to %lld", key, what, max);
	return false;
}

/* Seconds (timeout, idle_timeout): whole, 1 to 86400; 0 if absent. */
static bool seconds_field(json_t *o, const char *key, unsigned *out, char *err, size_t errlen)
{
	long long n;
	bool ok = count_field(o, key, 86400, "whole seconds", &n, err, errlen);

	*out = (unsigned)n;
	return ok;
}

/* The message is in ERR already. */
static int bad_request(const char **code)
{
	*code = "bad_request";
	return -EINVAL;
}

static const struct {
	const char *name;
	enum request_op op;
} ops[] = {
	{ "ping", REQ_PING },
	{ "acquire", REQ_ACQUIRE },
	{ "release", REQ_RELEASE },
	{ "exec", REQ_EXEC },
	{ "status", REQ_STATUS },
	{ "shutdown", REQ_SHUTDOWN },
	{ "present", REQ_PRESENT },
	{ "watch", REQ_WATCH },
	{ "run_begin", REQ_RUN_BEGIN },
	{ "run_end", REQ_RUN_END },
	{ "run_undo", REQ_RUN_UNDO },
	{ "restore", REQ_RESTORE },
	{ "run_changes", REQ_RUN_CHANGES },
	{ "tool", REQ_TOOL },
	{ "open", REQ_OPEN },
	{ "session_open", REQ_SESSION_OPEN },
	{ "session_close", REQ_SESSION_CLOSE },
};

/* The run a request names (present, run_end, run_undo). */
static int parse_run(struct request *r, const char **code, char *err, size_t errlen)
{
	json_t *run = json_object_get(r->root, "run");

	if (!json_is_integer(run) || json_integer_value(run) < 1)
		return fail(code, "bad_request", err, errlen,
			    "'run' must be a run id (a number from sbx run begin)");
	r->run = json_integer_value(run);
	return 0;
}

/* A run's presentation (docs/protocol.md): which paths are acceptable is
 * the broker's to say, once it knows the run's thread. */
static int parse_present(struct request *r, const char **code, char *err, size_t errlen)
{
	json_t *o = r->root, *paths = json_object_get(o, "paths"), *p;
	size_t i;

	if (parse_run(r, code, err, errlen) < 0)
		return -EINVAL;
	if (!str_field(o, "tool", false, &r->tool, err, errlen))
		return bad_request(code);
	if (!r->tool)
		r->tool = RECEIPT_TOOL_DEFAULT;
	if (!*r->tool || strlen(r->tool) > RECEIPT_TOOL_MAX)
		return fail(code, "bad_request", err, errlen, "'tool' must have 1 to %d characters",
			    RECEIPT_TOOL_MAX);
	if (!json_is_array(paths) || json_array_size(paths) < 1 ||
	    json_array_size(paths) > RECEIPT_PATHS_MAX)
		return fail(code, "bad_request", err, errlen,
			    "'paths' must be an array of 1 to %d strings", RECEIPT_PATHS_MAX);
	r->paths = calloc(json_array_size(paths), sizeof(*r->paths));
	if (!r->paths)
		return fail(code, "internal", err, errlen, "out of memory");
	json_array_foreach (paths, i, p) {
		if (!json_is_string(p) || strlen(json_string_value(p)) != json_string_length(p))
			return fail(code, "bad_request", err, errlen,
				    "'paths' must be an array of strings without NUL");
		r->paths[r->npaths++] = json_string_value(p);
	}
	return 0;
}

/* A run's undo (docs/protocol.md): its options, each true or false. */
static int parse_run_undo(struct request *r, const char **code, char *err, size_t errlen)
{
	static const char *const names[] = { "dry_run", "partial", "force" };
	bool *flags[] = { &r->dry_run, &r->partial, &r->force };

	if (parse_run(r, code, err, errlen) < 0)
		return -EINVAL;
	for (size_t i = 0; i < 3; i++)
		if (!bool_field(r->root, names[i], flags[i], err, errlen))
			return bad_request(code);
	if (r->partial && r->force)
		return fail(code, "bad_request", err, errlen,
			    "'partial' and 'force' exclude each other");
	return 0;
}

/* A restore (docs/protocol.md): the path, and "before" a run or "at" a
 * time, one of the two. Whether the path is one a journal names is the
 * engine's to say (run/restore.h). */
static int parse_restore(struct request *r, const char **code, char *err, size_t errlen)
{
	json_t *o = r->root, *before = json_object_get(o, "before");
	const char *at = NULL;

	if (!str_field(o, "path", true, &r->path, err, errlen) ||
	    !str_field(o, "at", false, &at, err, errlen))
		return bad_request(code);
	if (before && (!json_is_integer(before) || json_integer_value(before) < 1))
		return fail(code, "bad_request", err, errlen,
			    "'before' must be a run id (a number from sbx run begin)");
	r->before = before ? json_integer_value(before) : 0;
	if (at && time_parse(at, &r->at_ns) < 0)
		return fail(code, "bad_request", err, errlen,
			    "'at' must be a time such as 2026-12-01T19:30:00Z (UTC)");
	if (!r->before == !at)
		return fail(code, "bad_request", err, errlen, "expected one of 'before' and 'at'");
	return bool_field(o, "dry_run", &r->dry_run, err, errlen) ? 0 : bad_request(code);
}

/* A run's beginning (docs/protocol.md): how many files its first
 * snapshot may hold. */
static int parse_run_begin(struct request *r, const char **code, char *err, size_t errlen)
{
	long long max;

	if (!count_field(r->root, "max_files", REQUEST_MAX_FILES, "a number of files", &max, err,
			 errlen))
		return bad_request(code);
	r->max_files = (long)max;
	return 0;
}

/* Who calls a tool or an open: three lowercase letters, "sbx" if not
 * said (the program is named VIA:NAME, in 15 bytes). */
static int parse_via(struct request *r, const char **code, char *err, size_t errlen)
{
	if (!str_field(r->root, "via", false, &r->via, err, errlen))
		return bad_request(code);
	if (!r->via)
		r->via = "sbx";
	if (strlen(r->via) != 3 || strspn(r->via, "abcdefghijklmnopqrstuvwxyz") != 3)
		return fail(code, "bad_request", err, errlen,
			    "'via' must be three lowercase letters");
	return 0;
}

/* A file tool's call: its name and arguments, who calls it, and the set
 * its name is of. */
static int parse_tool(struct request *r, const char **code, char *err, size_t errlen)
{
	static const char *const profiles[] = {
		[TOOL_SET_REFERENCE] = "reference",
		[TOOL_SET_FILESYSTEM] = "filesystem",
		[TOOL_SET_AIO] = "aio",
	};
	const char *profile = NULL;

	if (!str_field(r->root, "name", true, &r->tool_name, err, errlen) ||
	    !str_field(r->root, "profile", false, &profile, err, errlen))
		return bad_request(code);
	r->tool_set = TOOL_SET_REFERENCE;
	while (profile && strcmp(profile, profiles[r->tool_set]))
		if (++r->tool_set > TOOL_SET_AIO)
			return fail(code, "bad_request", err, errlen,
				    "'profile' must be \"reference\", \"filesystem\" or \"aio\"");
	if (parse_via(r, code, err, errlen) < 0)
		return -EINVAL;
	r->arguments = json_object_get(r->root, "arguments");
	if (r->arguments && !json_is_object(r->arguments))
		return fail(code, "bad_request", err, errlen, "'arguments' must be an object");
	if (!bool_field(r->root, "arguments_fd", &r->arguments_fd, err, errlen))
		return bad_request(code);
	if (r->arguments && r->arguments_fd)
		return fail(code, "bad_request", err, errlen,
			    "'arguments' and 'arguments_fd' exclude each other");
	return 0;
}

/* A watch (docs/protocol.md): where to start. */
static int parse_watch(struct request *r, const char **code, char *err, size_t errlen)
{
	json_t *since = json_object_get(r->root, "since");

	r->since = -1;
	if (!since || json_is_null(since))
		return 0;
	if (!json_is_integer(since) || json_integer_value(since) < 0)
		return fail(code, "bad_request", err, errlen,
			    "'since' must be a cursor (an integer from 0, as events carry them)");
	r->since = json_integer_value(since);
	return 0;
}

static int parse_env(json_t *env, struct request *r, const char **code, char *err, size_t errlen)
{
	json_t *v;
	const char *k;

	if (!env || json_is_null(env))
		return 0;
	if (!json_is_object(env))
		return fail(code, "bad_request", err, errlen, "'env' must be an object of strings");
	r->env = calloc(json_object_size(env) + 1, sizeof(*r->env));
	if (!r->env)
		return fail(code, "internal", err, errlen, "out of memory");
	json_object_foreach (env, k, v) {
		if (!env_valid_name(k) || !json_is_string(v) ||
		    strlen(json_string_value(v)) != json_string_length(v))
			return fail(code, "bad_request", err, errlen,
				    "env: '%.64s' is not a NAME=string variable", k);
		if (asprintf(&r->env[r->nenv], "%s=%s", k, json_string_value(v)) < 0) {
			r->env[r->nenv] = NULL;
			return fail(code, "internal", err, errlen, "out of memory");
		}
		r->nenv++;
	}
	return 0;
}

/* A scope (exec, session_open, session_close): 1 to 256 characters. */
static int parse_scope(struct request *r, bool required, const char **code, char *err,
		       size_t errlen)
{
	if (!str_field(r->root, "scope", required, &r->scope, err, errlen))
		return bad_request(code);
	if (r->scope && (!*r->scope || strlen(r->scope) > 256))
		return fail(code, "bad_request", err, errlen,
			    "'scope' must have 1 to 256 characters");
	return 0;
}

/* Where a command or a shell starts, and in which mode (exec,
 * session_open). */
static int parse_start(struct request *r, const char **code, char *err, size_t errlen)
{
	if (!str_field(r->root, "cwd", false, &r->cwd, err, errlen) ||
	    !bool_field(r->root, "host", &r->host, err, errlen))
		return bad_request(code);
	return 0;
}

static int parse_exec(struct request *r, const char **code, char *err, size_t errlen)
{
	json_t *o = r->root, *who;

	if (!str_field(o, "command", true, &r->command, err, errlen))
		return bad_request(code);
	if (!*r->command)
		return fail(code, "bad_request", err, errlen, "'command' is empty");
	if (parse_scope(r, false, code, err, errlen) < 0 || parse_start(r, code, err, errlen) < 0)
		return -EINVAL;
	if (!seconds_field(o, "timeout", &r->timeout, err, errlen) ||
	    !seconds_field(o, "idle_timeout", &r->idle_timeout, err, errlen) ||
	    !bool_field(o, "existing", &r->existing, err, errlen) ||
	    !bool_field(o, "raw", &r->raw, err, errlen))
		return bad_request(code);
	who = json_object_get(o, "channel_user_id");
	if (who && !json_is_null(who) && !json_is_string(who))
		return fail(code, "bad_request", err, errlen, "'channel_user_id' must be a string");
	if (json_is_string(who)) {
		r->channel_user_id = json_string_value(who);
		r->channel_user_id_len = json_string_length(who);
	}
	if (parse_env(json_object_get(o, "env"), r, code, err, errlen) < 0)
		return -EINVAL;
	/* Explicit variables make a command one-off (docs/protocol.md). */
	bool in_scope = r->scope && r->nenv == 0;
	if (r->existing && !in_scope)
		return fail(code, "bad_request", err, errlen,
			    "'existing' needs a 'scope', and no 'env'");
	if (r->cwd && in_scope)
		return fail(code, "bad_request", err, errlen,
			    "'cwd' is for one-off commands and session_open: a scope's shell keeps"
			    " its own working directory");
	return 0;
}

/* session_open (a scope, where its shell starts, the mode) and
 * session_close (a scope). */
static int parse_session(struct request *r, const char **code, char *err, size_t errlen)
{
	if (parse_scope(r, true, code, err, errlen) < 0)
		return -EINVAL;
	return r->op == REQ_SESSION_OPEN ? parse_start(r, code, err, errlen) : 0;
}

/* NAME of R: true or false (or absent: false), and only for acquire. */
static int acquire_flag(struct request *r, const char *name, bool *out, const char **code,
			char *err, size_t errlen)
{
	json_t *v = json_object_get(r->root, name);

	if (v && (r->op != REQ_ACQUIRE || !json_is_boolean(v)))
		return fail(code, "bad_request", err, errlen,
			    "'%s' is true or false, and only for acquire", name);
	*out = json_is_true(v);
	return 0;
}

int request_parse(const char *line, size_t len, struct request *r, const char **code, char *err,
		  size_t errlen)
{
	json_error_t jerr;
	const char *op, *why;

	memset(r, 0, sizeof(*r));
	/* NUL is allowed in strings: an identity may hold one (and is then
	 * refused); every other field is checked for it. */
	r->root = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	if (!r->root || !json_is_object(r->root))
		return fail(code, "bad_request", err, errlen, "not a JSON object: %s",
			    r->root ? "another JSON value" : jerr.text);
	r->id = json_object_get(r->root, "id");
	op = json_string_value(json_object_get(r->root, "op"));
	if (!op)
		return fail(code, "bad_request", err, errlen, "'op' must be a string");
	size_t i = 0;
	while (i < sizeof(ops) / sizeof(*ops) && strcmp(ops[i].name, op))
		i++;
	if (i == sizeof(ops) / sizeof(*ops))
		return fail(code, "unknown_op", err, errlen,
			    "unknown op '%.64s' (ping, acquire, release, exec, session_open,"
			    " session_close, present, run_begin, run_end, run_changes, run_undo,"
			    " restore, status, shutdown, tool, open, watch)",
			    op);
	r->op = ops[i].op;
	if (r->op == REQ_PING || r->op == REQ_STATUS || r->op == REQ_SHUTDOWN)
		return 0;
	if (r->op == REQ_PRESENT) /* the run names its thread */
		return parse_present(r, code, err, errlen);
	if (r->op == REQ_RUN_END || r->op == REQ_RUN_CHANGES)
		return parse_run(r, code, err, errlen);
	if (r->op == REQ_RUN_UNDO)
		return parse_run_undo(r, code, err, errlen);
	if (!str_field(r->root, "user", true, &r->user, err, errlen) ||
	    !str_field(r->root, "thread", true, &r->thread, err, errlen))
		return bad_request(code);
	if (user_id_check(r->user, &why) < 0)
		return fail(code, "bad_request", err, errlen, "invalid user id: %s", why);
	if (thread_id_check(r->thread, &why) < 0)
		return fail(code, "bad_request", err, errlen, "invalid thread id: %s", why);
	if (r->op == REQ_EXEC)
		return parse_exec(r, code, err, errlen);
	if (r->op == REQ_RESTORE)
		return parse_restore(r, code, err, errlen);
	if (r->op == REQ_WATCH)
		return parse_watch(r, code, err, errlen);
	if (r->op == REQ_TOOL)
		return parse_tool(r, code, err, errlen);
	if (r->op == REQ_OPEN)
		return str_field(r->root, "path", true, &r->path, err, errlen)
			       ? parse_via(r, code, err, errlen)
			       : bad_request(code);
	if (r->op == REQ_RUN_BEGIN)
		return parse_run_begin(r, code, err, errlen);
	if (r->op == REQ_SESSION_OPEN || r->op == REQ_SESSION_CLOSE)
		return parse_session(r, code, err, errlen);
	if (!str_field(r->root, "owner", true, &r->owner, err, errlen))
		return bad_request(code);
	if (!*r->owner || strlen(r->owner) > 256)
		return fail(code, "bad_request", err, errlen,
			    "'owner' must have 1 to 256 characters");
	if (acquire_flag(r, "hold", &r->hold, code, err, errlen) < 0 ||
	    acquire_flag(r, "shell", &r->shell, code, err, errlen) < 0)
		return -EINVAL;
	long long max = 0;
	if (r->op == REQ_ACQUIRE &&
	    !count_field(r->root, "max_shell_sessions", REQUEST_MAX_SHELL_SESSIONS,
			 "a number of shells", &max, err, errlen))
		return bad_request(code);
	r->max_shell_sessions = (unsigned)max;
	return 0;
}

void request_free(struct request *r)
{
	for (size_t i = 0; i < r->nenv; i++)
		free(r->env[i]);
	free(r->env);
	free(r->paths);
	json_decref(r->root);
	memset(r, 0, sizeof(*r));
}
