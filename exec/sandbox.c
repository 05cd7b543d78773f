/* sandbox.c - see sandbox.h. */
#include "sandbox.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BWRAP "/usr/bin/bwrap"

/* A growing argv. */
struct args {
	char **v;
	size_t n, cap;
	bool failed;
};

static void add(struct args *a, const char *s)
{
	if (a->failed)
		return;
	if (a->n + 2 > a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		char **v = realloc(a->v, cap * sizeof(*v));
		if (!v) {
			a->failed = true;
			return;
		}
		a->v = v;
		a->cap = cap;
	}
	if (!(a->v[a->n] = strdup(s))) {
		a->failed = true;
		return;
	}
	a->v[++a->n] = NULL;
}

static void add3(struct args *a, const char *x, const char *y, const char *z)
{
	add(a, x);
	add(a, y);
	add(a, z);
}

static char **done(struct args *a)
{
	if (!a->failed && a->v)
		return a->v;
	sandbox_argv_free(a->v);
	return NULL;
}

void sandbox_argv_free(char **argv)
{
	for (size_t i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}

const char *sandbox_shell(void)
{
	return access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
}

/* The shell running COMMAND, or, for a session (NULL), commands read
 * from stdin. */
static void add_shell(struct args *a, const char *command)
{
	add(a, sandbox_shell());
	if (command) {
		add(a, "-c");
		add(a, command);
	} else {
		add(a, "-s");
	}
}

/* A host system directory: the same link, or a read-only bind. */
static void system_dir(struct args *a, const char *dir)
{
	char target[PATH_MAX];
	struct stat st;
	ssize_t n;

	if (lstat(dir, &st) < 0)
		return;
	if (S_ISLNK(st.st_mode) && (n = readlink(dir, target, sizeof(target) - 1)) > 0) {
		target[n] = '\0';
		add3(a, "--symlink", target, dir);
	} else if (S_ISDIR(st.st_mode)) {
		add3(a, "--ro-bind", dir, dir);
	}
}

/* "M/NAME" and "/mnt/NAME" bound, writable or not. */
static void view_dir(struct args *a, const char *mount, const char *name, bool ro)
{
	char src[PATH_MAX], dst[PATH_MAX];

	snprintf(src, sizeof(src), "%s/%s", mount, name);
	snprintf(dst, sizeof(dst), "/mnt/%s", name);
	add3(a, ro ? "--ro-bind" : "--bind", src, dst);
}

char **sandbox_argv_namespace(const struct sandbox_cmd *c)
{
	static const char *const system_dirs[] = {
		"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	};
	/* Its own namespaces, no capabilities (run as root, bwrap would
	 * keep every one, mount included), killed with the broker, no
	 * terminal to push input into. */
	static const char *const fixed[] = {
		BWRAP, "--die-with-parent", "--new-session", "--unshare-pid",
		"--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--cap-drop", "ALL",
	};
	static const char *const private_dirs[] = {
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--dir", "/mnt",
	};
	struct args a = { 0 };

	for (size_t i = 0; i < sizeof(fixed) / sizeof(*fixed); i++)
		add(&a, fixed[i]);
	if (!c->network)
		add(&a, "--unshare-net");
	for (size_t i = 0; i < sizeof(system_dirs) / sizeof(*system_dirs); i++)
		system_dir(&a, system_dirs[i]);
	for (size_t i = 0; i < sizeof(private_dirs) / sizeof(*private_dirs); i++)
		add(&a, private_dirs[i]);
	view_dir(&a, c->mount, "user-data", false);
	view_dir(&a, c->mount, "skills", true);
	view_dir(&a, c->mount, "acp-workspace", false);
	for (size_t i = 0; c->extra && c->extra[i]; i++)
		view_dir(&a, c->mount, c->extra[i], false);	/* :ro is the view's */
	add(&a, "--chdir");
	add(&a, "/mnt/user-data/workspace");
	add3(&a, "--setenv", "HOME", "/tmp");
	add(&a, "--");
	add_shell(&a, c->command);
	return done(&a);
}

char **sandbox_argv_host(const struct sandbox_cmd *c)
{
	struct args a = { 0 };
	char *cmd = c->command ? sandbox_rewrite(c->command, c->mount, c->extra) : NULL;

	if (c->command && !cmd)
		return NULL;
	add_shell(&a, cmd);
	free(cmd);
	return done(&a);
}

/* True if C may continue a path name (so "/mnt/skills2" is not
 * "/mnt/skills"). */
static bool name_char(char c)
{
	return c && c != '/' && c != ' ' && c != '\t' && c != '\n' && c != '\'' &&
	       c != '"' && c != ';' && c != ':' && c != ')' && c != '|' && c != '&' &&
	       c != '>' && c != '<' && c != '`' && c != '$' && c != '=';
}

/* S with every whole-name occurrence of FROM[i] replaced by TO[i]. */
static char *replace_all(const char *s, const char *const *from,
			 const char *const *to, size_t n)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	for (const char *p = s; *p;) {
		size_t hit = n;
		for (size_t i = 0; i < n && hit == n; i++) {
			size_t k = strlen(from[i]);
			if (!strncmp(p, from[i], k) && !name_char(p[k]))
				hit = i;
		}
		if (hit < n) {
			fputs(to[hit], f);
			p += strlen(from[hit]);
		} else {
			fputc(*p++, f);
		}
	}
	if (fclose(f) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

char *sandbox_rewrite(const char *command, const char *mount,
		      const char *const *extra)
{
	const char *names[3 + 16] = { "user-data", "skills", "acp-workspace" };
	char from[19][PATH_MAX], to[19][PATH_MAX];
	const char *f[19], *t[19];
	size_t n = 3;

	for (size_t i = 0; extra && extra[i] && n < 19; i++)
		names[n++] = extra[i];
	for (size_t i = 0; i < n; i++) {
		snprintf(from[i], PATH_MAX, "/mnt/%s", names[i]);
		snprintf(to[i], PATH_MAX, "%s/%s", mount, names[i]);
		f[i] = from[i];
		t[i] = to[i];
	}
	return replace_all(command, f, t, n);
}

char *sandbox_mask(const char *text, const char *const *from)
{
	const char *to[8];
	size_t n = 0;

	while (from[n] && n < 8)
		to[n++] = "/mnt";
	return replace_all(text, from, to, n);
}
