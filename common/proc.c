/* proc.c - see proc.h. */
#include "proc.h"
#include "cleanup.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void proc_comm(pid_t pid, char comm[static 64])
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

bool proc_capable(pid_t pid, int cap)
{
	char path[64], buf[2048], own[64], theirs[64];
	_cleanup_(closep) int fd = -1;
	ssize_t n;

	/* A capability of a user namespace below ours is none in ours. */
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	n = readlink(path, theirs, sizeof(theirs) - 1);
	ssize_t m = readlink("/proc/self/ns/user", own, sizeof(own) - 1);
	if (n <= 0 || m <= 0 || n != m || memcmp(own, theirs, (size_t)n))
		return false;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || (n = read(fd, buf, sizeof(buf) - 1)) <= 0)
		return false;
	buf[n] = '\0';
	const char *eff = strstr(buf, "\nCapEff:");
	if (!eff)
		return false;
	unsigned long long set = strtoull(eff + 8, NULL, 16);
	return cap >= 0 && cap < 64 && (set >> cap) & 1;
}
