/* start.h - everything one command or shell session needs to start, in
 * either mode: the program and its arguments, its environment, the
 * launch steps (launch.h), bubblewrap's info descriptor, and its cgroup
 * leaf (limits.h). One-off commands (broker_ops.c) and sessions (session.c)
 * start the same way.
 */
#ifndef SBX_START_H
#define SBX_START_H

#include "cgroup.h"
#include "sandbox.h"

#include <stdbool.h>

struct start_spec {
	const struct sandbox *sandbox;
	struct cgroups *limits;
	const char *user, *thread;
	struct sandbox_cmd cmd; /* its env: the request's variables */
	char *const *base_env;	/* the broker's environment (env_build()) */
	char *const *env_pass;	/* sbx.conf's env_pass; may be NULL */
	bool host;
	const char *host_cwd; /* host mode: the working directory */
};

struct start {
	char **argv;
	char **envp;
	const char *cwd;
	const struct launch *launch;
	int info;		  /* -1: none */
	struct cgroup_leaf *leaf; /* NULL: none (host mode) */
	/* owned */
	struct sandbox_start sb;
	struct launch host_launch;
	char **host_argv, **env;
};

/* Prepares S for SPEC. Returns 0, or -errno with a one-line reason in
 * ERR. */
int start_prepare(struct start *s, const struct start_spec *spec, char *err, size_t errlen);
/* The child has its descriptors: the parent's copies are closed. */
void start_spawned(struct start *s);
/* Hands the leaf over (the caller frees it with cgroup_leaf_free()). */
struct cgroup_leaf *start_take_leaf(struct start *s);
/* Frees S; a leaf not taken is freed (its processes killed) too. */
void start_free(struct start *s);

/* "cannot start the sandbox: REASON" in BUF, from what a start that
 * failed wrote on stderr (SAID, LEN bytes; bwrap's message, or the
 * launch's after LAUNCH_FAILED): its first line, as valid UTF-8. */
void start_failure(const char *said, size_t len, char *buf, size_t size);

#endif
