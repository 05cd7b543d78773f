/* launch.c - see launch.h. */
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/mount.h>
#include <linux/sched.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

void launch_init(struct launch *l)
{
	memset(l, 0, sizeof(*l));
	l->cgroup_dir = -1;
	l->hold = -1;
	l->uid = (uid_t)-1;
	l->gid = (gid_t)-1;
}

/* ---- the child: async-signal-safe calls only ------------------------- */

/* Where the child's complaints go: the command's stderr, at whatever
 * number it has before the descriptors are arranged. */
static int report_fd = STDERR_FILENO;

static void say(const char *s)
{
	(void)!write(report_fd, s, strlen(s));
}

static __attribute__((noreturn)) void fail(const char *step, int err, int status)
{
	say(LAUNCH_FAILED);
	say(step);
	say(": ");
	/* A static table, no locale: fine between fork and exec. */
	const char *why = strerrordesc_np(err);
	say(why ? why : "unknown error");
	say("\n");
	_exit(status);
}

/* Puts IN, OUT, ERR at 0-2 and L's passed fds at 3..., closes the rest;
 * then waits on L's HOLD, which it kept until then: once no other
 * descriptor is open, the end that writes to it is the parent's alone,
 * and its closing is seen. */
static void arrange_fds(int in, int out, int err, const struct launch *l)
{
	size_t npass = l ? l->npass : 0;
	int high[3 + LAUNCH_MAX_PASS];
	int want[3] = { in, out, err };

	if (in < 0 && (want[0] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
		fail("/dev/null", errno, 126);
	/* Out of the way first: a source may sit where another goes. */
	for (size_t i = 0; i < 3 + npass; i++) {
		int fd = i < 3 ? want[i] : l->pass[i - 3];
		if ((high[i] = fcntl(fd, F_DUPFD_CLOEXEC, 3 + LAUNCH_MAX_PASS)) < 0)
			fail("descriptors", errno, 126);
	}
	report_fd = high[2]; /* stderr's own number may be taken next */
	for (size_t i = 0; i < 3 + npass; i++)
		if (dup2(high[i], (int)i) < 0)
			fail("descriptors", errno, 126);
	report_fd = STDERR_FILENO;
	int first = (int)(3 + npass);
	bool hold = l && l->hold >= 0;
	if (hold && dup2(l->hold, first++) < 0)
		fail("descriptors", errno, 126);
	if (syscall(SYS_close_range, (unsigned)first, ~0u, 0) < 0) {
		struct rlimit r;
		int max = getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < 1u << 20
				  ? (int)r.rlim_cur
				  : 1 << 20;
		for (int fd = first; fd < max; fd++)
			close(fd);
	}
	char go;
	if (hold && read(first - 1, &go, 1) != 1)
		_exit(126); /* let go of: the parent says why, if anything */
	if (hold)
		close(first - 1);
}

/* Signals as a fresh process has them: the broker blocks some, and may
 * have inherited ignored ones; both survive exec. The raw call, for the
 * C library refuses to touch the two real-time signals it keeps. */
static void reset_signals(void)
{
	struct {
		void *handler;
		unsigned long flags;
		void *restorer;
		uint64_t mask;
	} dfl = {
		SIG_DFL,
		0,
		NULL,
		0,
	};
	sigset_t none;

	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof(dfl.mask));
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* A chroot may not make user namespaces (the kernel's rule for any
 * process whose root is not its mount namespace's root): in the private
 * namespace, a copy of the chroot's tree is mounted on top of the
 * namespace's root and made the root. To reach that root, the classic
 * way out of a chroot, as root: a chroot to a directory below, with the
 * working directory left above it, lets ".." walk up to the top. The
 * sandbox still sees the chroot's files and nothing else. */
/* Unescapes mountinfo's octal escapes (\040 for a space) of S in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++, o++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*o = *s;
		}
	}
	*o = '\0';
}

/* Detaches every mount of the namespace below its root, read from
 * /proc/self/mountinfo at the namespace's root: the copy of the host's
 * table outside the chroot, views of other threads among it, would
 * otherwise stay in the namespace, out of the sandbox's sight but
 * keeping each of them mounted, as long as the sandbox lives. After
 * fork: no allocation. */
static void detach_outside(void)
{
	static char buf[1 << 20];
	ssize_t n = 0, r = 0;
	/* Private first: a detach must not propagate to the host's mounts
	 * (the unshare made only the chroot's tree private). */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		fail("a mount namespace", errno, 126);
	int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);

	while (fd >= 0 && n < (ssize_t)sizeof(buf) - 1 &&
	       (r = read(fd, buf + n, sizeof(buf) - 1 - (size_t)n)) > 0)
		n += r;
	if (fd < 0 || r < 0 || n >= (ssize_t)sizeof(buf) - 1)
		fail("/proc/self/mountinfo", fd < 0 || r < 0 ? errno : EFBIG, 126);
	close(fd);
	buf[n] = '\0';
	/* Its first line is the root's ("ID PARENT MAJ:MIN ROOT MOUNTPOINT
	 * ..."): its children are the top of the rest. */
	unsigned long root = strtoul(buf, NULL, 10);
	for (char *line = buf, *next; *line; line = next) {
		next = strchr(line, '\n');
		next = next ? (*next = '\0', next + 1) : line + strlen(line);
		char *end, *field = line;
		unsigned long parent;
		strtoul(field, &end, 10);
		parent = strtoul(end, &end, 10);
		/* skip MAJ:MIN and ROOT; the mount point is the fifth field */
		for (int i = 0; i < 2 && end; i++)
			end = strchr(end + 1, ' ');
		if (!end || parent != root)
			continue;
		char *at = end + 1, *space = strchr(at, ' ');
		if (!space)
			continue;
		*space = '\0';
		unescape(at);
		if (strcmp(at, "/") && umount2(at, MNT_DETACH) < 0 && errno != EINVAL &&
		    errno != ENOENT)
			fail(at, errno, 126);
	}
}

static void leave_chroot(void)
{
	int tree = (int)syscall(SYS_open_tree, AT_FDCWD, "/",
				OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);

	if (tree < 0 || chdir("/") < 0 || chroot("/tmp") < 0)
		fail("the broker's chroot", errno, 126);
	for (int i = 0; i < 256 && chdir("..") == 0; i++)
		;
	if (chroot(".") < 0)
		fail("the broker's chroot", errno, 126);
	detach_outside();
	if (syscall(SYS_move_mount, tree, "", AT_FDCWD, "/", MOVE_MOUNT_F_EMPTY_PATH) < 0 ||
	    fchdir(tree) < 0 || chroot(".") < 0 || chdir("/") < 0)
		fail("the broker's chroot", errno, 126);
	close(tree);
}

/* AT followed by PATH, in BUF (PATH_MAX bytes). */
static void join(char *buf, const char *at, const char *path)
{
	size_t a = strlen(at), p = strlen(path);

	if (a + p >= PATH_MAX)
		fail(path, ENAMETOOLONG, 126);
	memcpy(buf, at, a);
	memcpy(buf + a, path, p + 1);
}

/* PATH's directories below its first FROM bytes (which exist), PATH
 * itself included, as mkdir -p makes them. */
static void make_dirs(char *path, size_t from)
{
	for (char *p = path + from + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			fail(path, errno, 126);
		*p = c;
		if (!c)
			return;
	}
}

/* B made in the root being built at AT. */
static void root_entry(const char *at, const struct launch_bind *b)
{
	char path[PATH_MAX];

	join(path, at, b->dst);
	if (b->kind == LAUNCH_LINK) {
		if (symlink(b->src, path) < 0)
			fail(b->dst, errno, 126);
		return;
	}
	struct stat st;
	if (stat(b->src, &st) < 0)
		fail(b->src, errno, 126);
	if (S_ISDIR(st.st_mode)) {
		make_dirs(path, strlen(at));
	} else {
		/* A file's mount point is a file. */
		char *slash = strrchr(path, '/');
		*slash = '\0';
		if (slash > path + strlen(at))
			make_dirs(path, strlen(at));
		*slash = '/';
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0)
			fail(b->dst, errno, 126);
		close(fd);
	}
	if (mount(b->src, path, NULL, MS_BIND | (b->kind == LAUNCH_TREE ? MS_REC : 0), NULL) < 0)
		fail(b->src, errno, 126);
}

/* A copy of the host's mount table would keep every mount of it alive
 * for the sandbox's life, a view unmounted on the host among them, and,
 * as a slave, receive the host's later mounts: the namespace gets a root
 * of its own instead, and the copy is detached. */
static void private_mounts(const struct launch *l)
{
	char path[PATH_MAX];

	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		fail("a mount namespace", errno, 126);
	if (l->leave_chroot)
		leave_chroot();
	if (mount("sbx", l->root_at, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "mode=0755,size=64k") < 0)
		fail(l->root_at, errno, 126);
	for (size_t i = 0; i < l->nbinds; i++)
		root_entry(l->root_at, &l->binds[i]);
	join(path, l->root_at, "/tmp");
	if (mkdir(path, 0755) < 0 && errno != EEXIST) /* a bwrap below /tmp made it */
		fail(path, errno, 126);
	join(path, l->root_at, "/proc");
	if (mkdir(path, 0755) < 0 ||
	    mount("proc", path, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		fail(path, errno, 126);
	/* The old root ends up on top of the new one, and goes. */
	if (chdir(l->root_at) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 ||
	    umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		fail("the sandbox's root", errno, 126);
}

static void child(char *const *argv, char *const *envp, const char *cwd, int in, int out, int err,
		  const struct launch *l, bool born_in)
{
	/* Before the descriptors go: the cgroups' are among them. */
	report_fd = err;
	for (size_t i = born_in ? 1 : 0; l && i < l->ncgroups; i++)
		if (write(l->cgroup_procs[i], "0", 1) != 1)
			fail("its cgroup", errno, 126);
	arrange_fds(in, out, err, l);
	reset_signals();
	setsid();
	if (!l)
		goto exec;
	if (l->root_at)
		private_mounts(l);
	for (size_t i = 0; i < l->nrlimits; i++)
		if (setrlimit((__rlimit_resource_t)l->rlimits[i].resource, &l->rlimits[i].lim) < 0)
			fail("a resource limit", errno, 126);
	if (l->nice && setpriority(PRIO_PROCESS, 0, l->nice) < 0)
		fail("its priority", errno, 126);
	if (l->uid != (uid_t)-1) {
		/* Raw calls: glibc's wrappers signal every thread, and the
		 * child has one. */
		if (syscall(SYS_setgroups, 0, NULL) < 0 ||
		    syscall(SYS_setresgid, l->gid, l->gid, l->gid) < 0 ||
		    syscall(SYS_setresuid, l->uid, l->uid, l->uid) < 0)
			fail("the sandbox's identity", errno, 126);
	}
exec:
	if (cwd && chdir(cwd) < 0)
		fail("the working directory", errno, 126);
	execve(argv[0], argv, envp);
	fail(argv[0], errno, 127);
}

/* fork(), the child born in cgroup DIR. The child of a raw clone3 runs
 * on a copy of our stack, as after fork, with no atfork handlers: fine,
 * for it only makes async-signal-safe calls. -ENOSYS (or another errno)
 * if the kernel will not: the caller forks. */
static pid_t fork_into(int dir)
{
	struct clone_args args = {
		.flags = CLONE_INTO_CGROUP,
		.exit_signal = SIGCHLD,
		.cgroup = (uint64_t)dir,
	};
	long pid = syscall(SYS_clone3, &args, sizeof(args));

	return pid < 0 ? -errno : (pid_t)pid;
}

pid_t launch_spawn(char *const *argv, char *const *envp, const char *cwd, int in, int out, int err,
		   const struct launch *l)
{
	bool born_in = false;
	pid_t pid = -ENOSYS;

	if (l && l->cgroup_dir >= 0 && (pid = fork_into(l->cgroup_dir)) >= 0)
		born_in = true;
	else
		pid = fork();
	if (pid != 0)
		return pid < 0 ? -errno : pid;
	child(argv, envp, cwd, in, out, err, l, born_in);
	_exit(127);
}
