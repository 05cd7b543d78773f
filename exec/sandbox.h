/* sandbox.h - how a command is run in a thread's view.
 *
 * namespace mode (the default): under bubblewrap, as the sandbox's host
 * identity (identity.h), shown inside as uid/gid 1000 "agent" through a
 * user namespace of its own, with no capability in any namespace. It
 * sees:
 *   /usr, /etc and the /bin, /lib... links, read-only; of /etc, whatever
 *     other users of the host may not read (shadow, gshadow, SSH host
 *     keys, sudoers...) is masked, and so are the other files that list
 *     the host's accounts (passwd-, group-, subuid...); /etc/passwd and
 *     /etc/group are the host's system accounts plus "agent";
 *   a fresh /proc (its own PID namespace) with /proc/sys, sysrq-trigger,
 *     irq, bus and fs read-only and kcore, keys, timer_list, sched_debug,
 *     latency_stats, timer_stats, acpi, asound and scsi masked; no /sys;
 *   a private /dev (null, zero, full, random, urandom, tty, pts) and /tmp;
 *   the view: /mnt/user-data, /mnt/skills (read-only),
 *     /mnt/acp-workspace and /mnt/NAME for each extra mount;
 * with its own IPC, UTS and cgroup namespaces, no network unless asked,
 * the seccomp filter of filter.h, killed with the broker
 * (--die-with-parent), in a new session (no terminal), working directory
 * /mnt/user-data/workspace (or the one it is given), and exactly the environment given: bwrap
 * itself runs with PATH alone, and its options (host paths included)
 * come through a descriptor, so /proc/1/cmdline shows none of them.
 *
 * A root broker's bubblewrap runs as the sandbox's uid and could not
 * reach the view under $SBX_HOME (0700): the launch first makes a mount
 * namespace whose root holds the system directories above, /dev, a
 * fresh /proc and the view's directories under /mnt, and nothing else
 * of the host's mount table (launch.h); bubblewrap binds from there.
 *
 * host mode: the host's shell as the broker's user, working directory the
 * view's workspace, virtual paths rewritten (hostpath.h), the request's
 * variables exported by the shell itself, never given to the exec. Not a
 * security boundary: refused unless the configuration allows it.
 */
#ifndef SBX_SANDBOX_H
#define SBX_SANDBOX_H

#include "identity.h"
#include "launch.h"
#include "common/config.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/* What every sandbox of a broker shares: bubblewrap, the masks, the
 * seccomp program, the account files. */
struct sandbox;

/* Finds bubblewrap (C's bwrap, else /usr/bin/bwrap, /bin/bwrap), builds
 * the seccomp program and reads the host's /etc. NULL with a one-line
 * reason in ERR that names what is missing. */
struct sandbox *sandbox_new(const struct config *c, char *err, size_t errlen);
void sandbox_free(struct sandbox *s);
const char *sandbox_bwrap(const struct sandbox *s);
/* How many paths of /etc are masked. */
size_t sandbox_masked(const struct sandbox *s);
/* Whether bubblewrap can make a sandbox here as ID (a user namespace of
 * its own among them): 0, or -EPERM with what bwrap said in WHY. A root
 * broker in a chroot, where no process may make a user namespace, finds
 * here that its sandboxes must leave the chroot first (in their own
 * mount namespace, launch.h), and they do from then on. */
int sandbox_probe(struct sandbox *s, const struct identity *id, char *why, size_t whylen);
bool sandbox_leaves_chroot(const struct sandbox *s);

struct sandbox_cmd {
	const char *mount;	  /* the view's mount point */
	const char *const *extra; /* extra mount NAMEs, NULL-terminated */
	const char *command;	  /* the shell command, prefix included;
					 * NULL: a shell reading stdin */
	bool network;
	const struct identity *id; /* whom it runs as */
	char *const *env;	   /* its environment, "K=V", NULL-ended */
	const char *cwd;	   /* its working directory inside; NULL: SANDBOX_CWD */
	const char *program;	   /* NULL: the shell; else this program, without
					 * arguments, as the first process of the
					 * sandbox's PID namespace (--as-pid-1):
					 * the one-off launcher (launcher.h) */
};

/* Where a command starts unless told: the view's workspace. */
#define SANDBOX_CWD "/mnt/user-data/workspace"

#define SANDBOX_NFDS 5
/* user-data, skills, acp-workspace and the extra mounts */
#define SANDBOX_VIEW_DIRS (3 + CONFIG_MAX_MOUNTS)

/* One start of bubblewrap, ready to be given to launch_spawn(). */
struct sandbox_start {
	char **argv;
	char *envp[2];	       /* bwrap's own: PATH */
	struct launch launch;  /* the limits module adds its part */
	int fds[SANDBOX_NFDS]; /* passed as 3...: options, seccomp,
					 * passwd, group, info (write end) */
	int info;	       /* read end: bwrap writes its child's
					 * pid once the sandbox is set up, or
					 * closes it having failed */
	char binds[SANDBOX_VIEW_DIRS][2][PATH_MAX];
};

/* Prepares a start of C in S (sandbox_start_free()). Returns 0 or -errno
 * with a reason in ERR. */
int sandbox_prepare(const struct sandbox *s, const struct sandbox_cmd *c, struct sandbox_start *st,
		    char *err, size_t errlen);
void sandbox_start_free(struct sandbox_start *st);

/* The argv (sandbox_argv_free()) of host mode for C: the shell runs its
 * command with the request's variables exported first (C->env holds only
 * those here), or reads commands from stdin if C's command is NULL. */
char **sandbox_argv_host(const struct sandbox_cmd *c);
void sandbox_argv_free(char **argv);

/* The shell: the first of /bin/bash, /bin/sh that exists. */
const char *sandbox_shell(void);

#endif
