/* session.c - see session.h. */
#include "session.h"
#include "jsonrpc.h"
#include "tools.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "exec/client.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* The protocol versions served, newest first: a client asking for
 * another gets the newest (it may then hang up). */
static const char *const versions[] = { "2025-11-25", "2025-06-18" };

/* RFC 5424's levels as MCP names them, least severe first. */
static const char *const levels[] = { "debug", "info",	   "notice", "warning",
				      "error", "critical", "alert",  "emergency" };
#define LEVELS (sizeof(levels) / sizeof(levels[0]))

#define ROOTS_MAX 64

struct mcp_call {
	struct mcp_session *s;
	json_t *id;		  /* the request's */
	json_t *token;		  /* its progress token, or NULL */
	char *name;		  /* the tool's */
	json_t *args;		  /* its arguments (an object) */
	struct client_conn *conn; /* what serves it, while it does */
	bool cancelled;
	unsigned progress; /* notifications sent */
	struct mcp_call *next;
};

struct mcp_session {
	const struct mcp_config *cfg;
	mcp_send_fn *send;
	void *arg;

	pthread_mutex_t lock; /* everything below */
	pthread_cond_t idle;  /* signalled when a call ends */
	bool initialized;     /* initialize answered */
	bool client_roots;    /* the client can list roots */
	size_t log_level;     /* index in levels[]: what the client wants */
	char *roots[ROOTS_MAX];
	size_t nroots;
	struct mcp_call *calls;
	int64_t roots_asked; /* the id of our latest roots/list request */

	char scope[40];		   /* "mcp-" and 32 hex digits */
	int64_t run;		   /* 0: none */
	struct client_conn *lease; /* holds the view while it is open */
	struct client_pool *pool;  /* the calls' connections to the broker */
};

/* Sends MSG, which answers or concerns the client's request ABOUT (NULL:
 * none, as a log message or a question of ours). */
static void send_msg(struct mcp_session *s, json_t *msg, json_t *about)
{
	if (msg)
		s->send(s->arg, msg, about);
}

/* ---- the calls a tool sees ----------------------------------------------- */

const struct mcp_config *mcp_call_config(const struct mcp_call *c)
{
	return c->s->cfg;
}

const char *mcp_call_scope(const struct mcp_call *c)
{
	return c->s->scope;
}

int64_t mcp_call_run(const struct mcp_call *c)
{
	pthread_mutex_lock(&c->s->lock);
	int64_t run = c->s->run;
	pthread_mutex_unlock(&c->s->lock);
	return run;
}

bool mcp_call_within_roots(const struct mcp_call *c, const char *path)
{
	struct mcp_session *s = c->s;
	bool within;

	pthread_mutex_lock(&s->lock);
	within = s->nroots == 0;
	for (size_t i = 0; i < s->nroots && !within; i++) {
		size_t n = strlen(s->roots[i]);
		within = !strncmp(path, s->roots[i], n) && (path[n] == '\0' || path[n] == '/');
	}
	pthread_mutex_unlock(&s->lock);
	return within;
}

void mcp_call_progress(struct mcp_call *c, const char *message)
{
	if (!c->token)
		return;
	send_msg(c->s,
		 jsonrpc_notification("notifications/progress",
				      json_pack("{s:O, s:I, s:s}", "progressToken", c->token,
						"progress", (json_int_t)++c->progress, "message",
						message)),
		 c->id);
}

int mcp_call_connect(struct mcp_call *c, struct client_conn **out, struct error *e)
{
	struct mcp_session *s = c->s;
	struct client_conn *conn;
	int r = client_pool_take(s->pool, &conn, e);

	if (r < 0)
		return r;
	pthread_mutex_lock(&s->lock);
	bool cancelled = c->cancelled;
	if (!cancelled)
		c->conn = conn;
	pthread_mutex_unlock(&s->lock);
	if (cancelled) {
		client_pool_give(s->pool, conn, true); /* it carried nothing */
		return error_set(e, -ECANCELED, "cancelled");
	}
	*out = conn;
	return 0;
}

void mcp_call_disconnect(struct mcp_call *c, struct client_conn *conn, bool done)
{
	struct mcp_session *s = c->s;

	pthread_mutex_lock(&s->lock);
	c->conn = NULL;
	/* A cancellation shut the connection down: it is done for. */
	bool cancelled = c->cancelled;
	pthread_mutex_unlock(&s->lock);
	client_pool_give(s->pool, conn, done && !cancelled);
}

