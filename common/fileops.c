/* fileops.c - see fileops.h. */
#include "fileops.h"
#include "clock.h"
#include "cleanup.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/xattr.h>
#include <unistd.h>

/* True if FD already has extended attribute NAME with VALUE (LEN bytes). */
static bool same_xattr(int fd, const char *name, const void *value, size_t len)
{
	char cur[256];
	ssize_t n = len <= sizeof(cur) ? fgetxattr(fd, name, cur, sizeof(cur)) : -1;

	return n == (ssize_t)len && !memcmp(cur, value, len);
}

/* Gives the new file FD the owner, group, mode and extended attributes
 * (POSIX ACLs among them) of the file read through RFD, whose attributes
 * are ST. */
int file_copy_metadata(int fd, int rfd, const struct stat *st)
{
	_cleanup_(freep) char *names = NULL, *value = NULL;
	ssize_t n, len;

	if ((st->st_uid != geteuid() || st->st_gid != getegid()) &&
	    fchown(fd, st->st_uid, st->st_gid) < 0)
		return neg_errno();
	/* Always: the mode it was made with went through the worker
	 * thread's umask, which is whatever the last caller's was (sed -i
	 * sets 077 for its temporary file). */
	if (fchmod(fd, st->st_mode & 07777) < 0)
		return neg_errno();
	len = flistxattr(rfd, NULL, 0);
	if (len < 0)
		return errno == ENOTSUP ? 0 : neg_errno();
	if (len == 0)
		return 0;
	names = malloc((size_t)len);
	if (!names)
		return -ENOMEM;
	len = flistxattr(rfd, names, (size_t)len);
	if (len < 0)
		return neg_errno();
	for (char *name = names; name < names + len; name += strlen(name) + 1) {
		n = fgetxattr(rfd, name, NULL, 0);
		if (n < 0)
			return neg_errno();
		free(value);
		value = malloc(n ? (size_t)n : 1);
		if (!value)
			return -ENOMEM;
		n = fgetxattr(rfd, name, value, (size_t)n);
		if (n < 0)
			return neg_errno();
		if (same_xattr(fd, name, value, (size_t)n))
			continue; /* e.g. a security label the new file got */
		if (fsetxattr(fd, name, value, (size_t)n, 0) < 0)
			return neg_errno();
	}
	return 0;
}

/* Copies bytes [AT, END) of RFD to the same place in FD: copy_file_range,
 * else (another filesystem, an old kernel) read and write. */
static int copy_range(int fd, int rfd, off_t at, off_t end)
{
	char buf[65536];
	off_t in = at, out = at;
	ssize_t n = 1;

	while (in < end && (n = copy_file_range(rfd, &in, fd, &out, (size_t)(end - in), 0)) > 0)
		;
	if (in >= end || n == 0)
		return 0;
	if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP)
		return neg_errno();
	while (in < end &&
	       (n = pread(rfd, buf,
			  (size_t)(end - in < (off_t)sizeof(buf) ? end - in : (off_t)sizeof(buf)),
			  in)) > 0) {
		for (ssize_t done = 0; done < n;) {
			ssize_t w = pwrite(fd, buf + done, (size_t)(n - done), out);
			if (w < 0)
				return neg_errno();
			done += w;
			out += w;
		}
		in += n;
	}
	return n < 0 ? neg_errno() : 0;
}

int file_copy_content(int fd, int rfd)
{
	struct stat st;
	int r = 0;

	if (ioctl(fd, FICLONE, rfd) == 0)
		return 0;
	if (fstat(rfd, &st) < 0 || ftruncate(fd, 0) < 0)
		return neg_errno();
	/* Data ranges only: a hole copied as zeros would take the space it
	 * does not take in the original (a file grown by truncate). */
	for (off_t at = 0; at < st.st_size && r == 0;) {
		off_t data = lseek(rfd, at, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			break; /* a hole to the end */
		if (data < 0)
			data = at; /* no SEEK_DATA here: all of it is data */
		off_t hole = lseek(rfd, data, SEEK_HOLE);
		if (hole < 0 || hole > st.st_size)
			hole = st.st_size;
		r = copy_range(fd, rfd, data, hole);
		at = hole;
	}
	if (r == 0 && ftruncate(fd, st.st_size) < 0)
		r = neg_errno();
	return r;
}

/* ---- attributes ---------------------------------------------------------- */

/* The entry NAME in DIRFD (NULL or "": DIRFD itself) as an O_PATH fd. */
static int open_object(int dirfd, const char *name)
{
	int fd = name && *name ? openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC)
			       : fcntl(dirfd, F_DUPFD_CLOEXEC, 0);

	return fd < 0 ? neg_errno() : fd;
}

