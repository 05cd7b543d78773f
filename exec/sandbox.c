/* sandbox.c - see sandbox.h. */
#include "sandbox.h"
#include "env.h"
#include "filter.h"
#include "hostpath.h"
#include "common/cleanup.h"
#include "common/home.h"
#include "common/walk.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Where a root broker's launch builds the sandbox's root on the host,
 * and where in that root it binds the view for bubblewrap (launch.h). */
#define ROOT_AT "/mnt"
#define VIEW_AT "/mnt"
#define ETC_MASKS_MAX 256
#define SYSTEM_DIRS 8
_Static_assert(SYSTEM_DIRS + 2 + SANDBOX_VIEW_DIRS <= LAUNCH_MAX_BINDS,
	       "the launch's root: the system directories, bwrap, /dev and the view's");

/* The descriptors bubblewrap gets, in this order, from 3 up. */
enum { FD_ARGS, FD_SECCOMP, FD_PASSWD, FD_GROUP, FD_INFO };

struct sandbox {
	char bwrap[PATH_MAX];
	void *seccomp;
	size_t seccomp_len;
	char *passwd, *group;
	char *etc_files[ETC_MASKS_MAX], *etc_dirs[ETC_MASKS_MAX];
	size_t netc_files, netc_dirs;
	struct {
		const char *path;
		char target[PATH_MAX]; /* a link's; "": a directory */
	} sys[SYSTEM_DIRS];	       /* those the host has */
	size_t nsys;
	bool chrooted; /* sandboxes must leave the broker's
					 * chroot first (sandbox_probe) */
};

/* ---- what the broker reads once ------------------------------------------ */

static int find_bwrap(const struct config *c, char *buf, size_t size, char *err, size_t errlen)
{
	static const char *const places[] = { "/usr/bin/bwrap", "/bin/bwrap",
					      "/usr/local/bin/bwrap" };

	if (c->bwrap) {
		if (access(c->bwrap, X_OK) < 0) {
			snprintf(err, errlen, "bubblewrap: bwrap = %s in [broker]: %s", c->bwrap,
				 strerror(errno));
			return -ENOENT;
		}
		snprintf(buf, size, "%s", c->bwrap);
		return 0;
	}
	for (size_t i = 0; i < sizeof(places) / sizeof(*places); i++)
		if (access(places[i], X_OK) == 0) {
			snprintf(buf, size, "%s", places[i]);
			return 0;
		}
	snprintf(err, errlen,
		 "bubblewrap is not installed: no bwrap in /usr/bin or /bin"
		 " (install the bubblewrap package, or set bwrap = PATH in [broker])");
	return -ENOENT;
}

/* The host's /etc/passwd or /etc/group with only its system entries
 * (ids below 1000, and nobody/nogroup), then the sandbox's own. */