static size_t level_index(const char *name)
{
	for (size_t i = 0; i < LEVELS; i++)
		if (!strcmp(levels[i], name))
			return i;
	return LEVELS;
}

static void session_vlog(struct mcp_session *s, const char *level, const char *fmt, va_list ap)
{
	char text[1024];

	vsnprintf(text, sizeof(text), fmt, ap);
	fprintf(stderr, "sbx: mcp: %s\n", text);
	pthread_mutex_lock(&s->lock);
	bool wanted = s->initialized && level_index(level) >= s->log_level;
	pthread_mutex_unlock(&s->lock);
	if (wanted)
		send_msg(s,
			 jsonrpc_notification("notifications/message",
					      json_pack("{s:s, s:s, s:s}", "level", level, "logger",
							"sbx", "data", text)),
			 NULL);
}

static void session_log(struct mcp_session *s, const char *level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void session_log(struct mcp_session *s, const char *level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	session_vlog(s, level, fmt, ap);
	va_end(ap);
}

void mcp_call_log(struct mcp_call *c, const char *level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	session_vlog(c->s, level, fmt, ap);
	va_end(ap);
}

/* ---- the session's lease and run ----------------------------------------- */

/* Begins a run for S (its last one ended): 0, or -errno (E). */
static int session_begin_run(struct mcp_session *s, struct error *e)
{
	const struct mcp_config *cfg = s->cfg;
	json_auto_t *begin = json_pack("{s:s, s:s, s:s}", "op", "run_begin", "user", cfg->user,
				       "thread", cfg->thread);
	json_auto_t *begun = client_call(cfg->home, begin, e);
	int64_t run = client_ok(begun) ? json_integer_value(json_object_get(begun, "run")) : 0;

	if (begun && !run)
		client_reply_error(begun, e);
	pthread_mutex_lock(&s->lock);
	s->run = run;
	pthread_mutex_unlock(&s->lock);
	return run ? 0 : -EPROTO;
}

int mcp_call_new_run(struct mcp_call *c)
{
	struct error e;
	int r = session_begin_run(c->s, &e);

	if (r < 0)
		session_log(c->s, "warning", "cannot begin the session's next run: %s", e.text);
	return r;
}

/* Takes the lease, on a connection kept open for as long as the session
 * lasts: the broker gives it back when that connection ends, whoever
 * ends it. Then the run. 0, or -errno (E). */
static int session_open(struct mcp_session *s, struct error *e)
{
	const struct mcp_config *cfg = s->cfg;
	int r = client_open(cfg->home, &s->lease, e);
	json_auto_t *reply = NULL;

	if (r < 0)
		return r;
	json_auto_t *req = json_pack("{s:s, s:s, s:s, s:s, s:b}", "op", "acquire", "user",
				     cfg->user, "thread", cfg->thread, "owner", s->scope, "hold",
				     true);
	r = client_send(s->lease, req, e);
	if (r == 0 && !(reply = client_final(s->lease, NULL, NULL, e)))
		r = -ECONNRESET;
	if (r == 0 && !client_ok(reply))
		r = client_reply_error(reply, e);
	if (r < 0) {
		client_close(s->lease);
		s->lease = NULL;
		return r;
	}
	if (cfg->run && session_begin_run(s, e) < 0)
		session_log(s, "warning", "the session has no run: %s", e->text);
	return 0;
}

static void session_close(struct mcp_session *s)
{
	struct error e;

	if (s->run) {
		json_auto_t *req = json_pack("{s:s, s:I}", "op", "run_end", "run",
					     (json_int_t)s->run);
		json_auto_t *reply = client_call(s->cfg->home, req, &e);
		if (!client_ok(reply)) {
			if (reply)
				client_reply_error(reply, &e);
			fprintf(stderr, "sbx: mcp: cannot end run %lld: %s\n", (long long)s->run,
				e.text);
		}
	}
	client_close(s->lease); /* the broker gives the lease back */
}

/* ---- methods --------------------------------------------------------------- */

static json_t *on_initialize(struct mcp_session *s, json_t *id, json_t *params)
{
	const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
	const char *version = versions[0];
	struct error e;

	if (!asked)
		return jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
				     "initialize: \"protocolVersion\" must be a string");
	pthread_mutex_lock(&s->lock);
	bool again = s->initialized;
	pthread_mutex_unlock(&s->lock);
	if (again)
		return jsonrpc_error(id, JSONRPC_INVALID_REQUEST,
				     "the session is initialized already");
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		if (!strcmp(asked, versions[i]))
			version = versions[i];
	if (session_open(s, &e) < 0)
		return jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, "cannot open thread %s/%s: %s",
				     s->cfg->user, s->cfg->thread, e.text);

	pthread_mutex_lock(&s->lock);
	s->initialized = true;
	s->client_roots = json_object_get(json_object_get(params, "capabilities"), "roots");
	pthread_mutex_unlock(&s->lock);
	char instructions[512];
	snprintf(instructions, sizeof(instructions),
		 "Files of thread %s are under /mnt/user-data/{workspace,uploads,outputs} "
		 "(writable), /mnt/skills and /mnt/acp-workspace (read-only). Read a file before "
		 "you change it: a write to a file you have not read in its current version is "
		 "refused.%s",
		 s->cfg->thread,
		 s->run ? " Everything this session changes is one run: the changes tool shows it, "
			  "undo takes it back."
			: "");
	return jsonrpc_result(id, json_pack("{s:s, s:{s:{s:b}, s:{}}, s:{s:s, s:s, s:s}, s:s}",
					    "protocolVersion", version, "capabilities", "tools",
					    "listChanged", false, "logging", "serverInfo", "name",
					    "sbx-mcp", "title", "sbxfs", "version", SBX_VERSION,
					    "instructions", instructions));
}

