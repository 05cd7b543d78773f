/* launcher_main.c - sbx-launcher: the process that stays in a sandbox
 * and starts its one-off commands (launcher.h has the broker's side and
 * the protocol; docs/security-model.md what one-offs share).
 *
 * bubblewrap starts it as the first process of the sandbox's PID
 * namespace (--as-pid-1), under the sandbox's identity, seccomp filter
 * and cgroup leaf, with its control socket as descriptor 9. It makes
 * itself non-dumpable (no process of the sandbox may trace it, read its
 * memory or open its descriptors through /proc), blocks every signal (a
 * process of the namespace cannot send its init SIGKILL or SIGSTOP
 * either), records the writable trees the sandbox was made with (/, /dev,
 * /tmp), and says hello. Then, for each request: it starts the command
 * (its own session and process group, descriptors 0-2 alone, exactly the
 * environment given, its working directory), reaps whatever ends until
 * the command's first process has exited, kills every other process of
 * the namespace and reaps them all, sends the status, puts the writable
 * trees back as they were recorded, removes every System V IPC object,
 * checks that no command changed what its children inherit from it
 * (rlimits, scheduling, affinity, I/O priority), and says it is ready.
 * It exits when the broker closes the socket; any failure of its own
 * ends it, and with it the sandbox, so nothing of a command can outlive
 * it into the next.
 *
 * No code of the broker is linked in: it is small, and runs with libc
 * alone.
 */
#include "launcher_proto.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#define CONTROL 3
#define MAX_ENTRIES 4096
#define MAX_DEPTH 256
#define MAX_REQUEST (64u << 20)

/* One entry of a writable tree as the sandbox was made. */
struct entry {
	char *path; /* absolute */
	mode_t mode;
	char *link; /* a symlink's target, else NULL */
};

static struct entry snap[MAX_ENTRIES];
static size_t nsnap;

static __attribute__((noreturn)) void die(void)
{
	/* The sandbox ends with its first process: the broker sees the
	 * socket close, and starts the next command afresh. */
	_exit(1);
}

/* ---- the writable trees ---------------------------------------------- */

static const struct entry *find(const char *path)
{
	for (size_t i = 0; i < nsnap; i++)
		if (!strcmp(snap[i].path, path))
			return &snap[i];
	return NULL;
}

/* Records PATH's tree on the device DEV (not below a mount point). */
static void record(const char *path, dev_t dev, int depth)
{
	struct stat st;
	char target[4096];

	if (lstat(path, &st) < 0 || nsnap == MAX_ENTRIES || depth > MAX_DEPTH)
		die();
	struct entry *e = &snap[nsnap++];
	if (!(e->path = strdup(path)))
		die();
	e->mode = st.st_mode;
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			die();
		target[n] = '\0';
		if (!(e->link = strdup(target)))
			die();
	}
	if (!S_ISDIR(st.st_mode) || st.st_dev != dev)
		return;
	DIR *d = opendir(path);
	struct dirent *de;
	if (!d)
		die();
	while ((de = readdir(d))) {
		char child[4096];
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(child, sizeof(child), "%s%s%s", path, strcmp(path, "/") ? "/" : "",
			 de->d_name);
		record(child, dev, depth + 1);
	}
	closedir(d);
}

/* Removes every user.* attribute of FD's file (tmpfs keeps them). */
static void drop_xattrs(int fd)
{
	char names[8192];
	ssize_t n = flistxattr(fd, names, sizeof(names));

	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1)
		if (fremovexattr(fd, names + i) < 0 && errno != ENODATA)
			die();
	if (n < 0 && errno != ENOTSUP && errno != EPERM)
		die(); /* ERANGE: more than we could read */
}

/* Removes NAME of DIRFD and what is below it, all of it on device DEV:
 * a mount below (a directory holding the view's mount points, moved by
 * a command) ends the launcher instead, for nothing of the view may be
 * removed, and the sandbox's end unmounts it. */
static void remove_tree(int dirfd, const char *name, dev_t dev, int depth)
{
	struct stat st;

	if (depth > MAX_DEPTH || fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    st.st_dev != dev)
		die();
	if (S_ISDIR(st.st_mode)) {
		int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		/* A directory left without search or write permission
		 * is its owner's to open up again. */
		if (fd < 0 && fchmodat(dirfd, name, 0700, 0) == 0)
			fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fchmod(fd, 0700) < 0)
			die();
		DIR *d = fdopendir(fd);
		struct dirent *de;
		if (!d)
			die();
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				remove_tree(fd, de->d_name, dev, depth + 1);
		closedir(d);
	}
	if (unlinkat(dirfd, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) < 0)
		die();
}

