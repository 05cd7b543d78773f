/* tools.c - see tools.h. */
#include "tools.h"
#include "common/base64.h"
#include "common/cleanup.h"
#include "exec/client.h"
#include "tool/fs.h"
#include "tool/tool.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* read_media_file's largest file: its base64 travels in one JSON line. */
#define MCP_MEDIA_MAX (16 << 20)

/* How a tool is carried out. */
enum tool_kind {
	KIND_BASH,    /* the broker's exec, in the session's shell */
	KIND_PRESENT, /* the broker's present, in the session's run */
	KIND_CHANGES, /* the broker's run_changes of the session's run */
	KIND_UNDO,    /* the broker's run_undo or restore of it */
	KIND_MEDIA,   /* the broker's open, the file read here */
};

struct tool {
	const char *name, *title, *description;
	const char *input_schema; /* JSON text */
	bool read_only, destructive, idempotent;
	enum tool_kind kind;
	const char *output_schema; /* JSON text; NULL: text only */
};

static const struct tool reference_tools[] = {
	{ "bash", "Run a shell command",
	  "Runs a bash command in the thread's sandbox, in this session's own shell: the "
	  "working directory and exported variables carry over to the next call. It starts in "
	  "/mnt/user-data/workspace. Returns stdout, then stderr after 'Std Error:', and "
	  "'Exit Code: N' when the status is not 0; more than 20,000 characters are cut in the "
	  "middle. A command is stopped after its timeout (default 600 s): run a long-lived "
	  "process such as a web server in the background with its output redirected, e.g. "
	  "`your-command > /mnt/user-data/workspace/server.log 2>&1 &`.",
	  "{\"type\":\"object\",\"properties\":{"
	  "\"description\":{\"type\":\"string\",\"description\":\"Why you run it, in a few "
	  "words.\"},"
	  "\"command\":{\"type\":\"string\",\"description\":\"The command line.\"},"
	  "\"timeout\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":86400,"
	  "\"description\":\"Seconds before it is stopped (default 600).\"}},"
	  "\"required\":[\"command\"]}",
	  false, true, false, KIND_BASH, NULL },
	{ "present_files", "Present files to the user",
	  "Presents files under /mnt/user-data/outputs to the user as this run's deliverables.",
	  "{\"type\":\"object\",\"properties\":{\"filepaths\":{\"type\":\"array\","
	  "\"items\":{\"type\":\"string\"},\"minItems\":1,\"description\":\"Paths under "
	  "/mnt/user-data/outputs.\"}},\"required\":[\"filepaths\"]}",
	  false, false, true, KIND_PRESENT, NULL },
	{ "changes", "What this session changed",
	  "The change summary of this session's run so far, as the run's end would record it: "
	  "each file created, modified or deleted under /mnt/user-data/{workspace,outputs}, "
	  "with its diff and the program that changed it. format \"diff\" (the default) "
	  "gives each file's status line and unified diff as text; \"json\" the reference's "
	  "summary document.",
	  "{\"type\":\"object\",\"properties\":{\"format\":{\"type\":\"string\","
	  "\"enum\":[\"diff\",\"json\"]}}}",
	  true, false, true, KIND_CHANGES, NULL },
	{ "undo", "Take back what this session changed",
	  "Takes back this session's run: every file it created, modified, deleted or "
	  "renamed is put back as it was when the session began (or, with path, that one "
	  "file or directory only). Paths changed since by someone else are conflicts: "
	  "nothing is undone and they are listed, unless force. dry_run lists them and "
	  "changes nothing. After an undo of the whole run, the session goes on in a new "
	  "run.",
	  "{\"type\":\"object\",\"properties\":{"
	  "\"path\":{\"type\":\"string\",\"description\":\"One path under "
	  "/mnt/user-data to put back, instead of the whole run.\"},"
	  "\"dry_run\":{\"type\":\"boolean\"},\"force\":{\"type\":\"boolean\"}}}",
	  false, true, false, KIND_UNDO, NULL },
};