static char *accounts(const char *path, const char *own)
{
	_cleanup_(fclosep) FILE *in = fopen(path, "re");
	char *out = NULL, line[4096];
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	while (in && fgets(line, sizeof(line), in)) {
		char *p = strchr(line, ':');
		p = p ? strchr(p + 1, ':') : NULL; /* name:x:ID: */
		unsigned long id = p ? strtoul(p + 1, NULL, 10) : 1000;
		if ((id < 1000 || id == 65534) && id != SANDBOX_UID &&
		    strncmp(line, SANDBOX_USER ":", sizeof(SANDBOX_USER)))
			fputs(line, f);
	}
	fputs(own, f);
	if (fclose(f) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

struct etc_scan {
	struct sandbox *s;
	char path[PATH_MAX];
	int depth;
};

/* Whether /etc/NAME holds the host's accounts other than in the
 * replaced passwd and group: their backups (vipw's passwd-, group-; any
 * passwd.bak), the shadow files and sub-id ranges, which name host users
 * and are often readable by all. */
static bool account_file(const char *name)
{
	static const char *const prefixes[] = { "passwd",  "group",  "shadow",
						"gshadow", "subuid", "subgid" };

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(*prefixes); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

/* Records what of /etc others may not read, and the account files:
 * files masked with /dev/null, directories with an empty tmpfs; not
 * descended into. */
static int scan_etc(void *arg, int dirfd, const char *name, const struct stat *st)
{
	struct etc_scan *e = arg;
	struct sandbox *s = e->s;
	size_t len = strlen(e->path);

	if ((size_t)snprintf(e->path + len, sizeof(e->path) - len, "/%s", name) >=
	    sizeof(e->path) - len)
		goto out;
	if (!strcmp(e->path, "/etc/passwd") || !strcmp(e->path, "/etc/group"))
		goto out; /* replaced */
	if (S_ISDIR(st->st_mode) && (st->st_mode & 05) != 05) {
		if (s->netc_dirs < ETC_MASKS_MAX)
			s->etc_dirs[s->netc_dirs++] = strdup(e->path);
	} else if (S_ISDIR(st->st_mode) && e->depth < 6) {
		int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			e->depth++;
			dir_each(fd, scan_etc, e);
			e->depth--;
		}
	} else if (S_ISREG(st->st_mode) &&
		   (!(st->st_mode & S_IROTH) || (e->depth == 0 && account_file(name)))) {
		if (s->netc_files < ETC_MASKS_MAX)
			s->etc_files[s->netc_files++] = strdup(e->path);
	}
out:
	e->path[len] = '\0';
	return 0;
}

/* The host's system directories the sandbox shows: each a link (kept a
 * link) or a directory (bound read-only). */
static void scan_system(struct sandbox *s)
{
	static const char *const dirs[SYSTEM_DIRS] = {
		"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	};
	struct stat st;

	for (size_t i = 0; i < SYSTEM_DIRS; i++) {
		if (lstat(dirs[i], &st) < 0 || !(S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode)))
			continue;
		char *t = s->sys[s->nsys].target;
		ssize_t n = S_ISLNK(st.st_mode) ? readlink(dirs[i], t, PATH_MAX - 1) : 0;
		if (n < 0)
			continue;
		t[n] = '\0';
		s->sys[s->nsys++].path = dirs[i];
	}
}

struct sandbox *sandbox_new(const struct config *c, char *err, size_t errlen)
{
	static const char agent[] = SANDBOX_USER ":x:1000:1000:sandbox agent:" SANDBOX_HOME
						 ":/bin/bash\n";
	struct sandbox *s = calloc(1, sizeof(*s));

	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (find_bwrap(c, s->bwrap, sizeof(s->bwrap), err, errlen) < 0 ||
	    filter_program(&s->seccomp, &s->seccomp_len, err, errlen) < 0) {
		sandbox_free(s);
		return NULL;
	}
	s->passwd = accounts("/etc/passwd", agent);
	s->group = accounts("/etc/group", SANDBOX_USER ":x:1000:\n");
	scan_system(s);
	struct etc_scan scan = { s, "/etc", 0 };
	int etc = open("/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (etc >= 0)
		dir_each(etc, scan_etc, &scan);
	if (!s->passwd || !s->group) {
		snprintf(err, errlen, "out of memory");
		sandbox_free(s);
		return NULL;
	}
	return s;
}

void sandbox_free(struct sandbox *s)
{
	if (!s)
		return;
	free(s->seccomp);
	free(s->passwd);
	free(s->group);
	for (size_t i = 0; i < s->netc_files; i++)
		free(s->etc_files[i]);
	for (size_t i = 0; i < s->netc_dirs; i++)
		free(s->etc_dirs[i]);
	free(s);
}

const char *sandbox_bwrap(const struct sandbox *s)
{
	return s->bwrap;
}

size_t sandbox_masked(const struct sandbox *s)
{
	return s->netc_files + s->netc_dirs;
}

/* ---- argument lists -------------------------------------------------------- */

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

static void add2(struct args *a, const char *x, const char *y)
{
	add(a, x);
	add(a, y);
}

static void add3(struct args *a, const char *x, const char *y, const char *z)
{
	add(a, x);
	add2(a, y, z);
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
	if (command)
		add2(a, "-c", command);
	else
		add(a, "-s");
}

/* An empty, read-only directory over DIR. */
static void mask_dir(struct args *a, const char *dir)
{
	add2(a, "--tmpfs", dir);
	add2(a, "--remount-ro", dir);
}

/* Docker's read-only and masked paths of /proc (those this kernel has). */
static void proc_paths(struct args *a)
{
	static const char *const ro[] = {
		"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs",
	};
	static const char *const files[] = {
		"/proc/kcore",	     "/proc/keys",	    "/proc/timer_list",
		"/proc/sched_debug", "/proc/latency_stats", "/proc/timer_stats",
	};
	static const char *const dirs[] = { "/proc/acpi", "/proc/asound", "/proc/scsi" };

	add2(a, "--proc", "/proc");
	for (size_t i = 0; i < sizeof(ro) / sizeof(*ro); i++)
		if (access(ro[i], F_OK) == 0)
			add3(a, "--ro-bind", ro[i], ro[i]);
	for (size_t i = 0; i < sizeof(files) / sizeof(*files); i++)
		if (access(files[i], F_OK) == 0)
			add3(a, "--ro-bind", "/dev/null", files[i]);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(*dirs); i++)
		if (access(dirs[i], F_OK) == 0)
			mask_dir(a, dirs[i]);
}

/* The I-th directory of the view a sandbox binds: user-data, skills,
 * acp-workspace, then C's extra mounts; NULL after the last. */
static const char *view_dir(const struct sandbox_cmd *c, size_t i)
{
	static const char *const own[] = VIEW_TOP_NAMES;
	const size_t n = sizeof(own) / sizeof(own[0]);

	return i < n ? own[i] : c->extra ? c->extra[i - n] : NULL;
}

static void fd_opt(struct args *a, const char *opt, int which, const char *dest)
{
	char n[16];

	snprintf(n, sizeof(n), "%d", 3 + which);
	if (dest)
		add3(a, opt, n, dest);
	else
		add2(a, opt, n);
}

/* The root a root broker's launch makes for bubblewrap (launch.h): what
 * bubblewrap binds from, the view's directories aside (the caller's). */
static void launch_root(const struct sandbox *s, struct launch *l, bool leave_chroot)
{
	l->root_at = ROOT_AT;
	l->leave_chroot = leave_chroot;
	for (size_t i = 0; i < s->nsys; i++)
		l->binds[l->nbinds++] =
			*s->sys[i].target ? (struct launch_bind){ s->sys[i].target, s->sys[i].path,
								  LAUNCH_LINK }
					  : (struct launch_bind){ s->sys[i].path, s->sys[i].path,
								  LAUNCH_TREE };
	/* bubblewrap's /dev takes the host's device nodes, not its mounts. */
	l->binds[l->nbinds++] = (struct launch_bind){ "/dev", "/dev", LAUNCH_FLAT };
	/* A bwrap of [broker] outside them (/opt/...): the file alone. */
	bool system = false;
	for (size_t i = 0; i < s->nsys && !system; i++) {
		size_t len = strlen(s->sys[i].path);
		system = !strncmp(s->bwrap, s->sys[i].path, len) && s->bwrap[len] == '/';
	}
	if (!system)
		l->binds[l->nbinds++] = (struct launch_bind){ s->bwrap, s->bwrap, LAUNCH_FLAT };
}

/* bubblewrap's options (given through FD_ARGS): everything but the
 * command. FROM is where the view's directories are bound from. */
static char **bwrap_options(const struct sandbox *s, const struct sandbox_cmd *c, const char *from)
{
	static const char *const fixed[] = {
		"--die-with-parent",
		"--new-session",
		"--unshare-user",
		"--uid",
		"1000",
		"--gid",
		"1000",
		"--unshare-pid",
		"--unshare-ipc",
		"--unshare-uts",
		"--unshare-cgroup-try",
		"--cap-drop",
		"ALL",
	};
	struct args a = { 0 };
	char src[PATH_MAX], dst[PATH_MAX];

	for (size_t i = 0; i < sizeof(fixed) / sizeof(*fixed); i++)
		add(&a, fixed[i]);
	if (!c->network)
		add(&a, "--unshare-net");
	/* No reaper of bwrap's: the launcher is the namespace's init, which
	 * no process of the namespace may signal, and whose end ends it. */
	if (c->program)
		add(&a, "--as-pid-1");
	for (size_t i = 0; i < s->nsys; i++)
		if (*s->sys[i].target)
			add3(&a, "--symlink", s->sys[i].target, s->sys[i].path);
		else
			add3(&a, "--ro-bind", s->sys[i].path, s->sys[i].path);
	for (size_t i = 0; i < s->netc_files; i++)
		add3(&a, "--ro-bind", "/dev/null", s->etc_files[i]);
	for (size_t i = 0; i < s->netc_dirs; i++)
		mask_dir(&a, s->etc_dirs[i]);
	fd_opt(&a, "--ro-bind-data", FD_PASSWD, "/etc/passwd");
	fd_opt(&a, "--ro-bind-data", FD_GROUP, "/etc/group");
	proc_paths(&a);
	add2(&a, "--dev", "/dev");
	add2(&a, "--tmpfs", "/tmp");
	add2(&a, "--dir", "/mnt");
	for (size_t i = 0; view_dir(c, i); i++) {
		const char *name = view_dir(c, i);
		snprintf(src, sizeof(src), "%s/%s", from, name);
		snprintf(dst, sizeof(dst), "/mnt/%s", name);
		/* skills is the view's read-only root; :ro mounts are the view's too */
		add3(&a, i == 1 ? "--ro-bind" : "--bind", src, dst);
	}
	add2(&a, "--chdir", c->cwd ? c->cwd : SANDBOX_CWD);
	add(&a, "--clearenv");
	for (size_t i = 0; c->env && c->env[i]; i++) {
		const char *eq = strchr(c->env[i], '=');
		char name[256];
		if (!eq || (size_t)(eq - c->env[i]) >= sizeof(name))
			continue;
		memcpy(name, c->env[i], (size_t)(eq - c->env[i]));
		name[eq - c->env[i]] = '\0';
		add3(&a, "--setenv", name, eq + 1);
	}
	fd_opt(&a, "--seccomp", FD_SECCOMP, NULL);
	fd_opt(&a, "--info-fd", FD_INFO, NULL);
	return done(&a);
}

/* A memfd holding LEN bytes of DATA, at offset 0. */
static int memfd_with(const char *name, const void *data, size_t len)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, (const char *)data + off, len - off);
		if (n <= 0) {
			int e = n < 0 ? -errno : -EIO;
			close(fd);
			return e;
		}
		off += (size_t)n;
	}
	if (lseek(fd, 0, SEEK_SET) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

/* The options, NUL-separated, as --args reads them. */
static int options_fd(char **opts)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;
	for (size_t i = 0; opts[i]; i++)
		fwrite(opts[i], 1, strlen(opts[i]) + 1, f);
	if (fclose(f) != 0)
		return -ENOMEM;
	int fd = memfd_with("sbx-bwrap-args", buf, len);
	free(buf);
	return fd;
}

