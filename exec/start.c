/* start.c - see start.h. */
#include "start.h"
#include "env.h"
#include "common/utf8.h"
#include "common/cleanup.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int start_prepare(struct start *s, const struct start_spec *spec, char *err, size_t errlen)
{
	size_t nenv = 0;
	int r;

	memset(s, 0, sizeof(*s));
	s->info = -1;
	s->sb.info = -1;
	for (int i = 0; i < SANDBOX_NFDS; i++)
		s->sb.fds[i] = -1;
	while (spec->cmd.env && spec->cmd.env[nenv])
		nenv++;
	if (spec->host) {
		/* The request's variables are exported by the shell: the
		 * exec of the shell itself gets none of them. */
		launch_init(&s->host_launch);
		s->host_argv = sandbox_argv_host(&spec->cmd);
		s->env = env_build(spec->base_env, true, spec->env_pass, NULL, 0);
		if (!s->host_argv || !s->env) {
			snprintf(err, errlen, "out of memory");
			start_free(s);
			return -ENOMEM;
		}
		s->argv = s->host_argv;
		s->envp = s->env;
		s->cwd = spec->host_cwd;
		s->launch = &s->host_launch;
		return 0;
	}
	if (!(s->env = env_build(spec->base_env, false, spec->env_pass, spec->cmd.env, nenv))) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	struct sandbox_cmd cmd = spec->cmd;
	cmd.env = s->env;
	if ((r = sandbox_prepare(spec->sandbox, &cmd, &s->sb, err, errlen)) < 0 ||
	    (r = cgroup_leaf_new(spec->limits, spec->user, spec->thread, cmd.id->uid,
				 identity_separate(cmd.id), &s->leaf, err, errlen)) < 0) {
		start_free(s);
		return r;
	}
	cgroup_launch(s->leaf, &s->sb.launch);
	s->argv = s->sb.argv;
	s->envp = s->sb.envp;
	s->launch = &s->sb.launch;
	s->info = s->sb.info;
	return 0;
}

void start_spawned(struct start *s)
{
	for (int i = 0; i < SANDBOX_NFDS; i++) {
		closep(&s->sb.fds[i]);
		s->sb.fds[i] = -1;
	}
}

struct cgroup_leaf *start_take_leaf(struct start *s)
{
	return TAKE_PTR(s->leaf);
}

void start_free(struct start *s)
{
	cgroup_leaf_free(s->leaf);
	s->leaf = NULL;
	sandbox_start_free(&s->sb); /* closes the info descriptor too */
	s->info = -1;
	sandbox_argv_free(s->host_argv);
	s->host_argv = NULL;
	env_free(s->env);
	s->env = NULL;
}

void start_failure(const char *said, size_t len, char *buf, size_t size)
{
	_cleanup_(freep) char *text = utf8_clean(said ? said : "", said ? len : 0, NULL);
	const char *why = text ? text : "";

	if (!strncmp(why, LAUNCH_FAILED, strlen(LAUNCH_FAILED)))
		why += strlen(LAUNCH_FAILED);
	snprintf(buf, size, "cannot start the sandbox: %.*s", (int)strcspn(why, "\n"),
		 *why ? why : "bwrap failed");
}
