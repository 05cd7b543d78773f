/* sandbox.h - how a command is run in a thread's view.
 *
 * namespace mode (the default): under bubblewrap. The host's system
 * directories read-only (/usr, /etc and the /bin, /lib... links or
 * directories), a fresh /proc, a private /dev and /tmp, the view's
 * user-data at /mnt/user-data, skills read-only at /mnt/skills,
 * acp-workspace and each extra mount at /mnt/NAME; working directory
 * /mnt/user-data/workspace; its own PID, IPC and UTS namespaces, no
 * network unless asked, no capabilities, killed with the broker
 * (--die-with-parent), a new session (no terminal to inject into).
 *
 * host mode: the host's shell, working directory the view's workspace;
 * virtual paths in the command are rewritten to the view's mount point,
 * and the mount point (and the thread's backing directory) in the output
 * masked back to /mnt. Not a security boundary: refused unless the
 * configuration allows it.
 */
#ifndef SBX_SANDBOX_H
#define SBX_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>

struct sandbox_cmd {
	const char *mount;		/* the view's mount point */
	const char *const *extra;	/* extra mount NAMEs, NULL-terminated */
	const char *command;		/* the shell command, prefix included;
					 * NULL: a shell reading stdin */
	bool network;
};

/* The argv (malloc'd strings, NULL-terminated; sandbox_argv_free()) to
 * run C (a shell reading stdin if C's command is NULL), or NULL (out of
 * memory). */
char **sandbox_argv_namespace(const struct sandbox_cmd *c);
char **sandbox_argv_host(const struct sandbox_cmd *c);
void sandbox_argv_free(char **argv);

/* The shell: the first of /bin/bash, /bin/sh that exists. */
const char *sandbox_shell(void);

/* COMMAND with the virtual paths (/mnt/user-data, /mnt/skills,
 * /mnt/acp-workspace, /mnt/NAME) made paths under MOUNT (malloc'd). */
char *sandbox_rewrite(const char *command, const char *mount,
		      const char *const *extra);
/* TEXT with each of the host directories FROM (NULL-terminated) replaced
 * by /mnt (malloc'd). */
char *sandbox_mask(const char *text, const char *const *from);

#endif
