/* shell.c - the sandbox API's commands (aio_int.h; docs/aio.md, "Shell
 * and bash"): /v1/shell/... and /v1/bash/..., each a request to the
 * home's broker on a connection of its own (docs/protocol.md: exec,
 * session_open, session_close).
 *
 * A sandbox's shells are broker scopes: "aio:ID" the implicit shell
 * (shell/exec without an id, or with "default"), "aio:ID:shell:SID" a
 * shell session, "aio:ID:bash:SID" a bash session. The implicit one ends
 * with the sandbox (the broker ends the scope named as the lease's owner
 * at its release); the others end when deleted or closed, evicted past
 * the sandbox's max_shell_sessions, or by their own exit.
 *
 * Once a command may have run, every answer is HTTP 200 (a failure is an
 * envelope with success false): one of the API's clients resends a POST
 * on any 5xx. The only 404 is the session's "Session not found".
 */
#include "aio_int.h"
#include "reply.h"
#include "common/cleanup.h"
#include "common/ids.h"
#include "exec/client.h"
#include "exec/env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* shell/exec's output with truncate (the API's 30,000 characters). */
#define SHELL_OUTPUT_MAX 30000
/* bash/exec's max_output_length when the request gives none. */
#define BASH_OUTPUT_DEFAULT 50000
#define IMPLICIT_SESSION "default"

enum family { SHELL, BASH };

/* The broker scope of session SID (NULL or "default" of SHELL: the
 * implicit shell) of sandbox SB, into OUT: false if SID is no valid
 * session id. */
static bool scope_of(const struct aio_sandbox *sb, enum family f, const char *sid, char *out,
		     size_t size)
{
	const char *why;

	if (f == SHELL && (!sid || !strcmp(sid, IMPLICIT_SESSION))) {
		snprintf(out, size, "aio:%s", sb->id);
		return true;
	}
	if (name_id_check(sid, &why) < 0)
		return false;
	snprintf(out, size, "aio:%s:%s:%s", sb->id, f == SHELL ? "shell" : "bash", sid);
	return true;
}

/* A fresh session or command id: 32 hex digits. */
static void new_id(char out[33])
{
	unsigned char rnd[16];

	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		abort(); /* the kernel's entropy: never fails once booted */
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(out + 2 * i, 3, "%02x", rnd[i]);
}

/* The broker request of OP for sandbox SB. */
static json_t *request(const struct aio_sandbox *sb, const char *op)
{
	return json_pack("{s:s, s:s, s:s}", "op", op, "user", sb->user, "thread", sb->thread);
}

/* The broker's error code in REPLY, or "" (no reply: E says why). */
static const char *error_code(json_t *reply)
{
	const char *code =
		json_string_value(json_object_get(json_object_get(reply, "error"), "code"));

	return code ? code : "";
}

/* The answer for a broker REPLY that is not ok (NULL: no reply, E):
 * "Session not found" for no_session, else 200 with success false. */
static enum MHD_Result broker_failed(struct MHD_Connection *conn, json_t *reply,
				     const struct error *e)
{
	struct error re;

	if (!strcmp(error_code(reply), "no_session"))
		return aio_no_session(conn);
	if (reply)
		client_reply_error(reply, &re);
	return aio_fail(conn, MHD_HTTP_OK, "%s", reply ? re.text : e->text);
}

/* COMMAND run in the directory DIR first (NULL: as it is): "cd" in the
 * shell, so that it holds for a session's later commands as a terminal's
 * would. */
static char *in_dir(const char *command, const char *dir)
{
	char *q, *out;

	if (!dir)
		return strdup(command);
	if (!(q = shell_quote(dir)))
		return NULL;
	int n = asprintf(&out, "cd -- %s && {\n%s\n}", q, command);
	free(q);
	return n < 0 ? NULL : out;
}

/* TEXT's last MAX characters (UTF-8), in place. */
static void keep_tail(char *text, size_t max)
{
	size_t len = strlen(text), chars = 0, at = len;

	while (at > 0 && chars < max) {
		at--;
		if (((unsigned char)text[at] & 0xc0) != 0x80)
			chars++;
	}
	if (at > 0)
		memmove(text, text + at, len - at + 1);
}

