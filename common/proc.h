/* proc.h - facts about other processes, from /proc. */
#ifndef SBX_PROC_H
#define SBX_PROC_H

#include <stdbool.h>
#include <signal.h>
#include <sys/types.h>

/* Room for a process's command name (/proc/PID/comm: 15 bytes in
 * Linux, escaped for logs) with its NUL. */
#define COMM_MAX 64

/* The command name of process PID ("?" if it is gone). */
void proc_comm(pid_t pid, char comm[static COMM_MAX]);

/* True if thread PID holds capability CAP in our user namespace: in its
 * effective set, and in our namespace, not one below it. Reliable for
 * the caller of a FUSE request being served: it waits for the reply and
 * cannot exit, so its id cannot be reused meanwhile. */
bool proc_capable(pid_t pid, int cap);

/* True if GID is thread PID's filesystem group or one of its
 * supplementary groups (the kernel's in_group_p()). */
bool proc_in_group(pid_t pid, gid_t gid);

/* True if process PID has a descriptor open for writing on a file whose
 * inode number is INO, on any filesystem (/proc/PID/fdinfo: nothing is
 * opened or stat()ed through the descriptors). False if it has none or
 * cannot be read. */
bool proc_writes_ino(pid_t pid, ino_t ino);

/* The number in /proc/sys/NAME ("fs/inotify/max_user_instances"), or
 * -1 if it cannot be read. */
long proc_sys_long(const char *name);

/* Blocks SIGTERM, SIGINT and SIGHUP in the calling thread, and so in the
 * threads it starts after, for a server that reads them from a signalfd
 * or sigwait()s them (their default action would end it without tidying
 * up); ignores SIGPIPE (a client gone is a write's error). STOP gets the
 * three. */
void stop_signals_block(sigset_t *stop);

#endif
