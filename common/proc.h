/* proc.h - facts about other processes, from /proc. */
#ifndef SBX_PROC_H
#define SBX_PROC_H

#include <sys/types.h>

/* The command name of process PID ("?" if it is gone). */
void proc_comm(pid_t pid, char comm[static 64]);

#endif