/* server-filesystem's read_media_file: a file's bytes, which a tool's
 * text result does not carry, read here from a descriptor the broker
 * opened in the view. */
static const struct tool filesystem_tools[] = {
	{ "read_media_file", "Read Media File",
	  "Read a file and return it as a base64-encoded content block with its MIME type. "
	  "Image and audio files are returned as image/audio content; any other file type is "
	  "returned as an embedded resource. Only works within allowed directories.",
	  "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},"
	  "\"required\":[\"path\"]}",
	  true, false, false, KIND_MEDIA,
	  "{\"type\":\"object\",\"properties\":{\"content\":{\"type\":\"array\","
	  "\"items\":{\"type\":\"object\"}}},\"required\":[\"content\"]}" },
};

/* The session's own tools of PROFILE (the file tools are tool/'s). */
static const struct tool *tools_of(enum mcp_profile profile, size_t *n)
{
	if (profile == MCP_PROFILE_FILESYSTEM) {
		*n = sizeof(filesystem_tools) / sizeof(filesystem_tools[0]);
		return filesystem_tools;
	}
	*n = sizeof(reference_tools) / sizeof(reference_tools[0]);
	return reference_tools;
}

static enum tool_set set_of(enum mcp_profile profile)
{
	return profile == MCP_PROFILE_FILESYSTEM ? TOOL_SET_FILESYSTEM : TOOL_SET_REFERENCE;
}

static const struct tool *tool_find(enum mcp_profile profile, const char *name)
{
	size_t n;
	const struct tool *t = tools_of(profile, &n);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i].name, name))
			return &t[i];
	return NULL;
}

/* A tool's listing: name, title, description, schemas, annotations. */
static json_t *tool_listing(const char *name, const char *title, const char *description,
			    const char *input, const char *output, bool read_only, bool destructive,
			    bool idempotent)
{
	json_t *t = json_pack("{s:s, s:s, s:o, s:{s:s, s:b, s:b, s:b, s:b}}", "name", name,
			      "description", description, "inputSchema", json_loads(input, 0, NULL),
			      "annotations", "title", title, "readOnlyHint", read_only,
			      "destructiveHint", destructive, "idempotentHint", idempotent,
			      "openWorldHint", false);

	if (t && title)
		json_object_set_new(t, "title", json_string(title));
	if (t && output)
		json_object_set_new(t, "outputSchema", json_loads(output, 0, NULL));
	return t;
}

json_t *mcp_tools_list(enum mcp_profile profile)
{
	size_t n, nf;
	const struct tool *t = tools_of(profile, &n);
	const struct tool_spec *fs = tool_set_specs(set_of(profile), &nf);
	json_t *list = json_array();

	for (size_t i = 0; list && i < nf; i++) {
		const struct tool_spec *f = &fs[i];
		json_array_append_new(list, tool_listing(f->name, f->title ? f->title : f->name,
							 f->description, f->input_schema,
							 f->output_schema, f->read_only,
							 f->destructive, f->idempotent));
	}
	for (size_t i = 0; list && i < n; i++)
		json_array_append_new(list, tool_listing(t[i].name, t[i].title, t[i].description,
							 t[i].input_schema, t[i].output_schema,
							 t[i].read_only, t[i].destructive,
							 t[i].idempotent));
	return list;
}

bool mcp_tool_known(enum mcp_profile profile, const char *name)
{
	return tool_set_find(set_of(profile), name) || tool_find(profile, name);
}

json_t *mcp_tool_text(const char *text, bool is_error)
{
	return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", text,
			 "isError", is_error);
}

/* A tool error: "Error: " and what E says. */
static json_t *tool_error(const struct error *e)
{
	char text[ERROR_TEXT_MAX + 16];

	snprintf(text, sizeof(text), "Error: %s", e->text);
	return mcp_tool_text(text, true);
}

/* The broker's final reply to REQ on a connection of call C's (which a
 * cancellation ends), events passed to ON_EVENT; NULL with E. */
