/* message.h - the reference's error texts that more than one tool says:
 * an OSError as Python prints it, the read-before-write block, a
 * disabled skill. */
#ifndef SBX_TOOL_MESSAGE_H
#define SBX_TOOL_MESSAGE_H

#include "tool.h"

/* "Error: WHAT: TYPE: [Errno N] STRERROR: 'VPATH'" for -ERR, with TYPE
 * the Python exception OSError maps ERR to (FileNotFoundError, ...).
 * MAX (0: none) bounds the text after "Error: WHAT: " in characters,
 * cut in the middle as write_file's errors are. */
int message_oserror(struct tool_result *out, const char *what, int err, const char *vpath,
		    size_t max);

/* The OSError subclass Python raises for ERRNO ("FileNotFoundError",
 * ..., "OSError"). */
const char *message_python_type(int err);

/* The text of an OSError for -ERR about VPATH, as above without the
 * "Error: WHAT: " (malloc'd). */
char *message_oserror_text(int err, const char *vpath);

/* "Error: TOOL blocked — VPATH already exists and you have not read its
 * current version. ...", then, after a blank line, what V's refusal
 * callback says changed in the file (RESOLVED, its virtual path). */
int message_blocked(const struct tool_view *v, const char *tool, const char *vpath,
		    const char *resolved, struct tool_result *out);

/* If VPATH is in a skill (/mnt/skills/CATEGORY/NAME/..., integrations
 * one level deeper) and -ERR is EACCES (the view refuses a disabled
 * skill so): the reference's "Skill 'NAME' is disabled" error, and 1;
 * else 0. */
int message_skill_disabled(int err, const char *vpath, struct tool_result *out);

#endif