/* Asks the client for its roots (the answer comes as a response). */
static void ask_roots(struct mcp_session *s)
{
	pthread_mutex_lock(&s->lock);
	bool ask = s->client_roots;
	int64_t n = ++s->roots_asked;
	pthread_mutex_unlock(&s->lock);
	if (!ask)
		return;
	char id[32];
	snprintf(id, sizeof(id), "sbx-roots-%lld", (long long)n);
	json_auto_t *rid = json_string(id); /* jsonrpc_request() takes its own reference */
	send_msg(s, jsonrpc_request(rid, "roots/list", NULL), NULL);
}

/* Whether PATH has a ".." component. */
static bool climbs(const char *path)
{
	for (const char *p = path; (p = strstr(p, "..")); p += 2)
		if ((p == path || p[-1] == '/') && (p[2] == '\0' || p[2] == '/'))
			return true;
	return false;
}

/* The virtual path of a root's URI, "file:///mnt/..." (percent escapes
 * decoded), into OUT; false if it is not one. */
static bool root_path(const char *uri, char *out, size_t size)
{
	size_t n = 0;

	if (strncmp(uri, "file://", 7))
		return false;
	for (const char *p = uri + 7; *p && n + 1 < size; p++) {
		unsigned hex;
		if (*p == '%' && sscanf(p + 1, "%2x", &hex) == 1 && hex) {
			out[n++] = (char)hex;
			p += 2;
		} else {
			out[n++] = *p;
		}
	}
	out[n] = '\0';
	while (n > 1 && out[n - 1] == '/')
		out[--n] = '\0';
	return !strncmp(out, "/mnt/", 5) && !climbs(out);
}

/* The client's roots: those inside the view narrow what the file tools
 * reach; others cannot widen it and are ignored (a client's own working
 * directory, say). */
static void on_roots(struct mcp_session *s, json_t *result)
{
	json_t *roots = json_object_get(result, "roots"), *root;
	size_t i, kept = 0, ignored = 0;
	char *next[ROOTS_MAX];

	json_array_foreach (roots, i, root) {
		char path[4096];
		const char *uri = json_string_value(json_object_get(root, "uri"));
		if (kept < ROOTS_MAX && uri && root_path(uri, path, sizeof(path)) &&
		    (next[kept] = strdup(path)))
			kept++;
		else
			ignored++;
	}
	pthread_mutex_lock(&s->lock);
	for (i = 0; i < s->nroots; i++)
		free(s->roots[i]);
	memcpy(s->roots, next, kept * sizeof(*next));
	s->nroots = kept;
	pthread_mutex_unlock(&s->lock);
	session_log(s, "info",
		    "client roots: %zu inside the view narrow the file tools, %zu ignored", kept,
		    ignored);
}