/* TEXT's first MAX characters (UTF-8), in place. */
static void keep_head(char *text, size_t max)
{
	size_t at = 0, chars = 0;

	for (; text[at] && chars <= max; at++)
		if (((unsigned char)text[at] & 0xc0) != 0x80 && ++chars > max)
			break;
	text[at] = '\0';
}

/* Both streams in the order they came: the output events' data. */
struct combined {
	char *text;
	size_t len, cap;
	bool nomem;
};

static void combine(void *arg, json_t *event)
{
	struct combined *c = arg;
	const char *data = json_string_value(json_object_get(event, "data"));
	size_t n = data ? strlen(data) : 0;

	if (!n || c->nomem)
		return;
	if (c->len + n + 1 > c->cap) {
		size_t cap = c->cap ? c->cap : 4096;
		while (cap < c->len + n + 1)
			cap *= 2;
		char *t = realloc(c->text, cap);
		if (!t) {
			c->nomem = true;
			return;
		}
		c->text = t;
		c->cap = cap;
	}
	memcpy(c->text + c->len, data, n + 1);
	c->len += n;
}

/* What the broker's final exec REPLY says of how the command ended, in
 * the words of family F. */
static const char *status_of(json_t *reply, enum family f)
{
	if (json_is_true(json_object_get(reply, "idle_timed_out")))
		return f == SHELL ? "no_change_timeout" : "timed_out";
	if (json_is_true(json_object_get(reply, "timed_out")))
		return f == SHELL ? "hard_timeout" : "timed_out";
	if (json_is_true(json_object_get(reply, "shell_ended")))
		return f == SHELL ? "terminated" : "completed";
	if (json_object_get(reply, "killed") || json_is_true(json_object_get(reply, "stopped")))
		return f == SHELL ? "terminated" : "killed";
	return "completed";
}

/* The exit code of a command that ended by itself; null otherwise. */
static json_t *exit_code(json_t *reply, const char *status)
{
	if (strcmp(status, "completed") && strcmp(status, "terminated"))
		return json_null();
	return json_incref(json_object_get(reply, "code"));
}

/* The seconds of the first of NAMES that BODY gives (positive), or 0. */
static json_int_t seconds(json_t *body, const char *const *names)
{
	for (; *names; names++) {
		json_t *v = json_object_get(body, *names);
		if (json_is_number(v) && json_number_value(v) >= 1)
			return (json_int_t)json_number_value(v);
	}
	return 0;
}

/* POST /v1/shell/exec. */
enum MHD_Result aio_shell_exec(struct aio_call *c)
{
	static const struct aio_field fields[] = {
		{ "command", AIO_STRING, true },
		{ "id", AIO_STRING, false },
		{ "exec_dir", AIO_STRING, false },
		{ "timeout", AIO_NUMBER, false },
		{ "no_change_timeout", AIO_NUMBER, false },
		{ "hard_timeout", AIO_NUMBER, false },
		{ "truncate", AIO_BOOL, false },
	};
	static const char *const hard[] = { "hard_timeout", "timeout", NULL };
	static const char *const idle[] = { "no_change_timeout", NULL };
	struct MHD_Connection *conn = c->rq->conn;
	enum MHD_Result q;
	json_auto_t *body = aio_body(conn, c->rq->body, c->rq->len, fields,
				     sizeof(fields) / sizeof(fields[0]), &q);
	char scope[300];