static json_t *broker_request(struct mcp_call *c, json_t *req, int fd,
			      void (*on_event)(void *arg, json_t *event), struct error *e)
{
	struct client_conn *conn;
	json_t *reply = NULL;

	if (mcp_call_connect(c, &conn, e) < 0)
		return NULL;
	if ((fd < 0 ? client_send(conn, req, e) : client_send_passing(conn, req, fd, e)) == 0)
		reply = client_final(conn, on_event, c, e);
	mcp_call_disconnect(c, conn, reply != NULL);
	if (reply && !client_ok(reply)) {
		client_reply_error(reply, e);
		json_decref(reply);
		reply = NULL;
	}
	return reply;
}

/* An output event of a command: progress, for a client that asked. */
static void bash_progress(void *arg, json_t *event)
{
	const char *data = json_string_value(json_object_get(event, "data"));
	char message[96];

	snprintf(message, sizeof(message), "%zu bytes of output", data ? strlen(data) : 0);
	mcp_call_progress(arg, message);
}

static json_t *run_bash(struct mcp_call *c, json_t *args)
{
	const struct mcp_config *cfg = mcp_call_config(c);
	const char *command = json_string_value(json_object_get(args, "command"));
	json_t *timeout = json_object_get(args, "timeout");
	struct error e;

	if (!command)
		return mcp_tool_text("Error: \"command\" must be a string", true);
	if (timeout && (!json_is_integer(timeout) || json_integer_value(timeout) < 1 ||
			json_integer_value(timeout) > 86400))
		return mcp_tool_text("Error: \"timeout\" must be an integer from 1 to 86400", true);
	json_auto_t *req = json_pack("{s:s, s:s, s:s, s:s, s:s}", "op", "exec", "user", cfg->user,
				     "thread", cfg->thread, "command", command, "scope",
				     mcp_call_scope(c));
	if (timeout)
		json_object_set(req, "timeout", timeout);
	json_auto_t *reply = broker_request(c, req, -1, bash_progress, &e);
	if (!reply)
		return tool_error(&e);
	const char *output = json_string_value(json_object_get(reply, "output"));
	return mcp_tool_text(output ? output : "(no output)", false);
}

static json_t *run_present(struct mcp_call *c, json_t *args)
{
	json_t *paths = json_object_get(args, "filepaths");
	struct error e;

	if (!json_is_array(paths) || json_array_size(paths) == 0)
		return mcp_tool_text("Error: \"filepaths\" must be a non-empty array of paths",
				     true);
	if (!mcp_call_run(c))
		return mcp_tool_text("Error: this session has no run (sbx mcp --no-run): nothing "
				     "can be presented",
				     true);
	json_auto_t *req = json_pack("{s:s, s:I, s:O, s:s}", "op", "present", "run",
				     (json_int_t)mcp_call_run(c), "paths", paths, "tool",
				     "present_files");
	json_auto_t *reply = broker_request(c, req, -1, NULL, &e);
	if (!reply)
		return tool_error(&e);
	return mcp_tool_text("Successfully presented files", false);
}

/* The summary document DOC as text: a line per file ("modified PATH"),
 * then its diff. */
static char *changes_text(json_t *doc)
{
	json_t *files = json_object_get(doc, "files"), *f;
	char *text = NULL;
	size_t len = 0, i;
	FILE *out = open_memstream(&text, &len);

	if (!out)
		return NULL;
	if (!json_array_size(files))
		fputs("No changes.\n", out);
	json_array_foreach (files, i, f) {
		const char *diff = json_string_value(json_object_get(f, "diff"));
		fprintf(out, "%s %s\n", json_string_value(json_object_get(f, "status")),
			json_string_value(json_object_get(f, "path")));
		if (diff && *diff)
			fprintf(out, "%s\n", diff);
	}
	if (json_is_true(json_object_get(doc, "summary")
				 ? json_object_get(json_object_get(doc, "summary"), "truncated")
				 : NULL))
		fputs("(more files changed than the summary lists)\n", out);
	return fclose(out) == 0 ? text : (free(text), NULL);
}