/* Puts the tree at PATH (on device DEV) back as recorded: what was
 * added removed, what was removed or changed made again (directories
 * and symlinks; the files it was made with are mount points, which
 * cannot be removed), modes and user attributes as they were. */
static void restore(const char *path, dev_t dev, int depth)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	const struct entry *self = find(path);
	struct stat st;

	if (fd < 0 && fchmodat(AT_FDCWD, path, 0700, AT_SYMLINK_NOFOLLOW) == 0)
		fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || !self || depth > MAX_DEPTH || fstat(fd, &st) < 0)
		die();
	/* Left unwritable or unsearchable: opened up, put back below. */
	if ((st.st_mode & 0700) != 0700 && fchmod(fd, (st.st_mode | 0700) & 07777) < 0)
		die();
	DIR *d = fdopendir(dup(fd));
	struct dirent *de;
	if (!d)
		die();
	while ((de = readdir(d))) {
		char child[4096];
		struct stat cs;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(child, sizeof(child), "%s%s%s", path, strcmp(path, "/") ? "/" : "",
			 de->d_name);
		const struct entry *e = find(child);
		struct statx sx;
		/* Cached attributes will do: the device of a mount point is
		 * its superblock's, and the view's (FUSE) need not be asked. */
		if (statx(fd, de->d_name, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC,
			  STATX_TYPE | STATX_MODE, &sx) < 0)
			die();
		cs.st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
		cs.st_mode = sx.stx_mode;
		if (cs.st_dev != dev)
			continue; /* a mount point: another tree, or not ours */
		bool same = e && (e->mode & S_IFMT) == (cs.st_mode & S_IFMT);
		if (same && e->link) {
			char target[4096];
			ssize_t n = readlinkat(fd, de->d_name, target, sizeof(target) - 1);
			same = n >= 0 && (target[n] = '\0', !strcmp(target, e->link));
		}
		if (!same) {
			remove_tree(fd, de->d_name, dev, depth + 1);
			continue; /* made again below, if it was there */
		}
		if (S_ISDIR(cs.st_mode))
			restore(child, dev, depth + 1);
	}
	closedir(d);
	/* What was there and is not: made again. */
	size_t plen = strlen(path);
	for (size_t i = 0; i < nsnap; i++) {
		const struct entry *e = &snap[i];
		const char *name = e->path + plen + (strcmp(path, "/") ? 1 : 0);
		if (strncmp(e->path, path, plen) || e == self || strchr(name, '/') ||
		    (strcmp(path, "/") && e->path[plen] != '/'))
			continue;
		struct stat cs;
		if (fstatat(fd, name, &cs, AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		if (S_ISDIR(e->mode)) {
			if (mkdirat(fd, name, 0700) < 0)
				die();
			restore(e->path, dev, depth + 1);
		} else if (S_ISLNK(e->mode)) {
			if (symlinkat(e->link, fd, name) < 0)
				die();
		} else {
			die(); /* a file we cannot make again */
		}
	}
	drop_xattrs(fd);
	if (fstat(fd, &st) < 0 ||
	    ((st.st_mode & 07777) != (self->mode & 07777) && fchmod(fd, self->mode & 07777) < 0))
		die();
	close(fd);
}

/* The trees the sandbox can write besides the view (bubblewrap's tmpfs
 * root with /mnt, its /dev with /dev/shm, and /tmp). */
static const char *const trees[] = { "/", "/dev", "/tmp" };

static void record_all(void)
{
	struct stat st;

	for (size_t i = 0; i < sizeof(trees) / sizeof(*trees); i++) {
		if (lstat(trees[i], &st) < 0)
			die();
		record(trees[i], st.st_dev, 0);
	}
}

static void restore_all(void)
{
	for (size_t i = 0; i < sizeof(trees) / sizeof(*trees); i++) {
		const struct entry *e = find(trees[i]);
		struct stat st;
		if (!e || lstat(trees[i], &st) < 0)
			die();
		restore(trees[i], st.st_dev, 0);
	}
}

/* System V IPC objects outlive their processes: all are removed (the
 * IPC namespace is the sandbox's, and only its processes made them). */
static void remove_ipc(void)
{
	static const char *const lists[] = { "/proc/sysvipc/shm", "/proc/sysvipc/sem",
					     "/proc/sysvipc/msg" };

	for (int k = 0; k < 3; k++) {
		FILE *f = fopen(lists[k], "re");
		char line[512];
		if (!f)
			continue;
		if (!fgets(line, sizeof(line), f)) { /* the header */
			fclose(f);
			continue;
		}
		while (fgets(line, sizeof(line), f)) {
			long key, id;
			if (sscanf(line, "%ld %ld", &key, &id) != 2)
				continue;
			int r = k == 0	 ? shmctl((int)id, IPC_RMID, NULL)
				: k == 1 ? semctl((int)id, 0, IPC_RMID)
					 : msgctl((int)id, IPC_RMID, NULL);
			if (r < 0 && errno != EINVAL && errno != EIDRM)
				die();
		}
		fclose(f);
	}
}

/* ---- what its children inherit ---------------------------------------- */

/* sched_getattr(2)'s structure, the fields of its first two versions. */
struct sched_attrs {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period;
	uint32_t util_min, util_max;
};

/* What a process of the same uid can change of another without tracing
 * it (prlimit, setpriority, sched_setattr, sched_setaffinity,
 * ioprio_set), and every process the launcher forks inherits. */
struct inherited {
	struct rlimit limits[RLIM_NLIMITS];
	struct sched_attrs sched;
	cpu_set_t cpus;
	int ioprio;
};

static struct inherited as_started;

static void read_inherited(struct inherited *a)
{
	memset(a, 0, sizeof(*a));
	for (int i = 0; i < RLIM_NLIMITS; i++)
		if (getrlimit(i, &a->limits[i]) < 0)
			die();
	if (syscall(SYS_sched_getattr, 0, &a->sched, sizeof(a->sched), 0) < 0 ||
	    sched_getaffinity(0, sizeof(a->cpus), &a->cpus) < 0 ||
	    (a->ioprio = (int)syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, 0)) < 0)
		die();
}

