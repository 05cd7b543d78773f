/* spawn.c - see spawn.h. */
#include "spawn.h"
#include "cleanup.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

int spawn_wait(const char *const argv[])
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		sigset_t none; /* blocked signals survive exec: not ours to pass on */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "sbx: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void sibling_program(const char *name, char *buf, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		self[n] = '\0';
		snprintf(buf, size, "%s/%s", dirname(self), name);
		if (access(buf, X_OK) == 0)
			return;
	}
	snprintf(buf, size, "%s", name);
}

int view_unmount(const char *mp, bool lazy)
{
	struct statfs sf;
	/* statfs always reaches the daemon (stat may hit the kernel cache). */
	bool stale = statfs(mp, &sf) < 0 && errno == ENOTCONN;

	if (geteuid() == 0)
		return umount2(mp, stale || lazy ? MNT_DETACH : 0) == 0 ? 0 : -errno;
	const char *const fusermount[] = { "fusermount3", "-u", stale || lazy ? "-z" : "-q", mp,
					   NULL };
	int r = spawn_wait(fusermount);
	return r == 0 ? 0 : r < 0 ? r : -EBUSY;
}

void mount_unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] && s[3]) {
			*o++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* The topmost mount at the absolute path MP in /proc/self/mountinfo:
 * true if there is one, with its filesystem type in TYPE (SIZE bytes). */
static bool mountinfo_find(const char *mp, char *type, size_t size)
{
	_cleanup_(fclosep) FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[8192];
	bool found = false;

	while (f && fgets(line, sizeof(line), f)) {
		/* id parent major:minor root MOUNTPOINT opts... - TYPE SOURCE ... */
		char *save = NULL, *field = strtok_r(line, " ", &save);
		for (int i = 0; field && i < 4; i++)
			field = strtok_r(NULL, " ", &save);
		if (!field)
			continue;
		mount_unescape(field);
		if (strcmp(field, mp))
			continue;
		/* Mounts stacked on one path are listed bottom up. */
		found = true;
		while (field && strcmp(field, "-"))
			field = strtok_r(NULL, " ", &save);
		field = field ? strtok_r(NULL, " ", &save) : NULL;
		snprintf(type, size, "%s", field ? field : "?");
	}
	return found;
}

bool is_mount_point(const char *mp)
{
	char type[64];

	return mountinfo_find(mp, type, sizeof(type));
}

/* MP as an absolute path without symlinks, as the mount tables spell it.
 * A dead FUSE daemon's mount point may fail to resolve itself (ENOTCONN):
 * then its directory is resolved and its name appended. */
static int mount_path(const char *mp, char out[PATH_MAX])
{
	char parent[PATH_MAX];

	if (realpath(mp, out))
		return 0;
	int e = neg_errno();
	if (e != -ENOTCONN)
		return e;
	_cleanup_(freep) char *a = strdup(mp), *b = strdup(mp);
	if (!a || !b)
		return -ENOMEM;
	const char *base = basename(a), *dir = dirname(b);
	if (!strcmp(base, ".") || !strcmp(base, "..") || !strcmp(base, "/") ||
	    !realpath(dir, parent))
		return e;
	if ((size_t)snprintf(out, PATH_MAX, "%s/%s", strcmp(parent, "/") ? parent : "", base) >=
	    PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

int view_mounted_at(const char *mp, char *type, size_t size)
{
	char path[PATH_MAX];
	int r = mount_path(mp, path);

	if (r < 0)
		return r;
	if (!mountinfo_find(path, type, size))
		return -EINVAL; /* as umount2(2) says it */
	return !strcmp(type, VIEW_FSTYPE);
}
