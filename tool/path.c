/* path.c - see path.h. */
#include "path.h"
#include "tool_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define USER_DATA VIEW_PREFIX "/user-data"
#define SKILLS VIEW_PREFIX "/skills"
#define ACP VIEW_PREFIX "/acp-workspace"

/* True if P is PREFIX or below it. */
static bool under(const char *p, const char *prefix)
{
	size_t n = strlen(prefix);

	return !strncmp(p, prefix, n) && (p[n] == '\0' || p[n] == '/');
}

/* Any ".." segment, with "\" as a separator as the reference has it. */
static bool has_dotdot(const char *p)
{
	for (const char *s = p; (s = strstr(s, "..")); s++) {
		bool starts = s == p || s[-1] == '/' || s[-1] == '\\';
		bool ends = s[2] == '\0' || s[2] == '/' || s[2] == '\\';
		if (starts && ends)
			return true;
	}
	return false;
}

/* REL (below /mnt/user-data/) is in one of the three directories. */
static bool user_data_dir(const char *rel)
{
	static const char *const dirs[] = { "workspace", "uploads", "outputs" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		size_t n = strlen(dirs[i]);
		if (!strncmp(rel, dirs[i], n) && (rel[n] == '\0' || rel[n] == '/'))
			return true;
	}
	return false;
}

/* The top name of VPATH (below /mnt/) a configured mount? */
static bool mount_path(const char *vpath, path_is_mount_fn is_mount, void *arg)
{
	char name[256];

	if (!under(vpath, VIEW_PREFIX) || !vpath[strlen(VIEW_PREFIX)])
		return false;
	const char *top = vpath + strlen(VIEW_PREFIX) + 1;
	size_t n = strcspn(top, "/");
	if (n == 0 || n >= sizeof(name) || (n == 1 && top[0] == '.'))
		return false;
	memcpy(name, top, n);
	name[n] = '\0';
	if (!strcmp(name, "user-data") || !strcmp(name, "skills") || !strcmp(name, "acp-workspace"))
		return false;
	return is_mount(arg, name);
}

static enum path_verdict family_of(const char *vpath, bool write, path_is_mount_fn is_mount,
				   void *arg, enum path_family *family)
{
	if (has_dotdot(vpath))
		return PATH_TRAVERSAL;
	if (under(vpath, SKILLS)) {
		*family = FAMILY_SKILLS;
		return write ? PATH_SKILLS_RO : PATH_OK;
	}
	if (under(vpath, ACP)) {
		*family = FAMILY_ACP;
		return write ? PATH_ACP_RO : PATH_OK;
	}
	if (!strncmp(vpath, USER_DATA "/", strlen(USER_DATA "/"))) {
		*family = FAMILY_USER_DATA;
		return user_data_dir(vpath + strlen(USER_DATA "/")) ? PATH_OK : PATH_TRAVERSAL;
	}
	if (mount_path(vpath, is_mount, arg)) {
		*family = FAMILY_MOUNT;
		return PATH_OK;
	}
	return PATH_OUTSIDE;
}

enum path_verdict path_check(const char *vpath, bool write, path_is_mount_fn is_mount, void *arg,
			     const char **rel, enum path_family *family)
{
	enum path_verdict r = family_of(vpath, write, is_mount, arg, family);

	if (r == PATH_OK)
		*rel = vpath[strlen(VIEW_PREFIX)] ? vpath + strlen(VIEW_PREFIX) + 1 : "";
	return r;
}

/* Any top name other than the three is a mount: a resolved path exists
 * in the view (or is about to be made there). */
static bool any_mount(void *arg, const char *name)
{
	(void)arg;
	(void)name;
	return true;
}

enum path_verdict path_check_resolved(const char *rel, bool write, enum path_family *family)
{
	char vpath[PATH_MAX + sizeof(VIEW_PREFIX)];
	const char *ignored;

	snprintf(vpath, sizeof(vpath), "%s%s%s", VIEW_PREFIX, *rel ? "/" : "", rel);
	return path_check(vpath, write, any_mount, NULL, &ignored, family);
}

int path_refuse(enum path_verdict v, const char *vpath, struct tool_result *out)
{
	switch (v) {
	case PATH_TRAVERSAL:
		return result_error(out, "Error: Access denied: path traversal detected");
	case PATH_SKILLS_RO:
		return result_error(out, "Error: Write access to skills path is not allowed: %s",
				    vpath);
	case PATH_ACP_RO:
		return result_error(out, "Error: Write access to ACP workspace is not allowed: %s",
				    vpath);
	case PATH_MOUNT_RO:
		return result_error(out,
				    "Error: Write access to read-only mount is not allowed: %s",
				    vpath);
	case PATH_ESCAPE:
		return result_error(out, "Error: Access denied: path escapes mounted directory");
	case PATH_OK:
	case PATH_OUTSIDE:
		break;
	}
	return result_error(out, "Error: Only paths under " USER_DATA "/, " SKILLS "/, " ACP
				 "/, or configured mount paths are allowed");
}

char *path_virtual(const char *rel)
{
	char *s;

	if (asprintf(&s, "%s%s%s", VIEW_PREFIX, *rel ? "/" : "", rel) < 0)
		return NULL;
	return s;
}
