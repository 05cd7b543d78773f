/* proc.c - see proc.h. */
#include "proc.h"
#include "cleanup.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void proc_comm(pid_t pid, char comm[static COMM_MAX])
{
	char path[64];
	_cleanup_(closep) int fd = -1;

	strcpy(comm, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, comm, 63);
		comm[n > 0 ? n : 0] = '\0';
		comm[strcspn(comm, "\n")] = '\0';
	}
}

/* Reads /proc/PID/status into BUF (SIZE bytes, terminated); false if it
 * cannot be read. */
static bool read_status(pid_t pid, char *buf, size_t size)
{
	char path[64];
	_cleanup_(closep) int fd = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || (n = read(fd, buf, size - 1)) <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

bool proc_capable(pid_t pid, int cap)
{
	char path[64], buf[2048], own[64], theirs[64];
	ssize_t n;

	/* A capability of a user namespace below ours is none in ours. */
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	n = readlink(path, theirs, sizeof(theirs) - 1);
	ssize_t m = readlink("/proc/self/ns/user", own, sizeof(own) - 1);
	if (n <= 0 || m <= 0 || n != m || memcmp(own, theirs, (size_t)n))
		return false;
	if (!read_status(pid, buf, sizeof(buf)))
		return false;
	const char *eff = strstr(buf, "\nCapEff:");
	if (!eff)
		return false;
	unsigned long long set = strtoull(eff + 8, NULL, 16);
	return cap >= 0 && cap < 64 && (set >> cap) & 1;
}

bool proc_in_group(pid_t pid, gid_t gid)
{
	char buf[4096];

	if (!read_status(pid, buf, sizeof(buf)))
		return false;
	/* "Gid:\treal effective saved fs", "Groups:\t1 2 3": the fsgid is
	 * the one the kernel asks about, then the supplementary ones. */
	const char *g = strstr(buf, "\nGid:");
	for (int i = 0; g && i < 4; i++)
		g = strchr(g + 1, '\t');
	if (g && (gid_t)strtoul(g + 1, NULL, 10) == gid)
		return true;
	const char *groups = strstr(buf, "\nGroups:");
	if (!groups)
		return false;
	char *p = (char *)groups + 8, *end;
	for (unsigned long v; *p && *p != '\n'; p = end) {
		v = strtoul(p, &end, 10);
		if (end == p)
			break;
		if ((gid_t)v == gid)
			return true;
	}
	return false;
}

bool proc_writes_ino(pid_t pid, ino_t ino)
{
	char path[64], buf[512];
	struct dirent *de;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo", (int)pid);
	_cleanup_(closedirp) DIR *d = opendir(path);
	if (!d)
		return false;
	while ((de = readdir(d))) {
		_cleanup_(closep) int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
		unsigned flags;
		uintmax_t fino;
		if (n <= 0)
			continue;
		buf[n] = '\0';
		const char *f = strstr(buf, "flags:"), *i = strstr(buf, "\nino:");
		if (f && i && sscanf(f, "flags: %o", &flags) == 1 &&
		    sscanf(i, "\nino: %ju", &fino) == 1 && fino == (uintmax_t)ino &&
		    (flags & O_ACCMODE) != O_RDONLY)
			return true;
	}
	return false;
}

void stop_signals_block(sigset_t *stop)
{
	sigemptyset(stop);
	sigaddset(stop, SIGTERM);
	sigaddset(stop, SIGINT);
	sigaddset(stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, stop, NULL);
	signal(SIGPIPE, SIG_IGN);
}

long proc_sys_long(const char *name)
{
	char path[256], buf[64] = "";

	if ((size_t)snprintf(path, sizeof(path), "/proc/sys/%s", name) >= sizeof(path))
		return -1;
	_cleanup_(closep) int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	return n > 0 ? strtol(buf, NULL, 10) : -1;
}