/* A path by which the xattr calls reach the file behind O_PATH fd FD. */
static void proc_path(int fd, char buf[32])
{
	snprintf(buf, 32, "/proc/self/fd/%d", fd);
}

/* Appends NAME and its VALUE (LEN bytes) to M's blob of attributes. */
static int xattr_append(struct meta *m, const char *name, const char *value, uint32_t len)
{
	size_t nlen = strlen(name) + 1, add = nlen + 4 + len;
	char *grown = realloc(m->xattrs, m->xattrs_len + add);

	if (!grown)
		return -ENOMEM;
	m->xattrs = grown;
	char *at = grown + m->xattrs_len;
	memcpy(at, name, nlen);
	for (int i = 0; i < 4; i++)
		at[nlen + i] = (char)(len >> (8 * i));
	memcpy(at + nlen + 4, value, len);
	m->xattrs_len += add;
	return 0;
}

static int xattr_none(void *arg, const char *name, const char *value, uint32_t len)
{
	(void)arg;
	(void)name;
	(void)value;
	(void)len;
	return 0;
}

/* Calls FN for each attribute in M's blob; -EINVAL if it is malformed. */
static int xattrs_each(const struct meta *m,
		       int (*fn)(void *arg, const char *name, const char *value, uint32_t len),
		       void *arg)
{
	for (size_t at = 0; at < m->xattrs_len;) {
		const char *name = m->xattrs + at;
		size_t nlen = strnlen(name, m->xattrs_len - at);
		if (at + nlen + 5 > m->xattrs_len)
			return -EINVAL;
		const unsigned char *l = (const unsigned char *)name + nlen + 1;
		uint32_t len = l[0] | l[1] << 8 | l[2] << 16 | (uint32_t)l[3] << 24;
		if (len > m->xattrs_len - at - nlen - 5)
			return -EINVAL;
		int r = fn(arg, name, (const char *)l + 4, len);
		if (r)
			return r;
		at += nlen + 5 + len;
	}
	return 0;
}

static int read_xattrs(const char *path, struct meta *m)
{
	_cleanup_(freep) char *names = NULL, *value = NULL;
	ssize_t len = listxattr(path, NULL, 0), n;

	if (len <= 0)
		return len < 0 && errno != ENOTSUP ? neg_errno() : 0;
	if (!(names = malloc((size_t)len)) || (len = listxattr(path, names, (size_t)len)) < 0)
		return names ? neg_errno() : -ENOMEM;
	for (char *name = names; name < names + len; name += strlen(name) + 1) {
		if ((n = getxattr(path, name, NULL, 0)) < 0)
			return errno == ENODATA ? 0 : neg_errno();
		free(value);
		if (!(value = malloc(n ? (size_t)n : 1)))
			return -ENOMEM;
		if ((n = getxattr(path, name, value, (size_t)n)) < 0)
			return neg_errno();
		int r = xattr_append(m, name, value, (uint32_t)n);
		if (r < 0)
			return r;
	}
	return 0;
}

int meta_read(int dirfd, const char *name, struct meta *m)
{
	_cleanup_(closep) int fd = open_object(dirfd, name);
	struct stat st;
	char path[32];

	memset(m, 0, sizeof(*m));
	if (fd < 0)
		return fd;
	if (fstatat(fd, "", &st, AT_EMPTY_PATH) < 0)
		return neg_errno();
	m->mode = st.st_mode;
	m->uid = st.st_uid;
	m->gid = st.st_gid;
	m->atime_ns = timespec_ns(&st.st_atim);
	m->mtime_ns = timespec_ns(&st.st_mtim);
	if (S_ISLNK(st.st_mode))
		return 0;
	proc_path(fd, path);
	int r = read_xattrs(path, m);
	if (r < 0)
		meta_free(m);
	return r;
}

void meta_free(struct meta *m)
{
	free(m->xattrs);
	m->xattrs = NULL;
	m->xattrs_len = 0;
}

/* The blob: "META1" mode uid gid atime mtime as decimal, one space each,
 * a newline, then the attributes as xattrs holds them. */
int meta_encode(const struct meta *m, uint8_t **out, size_t *len)
{
	char head[128];
	int n = snprintf(head, sizeof(head), "META1 %o %u %u %lld %lld\n", (unsigned)m->mode,
			 (unsigned)m->uid, (unsigned)m->gid, (long long)m->atime_ns,
			 (long long)m->mtime_ns);

	if (!(*out = malloc((size_t)n + m->xattrs_len + 1)))
		return -ENOMEM;
	memcpy(*out, head, (size_t)n);
	if (m->xattrs_len)
		memcpy(*out + n, m->xattrs, m->xattrs_len);
	*len = (size_t)n + m->xattrs_len;
	return 0;
}

