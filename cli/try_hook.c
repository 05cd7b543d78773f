/* try_hook.c - sbx try hook claude-code: `sbx try` as Claude Code's
 * WorktreeCreate and WorktreeRemove hooks (docs/try.md, "Agents' hooks").
 *
 * Claude Code runs the hook with one JSON object on stdin. WorktreeCreate
 * ("cwd": the session's directory, "name": the worktree's) makes or takes
 * again the overlay of that directory, mounts its view at WORKTREES/NAME
 * and prints the project's path in the view, and nothing else, on stdout:
 * Claude Code works there. WorktreeRemove ("worktree_path": that path)
 * unmounts the view and removes its mount point; the overlay and its
 * layer stay, for the person's review. Everything else goes to stderr.
 * A failure exits 1 (2: a usage error), which fails the worktree's
 * creation or removal, and a failed creation leaves nothing mounted.
 */
#include "args.h"
#include "cli.h"
#include "try.h"
#include "common/cleanup.h"
#include "common/home.h"
#include "common/ids.h"
#include "common/mounts.h"
#include "common/viewreg.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char hook_usage[] =
	"Usage: sbx try hook claude-code [--user ID] [--worktrees DIR] [--home DIR]\n"
	"\n"
	"Claude Code's WorktreeCreate and WorktreeRemove hooks: an overlay for\n"
	"each worktree Claude Code asks for (docs/try.md, \"Agents' hooks\"). Reads\n"
	"the event, a JSON object, on stdin:\n"
	"  WorktreeCreate   makes (or takes again) the overlay of the session's\n"
	"                   directory (\"cwd\") named after the worktree (\"name\"),\n"
	"                   mounts its view at DIR/OVERLAY and prints the\n"
	"                   project's path there, DIR/OVERLAY/user-data/workspace,\n"
	"                   alone on stdout\n"
	"  WorktreeRemove   unmounts the view at \"worktree_path\" and removes its\n"
	"                   mount point; the overlay and its layer are kept for\n"
	"                   review (sbx try list)\n"
	"Messages go to stderr. A failure exits 1, which fails the worktree's\n"
	"creation or removal; a failed creation leaves nothing mounted.\n"
	"  --user ID        whose threads the overlays are (default: try)\n"
	"  --worktrees DIR  where the mount points are, made if missing (default:\n"
	"                   HOME/run/try/ID); the same for both events\n"
	"In Claude Code's settings (.claude/settings.json, ~/.claude/settings.json):\n"
	"  {\"hooks\": {\n"
	"    \"WorktreeCreate\": [{\"hooks\": [{\"type\": \"command\",\n"
	"                                   \"command\": \"sbx try hook claude-code\"}]}],\n"
	"    \"WorktreeRemove\": [{\"hooks\": [{\"type\": \"command\",\n"
	"                                   \"command\": \"sbx try hook claude-code\"}]}]}}\n";

#define HOOK "try hook"

/* An overlay's name is at most this long: room for a -N after it, as
 * try.c's names of projects have. */
#define BASE_MAX 60

/* The overlay's name for the worktree NAME: NAME itself where it is a
 * thread id of at most BASE_MAX characters; otherwise its characters
 * that ids allow (the others '-'), cut at 43, then '-' and 16 hex digits
 * of its SHA-256, so that "a.b", "a/b" and "a-b" are three overlays, not
 * one taken again. OUT holds BASE_MAX + 1. Returns 0 or -ENOMEM. */
