/* confine.h - every backing path resolution of the view goes through here.
 *
 * The view never builds host path strings from what a caller sent. Each
 * backing object is reached from the O_PATH fd of its parent directory by a
 * single name, resolved with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV): no "..", no symlink (a symlink
 * is returned as itself, never followed), no /proc magic link, no mount
 * crossing. The *at() calls of ops*.c take a dirfd and a name that passed
 * confine_name_ok(), and none of them follows a final symlink.
 *
 * The one deliberate use of a magic link is confine_reopen() and
 * confine_fd_path(): the daemon re-opens or names an inode it already holds
 * by /proc/self/fd/N, which designates exactly that inode and nothing a
 * caller can influence. (A re-open as O_PATH uses open_tree(2) on the fd
 * itself instead, where the kernel has it: the same inode, no walk.)
 */
#ifndef SBX_CONFINE_H
#define SBX_CONFINE_H

#include <stdbool.h>
#include <sys/types.h>

#define CONFINE_FD_PATH_MAX 32

/* True if NAME is one path component a caller may name: not empty, no
 * '/', not "." or "..". */
bool confine_name_ok(const char *name);

/* Resolves NAME under DIRFD; returns an O_PATH fd (of the symlink itself
 * if NAME is one) or -errno (-EXDEV for a mount point). */
int confine_lookup(int dirfd, const char *name);

/* Creates or opens regular file NAME under DIRFD with open(2) FLAGS and
 * MODE; a symlink at NAME fails with -ELOOP. Returns an fd or -errno. */
int confine_open_at(int dirfd, const char *name, int flags, mode_t mode);

/* Opens the directory held by O_PATH fd FD for reading its entries. */
int confine_opendir(int fd);

/* Re-opens the inode held by O_PATH fd FD with open(2) FLAGS (O_CREAT,
 * O_EXCL and O_NOFOLLOW are dropped). Returns an fd or -errno. */
int confine_reopen(int fd, int flags);

/* Chooses openat2 (the default; dropped by itself where the kernel or a
 * tool such as valgrind lacks it) or the openat fallback, for tests. */
void confine_use_openat2(bool use);

/* Writes "/proc/self/fd/FD" into BUF, for calls that have no form taking
 * an O_PATH fd (xattrs, chmod, truncate). */
void confine_fd_path(int fd, char buf[CONFINE_FD_PATH_MAX]);

#endif