int meta_decode(const uint8_t *blob, size_t len, struct meta *m)
{
	const uint8_t *nl = memchr(blob, '\n', len < 128 ? len : 128);
	char head[128];
	unsigned mode, uid, gid;
	long long atime, mtime;

	memset(m, 0, sizeof(*m));
	if (!nl)
		return -EINVAL;
	memcpy(head, blob, (size_t)(nl - blob));
	head[nl - blob] = '\0';
	if (sscanf(head, "META1 %o %u %u %lld %lld", &mode, &uid, &gid, &atime, &mtime) != 5)
		return -EINVAL;
	m->mode = mode;
	m->uid = uid;
	m->gid = gid;
	m->atime_ns = atime;
	m->mtime_ns = mtime;
	m->xattrs_len = len - (size_t)(nl + 1 - blob);
	if (m->xattrs_len && !(m->xattrs = malloc(m->xattrs_len)))
		return -ENOMEM;
	if (m->xattrs_len)
		memcpy(m->xattrs, nl + 1, m->xattrs_len);
	int r = xattrs_each(m, xattr_none, NULL);
	if (r < 0)
		meta_free(m);
	return r;
}

struct apply {
	const char *path;
	const struct meta *m;
};

/* True if M's blob holds attribute NAME. */
static int xattr_named(void *arg, const char *name, const char *value, uint32_t len)
{
	(void)value;
	(void)len;
	return !strcmp(arg, name);
}

static int xattr_set(void *arg, const char *name, const char *value, uint32_t len)
{
	const struct apply *a = arg;

	return setxattr(a->path, name, value, len, 0) < 0 ? neg_errno() : 0;
}

/* Removes the attributes of PATH that M does not have. */
static int xattrs_prune(const char *path, const struct meta *m)
{
	_cleanup_(freep) char *names = NULL;
	ssize_t len = listxattr(path, NULL, 0);

	if (len <= 0)
		return len < 0 && errno != ENOTSUP ? neg_errno() : 0;
	if (!(names = malloc((size_t)len)) || (len = listxattr(path, names, (size_t)len)) < 0)
		return names ? neg_errno() : -ENOMEM;
	for (char *name = names; name < names + len; name += strlen(name) + 1)
		if (!xattrs_each(m, xattr_named, name) && removexattr(path, name) < 0 &&
		    errno != ENODATA)
			return neg_errno();
	return 0;
}

int meta_apply(int dirfd, const char *name, const struct meta *m)
{
	_cleanup_(closep) int fd = open_object(dirfd, name);
	struct timespec ts[2] = {
		{ .tv_sec = m->atime_ns / 1000000000, .tv_nsec = m->atime_ns % 1000000000 },
		{ .tv_sec = m->mtime_ns / 1000000000, .tv_nsec = m->mtime_ns % 1000000000 },
	};
	struct stat st;
	char path[32];
	int r;

	if (fd < 0)
		return fd;
	if (fstatat(fd, "", &st, AT_EMPTY_PATH) < 0)
		return neg_errno();
	if ((st.st_uid != m->uid || st.st_gid != m->gid) &&
	    fchownat(fd, "", m->uid, m->gid, AT_EMPTY_PATH) < 0)
		return neg_errno();
	proc_path(fd, path);
	if (!S_ISLNK(st.st_mode)) {
		struct apply a = { path, m };
		/* After the owner: a chown drops set-id bits. */
		if (chmod(path, m->mode & 07777) < 0)
			return neg_errno();
		if ((r = xattrs_prune(path, m)) < 0 || (r = xattrs_each(m, xattr_set, &a)) < 0)
			return r;
		return utimensat(AT_FDCWD, path, ts, 0) < 0 ? neg_errno() : 0;
	}
	return utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0 ? neg_errno() : 0;
}

int file_sha256(int fd, uint8_t out[32])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	char buf[1 << 16];
	ssize_t n;
	int r = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) ? 0 : -ENOMEM;

	while (r == 0 && (n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno != EINTR)
			r = -errno;
		else if (n > 0 && !EVP_DigestUpdate(ctx, buf, (size_t)n))
			r = -ENOMEM;
	}
	if (r == 0 && !EVP_DigestFinal_ex(ctx, out, NULL))
		r = -ENOMEM;
	EVP_MD_CTX_free(ctx);
	return r;
}