	if (!body)
		return q;
	const char *command = aio_str(body, "command", NULL), *sid = aio_str(body, "id", NULL);
	if (!scope_of(c->sb, SHELL, sid, scope, sizeof(scope)))
		return aio_no_session(conn);
	bool implicit = !sid || !strcmp(sid, IMPLICIT_SESSION);
	_cleanup_(freep) char *line = in_dir(command, aio_str(body, "exec_dir", NULL));
	json_auto_t *req = request(c->sb, "exec");
	if (!line || !req)
		return aio_fail(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory");
	json_object_set_new(req, "command", json_string(line));
	json_object_set_new(req, "scope", json_string(scope));
	json_object_set_new(req, "existing", json_boolean(!implicit));
	if (seconds(body, hard))
		json_object_set_new(req, "timeout", json_integer(seconds(body, hard)));
	if (seconds(body, idle))
		json_object_set_new(req, "idle_timeout", json_integer(seconds(body, idle)));

	struct combined out = { 0 };
	struct error e = { 0 };
	json_auto_t *reply = client_call_events(c->aio->home, req, combine, &out, &e);
	if (!client_ok(reply)) {
		free(out.text);
		return broker_failed(conn, reply, &e);
	}
	const char *status = status_of(reply, SHELL);
	if (out.text && aio_bool(body, "truncate", true))
		keep_tail(out.text, SHELL_OUTPUT_MAX);
	json_t *data = json_pack("{s:s, s:s, s:s, s:s, s:o}", "session_id",
				 implicit ? IMPLICIT_SESSION : sid, "command", command, "status",
				 status, "output", out.text ? out.text : "", "exit_code",
				 exit_code(reply, status));
	free(out.text);
	return data ? aio_ok(conn, data) : aio_fail(conn, MHD_HTTP_OK, "out of memory");
}

/* session_open of family F's session SID (NULL: a new id) in DIR (NULL:
 * the workspace): the broker's reply, or NULL (E); *SCOPE_OUT and the id
 * into ID_OUT. */
static json_t *open_session(struct aio_call *c, enum family f, const char *sid, const char *dir,
			    char id_out[NAME_ID_MAX + 1], struct error *e)
{
	char scope[300], fresh[33];

	if (!sid) {
		new_id(fresh);
		sid = fresh;
	}
	if (!scope_of(c->sb, f, sid, scope, sizeof(scope))) {
		error_set(e, -EINVAL, "not a session id: 1 to 128 of A-Z a-z 0-9 . _ -");
		return NULL;
	}
	snprintf(id_out, NAME_ID_MAX + 1, "%s", sid);
	json_t *req = request(c->sb, "session_open");
	if (!req) {
		error_set(e, -ENOMEM, "out of memory");
		return NULL;
	}
	json_object_set_new(req, "scope", json_string(scope));
	if (dir)
		json_object_set_new(req, "cwd", json_string(dir));
	json_t *reply = client_call(c->aio->home, req, e);
	json_decref(req);
	return reply;
}

/* POST /v1/shell/sessions/create. */
enum MHD_Result aio_shell_create(struct aio_call *c)
{
	static const struct aio_field fields[] = {
		{ "id", AIO_STRING, false },
		{ "exec_dir", AIO_STRING, false },
	};
	struct MHD_Connection *conn = c->rq->conn;
	enum MHD_Result q;
	json_auto_t *body = aio_body(conn, c->rq->body, c->rq->len, fields,
				     sizeof(fields) / sizeof(fields[0]), &q);
	char sid[NAME_ID_MAX + 1];
	struct error e = { 0 };

	if (!body)
		return q;
	json_auto_t *reply = open_session(c, SHELL, aio_str(body, "id", NULL),
					  aio_str(body, "exec_dir", NULL), sid, &e);
	if (!reply && e.code == -EINVAL)
		return aio_fail(conn, MHD_HTTP_UNPROCESSABLE_CONTENT, "%s", e.text);
	if (!client_ok(reply))
		return broker_failed(conn, reply, &e);
	return aio_ok(conn, json_pack("{s:s, s:s}", "session_id", sid, "working_dir",
				      aio_str(reply, "cwd", "/mnt/user-data/workspace")));
}

/* session_close of family F's session SID: the answer. */
static enum MHD_Result close_session(struct aio_call *c, enum family f, const char *sid)
{
	struct MHD_Connection *conn = c->rq->conn;
	char scope[300];
	struct error e = { 0 };

