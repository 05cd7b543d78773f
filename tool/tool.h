/* tool.h - the file tools an agent calls (ls, read_file, write_file,
 * str_replace, glob, grep), with the reference's arguments, results,
 * limits and error texts (docs/tools.md), run against a thread's view
 * mounted on the host.
 *
 * Every file is reached through the view, relative to the fd of its
 * mount point, by openat2() beneath it (tool/beneath.h): the view's
 * read-before-write gate, staged writes, quota and journal apply to a
 * tool as to any program, and no path or symlink leads out of it. The
 * paths a tool takes and shows are the virtual ones (/mnt/user-data/...,
 * /mnt/skills/...): /mnt is the view's mount point.
 *
 * Everything a tool has to say to the agent, including its failures, is
 * a result (is_error set, the reference's "Error: ..." text), never a
 * negative return: those are for what no result can be made of (no
 * memory, an unknown tool).
 */
#ifndef SBX_TOOL_H
#define SBX_TOOL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The reference's limits, configurable in its config.yaml. */
struct tool_limits {
	size_t read_max_chars; /* read_file's head truncation (0: none) */
	size_t ls_max_chars;   /* ls's head truncation (0: none) */
	long write_max_bytes;  /* a non-append write_file's content (<= 0: none) */
	int glob_max_results;  /* tools.glob.max_results (<= 0: the default) */
	int grep_max_results;  /* tools.grep.max_results (<= 0: the default) */
};

/* 50,000, 20,000, 80 KiB, 200 and 100. */
extern const struct tool_limits tool_limits_default;

/* Which tools a call names: the reference's (tool_specs[]),
 * @modelcontextprotocol/server-filesystem's (tool_fs_specs[], tool/fs.h)
 * or the "All-in-One" sandbox API's file endpoints (tool_aio_specs[],
 * tool/aio.h). */
enum tool_set {
	TOOL_SET_REFERENCE,
	TOOL_SET_FILESYSTEM,
	TOOL_SET_AIO,
};

struct tool_view {
	enum tool_set set; /* the table tool_call() looks a name up in */
	/* O_PATH|O_DIRECTORY fd of the view's mount point: the caller's,
	 * kept open for the call. */
	int root;
	const struct tool_limits *limits; /* NULL: tool_limits_default */
	/* Explains a write the view refused (read-before-write): sets *TEXT
	 * (malloc'd, or NULL for nothing to say) to what changed in VPATH
	 * (its virtual path) since the agent read it; returns 0 or -errno.
	 * NULL: the refusal says only the reference's blocked message. It
	 * runs on the tool's thread: under tool_call_as(), with the
	 * sandbox's filesystem identity. */
	int (*refusal)(void *arg, const char *vpath, char **text);
	void *refusal_arg;
	/* Sets *HUNKS (malloc'd) to the hunks of a unified diff of OLD to
	 * NEW (three lines of context, no "---"/"+++" lines; "" for none), for
	 * edit_file's diff (tool/fs.h): the diff is the store's (store/
	 * diff.h), above this layer. Returns 0 or -ENOMEM. NULL: edit_file's
	 * diff has its headers only. */
	int (*diff)(const char *old, const char *new, char **hunks);
};

struct tool_result {
	bool is_error;
	char *text;	    /* the reference's text result (malloc'd) */
	json_t *structured; /* what the tool returns as data, else NULL */
};

/* A tool as a client lists it. The schemas are JSON text; annotations
 * are the MCP ones (openWorldHint is false for every tool: each reaches
 * only the view). */
struct tool_spec {
	const char *name;
	const char *description;
	const char *input_schema;
	const char *output_schema; /* NULL: the tool returns text only */
	bool read_only, destructive, idempotent;
	int (*run)(const struct tool_view *v, json_t *args, struct tool_result *out);
	const char *title; /* NULL: the name */
};