/* A command changed them (prlimit --pid 1, renice -p 1...): the next
 * would inherit what it left, and some of it (a lowered hard limit)
 * cannot be put back without a capability. The launcher ends, and its
 * sandbox with it. */
static void check_inherited(void)
{
	struct inherited now;

	read_inherited(&now);
	if (memcmp(&now, &as_started, sizeof(now)))
		die();
}

/* ---- one command ----------------------------------------------------- */

static bool send_byte(char what, const void *data, size_t len)
{
	char buf[1 + sizeof(int32_t)];

	buf[0] = what;
	memcpy(buf + 1, data, len);
	return send(CONTROL, buf, 1 + len, MSG_NOSIGNAL) == (ssize_t)(1 + len);
}

/* Reaps until PID has ended (its status in *STATUS), then kills every
 * other process of the namespace and reaps them all: as the namespace's
 * init, each orphan is ours to reap. */
static void wait_and_clear(pid_t pid, int *status)
{
	bool done = false;

	while (!done) {
		int st;
		pid_t w = waitpid(-1, &st, 0);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			die();
		if (w == pid) {
			*status = st;
			done = true;
		}
	}
	/* kill(-1) from init reaches every other process of the namespace;
	 * a fork under way either is in its list or fails. */
	for (;;) {
		bool none = kill(-1, SIGKILL) < 0 && errno == ESRCH;
		pid_t w;
		while ((w = waitpid(-1, NULL, 0)) > 0 || (w < 0 && errno == EINTR))
			;
		if (none)
			break;
	}
}

