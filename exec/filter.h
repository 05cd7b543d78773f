/* filter.h - the system calls a sandboxed command may not make.
 *
 * A deny list in the manner of Flatpak's, covering what Docker's default
 * profile refuses to a container without added capabilities (the call by
 * call list, and where it differs, is in docs/security-model.md). Refused
 * calls fail with EPERM, sockets of a family outside Flatpak's list with
 * EAFNOSUPPORT; clone3 fails with ENOSYS, so that the C library
 * falls back to clone, whose flags a filter can read: clone and unshare
 * may not make namespaces. The same rules hold for 32-bit (i386, x32)
 * calls. bubblewrap loads the program (--seccomp FD) last, just before
 * it executes the command, so its own setup is not filtered.
 */
#ifndef SBX_FILTER_H
#define SBX_FILTER_H

#include <stddef.h>

/* The BPF program, as bubblewrap reads it (malloc'd into *PROG, *LEN
 * bytes). Returns 0 or -errno with a reason in ERR. */
int filter_program(void **prog, size_t *len, char *err, size_t errlen);

/* The names of the calls refused outright, NULL-terminated (for docs and
 * sbx doctor; the conditional rules are clone, unshare, clone3, ioctl,
 * personality and socket). */
extern const char *const filter_refused[];

#endif
