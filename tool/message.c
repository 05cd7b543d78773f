/* message.c - see message.h. */
#include "message.h"
#include "path.h"
#include "text.h"
#include "tool_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *message_python_type(int err)
{
	switch (err) {
	case ENOENT:
		return "FileNotFoundError";
	case EEXIST:
		return "FileExistsError";
	case EISDIR:
		return "IsADirectoryError";
	case ENOTDIR:
		return "NotADirectoryError";
	case EACCES:
	case EPERM:
		return "PermissionError";
	case EINTR:
		return "InterruptedError";
	case EAGAIN:
		return "BlockingIOError";
	case ETIMEDOUT:
		return "TimeoutError";
	default:
		return "OSError";
	}
}

char *message_oserror_text(int err, const char *vpath)
{
	char *s;

	if (asprintf(&s, "%s: [Errno %d] %s: '%s'", message_python_type(err), err, strerror(err),
		     vpath) < 0)
		return NULL;
	return s;
}

int message_oserror(struct tool_result *out, const char *what, int err, const char *vpath,
		    size_t max)
{
	char *detail = message_oserror_text(-err, vpath);
	char *cut = detail ? text_middle(detail, max, "write_file error") : NULL;
	int r = cut ? result_error(out, "Error: %s: %s", what, cut) : -ENOMEM;

	free(cut);
	free(detail);
	return r;
}

int message_blocked(const struct tool_view *v, const char *tool, const char *vpath,
		    const char *resolved, struct tool_result *out)
{
	char *why = NULL;

	if (v->refusal && v->refusal(v->refusal_arg, resolved, &why) < 0)
		why = NULL;
	int r = result_error(
		out,
		"Error: %s blocked — %s already exists and you have not read its current "
		"version. Any write invalidates earlier reads, so re-read before every "
		"modification. Call read_file on it (a ranged read of the relevant section "
		"is enough, e.g. the last ~30 lines before an append), check what is "
		"already there, then retry.%s%s",
		tool, vpath, why && *why ? "\n\n" : "", why ? why : "");
	free(why);
	return r;
}

int message_skill_disabled(int err, const char *vpath, struct tool_result *out)
{
	const char *p = vpath + strlen(VIEW_PREFIX "/skills/");
	char name[256];

	if (err != -EACCES ||
	    strncmp(vpath, VIEW_PREFIX "/skills/", strlen(VIEW_PREFIX "/skills/")))
		return 0;
	/* The category, then (integrations) the provider, then the skill. */
	bool integrations = !strncmp(p, "integrations/", strlen("integrations/"));
	for (int skip = integrations ? 2 : 1; skip > 0; skip--) {
		p = strchr(p, '/');
		if (!p)
			return 0;
		p++;
	}
	size_t n = strcspn(p, "/");
	if (n == 0 || n >= sizeof(name))
		return 0;
	memcpy(name, p, n);
	name[n] = '\0';
	return result_error(out,
			    "Error: Skill '%s' is disabled. Access to its files is blocked. Enable "
			    "the skill in settings before using it.",
			    name)
		       ?: 1;
}