static __attribute__((noreturn)) void child(const char *cwd, const char *shell, const char *command,
					    char **env, int out, int err)
{
	sigset_t none;
	int in = open("/dev/null", O_RDONLY | O_CLOEXEC);

	setsid();
	if (in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		_exit(126);
	syscall(SYS_close_range, 3u, ~0u, 0);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (chdir(cwd) < 0) {
		dprintf(2, "%sthe working directory: %s\n", LAUNCHER_FAILED, strerror(errno));
		_exit(126);
	}
	char *argv[] = { (char *)shell, "-c", (char *)command, NULL };
	execve(shell, argv, env);
	dprintf(2, "%s%s: %s\n", LAUNCHER_FAILED, shell, strerror(errno));
	_exit(127);
}

/* Reads the request in FD (a memfd): cwd, shell, command, then the
 * environment, each NUL-terminated. */
static char *read_request(int fd, size_t *len)
{
	struct stat st;

	if (fstat(fd, &st) < 0 || st.st_size <= 0 || (uint64_t)st.st_size > MAX_REQUEST)
		return NULL;
	char *buf = malloc((size_t)st.st_size + 1);
	size_t got = 0;
	while (buf && got < (size_t)st.st_size) {
		ssize_t n = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);
		if (n <= 0) {
			free(buf);
			return NULL;
		}
		got += (size_t)n;
	}
	if (buf)
		buf[got] = '\0';
	*len = got;
	return buf;
}

static void run_one(int req, int out, int err)
{
	size_t len = 0;
	char *buf = read_request(req, &len);
	char *fields[3] = { 0 };
	size_t at = 0, nenv = 0;

	close(req);
	if (!buf)
		die();
	for (int i = 0; i < 3; i++) {
		if (at >= len)
			die();
		fields[i] = buf + at;
		at += strlen(buf + at) + 1;
	}
	for (size_t i = at; i < len; i++)
		nenv += buf[i] == '\0';
	char **env = calloc(nenv + 1, sizeof(*env));
	if (!env)
		die();
	for (size_t i = 0; i < nenv; i++) {
		env[i] = buf + at;
		at += strlen(buf + at) + 1;
	}
	/* vfork: the child runs on our memory until its exec, with no page
	 * table to copy and no copied page to fault in; on this kind of VM
	 * that was a millisecond and more of every one-off (a fork took
	 * 1.1-1.4 ms more than a vfork before the same exec). child() only
	 * sets up its descriptors, session, mask and directory, then execs
	 * or exits; no handler can run in it: we have none. */
	pid_t pid = vfork();
	if (pid == 0)
		child(fields[0], fields[1], fields[2], env, out, err);
	close(out);
	close(err);
	free(env);
	free(buf);
	/* No process to be had (the sandbox's process limit): 126, as a
	 * shell says it. */
	int st = 126 << 8;
	if (pid > 0)
		wait_and_clear(pid, &st);
	int32_t status = st;
	if (!send_byte(LAUNCHER_STATUS, &status, sizeof(status)))
		die();
	restore_all();
	remove_ipc();
	check_inherited();
	if (!send_byte(LAUNCHER_READY, NULL, 0))
		die();
}

int main(void)
{
	sigset_t all;
	struct rlimit zero = { 0, 0 };

	/* Descriptor 8 held this program; 9 the socket. */
	if (dup3(LAUNCHER_CONTROL_FD, CONTROL, O_CLOEXEC) < 0)
		die();
	syscall(SYS_close_range, CONTROL + 1u, ~0u, 0);
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	/* Not dumpable: no process of the sandbox may ptrace it or reach
	 * its memory and descriptors through /proc. POSIX message queues
	 * cannot be listed without a mount the filter refuses, so none may
	 * be made (they would outlive their command). */
	if (prctl(PR_SET_DUMPABLE, 0) < 0 || prctl(PR_SET_NAME, "sbx-launcher") < 0 ||
	    setrlimit(RLIMIT_MSGQUEUE, &zero) < 0 || chdir("/") < 0)
		die();
	record_all();
	read_inherited(&as_started);
	if (!send_byte(LAUNCHER_READY, NULL, 0))
		die();
	for (;;) {
		char what;
		char cbuf[CMSG_SPACE(3 * sizeof(int))];
		struct iovec iov = { &what, 1 };
		struct msghdr m = { .msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = cbuf,
				    .msg_controllen = sizeof(cbuf) };
		ssize_t n = recvmsg(CONTROL, &m, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0; /* the broker let go */
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		if (what != LAUNCHER_RUN || !c || c->cmsg_type != SCM_RIGHTS ||
		    c->cmsg_len != CMSG_LEN(3 * sizeof(int)) || (m.msg_flags & MSG_CTRUNC))
			die();
		int fds[3];
		memcpy(fds, CMSG_DATA(c), sizeof(fds));
		run_one(fds[0], fds[1], fds[2]);
	}
}