static int base_of(const char *name, char out[BASE_MAX + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	size_t n = 0;

	if (thread_id_check(name, NULL) == 0 && strlen(name) <= BASE_MAX) {
		snprintf(out, BASE_MAX + 1, "%s", name);
		return 0;
	}
	for (const char *p = name; *p && n < 43; p++)
		out[n++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
					   (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'
				   ? *p
				   : '-';
	if (!EVP_Digest(name, strlen(name), md, &mdlen, EVP_sha256(), NULL))
		return -ENOMEM;
	out[n++] = '-';
	for (int i = 0; i < 8; i++, n += 2)
		snprintf(out + n, 3, "%02x", md[i]);
	out[n] = '\0';
	return 0;
}

/* The event's string KEY, or NULL (said) if it has none that is a
 * non-empty string. */
static const char *field(json_t *event, const char *kind, const char *key)
{
	const char *s = json_string_value(json_object_get(event, key));

	if (!s || !*s)
		fprintf(stderr, "sbx: " HOOK ": the %s event has no \"%s\" (a non-empty string)\n",
			kind, key);
	return s && *s ? s : NULL;
}

/* The directory of the mount points into DIR (absolute, no symlinks):
 * WORKTREES, else HOME/run/try/USER; with CREATE made if missing.
 * Returns 0 or -errno. */
static int worktrees_dir(int homefd, const char *home, const char *user, const char *worktrees,
			 bool create, char dir[PATH_MAX])
{
	char path[PATH_MAX];

	if (worktrees) {
		if (create && mkdir(worktrees, 0700) < 0 && errno != EEXIST)
			return neg_errno();
		return realpath(worktrees, dir) ? 0 : neg_errno();
	}
	if (create) {
		const char *const below[] = { HOME_RUN, HOME_TRY, user };
		_cleanup_(closep) int fd = dir_ensure_path(homefd, below, 3, 0700);
		if (fd < 0)
			return fd;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/%s/%s/%s", home, HOME_RUN, HOME_TRY, user) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	return realpath(path, dir) ? 0 : neg_errno();
}

struct found {
	const char *mountpoint;
	bool there;
};

static void match_view(const char *mountpoint, void *arg)
{
	struct found *f = arg;

	f->there |= !strcmp(mountpoint, f->mountpoint);
}

/* Mounts the overlay's view as try_mount() does, in a child whose
 * stdout is our stderr: Claude Code reads the worktree's path from our
 * stdout, and sbxfs's messages are not that path. Returns its status. */
static int mount_view(const char *home, const char *user, const char *overlay, const char *mp)
{
	int st;

	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "sbx: " HOOK ": fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
			_exit(1);
		_exit(try_mount(home, user, overlay, mp));
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int worktree_create(json_t *event, int homefd, const char *home, const char *user,
			   const char *worktrees)
{
	const char *name = field(event, "WorktreeCreate", "name");
	const char *cwd = field(event, "WorktreeCreate", "cwd");
	char project[PATH_MAX], base[BASE_MAX + 1], overlay[128], dir[PATH_MAX], mp[PATH_MAX];
	struct stat st;
	int r;

	if (!name || !cwd)
		return 1;
	/* Before anything is made: an overlay is of a directory. */
	if (!realpath(cwd, project) || stat(project, &st) < 0) {
		fprintf(stderr, "sbx: " HOOK ": cannot use the session's directory %s: %s\n", cwd,
			strerror(errno));
		return 1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "sbx: " HOOK ": the session's directory %s: %s\n", cwd,
			strerror(ENOTDIR));
		return 1;
	}
	if ((r = base_of(name, base)) < 0) {
		fprintf(stderr, "sbx: " HOOK ": cannot hash the name %s: %s\n", name, strerror(-r));
		return 1;
	}
	if ((r = worktrees_dir(homefd, home, user, worktrees, true, dir)) < 0) {
		fprintf(stderr, "sbx: " HOOK ": cannot make the worktrees' directory %s: %s\n",
			worktrees ? worktrees : "in the home", strerror(-r));
		return 1;
	}
	/* A worktree's subagent asking for a worktree of its own: a view
	 * is no project (an overlay of an overlay is not supported). */
	size_t dn = strlen(dir);
	if (!strncmp(project, dir, dn) && (project[dn] == '/' || !project[dn])) {
		fprintf(stderr,
			"sbx: " HOOK ": the session's directory %s is in this hook's worktrees"
			" (%s): an overlay of an overlay is not supported\n",
			project, dir);
		return 1;
	}
	/* An overlay of another project by that name is left alone: the
	 * worktree gets the next free name. */
	if (try_overlay_make(homefd, user, NULL, base, project, overlay, sizeof(overlay)))
		return 1;
	if ((size_t)snprintf(mp, sizeof(mp), "%s/%s", dir, overlay) >= sizeof(mp)) {
		fprintf(stderr, "sbx: " HOOK ": %s/%s: %s\n", dir, overlay, strerror(ENAMETOOLONG));
		return 1;
	}
	bool made = mkdir(mp, 0700) == 0;
	if (!made && errno != EEXIST) {
		fprintf(stderr, "sbx: " HOOK ": cannot make the mount point %s: %s\n", mp,
			strerror(errno));
		return 1;
	}
	/* The worktree asked for again while its view is mounted (a session
	 * resumed, or one that ended without a WorktreeRemove) is that view,
	 * as Claude Code's own worktrees are taken again by name. */
	struct found f = { .mountpoint = mp };
	if (!made && is_mount_point(mp))
		viewreg_each(homefd, user, overlay, match_view, &f);
	if (!f.there && (r = mount_view(home, user, overlay, mp)) != 0) {
		if (made)
			rmdir(mp);
		fprintf(stderr, "sbx: " HOOK ": cannot mount the overlay %s at %s (exit %d)\n",
			overlay, mp, r);
		return 1;
	}
	if (printf("%s/%s\n", mp, home_thread_dir_rel(THREAD_WORKSPACE)) < 0 || fflush(stdout)) {
		fprintf(stderr, "sbx: " HOOK ": cannot print the worktree's path: %s\n",
			strerror(errno));
		if (!f.there && view_unmount(mp, false) == 0 && made)
			rmdir(mp);
		return 1;
	}
	fprintf(stderr, "sbx: " HOOK ": the overlay %s of %s, %s at %s\n", overlay, project,
		f.there ? "mounted already" : "mounted", mp);
	return 0;
}

static int worktree_remove(json_t *event, int homefd, const char *home, const char *user,
			   const char *worktrees)
{
	const char *path = field(event, "WorktreeRemove", "worktree_path");
	const char *below = home_thread_dir_rel(THREAD_WORKSPACE);
	char dir[PATH_MAX], mp[PATH_MAX], project[PATH_MAX];
	size_t n, m = strlen(below);
	int r;

	if (!path)
		return 1;
	/* Only DIR/OVERLAY/user-data/workspace, as WorktreeCreate printed
	 * it: this hook unmounts no other path. */
	n = strlen(path);
	r = worktrees_dir(homefd, home, user, worktrees, false, dir);
	const char *overlay = NULL;
	if (r == 0 && n > m + 1 && n - m - 1 < sizeof(mp) && path[n - m - 1] == '/' &&
	    !strcmp(path + n - m, below)) {
		snprintf(mp, sizeof(mp), "%.*s", (int)(n - m - 1), path);
		char *slash = strrchr(mp, '/');
		if (slash && (size_t)(slash - mp) == strlen(dir) && !strncmp(mp, dir, strlen(dir)))
			overlay = slash + 1;
	}
	if (!overlay || thread_id_check(overlay, NULL) < 0 ||
	    home_overlay_get(homefd, user, overlay, project, sizeof(project)) <= 0) {
		fprintf(stderr,
			"sbx: " HOOK ": %s is not a worktree of this hook (DIR/OVERLAY/%s, DIR %s,"
			" OVERLAY one of user %s): left alone\n",
			path, below, r == 0 ? dir : "not made yet", user);
		return 1;
	}
	if (is_mount_point(mp)) {
		char *args[] = { "umount", mp, NULL };
		if ((r = cmd_umount(2, args, home)) != 0)
			return r;
	}
	if (rmdir(mp) < 0 && errno != ENOENT) {
		fprintf(stderr, "sbx: " HOOK ": cannot remove the mount point %s: %s\n", mp,
			strerror(errno));
		return 1;
	}
	fprintf(stderr,
		"sbx: " HOOK ": the view of the overlay %s is unmounted; its layer, the changes"
		" to %s, is kept: sbx try diff %s to review it, sbx try discard %s to drop it\n",
		overlay, project, overlay, overlay);
	return 0;
}

int cmd_try_hook(int argc, char **argv, const char *home)
{
	static const struct option longopts[] = {
		{ "user", required_argument, NULL, 'u' },
		{ "worktrees", required_argument, NULL, 'w' },
		{ "home", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *user = TRY_USER, *worktrees = NULL, *why;
	char h[PATH_MAX];
	json_error_t jerr;
	int c;

	getopt_begin(argv, HOOK);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'u':
			user = optarg;
			break;
		case 'w':
			worktrees = optarg;
			break;
		case 'H':
			home = optarg;
			break;
		case 'h':
			fputs(hook_usage, stdout);
			return 0;
		default:
			return usage_error(HOOK, NULL);
		}
	}
	if (optind == argc)
		return usage_error(HOOK, "expected the agent whose hooks these are: claude-code");
	if (strcmp(argv[optind], "claude-code"))
		return usage_error(HOOK, "unknown agent '%s' (claude-code is the one there is)",
				   argv[optind]);
	if (optind + 1 < argc)
		return usage_error(HOOK, "unexpected argument '%s'", argv[optind + 1]);
	if (user_id_check(user, &why) < 0)
		return usage_error(HOOK, "invalid user id '%s': %s", user, why);
	if (worktrees && !*worktrees)
		return usage_error(HOOK, "--worktrees is empty");

	json_auto_t *event = json_loadf(stdin, 0, &jerr);
	if (!event) {
		fprintf(stderr, "sbx: " HOOK ": cannot read the event on stdin: %s (line %d)\n",
			jerr.text, jerr.line);
		return 1;
	}
	const char *kind = json_string_value(json_object_get(event, "hook_event_name"));
	if (!kind) {
		fprintf(stderr, "sbx: " HOOK ": the event on stdin has no \"hook_event_name\"\n");
		return 1;
	}
	if (strcmp(kind, "WorktreeCreate") && strcmp(kind, "WorktreeRemove")) {
		fprintf(stderr,
			"sbx: " HOOK ": %s is not an event of this hook (WorktreeCreate,"
			" WorktreeRemove)\n",
			kind);
		return 1;
	}
	if (resolve_home(HOOK, home, h, sizeof(h)) < 0)
		return 2;
	_cleanup_(closep) int homefd = home_open(h);
	if (homefd < 0) {
		fprintf(stderr, "sbx: " HOOK ": cannot open home %s: %s\n", h, strerror(-homefd));
		return 1;
	}
	return !strcmp(kind, "WorktreeCreate") ? worktree_create(event, homefd, h, user, worktrees)
					       : worktree_remove(event, homefd, h, user, worktrees);
}
