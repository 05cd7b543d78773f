/* fs_path.c - see fs.h: the filesystem profile's paths, errors and
 * globs. */
#include "fs.h"
#include "tool_int.h"
#include "common/cleanup.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const fs_allowed[] = {
	"/mnt/user-data/workspace",
	"/mnt/user-data/uploads",
	"/mnt/user-data/outputs",
	"/mnt/skills",
};
const size_t fs_nallowed = sizeof(fs_allowed) / sizeof(fs_allowed[0]);

/* P normalised as path.resolve() does ("//", "." and ".." taken out,
 * ".." stopping at "/"), in place. */
static void normalise(char *p)
{
	char *out = p, *in = p;

	while (*in) {
		while (*in == '/')
			in++;
		size_t n = strcspn(in, "/");
		if (n == 0)
			break;
		if (n == 1 && in[0] == '.') {
			in += n;
			continue;
		}
		if (n == 2 && in[0] == '.' && in[1] == '.') {
			while (out > p && *--out != '/')
				;
			in += n;
			continue;
		}
		*out++ = '/';
		memmove(out, in, n);
		out += n;
		in += n;
	}
	if (out == p)
		*out++ = '/';
	*out = '\0';
}

char *fs_absolute(const char *vpath)
{
	char *abs;

	if (asprintf(&abs, "%s%s", vpath[0] == '/' ? "" : "/mnt/user-data/workspace/", vpath) < 0)
		return NULL;
	normalise(abs);
	return abs;
}

static bool allowed(const char *abs)
{
	for (size_t i = 0; i < fs_nallowed; i++) {
		size_t n = strlen(fs_allowed[i]);
		if (!strncmp(abs, fs_allowed[i], n) && (abs[n] == '\0' || abs[n] == '/'))
			return true;
	}
	return false;
}

static const struct tool_errors node_errors = {
	.not_found = "ENOENT: no such file or directory, open '%s'",
	.not_dir = "ENOTDIR: not a directory, open '%s'",
	.is_dir = "EISDIR: illegal operation on a directory, read",
	.denied = "EACCES: permission denied, open '%s'",
	.unexpected = "Failed to access '%s'",
};

int fs_target(const struct tool_view *v, const char *vpath, bool write, bool follow,
	      struct target *t, struct tool_result *out)
{
	_cleanup_(freep) char *abs = fs_absolute(vpath);

	memset(t, 0, sizeof(*t));
	if (!abs)
		return -ENOMEM;
	if (!allowed(abs)) {
		char list[256] = "";
		for (size_t i = 0; i < fs_nallowed; i++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 i ? ", " : "", fs_allowed[i]);
		return result_error(
			       out,
			       "Access denied - path outside allowed directories: %s not in %s",
			       abs, list)
			       ?: 1;
	}
	/* The target keeps the path it was given: give it the normalised
	 * one, which lives as long as the result (the caller's args do not
	 * hold it). */
	char *keep = abs;
	abs = NULL;
	int r = target_get(v, keep, write, follow, &node_errors, t, out);
	if (r != 0) {
		free(keep);
		memset(t, 0, sizeof(*t));
		return r;
	}
	t->owned = keep;
	return 0;
}

/* libuv's names and texts, as Node's errors carry them. */
static const struct {
	int err;
	const char *code, *text;
} node_texts[] = {
	{ ENOENT, "ENOENT", "no such file or directory" },
	{ EEXIST, "EEXIST", "file already exists" },
	{ ENOTDIR, "ENOTDIR", "not a directory" },
	{ EISDIR, "EISDIR", "illegal operation on a directory" },
	{ EACCES, "EACCES", "permission denied" },
	{ EPERM, "EPERM", "operation not permitted" },
	{ ENOTEMPTY, "ENOTEMPTY", "directory not empty" },
	{ EXDEV, "EXDEV", "cross-device link not permitted" },
	{ ELOOP, "ELOOP", "too many symbolic links encountered" },
	{ ENOSPC, "ENOSPC", "no space left on device" },
	{ EDQUOT, "EDQUOT", "disk quota exceeded" },
	{ EROFS, "EROFS", "read-only file system" },
	{ EINVAL, "EINVAL", "invalid argument" },
};

int fs_fail(int err, const char *syscall, const char *vpath, struct tool_result *out)
{
	if (err == -ENOMEM)
		return err;
	for (size_t i = 0; i < sizeof(node_texts) / sizeof(node_texts[0]); i++)
		if (-err == node_texts[i].err)
			return result_error(out, "%s: %s, %s '%s'", node_texts[i].code,
					    node_texts[i].text, syscall, vpath);
	return result_error(out, "EIO: %s, %s '%s'", strerror(-err), syscall, vpath);
}

int fs_ok(struct tool_result *out, char *text)
{
	return result_ok(out, text, text ? json_pack("{s:s}", "content", text) : NULL);
}

/* One component NAME against pattern component PAT (LEN bytes). */
static bool component(const char *pat, size_t len, const char *name, size_t nlen)
{
	char p[NAME_MAX + 1], n[NAME_MAX + 1];

	if (len > NAME_MAX || nlen > NAME_MAX)
		return false;
	memcpy(p, pat, len);
	p[len] = '\0';
	memcpy(n, name, nlen);
	n[nlen] = '\0';
	return fnmatch(p, n, 0) == 0;
}

bool fs_glob(const char *pattern, const char *rel)
{
	size_t pl = strcspn(pattern, "/"), rl = strcspn(rel, "/");

	if (pl == 2 && !strncmp(pattern, "**", 2)) {
		const char *rest = pattern[2] ? pattern + 3 : NULL;
		if (!rest) /* a trailing "**": anything from here */
			return true;
		for (const char *r = rel;; r += strcspn(r, "/") + 1) {
			if (fs_glob(rest, r))
				return true;
			if (!strchr(r, '/'))
				return false;
		}
	}
	if (!component(pattern, pl, rel, rl))
		return false;
	if (!pattern[pl] || !rel[rl])
		return !pattern[pl] && !rel[rl];
	return fs_glob(pattern + pl + 1, rel + rl + 1);
}