	if (!scope_of(c->sb, f, sid, scope, sizeof(scope)))
		return aio_no_session(conn);
	json_auto_t *req = request(c->sb, "session_close");
	if (!req)
		return aio_fail(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory");
	json_object_set_new(req, "scope", json_string(scope));
	json_auto_t *reply = client_call(c->aio->home, req, &e);
	if (!client_ok(reply))
		return broker_failed(conn, reply, &e);
	return aio_envelope(conn, MHD_HTTP_OK, true, "Session closed", NULL);
}

/* The session id after PREFIX in the endpoint, up to SUFFIX (NULL: its
 * end), into OUT: false if the endpoint is not of that form. */
static bool id_in(const char *endpoint, const char *prefix, const char *suffix, char *out,
		  size_t size)
{
	size_t n = strlen(prefix), tail = suffix ? strlen(suffix) : 0, len = strlen(endpoint);

	if (strncmp(endpoint, prefix, n) || len <= n + tail ||
	    (suffix && strcmp(endpoint + len - tail, suffix)) || len - n - tail >= size)
		return false;
	memcpy(out, endpoint + n, len - n - tail);
	out[len - n - tail] = '\0';
	return !strchr(out, '/');
}

/* DELETE /v1/shell/sessions/{id}. */
enum MHD_Result aio_shell_delete(struct aio_call *c)
{
	char sid[NAME_ID_MAX + 2];

	if (!id_in(c->endpoint, "/v1/shell/sessions/", NULL, sid, sizeof(sid)))
		return aio_no_session(c->rq->conn);
	return close_session(c, SHELL, sid);
}

/* ---- bash ------------------------------------------------------------------------ */

/* The command of a bash session: ENV's variables exported first (a null
 * value unset), as a shell of the session keeps what it exports. */
static char *with_env(const char *command, json_t *env)
{
	const char *name;
	json_t *v;
	size_t len = strlen(command) + 1;
	char *out = malloc(len), *q;

	if (!out)
		return NULL;
	*out = '\0';
	json_object_foreach (env, name, v) {
		int n;
		char *next;
		if (!env_valid_name(name)) {
			free(out);
			errno = EINVAL;
			return NULL;
		}
		if (json_is_string(v)) {
			if (!(q = shell_quote(json_string_value(v))))
				break;
			n = asprintf(&next, "%sexport %s=%s\n", out, name, q);
			free(q);
		} else {
			n = asprintf(&next, "%sunset %s\n", out, name);
		}
		free(out);
		if (n < 0)
			return NULL;
		out = next;
	}
	if (asprintf(&q, "%s%s", out, command) < 0)
		q = NULL;
	free(out);
	return q;
}

/* A one-off's environment: ENV's string values (null ones are left
 * out: the command's environment is built, not inherited). */
static json_t *oneoff_env(json_t *env)
{
	json_t *out = json_object(), *v;
	const char *name;

	json_object_foreach (env, name, v)
		if (out && json_is_string(v))
			json_object_set(out, name, v);
	return out;
}

/* STREAM of the raw exec REPLY, cut at MAX characters. */
static json_t *stream_text(json_t *reply, const char *stream, size_t max)
{
	char *text = strdup(aio_str(reply, stream, ""));
	json_t *v;

	if (!text)
		return NULL;
	keep_head(text, max);
	v = json_string(text);
	free(text);
	return v;
}

/* POST /v1/bash/exec. */
enum MHD_Result aio_bash_exec(struct aio_call *c)
{
	static const struct aio_field fields[] = {
		{ "command", AIO_STRING, true },	 { "session_id", AIO_STRING, false },
		{ "exec_dir", AIO_STRING, false },	 { "env", AIO_OBJECT, false },
		{ "timeout", AIO_NUMBER, false },	 { "hard_timeout", AIO_NUMBER, false },
		{ "max_output_length", AIO_INT, false },
	};
	static const char *const hard[] = { "hard_timeout", "timeout", NULL };
	struct MHD_Connection *conn = c->rq->conn;
	enum MHD_Result q;
	json_auto_t *body = aio_body(conn, c->rq->body, c->rq->len, fields,
				     sizeof(fields) / sizeof(fields[0]), &q);
	char scope[300], fresh[33], command_id[33];

