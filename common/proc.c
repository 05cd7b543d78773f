/* proc.c - see proc.h. */
#include "proc.h"
#include "cleanup.h"

#include <fcntl.h>
#include <stdio.h>
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