void sandbox_start_free(struct sandbox_start *st)
{
	sandbox_argv_free(st->argv);
	st->argv = NULL;
	for (int i = 0; i < SANDBOX_NFDS; i++) {
		closep(&st->fds[i]);
		st->fds[i] = -1;
	}
	closep(&st->info);
	st->info = -1;
}

int sandbox_prepare(const struct sandbox *s, const struct sandbox_cmd *c, struct sandbox_start *st,
		    char *err, size_t errlen)
{
	bool separate = identity_separate(c->id);
	int info[2], r = 0;

	memset(st, 0, sizeof(*st));
	for (int i = 0; i < SANDBOX_NFDS; i++)
		st->fds[i] = -1;
	st->info = -1;
	launch_init(&st->launch);
	st->envp[0] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
	st->envp[1] = NULL;

	char **opts = bwrap_options(s, c, separate ? VIEW_AT : c->mount);
	struct args a = { 0 };
	add(&a, s->bwrap);
	add2(&a, "--args", "3");
	add(&a, "--");
	if (c->program)
		add(&a, c->program);
	else
		add_shell(&a, c->command);
	st->argv = done(&a);
	if (!opts || !st->argv) {
		sandbox_argv_free(opts);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	st->fds[FD_ARGS] = options_fd(opts);
	sandbox_argv_free(opts);
	st->fds[FD_SECCOMP] = memfd_with("sbx-seccomp", s->seccomp, s->seccomp_len);
	st->fds[FD_PASSWD] = memfd_with("sbx-passwd", s->passwd, strlen(s->passwd));
	st->fds[FD_GROUP] = memfd_with("sbx-group", s->group, strlen(s->group));
	if (pipe2(info, O_CLOEXEC) == 0) {
		st->info = info[0];
		st->fds[FD_INFO] = info[1];
	}
	for (int i = 0; i < SANDBOX_NFDS && r == 0; i++)
		if (st->fds[i] < 0)
			r = st->fds[i] == -1 ? -errno : st->fds[i];
	if (r < 0) {
		snprintf(err, errlen, "cannot prepare the sandbox: %s", strerror(-r));
		sandbox_start_free(st);
		return r;
	}
	for (int i = 0; i < SANDBOX_NFDS; i++)
		st->launch.pass[st->launch.npass++] = st->fds[i];
	if (separate) {
		st->launch.uid = c->id->uid;
		st->launch.gid = c->id->gid;
		launch_root(s, &st->launch, s->chrooted);
		for (size_t i = 0; i < SANDBOX_VIEW_DIRS && view_dir(c, i); i++) {
			const char *name = view_dir(c, i);
			snprintf(st->binds[i][0], PATH_MAX, "%s/%s", c->mount, name);
			snprintf(st->binds[i][1], PATH_MAX, VIEW_AT "/%s", name);
			st->launch.binds[st->launch.nbinds++] = (struct launch_bind){
				st->binds[i][0], st->binds[i][1], LAUNCH_TREE
			};
		}
	}
	return 0;
}

char **sandbox_argv_host(const struct sandbox_cmd *c)
{
	struct args a = { 0 };
	_cleanup_(freep) char *exports = env_exports(c->env);
	_cleanup_(freep) char *rewritten =
		c->command ? hostpath_rewrite(c->command, c->mount, c->extra) : NULL;
	_cleanup_(freep) char *cmd = NULL;

	if (!exports ||
	    (c->command && (!rewritten || asprintf(&cmd, "%s%s", exports, rewritten) < 0)))
		return NULL;
	add_shell(&a, cmd);
	return done(&a);
}

/* One minimal sandbox as ID: 0, or -EPERM with what bwrap said in WHY. */
static int try_sandbox(const struct sandbox *s, const struct identity *id, bool leave_chroot,
		       char *why, size_t whylen)
{
	char *argv[] = {
		(char *)s->bwrap, "--unshare-user",
		"--uid",	  "1000",
		"--gid",	  "1000",
		"--unshare-pid",  "--ro-bind",
		"/usr",		  "/usr",
		"--symlink",	  "usr/bin",
		"/bin",		  "--symlink",
		"usr/lib",	  "/lib",
		"--symlink",	  "usr/lib64",
		"/lib64",	  "--proc",
		"/proc",	  "--dev",
		"/dev",		  "--",
		"/bin/true",	  NULL,
	};
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	struct launch l;
	int err[2], status = 0;

	launch_init(&l);
	if (identity_separate(id)) {
		l.uid = id->uid;
		l.gid = id->gid;
		/* The private mount namespace, as for a command, where the
		 * chroot is left; no view to bind. */
		if (leave_chroot)
			launch_root(s, &l, true);
	}
	if (pipe2(err, O_CLOEXEC) < 0) {
		snprintf(why, whylen, "pipe: %s", strerror(errno));
		return -errno;
	}
	pid_t pid = launch_spawn(argv, envp, NULL, -1, err[1], err[1], &l);
	close(err[1]);
	char buf[512] = "";
	ssize_t n = pid > 0 ? read(err[0], buf, sizeof(buf) - 1) : 0;
	buf[n > 0 ? n : 0] = '\0';
	close(err[0]);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		snprintf(why, whylen, "%.*s", (int)strcspn(buf, "\n"),
			 *buf ? buf : "bwrap did not run");
		return -EPERM;
	}
	return 0;
}

int sandbox_probe(struct sandbox *s, const struct identity *id, char *why, size_t whylen)
{
	char again[512];

	if (try_sandbox(s, id, false, why, whylen) == 0)
		return 0;
	/* A chroot may not make user namespaces; a root broker's launch
	 * can leave it first, in the sandbox's own mount namespace. */
	if (!identity_separate(id) || try_sandbox(s, id, true, again, sizeof(again)) < 0)
		return -EPERM;
	s->chrooted = true;
	return 0;
}

bool sandbox_leaves_chroot(const struct sandbox *s)
{
	return s->chrooted;
}