extern const struct tool_spec tool_specs[];
extern const size_t tool_nspecs;
extern const struct tool_spec tool_fs_specs[];
extern const size_t tool_fs_nspecs;
extern const struct tool_spec tool_aio_specs[];
extern const size_t tool_aio_nspecs;

/* The spec of tool NAME of the reference's set, or NULL. */
const struct tool_spec *tool_spec_find(const char *name);
/* The specs of SET, *N of them; the spec of NAME in SET, or NULL. */
const struct tool_spec *tool_set_specs(enum tool_set set, size_t *n);
const struct tool_spec *tool_set_find(enum tool_set set, const char *name);

/* Runs tool NAME (of V's set) with ARGS (a JSON object; NULL or another type is a
 * tool error) against view V on the calling thread, with its
 * credentials and command name. Returns 0 with the result in OUT
 * (tool_result_free() it), -ENOENT for an unknown tool, -ENOMEM. */
int tool_call(const struct tool_view *v, const char *name, json_t *args, struct tool_result *out);

/* The host identity a sandbox's files are used as (exec/identity.h). */
struct tool_identity {
	uid_t uid;
	gid_t gid;
};

/* A thread's command name holds 15 bytes: "VIA:NAME" is cut there.
 * Every tool of tool_specs[] and tool_aio_specs[] fits with a
 * three-letter VIA ("mcp", "aio"): "mcp:str_replace" is the longest, 15
 * (a unit test checks). Those of
 * tool_fs_specs[] are cut at 11 characters, and the journal's program
 * names stay apart for every tool that writes ("mcp:write_file",
 * "mcp:edit_file", "mcp:create_dire", "mcp:move_file"); only the
 * read-only list_directory and list_directory_with_sizes share one,
 * "mcp:list_direct" (docs/tools.md). */
#define TOOL_COMM_MAX 15

/* tool_call() with ID's filesystem identity (fsuid, fsgid, no
 * supplementary groups) and the command name "VIA:NAME", so that the
 * view checks permissions as the sandbox's and its journal and audit
 * name the program "mcp:write_file". In Linux credentials and the
 * command name belong to a thread; the switches are raw syscalls
 * (glibc's setgroups() would apply to every thread of the process).
 *
 * A tool that writes runs on a thread of its own, which ends with the
 * call: the view's journal keeps a caller's command name for 100 ms, so
 * a thread used again would have its writes named after its previous
 * tool. A read-only tool (its spec's read_only) makes no change the
 * journal names: it runs on the calling thread, sparing a thread's start
 * and join (some 50 us of a small read_file's 450), and the thread
 * is put back as it was after it - filesystem ids, groups, command name,
 * each checked; a thread that cannot be put back would do its caller's
 * later work (a broker's, as root) with the sandbox's identity, so the
 * process aborts instead (it cannot happen to a caller privileged
 * enough to take the identity).
 *
 * An ID equal to the process's effective ids (a broker not run as root)
 * changes no ids. Returns tool_call()'s value, or -errno if the thread
 * or the identity could not be had (-EPERM: not privileged enough). */
int tool_call_as(const struct tool_view *v, const struct tool_identity *id, const char *via,
		 const char *name, json_t *args, struct tool_result *out);

/* Opens VPATH (a virtual path; relative: to /mnt/user-data/workspace)
 * read-only through V as tool_call_as() runs a read-only tool (on the
 * calling thread, with ID's filesystem identity, named "VIA:open", put
 * back after), for a download: the reference
 * policy, the resolution beneath the view, a regular file only. Returns
 * 0 with *FD (blocking, close-on-exec: the caller's), or 0 with *FD -1
 * and OUT the refusal as the AIO set says one (a FileOperationError:
 * tool/aio.h; tool_result_free() it); -errno as tool_call_as(). */
int tool_open_as(const struct tool_view *v, const struct tool_identity *id, const char *via,
		 const char *vpath, int *fd, struct tool_result *out);

void tool_result_free(struct tool_result *r);

#endif