	if (!body)
		return q;
	const char *command = aio_str(body, "command", NULL);
	const char *sid = aio_str(body, "session_id", NULL), *dir = aio_str(body, "exec_dir", NULL);
	json_t *env = json_object_get(body, "env");
	json_auto_t *req = request(c->sb, "exec");
	_cleanup_(freep) char *line = NULL;
	if (!req)
		return aio_fail(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory");
	if (sid) {
		/* In the session's shell: the environment exported there, the
		 * directory changed there. */
		if (!scope_of(c->sb, BASH, sid, scope, sizeof(scope)))
			return aio_no_session(conn);
		_cleanup_(freep) char *cd = in_dir(command, dir);
		if (!cd || !(line = with_env(cd, json_is_object(env) ? env : NULL)))
			return aio_fail(conn, MHD_HTTP_UNPROCESSABLE_CONTENT,
					"env: variable names are POSIX names");
		json_object_set_new(req, "scope", json_string(scope));
		json_object_set_new(req, "existing", json_true());
	} else {
		new_id(fresh);
		sid = fresh;
		line = strdup(command);
		if (json_is_object(env))
			json_object_set_new(req, "env", oneoff_env(env));
		if (dir)
			json_object_set_new(req, "cwd", json_string(dir));
	}
	if (!line)
		return aio_fail(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory");
	json_object_set_new(req, "command", json_string(line));
	json_object_set_new(req, "raw", json_true());
	if (seconds(body, hard))
		json_object_set_new(req, "timeout", json_integer(seconds(body, hard)));

	struct error e = { 0 };
	json_auto_t *reply = client_call(c->aio->home, req, &e);
	if (!client_ok(reply))
		return broker_failed(conn, reply, &e);
	json_int_t max = aio_int(body, "max_output_length", BASH_OUTPUT_DEFAULT);
	const char *status = status_of(reply, BASH);
	new_id(command_id);
	json_t *data = json_pack("{s:s, s:s, s:s, s:s, s:o*, s:o*, s:o, s:i, s:i}", "session_id",
				 sid, "command_id", command_id, "command", command, "status",
				 status, "stdout", stream_text(reply, "stdout", (size_t)max),
				 "stderr", stream_text(reply, "stderr", (size_t)max), "exit_code",
				 exit_code(reply, status), "offset", 0, "stderr_offset", 0);
	return data ? aio_ok(conn, data) : aio_fail(conn, MHD_HTTP_OK, "out of memory");
}

/* Now as the API's timestamps: ISO 8601, UTC. */
static void now_iso(char out[32])
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&ts.tv_sec, &tm));
}

/* POST /v1/bash/sessions/create. */
enum MHD_Result aio_bash_create(struct aio_call *c)
{
	static const struct aio_field fields[] = {
		{ "session_id", AIO_STRING, false },
		{ "exec_dir", AIO_STRING, false },
	};
	struct MHD_Connection *conn = c->rq->conn;
	enum MHD_Result q;
	json_auto_t *body = aio_body(conn, c->rq->body, c->rq->len, fields,
				     sizeof(fields) / sizeof(fields[0]), &q);
	char sid[NAME_ID_MAX + 1], now[32];
	struct error e = { 0 };

	if (!body)
		return q;
	json_auto_t *reply = open_session(c, BASH, aio_str(body, "session_id", NULL),
					  aio_str(body, "exec_dir", NULL), sid, &e);
	if (!reply && e.code == -EINVAL)
		return aio_fail(conn, MHD_HTTP_UNPROCESSABLE_CONTENT, "%s", e.text);
	if (!client_ok(reply))
		return broker_failed(conn, reply, &e);
	now_iso(now);
	return aio_ok(conn,
		      json_pack("{s:s, s:s, s:s, s:s, s:s, s:n, s:i}", "session_id", sid, "status",
				"ready", "working_dir",
				aio_str(reply, "cwd", "/mnt/user-data/workspace"), "created_at",
				now, "last_used_at", now, "current_command", "command_count", 0));
}

/* POST /v1/bash/sessions/{id}/close. */
enum MHD_Result aio_bash_close(struct aio_call *c)
{
	char sid[NAME_ID_MAX + 2];

	if (!id_in(c->endpoint, "/v1/bash/sessions/", "/close", sid, sizeof(sid)))
		return aio_no_session(c->rq->conn);
	return close_session(c, BASH, sid);
}