static json_t *run_changes(struct mcp_call *c, json_t *args)
{
	const char *format = json_string_value(json_object_get(args, "format"));
	struct error e;

	if (json_object_get(args, "format") &&
	    (!format || (strcmp(format, "diff") && strcmp(format, "json"))))
		return mcp_tool_text("Error: \"format\" must be \"diff\" or \"json\"", true);
	if (!mcp_call_run(c))
		return mcp_tool_text("Error: this session has no run (sbx mcp --no-run)", true);
	json_auto_t *req = json_pack("{s:s, s:I}", "op", "run_changes", "run",
				     (json_int_t)mcp_call_run(c));
	json_auto_t *reply = broker_request(c, req, -1, NULL, &e);
	if (!reply)
		return tool_error(&e);
	json_t *doc = json_object_get(reply, "changes");
	_cleanup_(freep) char *text = format && !strcmp(format, "json")
					      ? json_dumps(doc, JSON_INDENT(1))
					      : changes_text(doc);
	return text ? mcp_tool_text(text, false) : mcp_tool_text("Error: out of memory", true);
}

/* The undo's reply REPLY as text: what it did, or its conflicts. */
static json_t *undo_text(json_t *reply, bool dry_run)
{
	json_t *conflicts = json_object_get(reply, "conflicts"), *k;
	char *text = NULL;
	size_t len = 0, i;
	FILE *out = open_memstream(&text, &len);

	if (!out)
		return mcp_tool_text("Error: out of memory", true);
	if (json_is_true(json_object_get(reply, "nothing")))
		fputs("Nothing to undo: the run changed nothing through the view.\n", out);
	else if (dry_run)
		fprintf(out, "%zu conflict(s); nothing was changed.\n", json_array_size(conflicts));
	else
		fprintf(out, "Undone (undo run %lld).\n",
			(long long)json_integer_value(json_object_get(reply, "undo")));
	json_array_foreach (conflicts, i, k)
		fprintf(out, "conflict: %s: %s\n", json_string_value(json_object_get(k, "path")),
			json_string_value(json_object_get(k, "what")));
	if (json_integer_value(json_object_get(reply, "failed")))
		fprintf(out, "%lld step(s) failed (the broker's log names them)\n",
			(long long)json_integer_value(json_object_get(reply, "failed")));
	fclose(out);
	json_t *result = mcp_tool_text(text ? text : "", false);
	free(text);
	return result;
}

static json_t *run_undo_tool(struct mcp_call *c, json_t *args)
{
	const struct mcp_config *cfg = mcp_call_config(c);
	json_t *path = json_object_get(args, "path"), *dry = json_object_get(args, "dry_run"),
	       *force = json_object_get(args, "force");
	struct error e;

	if ((path && !json_is_string(path)) || (dry && !json_is_boolean(dry)) ||
	    (force && !json_is_boolean(force)))
		return mcp_tool_text("Error: \"path\" must be a string, \"dry_run\" and \"force\" "
				     "true or false",
				     true);
	if (!mcp_call_run(c))
		return mcp_tool_text("Error: this session has no run (sbx mcp --no-run)", true);
	json_auto_t *req = path ? json_pack("{s:s, s:s, s:s, s:O, s:I, s:b}", "op", "restore",
					    "user", cfg->user, "thread", cfg->thread, "path", path,
					    "before", (json_int_t)mcp_call_run(c), "dry_run",
					    json_is_true(dry))
				: json_pack("{s:s, s:I, s:b, s:b}", "op", "run_undo", "run",
					    (json_int_t)mcp_call_run(c), "dry_run",
					    json_is_true(dry), "force", json_is_true(force));
	json_auto_t *reply = broker_request(c, req, -1, NULL, &e);
	if (!reply)
		return tool_error(&e);
	if (path)
		return mcp_tool_text(json_is_true(json_object_get(reply, "nothing"))
					     ? "Nothing to put back: the run did not change it."
				     : json_is_true(dry)
					     ? "It can be put back (dry run: nothing changed)."
					     : "Put back as it was when the run began.",
				     false);
	/* The run has ended: the session goes on in a new one. */
	if (!json_is_true(dry) && mcp_call_new_run(c) < 0)
		mcp_call_log(c, "warning", "the session goes on without a run");
	return undo_text(reply, json_is_true(dry));
}

