/* request.h - one line of the broker's protocol, parsed and checked
 * (docs/protocol.md): nothing here acts, so every request can be
 * validated (and fuzzed) before anything runs.
 */
#ifndef SBX_REQUEST_H
#define SBX_REQUEST_H

#include "tool/tool.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The most files a run_begin may ask its first snapshot to hold. */
#define REQUEST_MAX_FILES 1000000
/* The most shells an acquire may allow its sandbox (as sbx.conf's
 * max_shell_sessions). */
#define REQUEST_MAX_SHELL_SESSIONS 1000

enum request_op {
	REQ_PING,
	REQ_ACQUIRE,
	REQ_RELEASE,
	REQ_EXEC,
	REQ_STATUS,
	REQ_SHUTDOWN,
	REQ_PRESENT,
	REQ_WATCH,
	REQ_RUN_BEGIN,
	REQ_RUN_END,
	REQ_RUN_CHANGES,
	REQ_TOOL,
	REQ_RUN_UNDO,
	REQ_RESTORE,
	REQ_OPEN,
	REQ_SESSION_OPEN,
	REQ_SESSION_CLOSE,
};

struct request {
	json_t *root; /* owns every string below */
	json_t *id;   /* echoed in replies, or NULL */
	enum request_op op;
	const char *user, *thread;   /* ids (ids.h) */
	const char *owner;	     /* acquire, release: 1..256 characters */
	bool hold;		     /* acquire: the lease ends with the connection */
	bool shell;		     /* acquire: the owner's scope's shell started too */
	unsigned max_shell_sessions; /* acquire: the sandbox's limit, 0: unchanged */
	const char *command;	     /* exec */
	const char *scope;	     /* exec (or NULL), session_open, session_close */
	unsigned timeout;	     /* exec: seconds, 0: the default */
	unsigned idle_timeout;	     /* exec: seconds without output, 0: none */
	bool host;		     /* exec, session_open */
	bool existing;		     /* exec: only in the scope's shell as it is */
	bool raw;		     /* exec: each stream whole in the reply */
	/* exec (one-off), session_open: the working directory, a virtual
	 * path (whether it is the view's is the broker's to say), or NULL */
	const char *cwd;
	const char *channel_user_id; /* exec: may hold NUL; NULL if absent */
	size_t channel_user_id_len;
	char **env; /* exec: "K=V" (malloc'd), NULL-terminated */
	size_t nenv;
	/* present, run_end, run_undo: the run; present: its tool (up to RECEIPT_TOOL_MAX characters;
	 * receipt.h's rule for names is the broker's to check) and 1 to
	 * RECEIPT_PATHS_MAX paths. */
	long long run;
	const char *tool;
	const char **paths; /* malloc'd; the strings are root's */
	size_t npaths;
	long long since;	      /* watch: a cursor (0 or more), -1 if absent */
	long max_files;		      /* run_begin: 1 to REQUEST_MAX_FILES, 0 if absent */
	bool dry_run, partial, force; /* run_undo (run/undo.h); restore: dry_run */
	/* restore (run/restore.h): a virtual path, and a run to go back
	 * before or a moment (ns since the epoch): one of the two. open: the
	 * virtual path to open. */
	const char *path;
	long long before;
	int64_t at_ns;
	/* tool (tool/tool.h): its name, its arguments (root's), who calls
	 * it ("mcp", "aio": the program is named VIA:NAME; open's too), and
	 * the set of tools it names ("profile": "reference", the default,
	 * "filesystem" or "aio"). */
	const char *tool_name;
	json_t *arguments;
	/* tool: the arguments are the JSON object in the memfd passed with
	 * the line (SCM_RIGHTS), for those past the line's BROKER_LINE_MAX */
	bool arguments_fd;
	const char *via;
	enum tool_set tool_set;
};

/* Parses LINE (LEN bytes) into R. Returns 0, or -EINVAL with the error
 * code of the reply in *CODE (static) and its message in ERR; R->id is
 * set whenever the line was a JSON object. request_free() R either way. */
int request_parse(const char *line, size_t len, struct request *r, const char **code, char *err,
		  size_t errlen);
void request_free(struct request *r);

#endif