static json_t *on_set_level(struct mcp_session *s, json_t *id, json_t *params)
{
	const char *level = json_string_value(json_object_get(params, "level"));
	size_t i = level ? level_index(level) : LEVELS;

	if (i == LEVELS)
		return jsonrpc_error(
			id, JSONRPC_INVALID_PARAMS,
			"logging/setLevel: \"level\" must be one of debug, info, notice, "
			"warning, error, critical, alert, emergency");
	pthread_mutex_lock(&s->lock);
	s->log_level = i;
	pthread_mutex_unlock(&s->lock);
	return jsonrpc_result(id, json_object());
}

static void call_free(struct mcp_call *c)
{
	json_decref(c->id);
	json_decref(c->token);
	json_decref(c->args);
	free(c->name);
	free(c);
}

static void *call_thread(void *arg)
{
	struct mcp_call *c = arg;
	struct mcp_session *s = c->s;
	json_t *result = mcp_tool_run(c, c->name, c->args);

	pthread_mutex_lock(&s->lock);
	bool cancelled = c->cancelled;
	pthread_mutex_unlock(&s->lock);
	/* A cancelled request gets no response (the client forgot it). */
	if (!cancelled)
		send_msg(s, jsonrpc_result(c->id, result), c->id);
	else
		json_decref(result);
	/* Off the list last, in the section that says so: once it is empty
	 * mcp_session_end() frees S, which this thread touches no more. */
	pthread_mutex_lock(&s->lock);
	for (struct mcp_call **p = &s->calls; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->lock);
	call_free(c);
	return NULL;
}

static json_t *on_call(struct mcp_session *s, json_t *id, json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *args = json_object_get(params, "arguments");

	if (!name)
		return jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
				     "tools/call: \"name\" must be a string");
	if (!mcp_tool_known(s->cfg->profile, name))
		return jsonrpc_error(id, JSONRPC_INVALID_PARAMS, "Unknown tool: %s", name);
	if (args && !json_is_object(args))
		return jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
				     "tools/call: \"arguments\" must be an object");
	struct mcp_call *c = calloc(1, sizeof(*c));
	if (!c || !(c->name = strdup(name))) {
		free(c);
		return jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, "out of memory");
	}
	c->s = s;
	c->id = json_incref(id);
	c->args = args ? json_incref(args) : json_object();
	c->token = json_incref(json_object_get(json_object_get(params, "_meta"), "progressToken"));

	pthread_attr_t attr;
	pthread_t t;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&s->lock);
	c->next = s->calls;
	s->calls = c;
	int r = pthread_create(&t, &attr, call_thread, c);
	if (r != 0)
		s->calls = c->next;
	pthread_mutex_unlock(&s->lock);
	pthread_attr_destroy(&attr);
	if (r != 0) {
		call_free(c);
		return jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, "cannot start the call: %s",
				     strerror(r));
	}
	return NULL; /* the call's thread answers */
}

/* notifications/cancelled: the call stops (its broker connection ends,
 * and with it any command) and is never answered. */
static void on_cancelled(struct mcp_session *s, json_t *params)
{
	json_t *id = json_object_get(params, "requestId");

	pthread_mutex_lock(&s->lock);
	for (struct mcp_call *c = s->calls; c; c = c->next)
		if (id && json_equal(c->id, id)) {
			c->cancelled = true;
			if (c->conn)
				client_cancel(c->conn);
		}
	pthread_mutex_unlock(&s->lock);
}

static json_t *on_request(struct mcp_session *s, const char *method, json_t *id, json_t *params)
{
	if (!strcmp(method, "initialize"))
		return on_initialize(s, id, params);
	if (!strcmp(method, "ping"))
		return jsonrpc_result(id, json_object());
	pthread_mutex_lock(&s->lock);
	bool initialized = s->initialized;
	pthread_mutex_unlock(&s->lock);
	if (!initialized)
		return jsonrpc_error(id, JSONRPC_INVALID_REQUEST,
				     "%s before initialize: the session is not initialized",
				     method);
	if (!strcmp(method, "tools/list"))
		return jsonrpc_result(id,
				      json_pack("{s:o}", "tools", mcp_tools_list(s->cfg->profile)));
	if (!strcmp(method, "tools/call"))
		return on_call(s, id, params);
	if (!strcmp(method, "logging/setLevel"))
		return on_set_level(s, id, params);
	return jsonrpc_error(id, JSONRPC_METHOD_NOT_FOUND, "Method not found: %s", method);
}