/* Whether PATH, an argument of a tool of PROFILE, is within the roots
 * the client gave; the refusal in *REFUSAL if not. server-filesystem's
 * paths are normalised first, as its tools take them. */
static bool path_within(struct mcp_call *c, enum mcp_profile profile, json_t *path,
			json_t **refusal)
{
	const char *p = json_string_value(path);
	char text[PATH_MAX + 96];

	if (!p)
		return true;
	_cleanup_(freep) char *abs = profile == MCP_PROFILE_FILESYSTEM ? fs_absolute(p) : NULL;
	if (mcp_call_within_roots(c, abs ? abs : p))
		return true;
	snprintf(text, sizeof(text), "%sAccess denied: %s is outside the roots this client gave",
		 profile == MCP_PROFILE_FILESYSTEM ? "" : "Error: ", p);
	*refusal = mcp_tool_text(text, true);
	return false;
}

/* Whether every path argument of ARGS is within the client's roots. */
static bool within_roots(struct mcp_call *c, enum mcp_profile profile, json_t *args,
			 json_t **refusal)
{
	static const char *const keys[] = { "path", "source", "destination" };
	json_t *p;
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!path_within(c, profile, json_object_get(args, keys[i]), refusal))
			return false;
	json_array_foreach (json_object_get(args, "paths"), i, p)
		if (!path_within(c, profile, p, refusal))
			return false;
	return true;
}

/* A file tool, in the view through the broker (the program mcp:NAME). */
static json_t *run_file_tool(struct mcp_call *c, const char *name, json_t *args)
{
	const struct mcp_config *cfg = mcp_call_config(c);
	json_t *refusal = NULL;
	struct error e;

	if (!within_roots(c, cfg->profile, args, &refusal))
		return refusal;
	/* A write's content may be past a protocol line: then the
	 * arguments go in a memfd. */
	size_t len = json_dumpb(args, NULL, 0, JSON_COMPACT);
	bool passed = len > CLIENT_ARGS_INLINE_MAX;
	_cleanup_(closep) int fd = passed ? client_args_memfd(args) : -1;
	if (passed && fd < 0)
		return mcp_tool_text("Error: cannot pass the arguments to the broker", true);
	json_auto_t *req =
		json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "op", "tool", "user", cfg->user,
			  "thread", cfg->thread, "name", name, "via", "mcp", "profile",
			  cfg->profile == MCP_PROFILE_FILESYSTEM ? "filesystem" : "reference");
	if (!req || json_object_set(req, passed ? "arguments_fd" : "arguments",
				    passed ? json_true() : args) < 0)
		return mcp_tool_text("Error: out of memory", true);
	json_auto_t *reply = broker_request(c, req, fd, NULL, &e);
	if (!reply)
		return tool_error(&e);
	bool is_error = json_is_true(json_object_get(reply, "is_error"));
	const char *text = json_string_value(json_object_get(reply, "text"));
	json_t *result = mcp_tool_text(text ? text : "", is_error);
	json_t *structured = json_object_get(reply, "structured");
	if (result && !is_error && json_is_object(structured))
		json_object_set(result, "structuredContent", structured);
	return result;
}

/* The MIME type server-filesystem gives a file by its extension. */
static const char *media_type(const char *path)
{
	static const char *const types[][2] = {
		{ ".png", "image/png" },     { ".jpg", "image/jpeg" },	{ ".jpeg", "image/jpeg" },
		{ ".gif", "image/gif" },     { ".webp", "image/webp" }, { ".bmp", "image/bmp" },
		{ ".svg", "image/svg+xml" }, { ".mp3", "audio/mpeg" },	{ ".wav", "audio/wav" },
		{ ".ogg", "audio/ogg" },     { ".flac", "audio/flac" },
	};
	const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');

	for (size_t i = 0;
	     dot && dot > (slash ? slash : path) && i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcasecmp(dot, types[i][0]))
			return types[i][1];
	return "application/octet-stream";
}

