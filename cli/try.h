/* try.h - what sbx try's commands share: the making of an overlay and
 * the mounting of its view (cli/try.c), the agents' worktree hooks that
 * use them (cli/try_hook.c), and the review, apply and discard of an
 * overlay (cli/try_review.c). Each command is one as cli.h says, ARGV[0]
 * its word ("status", ...). docs/try.md is their contract. */
#ifndef SBX_TRY_H
#define SBX_TRY_H

#include <stddef.h>

/* Whose threads overlays are unless --user says otherwise. */
#define TRY_USER "try"

/* Makes (or takes again) USER's overlay of PROJECT (an absolute path)
 * named NAME; with NAME NULL, the first of BASE, BASE-2, BASE-3... that
 * is free or PROJECT's already (BASE NULL: the project directory's
 * name). Its name into OUT. Returns 0, or 1 with the reason said on
 * stderr. */
int try_overlay_make(int homefd, const char *user, const char *name, const char *base,
		     const char *project, char *out, size_t size);

/* Mounts the view of USER's overlay NAME at MOUNTPOINT, as sbx mount
 * does: sbxfs runs in this process's place, so it returns (1, said) only
 * if sbxfs could not be run. */
int try_mount(const char *home, const char *user, const char *name, const char *mountpoint);

/* sbx try hook AGENT: ARGV[0] is "hook". */
int cmd_try_hook(int argc, char **argv, const char *home);

int cmd_try_status(int argc, char **argv, const char *home);
int cmd_try_diff(int argc, char **argv, const char *home);
int cmd_try_apply(int argc, char **argv, const char *home);
int cmd_try_discard(int argc, char **argv, const char *home);

#endif