static void on_notification(struct mcp_session *s, const char *method, json_t *params)
{
	if (!strcmp(method, "notifications/initialized") ||
	    !strcmp(method, "notifications/roots/list_changed"))
		ask_roots(s);
	else if (!strcmp(method, "notifications/cancelled"))
		on_cancelled(s, params);
	/* Others (progress of ours, unknown ones) need nothing. */
}

static void on_response(struct mcp_session *s, json_t *msg)
{
	const char *id = json_string_value(json_object_get(msg, "id"));
	char latest[32];

	pthread_mutex_lock(&s->lock);
	snprintf(latest, sizeof(latest), "sbx-roots-%lld", (long long)s->roots_asked);
	pthread_mutex_unlock(&s->lock);
	/* Only the answer to the latest question counts. */
	if (id && !strcmp(id, latest) && json_object_get(msg, "result"))
		on_roots(s, json_object_get(msg, "result"));
}

void mcp_session_receive(struct mcp_session *s, const char *text, size_t len)
{
	json_error_t jerr;
	json_auto_t *msg = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);

	if (!msg) {
		send_msg(s, jsonrpc_error(NULL, JSONRPC_PARSE_ERROR, "Parse error: %s", jerr.text),
			 NULL);
		return;
	}
	mcp_session_handle(s, msg);
}

void mcp_session_handle(struct mcp_session *s, json_t *msg)
{
	const char *why = NULL;
	enum jsonrpc_kind kind = jsonrpc_classify(msg, &why);
	json_t *id = json_object_get(msg, "id");
	const char *method = json_string_value(json_object_get(msg, "method"));
	json_t *params = json_object_get(msg, "params");

	switch (kind) {
	case JSONRPC_REQUEST:
		send_msg(s, on_request(s, method, id, params), id);
		break;
	case JSONRPC_NOTIFICATION:
		on_notification(s, method, params);
		break;
	case JSONRPC_RESPONSE:
		on_response(s, msg);
		break;
	case JSONRPC_INVALID:
		id = json_is_string(id) || json_is_integer(id) ? id : NULL;
		send_msg(s, jsonrpc_error(id, JSONRPC_INVALID_REQUEST, "Invalid Request: %s", why),
			 id);
		break;
	}
}

bool mcp_version_supported(const char *version)
{
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		if (!strcmp(version, versions[i]))
			return true;
	return false;
}

/* ---- life ------------------------------------------------------------------ */

struct mcp_session *mcp_session_new(const struct mcp_config *cfg, mcp_send_fn *send, void *arg)
{
	struct mcp_session *s = calloc(1, sizeof(*s));
	unsigned char rnd[16];

	if (!s)
		return NULL;
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		free(s);
		return NULL;
	}
	int n = snprintf(s->scope, sizeof(s->scope), "mcp-");
	for (size_t i = 0; i < sizeof(rnd); i++)
		n += snprintf(s->scope + n, sizeof(s->scope) - (size_t)n, "%02x", rnd[i]);
	if (!(s->pool = client_pool_new(cfg->home))) {
		free(s);
		return NULL;
	}
	s->cfg = cfg;
	s->send = send;
	s->arg = arg;
	s->log_level = level_index("info");
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->idle, NULL);
	return s;
}

size_t mcp_session_calls(struct mcp_session *s)
{
	size_t n = 0;

	pthread_mutex_lock(&s->lock);
	for (struct mcp_call *c = s->calls; c; c = c->next)
		n++;
	pthread_mutex_unlock(&s->lock);
	return n;
}

void mcp_session_end(struct mcp_session *s)
{
	pthread_mutex_lock(&s->lock);
	for (struct mcp_call *c = s->calls; c; c = c->next) {
		c->cancelled = true;
		if (c->conn)
			client_cancel(c->conn);
	}
	while (s->calls)
		pthread_cond_wait(&s->idle, &s->lock);
	bool opened = s->initialized;
	pthread_mutex_unlock(&s->lock);
	if (opened)
		session_close(s);
	client_pool_free(s->pool);
	for (size_t i = 0; i < s->nroots; i++)
		free(s->roots[i]);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->idle);
	free(s);
}