/* read_media_file: the file opened by the broker in the view (as the
 * sandbox, program mcp:open), read here, at most MCP_MEDIA_MAX bytes. */
static json_t *run_media(struct mcp_call *c, json_t *args)
{
	const struct mcp_config *cfg = mcp_call_config(c);
	const char *path = json_string_value(json_object_get(args, "path"));
	json_t *refusal = NULL;
	struct error e = { 0 };
	int fd = -1;

	if (!path)
		return mcp_tool_text("\"path\" must be a string", true);
	if (!within_roots(c, cfg->profile, args, &refusal))
		return refusal;
	_cleanup_(freep) char *abs = fs_absolute(path);
	json_auto_t *req = json_pack("{s:s, s:s, s:s, s:s, s:s}", "op", "open", "user", cfg->user,
				     "thread", cfg->thread, "path", abs ? abs : path, "via", "mcp");
	json_auto_t *reply = req ? client_call_fd(cfg->home, req, &fd, &e) : NULL;
	_cleanup_(closep) int file = fd;
	if (!client_ok(reply) || file < 0) {
		const char *why = json_string_value(
			json_object_get(json_object_get(reply, "error"), "message"));
		if (reply && !why)
			client_reply_error(reply, &e);
		return mcp_tool_text(why ? why : e.text, true);
	}
	json_int_t size = json_integer_value(json_object_get(reply, "size"));
	if (size > MCP_MEDIA_MAX) {
		char text[PATH_MAX + 96];
		snprintf(text, sizeof(text), "%s is %lld bytes: read_media_file reads %d at most",
			 path, (long long)size, MCP_MEDIA_MAX);
		return mcp_tool_text(text, true);
	}
	_cleanup_(freep) char *bytes = malloc((size_t)size + 1);
	size_t got = 0;
	ssize_t n = 1;
	while (bytes && got <= (size_t)size && n > 0)
		if ((n = read(file, bytes + got, (size_t)size + 1 - got)) > 0)
			got += (size_t)n;
	if (!bytes || n < 0)
		return mcp_tool_text(bytes ? strerror(errno) : "out of memory", true);
	if (got > (size_t)size)
		return mcp_tool_text("the file grew while it was read", true);
	_cleanup_(freep) char *data = base64_encode(bytes, got);
	const char *type = media_type(path);
	_cleanup_(freep) char *uri = NULL;
	json_t *item;
	if (!strncmp(type, "image/", 6) || !strncmp(type, "audio/", 6))
		item = json_pack("{s:s, s:s, s:s}", "type", type[0] == 'i' ? "image" : "audio",
				 "data", data ? data : "", "mimeType", type);
	else
		item = asprintf(&uri, "file://%s", abs ? abs : path) < 0
			       ? NULL
			       : json_pack("{s:s, s:{s:s, s:s, s:s}}", "type", "resource",
					   "resource", "uri", uri, "mimeType", type, "blob",
					   data ? data : "");
	if (!data || !item) {
		json_decref(item);
		return mcp_tool_text("out of memory", true);
	}
	return json_pack("{s:[O], s:{s:[o]}, s:b}", "content", item, "structuredContent", "content",
			 item, "isError", false);
}

json_t *mcp_tool_run(struct mcp_call *c, const char *name, json_t *args)
{
	const struct tool *t = tool_find(mcp_call_config(c)->profile, name);

	if (!t)
		return run_file_tool(c, name, args);
	switch (t->kind) {
	case KIND_BASH:
		return run_bash(c, args);
	case KIND_PRESENT:
		return run_present(c, args);
	case KIND_CHANGES:
		return run_changes(c, args);
	case KIND_UNDO:
		return run_undo_tool(c, args);
	case KIND_MEDIA:
		return run_media(c, args);
	}
	return mcp_tool_text("Error: unknown tool", true);
}
