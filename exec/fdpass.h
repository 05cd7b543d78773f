/* fdpass.h - a file descriptor passed along a Unix socket's bytes
 * (SCM_RIGHTS), as the broker's protocol passes them (docs/protocol.md:
 * "open" hands the client a file, a "tool" with "arguments_fd" hands
 * the broker its arguments).
 */
#ifndef SBX_FDPASS_H
#define SBX_FDPASS_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

/* sendmsg() of the N buffers of IOV on SOCK, FD (-1: none) passed on
 * their first byte; MSG_NOSIGNAL, EINTR retried. The bytes sent (maybe
 * fewer than asked: the fd went with the first), or -errno. */
ssize_t fdpass_send(int sock, const struct iovec *iov, size_t n, int fd);

/* recvmsg() of at most N bytes into P from SOCK, EINTR retried. The fds
 * that came with them are taken close-on-exec: the first into *FD if it
 * is -1, any other closed. The bytes read, 0 at the end, or -errno. */
ssize_t fdpass_recv(int sock, void *p, size_t n, int *fd);

#endif
